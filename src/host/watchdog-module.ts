import * as fsp from "node:fs/promises";
import path from "node:path";
import { composeWatchdogs, type Watchdog, type WatchdogVerdict } from "../policy/watchdog.js";
import type { ImportModule, LoadProblem } from "./loader.js";
import type { Profile } from "./profiles.js";

// A profile's own watchdog: `<profile dir>/watchdog.ts` default-exporting `(call, signal) =>
// verdict | Promise<verdict>`, imported like an extension file. Profiles live in the user's
// ~/.toolhost/profiles and in the package (no project can bring one), so each is trusted.
// It fails closed: a module that does not load, a default export that is not a function, an
// answer that throws, takes too long or is not a verdict — each denies the call with the reason.

const NAMES = ["watchdog.ts", "watchdog.mts", "watchdog.js", "watchdog.mjs"];

/** How long a profile watchdog may take over one call (default). */
export const PROFILE_WATCHDOG_TIMEOUT_MS = 5_000;

export interface ProfileWatchdog {
  /** Absent when the profile has no watchdog file. */
  watchdog?: Watchdog;
  /** The watchdog files found (the user's folder before the shipped one). */
  files: string[];
  problems: LoadProblem[];
}

async function isFile(file: string): Promise<boolean> {
  return (await fsp.stat(file).catch(() => null))?.isFile() ?? false;
}

/** The watchdog file of each folder the profile comes from (a user folder over a shipped profile adds its own). */
async function watchdogFiles(profile: Profile): Promise<string[]> {
  const dirs = [...new Set(profile.toolDirs.map((d) => path.dirname(d)))];
  const files: string[] = [];
  for (const dir of dirs) {
    for (const name of NAMES) {
      const file = path.join(dir, name);
      if (await isFile(file)) {
        files.push(file);
        break;
      }
    }
  }
  return files;
}

const refuseAll =
  (check: string, reason: string): Watchdog =>
  async () => ({ action: "deny", check, reason });

/** A profile watchdog's answer made into a verdict, or null when it is not one. */
function verdictOf(value: unknown, check: string): WatchdogVerdict | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as Record<string, unknown>;
  if (v.action === "allow") return { action: "allow" };
  if ((v.action === "deny" || v.action === "ask") && typeof v.reason === "string" && v.reason.trim() !== "") {
    return {
      action: v.action,
      reason: v.reason,
      check: typeof v.check === "string" && v.check.trim() !== "" ? `${check}: ${v.check}` : check,
    };
  }
  return null;
}

function guarded(fn: (...args: unknown[]) => unknown, check: string, timeoutMs: number): Watchdog {
  return async (call, signal) => {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => resolve("timeout"), timeoutMs);
    });
    try {
      const answer = await Promise.race([Promise.resolve().then(() => fn(call, signal)), expired]);
      if (answer === "timeout") return { action: "deny", check, reason: `it did not answer within ${timeoutMs / 1000} s` };
      return verdictOf(answer, check) ?? { action: "deny", check, reason: `it answered ${describe(answer)}, which is not a verdict` };
    } catch (err) {
      return { action: "deny", check, reason: `it threw: ${err instanceof Error ? err.message : String(err)}` };
    } finally {
      clearTimeout(timer);
    }
  };
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 200) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * Loads the profile's watchdog files. Nothing here throws: a file that cannot be used becomes a
 * problem for the report and a watchdog that refuses every call, naming the file.
 */
export async function loadProfileWatchdog(
  profile: Profile,
  importModule: ImportModule | undefined,
  timeoutMs = PROFILE_WATCHDOG_TIMEOUT_MS,
): Promise<ProfileWatchdog> {
  const files = await watchdogFiles(profile);
  if (!files.length) return { files, problems: [] };
  const problems: LoadProblem[] = [];
  const watchdogs: Watchdog[] = [];
  for (const file of files) {
    const check = `profile ${profile.name} (${file})`;
    const fail = (message: string) => {
      problems.push({ file, message: `${message}; every call is refused until it is fixed` });
      watchdogs.push(refuseAll(check, `the profile's watchdog ${message}`));
    };
    if (!importModule) {
      fail("cannot be loaded here (no module loader)");
      continue;
    }
    let mod: Record<string, unknown>;
    try {
      mod = await importModule(file);
    } catch (err) {
      fail(`failed to load: ${(err instanceof Error ? err.message : String(err)).split("\n")[0]}`);
      continue;
    }
    const fn = mod?.default;
    if (typeof fn !== "function") {
      fail("does not default-export a function `(call) => verdict`");
      continue;
    }
    watchdogs.push(guarded(fn as (...args: unknown[]) => unknown, check, timeoutMs));
  }
  return { watchdog: watchdogs.length === 1 ? watchdogs[0] : composeWatchdogs(...watchdogs), files, problems };
}
