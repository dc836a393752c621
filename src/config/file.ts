import path from "node:path";
import { toolhostHome } from "./paths.js";
import { readConfigTextSync, userRoots } from "./safe-read.js";

// The config file without zod: session/new reads the model and profile from here before
// anything heavy loads. The full validation is schema.ts, on the first model turn and per toolset.

/** The raw `~/.toolhost/config.json`: absent → json undefined; unreadable JSON → error. */
export function readConfigFile(home = toolhostHome()): { path: string; json?: unknown; error?: string } {
  const file = path.join(home, "config.json");
  // A regular file of the user's own only (config/safe-read.ts); a refused one is reported.
  const { text, error } = readConfigTextSync(file, [home, ...userRoots()]);
  if (error) return { path: file, error };
  if (text === null) return { path: file };
  try {
    return { path: file, json: JSON.parse(text) as unknown };
  } catch (err) {
    return { path: file, error: `${file} is not valid JSON (${(err as Error).message})` };
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
  path: string;
  error?: string;
}

export function peekUserConfig(home = toolhostHome()): ConfigPeek {
  const raw = readConfigFile(home);
  if (raw.error || typeof raw.json !== "object" || raw.json === null) return { keyed: [], path: raw.path, error: raw.error };
  const json = raw.json as {
    model?: unknown;
    profile?: unknown;
    providers?: Record<string, { apiKey?: unknown } | undefined>;
    sandbox?: unknown;
  };
  const providers = json.providers && typeof json.providers === "object" ? json.providers : {};
  return {
    model: typeof json.model === "string" && json.model.trim() !== "" ? json.model : undefined,
    profile: typeof json.profile === "string" && json.profile.trim() !== "" ? json.profile.trim() : undefined,
    keyed: Object.entries(providers)
      .filter(([, p]) => typeof p?.apiKey === "string" && p.apiKey !== "")
      .map(([name]) => name),
    ...(json.sandbox === "off" ? { sandbox: "off" as const } : {}),
    path: raw.path,
  };
}
