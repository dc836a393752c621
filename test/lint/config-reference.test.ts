// docs/configuration.md lists every TOOLHOST_* environment variable the code reads: a variable
// added in src/ without a line there fails here.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith(".ts") ? [full] : [];
  });
}

describe("the configuration reference", () => {
  it("names every TOOLHOST_ environment variable in src/", () => {
    const used = new Set<string>();
    for (const file of sourceFiles(path.join(root, "src"))) {
      for (const match of fs.readFileSync(file, "utf8").matchAll(/TOOLHOST_[A-Z0-9_]*[A-Z0-9]/g)) used.add(match[0]);
    }
    const reference = fs.readFileSync(path.join(root, "docs/configuration.md"), "utf8");
    const documented = new Set([...reference.matchAll(/`(TOOLHOST_[A-Z0-9_]+)`/g)].map((m) => m[1]));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((name) => !documented.has(name)).sort()).toEqual([]);
  });
});
