import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AnyTool } from "../../src/tool/define.js";
import { call, diskWorkspace, errorOf, output, type Workspace } from "../helpers.js";
import { git, loadShipped } from "./shipped.js";

let tool: AnyTool;
let ws: Workspace;
beforeAll(async () => {
  tool = await loadShipped("profiles/release/tools/release_notes.ts");
});
afterEach(async () => ws?.cleanup());

async function commit(message: string) {
  await fsp.appendFile(path.join(ws.root, "log.txt"), `${message}\n`);
  await git(ws.root, "add", ".");
  await git(ws.root, "commit", "-q", "-m", message);
}

describe("profiles/release/tools/release_notes.ts", () => {
  it("groups the commits since the last tag and suggests the bump", async () => {
    ws = await diskWorkspace();
    await git(ws.root, "init", "-q", "-b", "main");
    await commit("feat: an old feature");
    await git(ws.root, "tag", "v1.0.0");
    await commit("fix(parser): handle empty input");
    await commit("feat(cli)!: rename --out to --output");
    await commit("docs: explain profiles");
    await commit("host: tidy the registry");

    const data = output<{
      range: string;
      suggested_bump: string;
      commits: number;
      markdown: string;
      sections: { title: string; entries: unknown[] }[];
    }>((await call(tool, {}, ws.session)).envelope);
    expect(data).toMatchObject({ range: "v1.0.0..HEAD", since: "v1.0.0", commits: 4, suggested_bump: "major" });
    expect(data.sections.map((s) => s.title)).toEqual(["Features", "Fixes", "Documentation", "Other changes"]);
    expect(data.markdown).toContain("- **BREAKING** **cli:** rename --out to --output (");
    expect(data.markdown).toContain("### Other changes\n\n- host: tidy the registry (");
    expect(data.markdown).not.toContain("an old feature");

    const all = output<{ commits: number; suggested_bump: string }>((await call(tool, { since: "HEAD~1" }, ws.session)).envelope);
    expect(all).toMatchObject({ commits: 1, suggested_bump: "patch" });
  });

  it("reads all history without a tag, and runs only the git commands it declared", async () => {
    ws = await diskWorkspace();
    await git(ws.root, "init", "-q", "-b", "main");
    await commit("fix: one");
    expect(output((await call(tool, {}, ws.session)).envelope)).toMatchObject({ range: "HEAD", since: null, commits: 1 });
    expect(errorOf((await call(tool, { since: "--all" }, ws.session)).envelope, "invalid_arguments")).toBeTruthy();
  });
});
