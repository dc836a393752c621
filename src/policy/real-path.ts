import { realpathSync } from "node:fs";
import path from "node:path";

/**
 * The real path of `p`: its nearest existing parent resolved through symlinks, the rest as
 * written (a file not yet created under a symlinked folder lands where the folder points).
 */
export function realPath(p: string): string {
  const rest: string[] = [];
  for (let dir = p; ; dir = path.dirname(dir)) {
    try {
      return path.join(realpathSync(dir), ...rest.reverse());
    } catch {
      if (path.dirname(dir) === dir) return p;
      rest.push(path.basename(dir));
    }
  }
}
