import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers.js";

const root = fileURLToPath(new URL("../..", import.meta.url));
const run = promisify(execFile);

// What an extension author's editor does: type-check drop-in files against the published types
// (dist/index.d.ts), with "toolhost" mapped to them as docs/extensions.md shows.
describe("extension files type-check against the public entry", () => {
  it("accepts the shipped extensions and a drop-in file, and catches a wrong kind and a wrong argument", async () => {
    await fsp.access(path.join(root, "dist/index.d.ts")).catch(() => {
      throw new Error("dist/index.d.ts is missing: run `npm run build` (npm test does) first");
    });
    const dir = await tempDir({
      "tools/hello.ts": `import { defineTool, ToolError, z } from "toolhost";
export default defineTool({
  id: "hello",
  description: "Greets someone",
  kind: "other",
  parameters: z.object({ name: z.string() }),
  requires: {},
  async execute({ name }, ctx) {
    if (ctx.signal.aborted) throw new ToolError("aborted", "cancelled");
    return { greeting: \`Hello, \${name.toUpperCase()}\` };
  },
});
`,
      "tools/json.ts": `import { defineTool } from "toolhost";
export default defineTool({
  id: "json_tool",
  description: "d",
  kind: "read",
  parameters: { type: "object", properties: { n: { type: "number" } } },
  requires: {},
  execute: async (args) => Object.keys(args),
});
`,
      "tools/wrong.ts": `import { defineTool, z } from "toolhost";
export default defineTool({
  id: "wrong",
  description: "d",
  kind: "writes",
  parameters: z.object({ name: z.string() }),
  requires: { fs: { reed: [] } },
  execute: async (args) => args.nmae,
});
`,
    });
    const files = [
      ...["now", "git_diff", "package_scripts"].map((n) => path.join(root, "extensions", `${n}.ts`)),
      path.join(root, "profiles/release/tools/release_notes.ts"),
      ...["hello", "json", "wrong"].map((n) => path.join(dir, "tools", `${n}.ts`)),
    ];
    const tsconfig = {
      compilerOptions: {
        target: "ES2022",
        module: "NodeNext",
        moduleResolution: "NodeNext",
        strict: true,
        noEmit: true,
        skipLibCheck: true,
        typeRoots: [path.join(root, "node_modules/@types")],
        types: ["node"],
        paths: { toolhost: [path.join(root, "dist/index.d.ts")] },
      },
      files,
    };
    await fsp.writeFile(path.join(dir, "tsconfig.json"), JSON.stringify(tsconfig));
    const tsc = path.join(root, "node_modules/typescript/bin/tsc");
    const result = await run(process.execPath, [tsc, "-p", path.join(dir, "tsconfig.json"), "--pretty", "false"]).then(
      (r) => ({ code: 0, out: r.stdout }),
      (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }),
    );
    const errors = result.out.split("\n").filter((l) => / error TS\d+/.test(l));
    expect(
      errors.every((l) => l.includes("wrong.ts")),
      errors.join("\n"),
    ).toBe(true);
    expect(result.code).not.toBe(0);
    expect(result.out).toMatch(/Type '"writes"' is not assignable to type '"read" \| "edit" \|/);
    expect(result.out).toMatch(/'reed' does not exist/);
    expect(result.out).toMatch(/wrong\.ts\(8,\d+\): error TS2339: Property 'nmae' does not exist on type '\{ name: string; \}'/);
  });
});
