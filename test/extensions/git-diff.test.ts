import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AnyTool } from "../../src/tool/define.js";
import { call, diskWorkspace, errorOf, output, type Workspace } from "../helpers.js";
import { git, loadShipped } from "./shipped.js";

let tool: AnyTool;
let ws: Workspace;
beforeAll(async () => {
  tool = await loadShipped("extensions/git_diff.ts");
});
afterEach(async () => ws?.cleanup());

async function repo() {
  ws = await diskWorkspace({ "src/a.ts": "export const a = 1;\n", "README.md": "# demo\n" });
  await git(ws.root, "init", "-q", "-b", "main");
  await git(ws.root, "add", ".");
  await git(ws.root, "commit", "-q", "-m", "first");
  return ws.root;
}

interface Diff {
  files: { path: string; added: number | null; removed: number | null }[];
  added: number;
  removed: number;
  diff?: string;
}

describe("extensions/git_diff.ts", () => {
  it("shows unstaged changes by default, staged ones with staged, and changes against a ref", async () => {
    const root = await repo();
    await fsp.writeFile(path.join(root, "src/a.ts"), "export const a = 2;\nexport const b = 3;\n");
    const unstaged = output<Diff>((await call(tool, {}, ws.session)).envelope);
    expect(unstaged.files).toEqual([{ path: "src/a.ts", added: 2, removed: 1 }]);
    expect(unstaged.diff).toContain("-export const a = 1;\n+export const a = 2;\n+export const b = 3;");

    expect(output<Diff>((await call(tool, { staged: true }, ws.session)).envelope).files).toEqual([]);
    await git(root, "add", "src/a.ts");
    const staged = output<Diff>((await call(tool, { staged: true, stat: true }, ws.session)).envelope);
    expect(staged).toEqual({ ref: null, staged: true, files: [{ path: "src/a.ts", added: 2, removed: 1 }], added: 2, removed: 1 });

    await git(root, "commit", "-q", "-m", "second");
    await fsp.writeFile(path.join(root, "README.md"), "# demo ✓\n");
    const sinceFirst = output<Diff>((await call(tool, { ref: "HEAD~1", paths: ["src"] }, ws.session)).envelope);
    expect(sinceFirst.files.map((f) => f.path)).toEqual(["src/a.ts"]);
    const all = output<Diff>((await call(tool, { ref: "HEAD~1" }, ws.session)).envelope);
    expect(all.files.map((f) => f.path)).toEqual(["README.md", "src/a.ts"]);
  });

  it("refuses refs that git would read as options, and paths outside the workspace", async () => {
    await repo();
    expect(errorOf((await call(tool, { ref: "--output=/tmp/pwned" }, ws.session)).envelope, "invalid_arguments")).toBeTruthy();
    expect(errorOf((await call(tool, { paths: ["../../etc"] }, ws.session)).envelope, "outside_root")).toBeTruthy();
    expect(errorOf((await call(tool, { ref: "no-such-branch" }, ws.session)).envelope, "execution_failed")).toMatch(/no-such-branch/);
  });

  it("leaves a large patch to the host, which cuts it and keeps the whole in a sidecar", async () => {
    const root = await repo();
    await fsp.writeFile(path.join(root, "big.txt"), Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join("\n"));
    await git(root, "add", "big.txt");
    const { envelope } = await call(tool, { staged: true }, ws.session);
    const data = output<Diff>(envelope);
    expect(data.files).toEqual([{ path: "big.txt", added: 20_000, removed: 0 }]);
    expect(envelope.metadata.truncated).toBe(true);
    expect(Buffer.byteLength(data.diff!)).toBeLessThan(110 * 1024);
    expect(await fsp.readFile(envelope.metadata.output_path!, "utf8")).toContain("+line 19999");
  });

  it("says so outside a git repository", async () => {
    ws = await diskWorkspace({ "a.txt": "x" });
    expect(errorOf((await call(tool, {}, ws.session)).envelope, "not_found")).toMatch(/not inside a git repository/);
  });
});
