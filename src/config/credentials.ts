import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import path from "node:path";
import { toolhostHome } from "./paths.js";
import { readConfigTextSync } from "./safe-read.js";

// The stored login: what `toolhost login` saved (a model, and a provider's key or base URL), in
// `~/.toolhost/credentials.json`, readable by the user alone (0600). Every session reads it with
// the config file (file.ts merges it in, under the environment, over config.json). Node's
// built-ins only: session/new reads it.

/** One provider's saved settings. */
export interface SavedProvider {
  apiKey?: string;
  baseURL?: string;
}

/** The file's content. */
export interface Credentials {
  model?: string;
  providers: Record<string, SavedProvider>;
}

/** The file as read: absent (no login), read, or refused with the reason. */
export interface CredentialsRead {
  path: string;
  credentials?: Credentials;
  error?: string;
}

/** Where the login is stored: toolhost's home, never a workspace. */
export function credentialsPath(home = toolhostHome()): string {
  return path.join(home, "credentials.json");
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const text = (value: unknown): string | undefined => (typeof value === "string" && value.trim() !== "" ? value.trim() : undefined);

/** The file's JSON as `Credentials`, keeping only well-formed entries. */
function parseCredentials(json: unknown): Credentials | string {
  if (!isObject(json)) return "must be a JSON object";
  const providers: Record<string, SavedProvider> = {};
  if (json.providers !== undefined && !isObject(json.providers)) return '"providers" must be an object';
  for (const [name, entry] of Object.entries(isObject(json.providers) ? json.providers : {})) {
    if (!isObject(entry)) continue;
    const apiKey = text(entry.apiKey);
    const baseURL = text(entry.baseURL);
    providers[name] = { ...(apiKey ? { apiKey } : {}), ...(baseURL ? { baseURL } : {}) };
  }
  const model = text(json.model);
  return { ...(model ? { model } : {}), providers };
}

/**
 * Reads the stored login. A file others may read (group or world bits) is refused, as ssh refuses
 * a key: the key in it may have been seen, and the message says how to fix the mode.
 */
export function readCredentials(home = toolhostHome()): CredentialsRead {
  const file = credentialsPath(home);
  const { text: raw, error } = readConfigTextSync(file, [home]);
  if (error) return { path: file, error };
  if (raw === null) return { path: file };
  if (process.platform !== "win32") {
    const mode = statSync(file, { throwIfNoEntry: false })?.mode ?? 0;
    if (mode & 0o077) {
      return {
        path: file,
        error: `${file} is not used: others may read it (mode ${(mode & 0o777).toString(8)}); run chmod 600 ${file}, or toolhost login again`,
      };
    }
  }
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch (err) {
    return { path: file, error: `${file} is not valid JSON (${(err as Error).message})` };
  }
  const parsed = parseCredentials(json);
  return typeof parsed === "string" ? { path: file, error: `${file}: ${parsed}` } : { path: file, credentials: parsed };
}

/**
 * Saves the login: the folder made 0700 if new, the file written beside it as 0600 and renamed
 * over the old one (a reader never sees half a file, nor a moment where others could read it).
 */
export function writeCredentials(credentials: Credentials, home = toolhostHome()): string {
  const file = credentialsPath(home);
  mkdirSync(home, { recursive: true, mode: 0o700 });
  const temp = `${file}.${process.pid}.tmp`;
  const fd = openSync(temp, "wx", 0o600);
  try {
    writeSync(fd, `${JSON.stringify(credentials, null, 2)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  // The umask cannot widen a mode given at creation, but a file system may: say it exactly.
  if (process.platform !== "win32") chmodSync(temp, 0o600);
  try {
    renameSync(temp, file);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  return file;
}

/** Removes the stored login; whether there was one. */
export function removeCredentials(home = toolhostHome()): boolean {
  const file = credentialsPath(home);
  const existed = statSync(file, { throwIfNoEntry: false }) !== undefined;
  rmSync(file, { force: true });
  return existed;
}

/**
 * The config file's JSON with the login merged in: the login's model over config.json's, each
 * provider's saved key and base URL over the same fields in config.json (its other fields stay).
 * The environment still wins over both where it is read (agent/model/).
 */
export function mergeLogin(json: unknown, login: Credentials | undefined): unknown {
  if (!login) return json;
  if (json !== undefined && !isObject(json)) return json;
  const base = json ?? {};
  const providers = isObject(base.providers) ? { ...base.providers } : {};
  for (const [name, saved] of Object.entries(login.providers)) {
    const existing = providers[name];
    providers[name] = { ...(isObject(existing) ? existing : {}), ...saved };
  }
  return { ...base, ...(login.model ? { model: login.model } : {}), ...(Object.keys(providers).length ? { providers } : {}) };
}
