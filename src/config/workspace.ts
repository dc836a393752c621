import { guardHostPath } from "./host-path.js";
import os from "node:os";
import path from "node:path";
import { realOrUndefined } from "./real-path.js";

// A session's workspace, resolved once, and which folders may be one. The sandbox makes the
// workspace writable and the rules call its files "inside": `/` or a system folder would hand
// tools and commands the machine.

/** A folder's real path (symlinks resolved); one that cannot be resolved, as it is (absolute). */
const real = (dir: string) => realOrUndefined(dir) ?? path.resolve(dir);

/**
 * A session's workspace, resolved once where the session starts (session/new, load and resume in
 * acp/server.ts, the early reader in acp/stdio.ts, the CLI's `run`, `call` and `policy`) and handed
 * down: the toolset, trust, skills, agents, rules, the recorder and its store, and the runtime take
 * these values instead of resolving the folder they were given again.
 */
export interface Workspace {
  /** The folder the session works in: absolute, spelled as it was given (what the editor and the model see). */
  readonly cwd: string;
  /** Further roots (ACP's additionalDirectories), absolute. */
  readonly additionalRoots: readonly string[];
  /** `cwd`, then the additional roots. */
  readonly roots: readonly string[];
  /** The real path of each root (symlinks resolved; a root that cannot be resolved as it is), in the same order. */
  readonly realRoots: readonly string[];
  /** The project's key in trusted.json: `cwd`'s real path. */
  readonly trustKey: string;
  /** The folder under `~/.toolhost/sessions/` that keeps this project's sessions (from `cwd` as spelled). */
  readonly projectFolder: string;
  /** A root (`cwd` or an additional one) is the user's home folder itself: every change and command asks (policy/ruleset.ts). */
  readonly isHome: boolean;
}

/** The workspace of `cwd` (relative: to the process's folder) and its additional roots, resolved once. */
export function resolveWorkspace(cwd: string, additionalRoots: readonly string[] = []): Workspace {
  const folder = path.resolve(cwd);
  const others = additionalRoots.map((root) => path.resolve(root));
  const roots = [folder, ...others];
  const realRoots = roots.map(real);
  const trustKey = realRoots[0] as string;
  // From now on nothing toolhost runs outside the sandbox is looked up in these roots (host-path.ts).
  guardHostPath(roots);
  let projectFolder: string | undefined;
  return {
    cwd: folder,
    additionalRoots: others,
    roots,
    realRoots,
    trustKey,
    // On first use: its hash needs node:crypto, which the early answer to session/new does without.
    get projectFolder() {
      return (projectFolder ??= projectFolderName(folder));
    },
    isHome: realRoots.includes(real(os.homedir())),
  };
}

/** A folder named by a command or a test (resolved here, once), or a session's Workspace as it is. */
export function asWorkspace(project: string | Workspace): Workspace {
  return typeof project === "string" ? resolveWorkspace(project) : project;
}

/** A project's folder name in the session store: readable, and unique by a hash of the full path. */
export function projectFolderName(cwd: string): string {
  const resolved = path.resolve(cwd);
  const readable = resolved
    .replace(/[^A-Za-z0-9._-]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(-60);
  // node:crypto on first use (17 internal modules and OpenSSL's start): not on the early path of session/new.
  const hash = process.getBuiltinModule("node:crypto").createHash("sha256").update(resolved).digest("hex").slice(0, 10);
  return `${readable || "root"}-${hash}`;
}

/** The root and the top-level system folders: never a workspace (a project below them is fine). */
const SYSTEM_FOLDERS = new Set([
  "/",
  ...["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr", "/etc", "/var", "/boot"],
  ...["/proc", "/sys", "/dev", "/run", "/opt", "/srv", "/snap", "/home", "/Users", "/mnt", "/media"],
  ...["/System", "/Library", "/Applications", "/private", "/private/etc", "/private/var"],
]);

/** Why `dir` cannot be a workspace (`/` or a system folder, also through a link), or null. `resolved`: its real path, when known. */
export function systemFolderProblem(dir: string, what = "cwd", resolved = real(dir)): string | null {
  if (!SYSTEM_FOLDERS.has(resolved) && !SYSTEM_FOLDERS.has(path.resolve(dir))) return null;
  const named = resolved === path.resolve(dir) ? dir : `${dir} (${resolved})`;
  return `${what} ${named} is ${resolved === "/" ? "the root of the file system" : "a system folder"}, which cannot be a workspace: tools and commands could change everything in it. Open a project folder instead`;
}
