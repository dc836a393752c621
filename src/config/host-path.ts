import { isInside } from "../tool/paths.js";
import { realpathSync } from "node:fs";
import path from "node:path";

// What toolhost runs outside the sandbox (git for the checkpoints, bwrap, socat, the `ps` of a
// tree kill, a user-level hook or MCP server and what they run, a command the user approved to run
// unsandboxed) is found on PATH. A PATH that names a workspace folder (direnv's `bin/`, a
// project's `node_modules/.bin`) or a relative one (`.`, `bin`: the process's cwd) would find a
// file a sandboxed command wrote there, and run it with toolhost's rights. So toolhost's own PATH
// (`process.env.PATH`, which every program it starts inherits or looks up) leaves out relative
// entries and every entry inside a workspace root of a session it opened; sandboxed commands get
// the user's PATH as it was (`userPath`): inside the sandbox a workspace program is as confined as
// the rest. A PATH set after the guard (an embedder's, a test's) is the user's from then on.

const roots = new Set<string>();
/** The PATH as the user (or an embedder, or a test) last set it, before the guard took entries out. */
let user = process.env.PATH ?? "";
/** What the guard last set: a PATH that differs was set by someone else since, and is the user's now. */
let guarded: string | undefined;

/** The PATH as the user set it: what sandboxed commands get. */
export function userPath(): string {
  const current = process.env.PATH ?? "";
  return current === guarded ? user : current;
}

const real = (p: string): string => {
  try {
    return realpathSync(p);
  } catch {
    return path.resolve(p);
  }
};

/** Whether a PATH entry may be searched for what toolhost runs outside the sandbox. */
function safeEntry(entry: string): boolean {
  if (!entry || !path.isAbsolute(entry)) return false;
  const lexical = path.resolve(entry);
  const resolved = real(entry);
  for (const root of roots) if (isInside(lexical, root) || isInside(resolved, root)) return false;
  return true;
}

/** Recomputes toolhost's own PATH from the user's, less the unsafe entries. */
function apply(): void {
  if (process.env.PATH === undefined) return;
  user = userPath();
  guarded = user.split(path.delimiter).filter(safeEntry).join(path.delimiter);
  process.env.PATH = guarded;
}

/**
 * Leaves `workspaceRoots` (and relative entries) out of toolhost's own PATH from now on. The
 * filesystem root is never a workspace here: a session over `/` has nothing outside to protect.
 */
export function guardHostPath(workspaceRoots: readonly string[] = []): void {
  for (const root of workspaceRoots) {
    const r = real(root);
    if (r !== "/") roots.add(r);
  }
  apply();
}
