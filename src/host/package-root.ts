import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

let cached: string | undefined;

/**
 * The toolhost package folder (shipped `profiles/`, `extensions/`, `dist/`): the nearest
 * package.json named toolhost above this module, whether it runs from src/, dist/ or a bundle chunk.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string };
      if (pkg.name === "toolhost") return (cached = dir);
    } catch {
      // not here; keep climbing
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`toolhost: no package.json named toolhost above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}
