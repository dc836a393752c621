// The benches, scripts and test fixtures import the built modules by path (`dist/...`): a module
// that moves in src/ leaves such a string behind, which no type check sees. Each one must name a
// file the build made (`npm test` builds before the tests run).
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

const SPELLINGS = [
  // dist("runtime/session.js"), modules(…), bdist(…): a helper that joins its argument under dist/.
  /\b(?:dist|modules|bdist)\("([^"]+\.js)"\)/g,
  // "../../dist/runtime/session.js" from test/fixtures/.
  /"\.\.\/\.\.\/dist\/([^"]+\.js)"/g,
  // path.join(root, "dist", "agent", "record", "session-store.js")
  /path\.join\(\s*root,\s*"dist",\s*((?:"[^"]+",\s*)*"[^"]+\.js")\s*\)/g,
];

function distPaths(file: string): string[] {
  const text = fs.readFileSync(file, "utf8");
  return SPELLINGS.flatMap((re) =>
    [...text.matchAll(re)].map((m) =>
      (m[1] as string)
        .split(/"\s*,\s*"/)
        .join("/")
        .replaceAll('"', ""),
    ),
  );
}

describe("paths into dist/", () => {
  it("every built module a bench, script or fixture imports by path exists", () => {
    const files = ["bench", "scripts", "test/fixtures"].flatMap((dir) =>
      fs
        .readdirSync(path.join(root, dir))
        .filter((f) => f.endsWith(".mjs"))
        .map((f) => path.join(root, dir, f)),
    );
    const named = files.flatMap((file) => distPaths(file).map((p) => ({ file: path.relative(root, file), p })));
    // The spellings above find them: a rewrite that no longer matches would pass with nothing checked.
    expect(named.length).toBeGreaterThan(30);
    const missing = named.filter(({ p }) => !fs.existsSync(path.join(root, "dist", p))).map(({ file, p }) => `${file}: dist/${p}`);
    expect(missing).toEqual([]);
  });
});
