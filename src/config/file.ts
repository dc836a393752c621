import { lstatSync } from "node:fs";
import path from "node:path";
import { credentialsPath, mergeLogin, readCredentials, type CredentialsRead } from "./credentials.js";
import { toolhostHome } from "./paths.js";
import { readConfigTextSync, userRoots } from "./safe-read.js";

// The config file without zod: session/new reads the model and profile from here before
// anything heavy loads. The full validation is schema.ts, on the first model turn and per toolset.

/**
 * The raw `~/.toolhost/config.json`: absent → json undefined; unreadable JSON → error. A session
 * reads it once at its start and hands this value down (`peekConfig`, schema.ts's `parseUserConfig`).
 */
export interface ConfigFile {
  path: string;
  /** config.json's JSON with the stored login (credentials.ts) merged in. */
  json?: unknown;
  error?: string;
  /** The stored login as read (`toolhost login`): absent, read, or refused with the reason. */
  login?: CredentialsRead;
}

/**
 * Reads the raw config file and the stored login, merged (one read: callers pass the value on
 * rather than reading again).
 */
export function readConfigFile(home = toolhostHome()): ConfigFile {
  const file = path.join(home, "config.json");
  // The same files, unchanged (inode, size, times), read a moment ago: that reading, not another
  // (a command checks the profile before its session reads the config for the rest).
  const key = [file, credentialsPath(home)].map(statKey).join("|");
  if (lastRead?.key === key) return lastRead.config;
  const config = readConfigFileNow(home, file);
  lastRead = { key, config };
  return config;
}

let lastRead: { key: string; config: ConfigFile } | undefined;

/** A file's identity and version as stat sees it ("-" when it is not there). */
function statKey(file: string): string {
  const st = lstatSync(file, { throwIfNoEntry: false, bigint: true });
  return st ? `${file}:${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}` : `${file}:-`;
}

function readConfigFileNow(home: string, file: string): ConfigFile {
  const login = readCredentials(home);
  // A regular file of the user's own only (config/safe-read.ts); a refused one is reported.
  const { text, error } = readConfigTextSync(file, [home, ...userRoots()]);
  if (error) return { path: file, error, login };
  if (text === null) return { path: file, json: mergeLogin(undefined, login.credentials), login };
  try {
    return { path: file, json: mergeLogin(JSON.parse(text) as unknown, login.credentials), login };
  } catch (err) {
    return { path: file, error: `${file} is not valid JSON (${(err as Error).message})`, login };
  }
}

/** What session/new and the no-model message need from the config file, without validating it. */
export interface ConfigPeek {
  model?: string;
  /** The default profile name, when the file sets one. */
  profile?: string;
  /** Providers that have an API key in the file. */
  keyed: string[];
  /** `"off"` when the file switches the sandbox off; anything else leaves it on (fail closed). */
  sandbox?: "off";
  /** `sandbox.env`: more environment variables a sandboxed command gets (names, or `PREFIX_*`). */
  sandboxEnv: string[];
  /** `sandbox.denyRead`: more paths hidden from sandboxed commands (absolute, or `~/` for the home). */
  sandboxDenyRead: string[];
  /** `sandbox.allowUnixSockets: true`: sandboxed commands may create AF_UNIX sockets (anything else: refused). */
  sandboxAllowUnixSockets?: true;
  /** Why the `sandbox` entry was not taken as written (it then fails closed: on, nothing extra passed). */
  sandboxError?: string;
  /** `false` when the file switches checkpoints off (anything else leaves them on). */
  checkpoints?: false;
  path: string;
  error?: string;
}

/** Reads the config file and peeks at it. */
export function peekUserConfig(home = toolhostHome()): ConfigPeek {
  return peekConfig(readConfigFile(home));
}

/** What session/new and the no-model message need from a config file already read. */
export function peekConfig(raw: ConfigFile): ConfigPeek {
  if (raw.error || typeof raw.json !== "object" || raw.json === null)
    return { keyed: [], sandboxEnv: [], sandboxDenyRead: [], path: raw.path, error: raw.error };
  const json = raw.json as {
    model?: unknown;
    profile?: unknown;
    providers?: Record<string, { apiKey?: unknown } | undefined>;
    sandbox?: unknown;
    checkpoints?: unknown;
  };
  const providers = json.providers && typeof json.providers === "object" ? json.providers : {};
  return {
    model: typeof json.model === "string" && json.model.trim() !== "" ? json.model : undefined,
    profile: typeof json.profile === "string" && json.profile.trim() !== "" ? json.profile.trim() : undefined,
    keyed: Object.entries(providers)
      .filter(([, p]) => typeof p?.apiKey === "string" && p.apiKey !== "")
      .map(([name]) => name),
    ...peekSandbox(json.sandbox),
    ...(json.checkpoints === false ? { checkpoints: false as const } : {}),
    path: raw.path,
  };
}

/** `sandbox.env` entries: a variable name, or a name prefix ending in `*`. */
const ENV_ENTRY = /^[A-Za-z_][A-Za-z0-9_]*\*?$/;
const DENY_ENTRY = (p: string) => path.isAbsolute(p) || p.startsWith("~/");

/**
 * `"sandbox"`: `"on"`, `"off"`, or `{ mode?, env?, denyRead?, allowUnixSockets? }`. Anything
 * malformed fails closed: the sandbox stays on, no variable is passed and unix sockets stay refused
 * (the paths to hide that are well formed still are).
 */
function peekSandbox(
  value: unknown,
): Pick<ConfigPeek, "sandbox" | "sandboxEnv" | "sandboxDenyRead" | "sandboxAllowUnixSockets" | "sandboxError"> {
  const none = { sandboxEnv: [], sandboxDenyRead: [] };
  if (value === undefined || value === "on") return none;
  if (value === "off") return { ...none, sandbox: "off" };
  if (typeof value !== "object" || value === null || Array.isArray(value))
    return { ...none, sandboxError: 'sandbox must be "on", "off" or { mode, env, denyRead, allowUnixSockets }' };
  const entry = value as Record<string, unknown>;
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === "string") : []);
  const denyRead = strings(entry.denyRead).filter(DENY_ENTRY);
  const problems = [
    ...Object.keys(entry)
      .filter((k) => !["mode", "env", "denyRead", "allowUnixSockets"].includes(k))
      .map((k) => `unknown key "${k}"`),
    ...(entry.mode === undefined || entry.mode === "on" || entry.mode === "off" ? [] : ['mode must be "on" or "off"']),
    ...(entry.env === undefined || (Array.isArray(entry.env) && entry.env.every((n) => typeof n === "string" && ENV_ENTRY.test(n)))
      ? []
      : ["env must list variable names (or PREFIX_*)"]),
    ...(entry.denyRead === undefined || (Array.isArray(entry.denyRead) && denyRead.length === entry.denyRead.length)
      ? []
      : ["denyRead must list absolute or ~/ paths"]),
    ...(entry.allowUnixSockets === undefined || typeof entry.allowUnixSockets === "boolean"
      ? []
      : ["allowUnixSockets must be true or false"]),
  ];
  if (problems.length) return { sandboxEnv: [], sandboxDenyRead: denyRead, sandboxError: `sandbox: ${problems.join("; ")}` };
  return {
    ...(entry.mode === "off" ? { sandbox: "off" as const } : {}),
    sandboxEnv: strings(entry.env),
    sandboxDenyRead: denyRead,
    ...(entry.allowUnixSockets === true ? { sandboxAllowUnixSockets: true as const } : {}),
  };
}
