import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { createExtensionLoader, isToolFileName, listToolFiles, type LoadFile } from "../../src/host/loader.js";
import { EXTENSION_TIMEOUT_MS } from "../../src/host/extension-check.js";
import { isToolError, ToolError } from "../../src/tool/errors.js";
import { isSelfTruncated, selfTruncated } from "../../src/tool/envelope.js";
import { tempDir } from "../helpers.js";
import { toolFile, useTempHome } from "./extension-fixtures.js";

// The host cannot import the public entry (it sits above host/): the API is handed in, as the front ends do.
const publicEntry = () => import("../../src/public.js");

let load: LoadFile;
beforeAll(async () => {
  await useTempHome();
  load = createExtensionLoader({ api: publicEntry });
});

async function loadSource(name: string, source: string) {
  const dir = await tempDir({ [name]: source });
  return load(path.join(dir, name));
}

describe("extension loader", () => {
  it("imports a .ts file with `toolhost` resolved to the running host, no node_modules beside it", async () => {
    const loaded = await loadSource("hello.ts", toolFile("hello"));
    expect(loaded.problems).toEqual([]);
    const [tool] = loaded.tools;
    expect(tool).toMatchObject({ id: "hello", kind: "read", timeoutMs: EXTENSION_TIMEOUT_MS });
    expect(tool!.inputSchema).toMatchObject({ type: "object", properties: { name: { type: "string", default: "you" } } });
    expect(await tool!.execute(tool!.parameters.parse({}), {} as never)).toEqual({ tag: "hello", hello: "you" });
  });

  it("takes `export const tools = [...]`, .mts and .js files, and CommonJS", async () => {
    const dir = await tempDir({
      "many.ts": `import { defineTool, z } from "toolhost";
const make = (id: string) => defineTool({ id, description: "d", kind: "think", parameters: z.object({}), requires: {}, execute: async () => id });
export const tools = [make("one"), make("two")];`,
      "esm.mts": toolFile("from_mts"),
      "plain.js": `import { defineTool, z } from "toolhost";
export default defineTool({ id: "from_js", description: "d", kind: "other", parameters: z.object({}), requires: {}, execute: async () => 1 });`,
      "cjs.js": `const { defineTool, z } = require("toolhost");
module.exports = defineTool({ id: "from_cjs", description: "d", kind: "other", parameters: z.object({}), requires: {}, execute: async () => 1 });`,
    });
    const ids = [];
    for (const file of await listToolFiles(dir)) {
      const loaded = await load(file);
      expect(loaded.problems).toEqual([]);
      ids.push(...loaded.tools.map((t) => t.id));
    }
    expect(ids.sort()).toEqual(["from_cjs", "from_js", "from_mts", "one", "two"]);
  });

  it("lists tool files only: no helpers, types, tests or folders", async () => {
    const dir = await tempDir({
      "b.ts": "",
      "a.mts": "",
      "c.js": "",
      "_shared.ts": "",
      ".hidden.ts": "",
      "types.d.ts": "",
      "b.test.ts": "",
      "notes.md": "",
      "sub/x.ts": "",
    });
    await fsp.symlink(path.join(dir, "b.ts"), path.join(dir, "linked.ts"));
    expect((await listToolFiles(dir)).map((f) => path.basename(f))).toEqual(["a.mts", "b.ts", "c.js", "linked.ts"]);
    expect(await listToolFiles(path.join(dir, "missing"))).toEqual([]);
    expect(isToolFileName("x.spec.ts")).toBe(false);
  });

  it("reports a syntax error, a throw at import and a file without tools, with the file", async () => {
    const syntax = await loadSource("broken.ts", `export default defineTool({ id: "x", ,, });`);
    expect(syntax.tools).toEqual([]);
    expect(syntax.problems).toHaveLength(1);
    expect(syntax.problems[0]!.file).toBe(syntax.file);
    expect(syntax.problems[0]!.message).toMatch(/^failed to import: /);

    const thrower = await loadSource("thrower.ts", `throw new Error("no API key configured");\nexport default 1;`);
    expect(thrower.problems[0]!.message).toMatch(/failed to import: .*no API key configured/);

    const empty = await loadSource("empty.ts", `export const helper = 1;`);
    expect(empty.problems[0]!.message).toMatch(/exports no tool/);

    const missing = await loadSource("missing-dep.ts", `import "left-pad-that-does-not-exist";\nexport default 1;`);
    expect(missing.problems[0]!.message).toMatch(/failed to import: .*left-pad-that-does-not-exist/);
  });

  it("checks every export and reports each problem, keeping the valid tools of the file", async () => {
    const loaded = await loadSource(
      "mixed.ts",
      `import { defineTool, z } from "toolhost";
const ok = defineTool({ id: "fine", description: "d", kind: "read", parameters: z.object({}), requires: {}, execute: async () => 1 });
export const tools = [
  ok,
  { id: "Bad-Id", description: "d", kind: "read", parameters: z.object({}), requires: {}, execute: async () => 1 },
  { id: "no_kind", description: "d", kind: "writes", parameters: z.object({}), requires: {}, execute: async () => 1 },
  { id: "no_requires", description: "d", kind: "read", parameters: z.object({}), execute: async () => 1 },
  { id: "bad_requires", description: "d", kind: "read", parameters: z.object({}), requires: { fs: { reed: [] } }, execute: async () => 1 },
  { id: "typo_var", description: "d", kind: "read", parameters: z.object({}), requires: { fs: { read: ["{worksapce}/**"] } }, execute: async () => 1 },
  { id: "not_object", description: "d", kind: "read", parameters: z.string(), requires: {}, execute: async () => 1 },
  { id: "zod3", description: "d", kind: "read", parameters: { safeParse() {}, _def: {} }, requires: {}, execute: async () => 1 },
  { id: "no_exec", description: "", kind: "read", parameters: z.object({}), requires: {}, timeoutMs: -1 },
  "a string",
  ok,
];`,
    );
    expect(loaded.tools.map((t) => t.id)).toEqual(["fine"]);
    const messages = loaded.problems.map((p) => p.message);
    expect(messages).toEqual([
      expect.stringMatching(/id "Bad-Id" does not match/),
      expect.stringMatching(/tool "no_kind": kind "writes" is not an ACP kind \(read, edit, /),
      expect.stringMatching(/tool "no_requires": requires is missing/),
      expect.stringMatching(/tool "bad_requires": requires is not a valid RequirementSet/),
      expect.stringMatching(/tool "typo_var": requires: Undefined variable \{worksapce\}/),
      expect.stringMatching(/tool "not_object": parameters must describe an object/),
      expect.stringMatching(/tool "zod3": parameters look like a zod 3 schema/),
      expect.stringMatching(/tool "no_exec": description must be a non-empty string; execute must be a function; timeoutMs must be/),
      expect.stringMatching(/export #10: the export is not a tool object \(got string\)/),
    ]);
    expect(loaded.problems.every((p) => p.file === loaded.file)).toBe(true);
  });

  it("re-imports fresh each time: an edit to the file or to a helper it imports is seen", async () => {
    const dir = await tempDir({
      "_label.ts": `export const label = "first";`,
      "reload.ts": `import { defineTool, z } from "toolhost";
import { label } from "./_label.ts";
export default defineTool({ id: "reload_me", description: "v1 " + label, kind: "read", parameters: z.object({}), requires: {}, execute: async () => label });`,
    });
    const file = path.join(dir, "reload.ts");
    expect((await load(file)).tools[0]!.description).toBe("v1 first");
    await fsp.writeFile(path.join(dir, "_label.ts"), `export const label = "second";`);
    await fsp.writeFile(file, (await fsp.readFile(file, "utf8")).replace('"v1 "', '"v2 "'));
    const again = (await load(file)).tools[0]!;
    expect(again.description).toBe("v2 second");
    expect(await again.execute({}, {} as never)).toBe("second");
  });

  it("accepts a plain JSON Schema for parameters and validates with it", async () => {
    const loaded = await loadSource(
      "json.ts",
      `import { defineTool } from "toolhost";
export default defineTool({
  id: "json_params",
  description: "d",
  kind: "read",
  parameters: { type: "object", properties: { n: { type: "integer", minimum: 1 }, mode: { enum: ["a", "b"] } }, required: ["n"], additionalProperties: false },
  requires: {},
  execute: async (args) => args,
});`,
    );
    expect(loaded.problems).toEqual([]);
    const tool = loaded.tools[0]!;
    expect(tool.inputSchema).toEqual({
      type: "object",
      properties: { n: { type: "integer", minimum: 1 }, mode: { enum: ["a", "b"] } },
      required: ["n"],
      additionalProperties: false,
    });
    expect(tool.parameters.safeParse({ n: 2, mode: "a" }).success).toBe(true);
    expect(tool.parameters.safeParse({ n: 0 }).success).toBe(false);
    expect(tool.parameters.safeParse({ mode: "a" }).success).toBe(false);
    expect(tool.parameters.safeParse({ n: 1, extra: true }).success).toBe(false);
  });

  it("serves the handed-in API plus all of zod as `toolhost`, loading it once, with the first file", async () => {
    let loads = 0;
    const api = async () => {
      loads++;
      return { ...(await publicEntry()), greeting: "from the front end" };
    };
    const counted = createExtensionLoader({ api });
    expect(loads).toBe(0);
    const dir = await tempDir({
      "a.ts": `import { defineTool, greeting, z } from "toolhost";
export default defineTool({ id: "greets", description: greeting, kind: "read", parameters: z.object({ at: z.iso.datetime() }), requires: {}, execute: async () => 1 });`,
      "b.ts": toolFile("second"),
    });
    const [first, second] = await Promise.all([counted(path.join(dir, "a.ts")), counted(path.join(dir, "b.ts"))]);
    expect([...first.problems, ...second.problems]).toEqual([]);
    expect(first.tools[0]!.description).toBe("from the front end");
    expect(second.tools[0]!.id).toBe("second");
    expect(loads).toBe(1);
  });

  it("throws when the API cannot load (no file is to blame), and tries again on the next file", async () => {
    let attempts = 0;
    const flaky = createExtensionLoader({
      api: async () => {
        if (++attempts === 1) throw new Error("the public entry is missing");
        return publicEntry();
      },
    });
    const dir = await tempDir({ "ok.ts": toolFile("ok") });
    await expect(flaky(path.join(dir, "ok.ts"))).rejects.toThrow("the public entry is missing");
    expect((await flaky(path.join(dir, "ok.ts"))).tools.map((t) => t.id)).toEqual(["ok"]);
    expect(attempts).toBe(2);
  });

  it("recognises a ToolError and a self-truncated result from another copy of toolhost", async () => {
    // dist/ is a separate module instance from the src/ these tests run, as an embedder's copy would be.
    const other = (await import(new URL("../../dist/index.js", import.meta.url).href)) as typeof import("../../src/index.js");
    const foreign = new other.ToolError("not_found", "gone");
    expect(foreign instanceof ToolError).toBe(false);
    expect(isToolError(foreign)).toBe(true);
    expect(isToolError(Object.assign(new Error("x"), { code: "not_found" }))).toBe(false);
    expect(isSelfTruncated(other.selfTruncated("d", { truncated: false }))).toBe(true);
    expect(other.isSelfTruncated(selfTruncated("d", { truncated: false }))).toBe(true);
  });
});
