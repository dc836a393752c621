import os from "node:os";
import path from "node:path";

// One spelling of a model-given path for tools, runtime and policy alike: what the policy judges
// is what the runtime touches.

/** Model-given path → absolute path: expands `~`, resolves against the workspace. */
export function absolutize(raw: string, workspace: string): string {
  let p = raw.trim();
  if (p === "~" || p.startsWith("~/")) p = path.join(os.homedir(), p.slice(1));
  return path.resolve(workspace, p);
}

/** Whether `abs` is `dir` or lies below it (lexically; symlinks are the runtime's business). */
export function isInside(abs: string, dir: string): boolean {
  const rel = path.relative(dir, abs);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** Whether `abs` lies inside any of `roots`. */
export function isInsideAny(abs: string, roots: readonly string[]): boolean {
  return roots.some((root) => isInside(abs, root));
}

/** Workspace-relative (with `/`) when inside the workspace, absolute otherwise; the workspace itself is `.`. */
export function displayPath(abs: string, workspace: string): string {
  const rel = path.relative(workspace, abs);
  if (rel === "") return ".";
  return rel.startsWith("..") || path.isAbsolute(rel) ? abs : rel.split(path.sep).join("/");
}
