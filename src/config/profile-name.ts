import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { packageRoot, toolhostHome } from "./paths.js";

export const DEFAULT_PROFILE = "default";

/** A profile folder's name (host/profiles.ts checks the same when it loads one). */
const PROFILE_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

interface ProfileSources {
  requested?: string;
  env?: NodeJS.ProcessEnv;
  config?: { profile?: string };
}

/**
 * The active profile's name: the client's choice, then TOOLHOST_PROFILE, then the config file,
 * then `default`. Light (no zod), so session/new can answer with it before anything loads.
 */
export function selectProfileName(sources: ProfileSources = {}): string {
  return selectProfile(sources).name;
}

/** The active profile's name and who chose it, in the words a message names it by. */
function selectProfile(sources: ProfileSources): { name: string; from: string } {
  const env = sources.env ?? process.env;
  const requested = sources.requested?.trim();
  if (requested) return { name: requested, from: "--profile" };
  const fromEnv = env.TOOLHOST_PROFILE?.trim();
  if (fromEnv) return { name: fromEnv, from: "TOOLHOST_PROFILE" };
  const configured = sources.config?.profile?.trim();
  if (configured) return { name: configured, from: `"profile" in ${path.join(toolhostHome(), "config.json")}` };
  return { name: DEFAULT_PROFILE, from: "the default profile" };
}

/**
 * The profile names, from a directory listing alone (no zod, no profile is read): each user or
 * shipped folder with a profile.json, and a user folder that extends a shipped profile of its
 * name. The list after loading leaves out a broken profile.json.
 */
export function listProfileNames(home = toolhostHome(), root = packageRoot()): string[] {
  const names = new Set<string>();
  const has = (dir: string, name: string) => existsSync(path.join(dir, "profiles", name, "profile.json"));
  for (const dir of [home, root]) {
    let entries: string[];
    try {
      entries = readdirSync(path.join(dir, "profiles"));
    } catch {
      continue;
    }
    for (const name of entries) if (PROFILE_NAME.test(name) && (has(home, name) || has(root, name))) names.add(name);
  }
  return [...names].sort();
}

/**
 * Why the selected profile cannot run (no profile of that name: a typo), naming who chose it and
 * the known profiles; null when it exists. A session refuses to start on it rather than fall back.
 */
export function unknownProfileProblem(sources: ProfileSources = {}, home?: string): string | null {
  const { name, from } = selectProfile(sources);
  const names = listProfileNames(home);
  if (names.includes(name)) return null;
  return `unknown profile "${name}" (from ${from}); profiles: ${names.join(", ") || "none found"}`;
}
