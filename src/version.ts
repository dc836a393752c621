import { readFileSync } from "node:fs";

/** The package version, from the nearest package.json above this module (src/, dist/ or a bundle chunk). */
function readVersion(): string {
  for (let dir = new URL("./", import.meta.url); ; dir = new URL("../", dir)) {
    try {
      const pkg = JSON.parse(readFileSync(new URL("package.json", dir), "utf8")) as { name?: string; version?: string };
      if (pkg.name === "toolhost" && pkg.version) return pkg.version;
    } catch {
      // not here; keep climbing
    }
    if (dir.pathname === "/") return "0.0.0";
  }
}

export const version: string = readVersion();
