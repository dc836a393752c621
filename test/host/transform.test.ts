import * as fsp from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { createExtensionLoader } from "../../src/host/loader.js";
import { createEsbuildTransform, type EsbuildLike } from "../../src/host/transform.js";
import { tempDir } from "../helpers.js";
import { toolFile, useTempHome } from "./extension-fixtures.js";

const publicEntry = () => import("../../src/public.js");

/** A tool file whose execute returns `value` (an expression of the file). */
const returning = (id: string, value: string, head = "") => `import { defineTool, z } from "toolhost";
${head}
export default defineTool({ id: ${JSON.stringify(id)}, description: "d", kind: "think", parameters: z.object({}), requires: {},
  execute: async () => ${value} });
`;

async function loadWithCache(files: Record<string, string>, entry: string) {
  const dir = await tempDir(files);
  const cacheDir = path.join(dir, ".cache");
  const loaded = await createExtensionLoader({ api: publicEntry, cacheDir })(path.join(dir, entry));
  const cached = await Promise.all((await fsp.readdir(cacheDir)).map((name) => fsp.readFile(path.join(cacheDir, name), "utf8")));
  return { dir, loaded, cached };
}

const run = (loaded: Awaited<ReturnType<typeof loadWithCache>>["loaded"]) => loaded.tools[0]!.execute({}, {} as never);

beforeAll(async () => {
  await useTempHome();
});

describe("the extension transform (esbuild, jiti's babel where only it will do)", () => {
  it("transforms a typed file and the helper it imports with esbuild, into jiti's content-addressed cache", async () => {
    const { loaded, cached } = await loadWithCache(
      {
        "_shared.ts": "export const clamp = (n: number, hi: number): number => Math.min(n, hi);\n",
        "ranked.ts": returning("ranked", "clamp(7 as number, 5)", 'import { clamp } from "./_shared.ts";\ninterface Unused { a: string }'),
      },
      "ranked.ts",
    );
    expect(loaded.problems).toEqual([]);
    expect(await run(loaded)).toBe(5);
    expect(cached).toHaveLength(2);
    // esbuild's CommonJS output (babel writes `Object.defineProperty(exports, "__esModule"…`).
    for (const code of cached) expect(code).toContain("__toCommonJS");
  });

  it("keeps jiti's own handling of import.meta, import() and top-level await", async () => {
    const { dir, loaded } = await loadWithCache(
      {
        "meta.ts": returning(
          "meta",
          "({ url: import.meta.url, dirname: import.meta.dirname, sep: (await import('node:path')).sep, top })",
          "const top: number = await Promise.resolve(3);",
        ),
      },
      "meta.ts",
    );
    expect(loaded.problems).toEqual([]);
    expect(await run(loaded)).toEqual({ url: pathToFileURL(path.join(dir, "meta.ts")).href, dirname: dir, sep: path.sep, top: 3 });
  });

  it("runs ESM strict, as before", async () => {
    const { loaded } = await loadWithCache(
      { "strict.ts": returning("strict", "(function (this: unknown) { return this; })()") },
      "strict.ts",
    );
    expect(await run(loaded)).toBeUndefined();
  });

  it("reports syntax errors as jiti's transform did", async () => {
    const { loaded } = await loadWithCache({ "broken.ts": `export default defineTool({ id: "x", ,, });` }, "broken.ts");
    expect(loaded.tools).toEqual([]);
    expect(loaded.problems[0]!.message).toMatch(/^failed to import: .*(ParseError|SyntaxError|Unexpected)/s);
  });

  it("transpiles the rest of a cold folder in one batch after the first miss, and never uses a batch result for other source", async () => {
    const real = createRequire(import.meta.url)("esbuild") as EsbuildLike;
    const calls = { sync: 0, batched: 0 };
    const counting: EsbuildLike = {
      transformSync: (input, options) => (calls.sync++, real.transformSync(input, options)),
      transform: (input, options) => (calls.batched++, real.transform(input, options)),
    };
    const sources = { "a.ts": "export const a: number = 1;\n", "b.ts": "export const b: string = 'b';\n", "_c.ts": "export type C = 1;\n" };
    const dir = await tempDir({ ...sources, "notes.md": "not code\n", "types.d.ts": "export type T = 1;\n" });
    const esbuild = createEsbuildTransform({ esbuild: () => counting });
    const at = (name: keyof typeof sources, source: string = sources[name]) =>
      esbuild.transform({ source, filename: path.join(dir, name), ts: true, async: true }).code;

    const first = at("a.ts");
    await esbuild.settled();
    expect(calls).toEqual({ sync: 1, batched: 2 });
    const direct = (name: keyof typeof sources) =>
      real.transformSync(sources[name], {
        loader: "ts",
        format: "cjs",
        target: "node20",
        sourcefile: path.join(dir, name),
        banner: '"use strict";',
      }).code;
    expect([at("b.ts"), at("_c.ts")]).toEqual([direct("b.ts"), direct("_c.ts")]);
    expect(first).toContain("a = 1");
    expect(calls).toEqual({ sync: 1, batched: 2 });
    // Edited since the batch read it: transpiled again, from the source jiti hands over.
    expect(at("b.ts", "export const b: string = 'edited';\n")).toContain("edited");
    expect(calls.sync).toBe(2);
  });

  it("leaves a package import to jiti's transform, and everything to it when esbuild cannot load", () => {
    const esbuildCalls: string[] = [];
    const spy = {
      transformSync: (input: string) => (esbuildCalls.push(input), { code: 'var x = require("left-pad");' }),
      transform: async () => ({ code: "" }),
    };
    const withPackage = createEsbuildTransform({ esbuild: () => spy }).transform({
      source: 'import x from "left-pad";\nexport const y = x;',
      filename: "/a.ts",
      ts: true,
    });
    expect(esbuildCalls).toHaveLength(1);
    expect(withPackage.code).not.toBe('var x = require("left-pad");');
    expect(withPackage.code).toContain("left-pad");

    const none = createEsbuildTransform({ esbuild: () => undefined }).transform({
      source: toolFile("plain"),
      filename: "/plain.ts",
      ts: true,
    });
    expect(none.code).not.toContain("__toCommonJS");
    expect(none.code).toContain("toolhost");
  });
});
