import * as fsp from "node:fs/promises";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { createExtensionLoader } from "../../src/host/loader.js";
import { createEsbuildTransform } from "../../src/host/transform.js";
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

  it("leaves a package import to jiti's transform, and everything to it when esbuild cannot load", () => {
    const esbuildCalls: string[] = [];
    const spy = { transformSync: (input: string) => (esbuildCalls.push(input), { code: 'var x = require("left-pad");' }) };
    const withPackage = createEsbuildTransform({ esbuild: () => spy })({
      source: 'import x from "left-pad";\nexport const y = x;',
      filename: "/a.ts",
      ts: true,
    });
    expect(esbuildCalls).toHaveLength(1);
    expect(withPackage.code).not.toBe('var x = require("left-pad");');
    expect(withPackage.code).toContain("left-pad");

    const none = createEsbuildTransform({ esbuild: () => undefined })({ source: toolFile("plain"), filename: "/plain.ts", ts: true });
    expect(none.code).not.toContain("__toCommonJS");
    expect(none.code).toContain("toolhost");
  });
});
