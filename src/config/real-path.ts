import { realpathSync } from "node:fs";
import path from "node:path";

// The one place paths are resolved through symlinks, for every layer above: the workspace, safe
// reads, the runtime's roots, the sandbox's mounts and the policy's targets.

/** The real path of an existing path, or undefined when it does not exist (or cannot be resolved). */
export function realOrUndefined(p: string): string | undefined {
  try {
    return realpathSync(p);
  } catch {
    return undefined;
  }
}

/**
 * The real path of `p`: its nearest existing parent resolved through symlinks, the rest as
 * written (a file not yet created under a symlinked folder lands where the folder points).
 */
export function realPath(p: string): string {
  const rest: string[] = [];
  for (let dir = p; ; dir = path.dirname(dir)) {
    const real = realOrUndefined(dir);
    if (real !== undefined) return path.join(real, ...rest.reverse());
    if (path.dirname(dir) === dir) return p;
    rest.push(path.basename(dir));
  }
}
