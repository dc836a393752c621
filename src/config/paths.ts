import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

// Where things live: the user's folder and the toolhost package. Node built-ins only, so every
// layer (runtime included) and start-up may import it.

/** The per-user folder (`{user-data}`): config, profiles, trusted projects. TOOLHOST_HOME overrides it (tests, portable installs). */
export function toolhostHome(): string {
  return process.env.TOOLHOST_HOME ?? path.join(os.homedir(), ".toolhost");
}

interface PackageInfo {
  dir: string;
  version: string;
}

let cached: PackageInfo | null | undefined;

/**
 * The toolhost package: the nearest package.json named toolhost above this module, whether it
 * runs from src/, dist/ or a bundle chunk. Null when there is none (a copied-out file).
 */
export function packageInfo(): PackageInfo | null {
  if (cached !== undefined) return cached;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    try {
      const pkg = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "toolhost") return (cached = { dir, version: pkg.version ?? "0.0.0" });
    } catch {
      // not here; keep climbing
    }
    const parent = path.dirname(dir);
    if (parent === dir) return (cached = null);
    dir = parent;
  }
}

/** The package folder (shipped `profiles/`, `extensions/`, `dist/`). */
export function packageRoot(): string {
  const info = packageInfo();
  if (!info) throw new Error(`toolhost: no package.json named toolhost above ${fileURLToPath(import.meta.url)}`);
  return info.dir;
}

/** The package version, from the toolhost package.json above this module. */
export const version: string = packageInfo()?.version ?? "0.0.0";
