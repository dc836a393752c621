import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { extensionLoader } from "../../src/agent/extension-loader.js";
import { ModuleGuard } from "../../src/host/module-pins.js";
import { buildToolset } from "../../src/host/toolset.js";
import { checkTrust, readTrust, trust } from "../../src/host/trust.js";
import { tempDir } from "../helpers.js";
import { useTempHome } from "./extension-fixtures.js";

// Trust pins what a project's tools import from the workspace (host/module-pins.ts): each file is
// judged by the source the loader read, before it runs. Every case leaves a marker when the
// module's top level runs, so a refusal is judged by its effect.

const loader = extensionLoader();

let home: string;
let marks: string;
beforeEach(async () => {
  home = await useTempHome();
  marks = await tempDir();
});

/** A module that leaves `<marks>/<name>` behind when its top level runs, and exports `greet`. */
function module(name: string, format: "esm" | "cjs" = "esm"): string {
  const mark = JSON.stringify(path.join(marks, name));
  return format === "esm"
    ? `import { writeFileSync } from "node:fs";\nwriteFileSync(${mark}, "ran");\nexport const greet = () => ${JSON.stringify(name)};\n`
    : `require("node:fs").writeFileSync(${mark}, "ran");\nexports.greet = () => ${JSON.stringify(name)};\n`;
}

/** A project tool that imports `spec` (its `greet`) at load, and `late` (if any) when called. */
function tool(id: string, spec: string, late?: string): string {
  return `import { defineTool, z } from "toolhost";
import { greet } from ${JSON.stringify(spec)};
export default defineTool({
  id: ${JSON.stringify(id)}, description: "x", kind: "read", parameters: z.object({}), requires: {},
  execute: async () => ${late ? `(await import(${JSON.stringify(late)})).greet()` : "greet()"},
});
`;
}

const ran = (name: string) => existsSync(path.join(marks, name));

async function project(files: Record<string, string>): Promise<string> {
  return tempDir(files);
}

