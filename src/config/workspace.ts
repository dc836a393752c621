import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";

// Which folders may be a session's workspace. The sandbox makes the workspace writable and the
// rules call its files "inside": `/` or a system folder would hand tools and commands the machine.

/** The root and the top-level system folders: never a workspace (a project below them is fine). */
const SYSTEM_FOLDERS = new Set([
  "/",
  ...["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr", "/etc", "/var", "/boot"],
  ...["/proc", "/sys", "/dev", "/run", "/opt", "/srv", "/snap", "/home", "/Users", "/mnt", "/media"],
  ...["/System", "/Library", "/Applications", "/private", "/private/etc", "/private/var"],
]);

const real = (dir: string) => {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
};

/** Why `dir` cannot be a workspace (`/` or a system folder, also through a link), or null. */
export function systemFolderProblem(dir: string, what = "cwd"): string | null {
  const resolved = real(dir);
  if (!SYSTEM_FOLDERS.has(resolved) && !SYSTEM_FOLDERS.has(path.resolve(dir))) return null;
  const named = resolved === path.resolve(dir) ? dir : `${dir} (${resolved})`;
  return `${what} ${named} is ${resolved === "/" ? "the root of the file system" : "a system folder"}, which cannot be a workspace: tools and commands could change everything in it. Open a project folder instead`;
}

/** Whether `dir` is the user's home folder itself (a project inside it is not). */
export function isHomeFolder(dir: string, home = os.homedir()): boolean {
  return real(dir) === real(home);
}