describe("trust pins the workspace files a project's tools import", () => {
  it("records the graph at the first trusted load; a changed import is not loaded, and named; trusting again loads it", async () => {
    const dir = await project({
      ".toolhost/tools/hello.ts": tool("hello", "../../lib/greet.mjs"),
      "lib/greet.mjs": module("greet"),
      "lib/data.json": '{"a": 1}\n',
    });
    await trust(dir);
    const first = await buildToolset({ loader, cwd: dir });
    expect(first.registry.has("hello")).toBe(true);
    expect(ran("greet")).toBe(true);
    const entry = (await readTrust(home)).projects[dir]!;
    expect(Object.keys(entry.modules ?? {}).sort()).toEqual([".toolhost/tools/hello.ts", "lib/greet.mjs"]);

    await fsp.rm(path.join(marks, "greet"));
    await fsp.writeFile(path.join(dir, "lib/greet.mjs"), module("evil"));
    const check = await checkTrust(dir);
    expect(check.trusted).toBe(false);
    expect(check.changes).toEqual([{ path: "lib/greet.mjs", change: "modified" }]);
    const stale = await buildToolset({ loader, cwd: dir });
    expect(stale.registry.has("hello")).toBe(false);
    expect(stale.report.trustChanges).toEqual([{ path: "lib/greet.mjs", change: "modified" }]);
    expect(ran("evil")).toBe(false);

    // Control: trusted again as it is now, the same import loads (and is pinned anew).
    expect((await trust(dir)).changes).toEqual([{ path: "lib/greet.mjs", change: "modified" }]);
    const again = await buildToolset({ loader, cwd: dir });
    expect(again.registry.has("hello")).toBe(true);
    expect(ran("evil")).toBe(true);
  });

  it("judges the bytes the loader read, not an earlier look: a file that moved after the check is refused before it runs", async () => {
    const dir = await project({
      ".toolhost/tools/hello.ts": tool("hello", "../../lib/greet.cjs"),
      "lib/greet.cjs": module("greet", "cjs"),
    });
    const ws = { cwd: dir, trustKey: dir };
    const recording = new ModuleGuard(ws);
    recording.begin();
    expect((await loader(path.join(dir, ".toolhost/tools/hello.ts"), { guard: recording })).tools).toHaveLength(1);
    expect(recording.end()).toEqual([]);
    const pins = recording.snapshot();
    expect(Object.keys(pins).sort()).toEqual([".toolhost/tools/hello.ts", "lib/greet.cjs"]);

    await fsp.writeFile(path.join(dir, "lib/greet.cjs"), module("evil", "cjs"));
    const guard = new ModuleGuard(ws, pins);
    guard.begin();
    const loaded = await loader(path.join(dir, ".toolhost/tools/hello.ts"), { guard });
    expect(guard.end()).toEqual([{ path: "lib/greet.cjs", change: "modified" }]);
    expect(loaded.tools).toEqual([]);
    expect(ran("evil")).toBe(false);
    // Control: the same file through the unguarded loader runs.
    await loader(path.join(dir, ".toolhost/tools/hello.ts"));
    expect(ran("evil")).toBe(true);
  });

  it.each([
    ["an ES module imported with import()", "lib/late.mjs", "esm"],
    ["a CommonJS file imported with import()", "lib/late.cjs", "cjs"],
  ] as const)("refuses at call time %s that was not part of the graph", async (_name, late, format) => {
    const dir = await project({
      ".toolhost/tools/hello.ts": tool("hello", "../../lib/greet.mjs", `../../${late}`),
      "lib/greet.mjs": module("greet"),
      [late]: module("late", format),
    });
    await trust(dir);
    const built = await buildToolset({ loader, cwd: dir });
    const hello = built.registry.get("hello")!;
    await expect(hello.execute({}, {} as never)).rejects.toThrow(/not among the files the project's tools imported/);
    expect(ran("late")).toBe(false);
    // Control: without the guard (an unpinned load of the same tool) the call imports and runs it.
    const unpinned = await loader(path.join(dir, ".toolhost/tools/hello.ts"));
    expect(await unpinned.tools[0]!.execute({}, {} as never)).toBe("late");
    expect(ran("late")).toBe(true);
  });

  it("pins a package in the workspace's node_modules, a .json import and a type-module .js tool alike", async () => {
    const dir = await project({
      "package.json": '{"type": "module"}\n',
      ".toolhost/tools/hello.js": `import { defineTool, z } from "toolhost";
import { greet } from "dep";
import data from "../../lib/data.json";
export default defineTool({ id: "hello", description: "x", kind: "read", parameters: z.object({}), requires: {}, execute: async () => greet() + data.n });
`,
      "node_modules/dep/package.json": '{"name": "dep", "main": "index.js"}\n',
      "node_modules/dep/index.js": module("dep", "cjs"),
      "lib/data.json": '{"n": 1}\n',
    });
    await trust(dir);
    const first = await buildToolset({ loader, cwd: dir });
    expect(first.report.errors).toEqual([]);
    expect(await first.registry.get("hello")!.execute({}, {} as never)).toBe("dep1");
    const pinned = Object.keys((await readTrust(home)).projects[dir]!.modules ?? {}).sort();
    expect(pinned).toEqual([".toolhost/tools/hello.js", "lib/data.json", "node_modules/dep/index.js"]);
    for (const [file, text] of [
      ["node_modules/dep/index.js", module("evil", "cjs")],
      ["lib/data.json", '{"n": 2}\n'],
    ] as const) {
      const before = await fsp.readFile(path.join(dir, file), "utf8");
      await fsp.writeFile(path.join(dir, file), text);
      expect((await checkTrust(dir)).changes).toEqual([{ path: file, change: "modified" }]);
      expect((await buildToolset({ loader, cwd: dir })).registry.has("hello")).toBe(false);
      await fsp.writeFile(path.join(dir, file), before);
    }
    expect(ran("evil")).toBe(false);
    expect((await buildToolset({ loader, cwd: dir })).registry.has("hello")).toBe(true);
  });
});
