import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { checkTrust, isTrusted, readTrust, trust, trustFile, untrust } from "../../src/host/trust.js";
import { tempDir } from "../helpers.js";
import { useTempHome } from "./extension-fixtures.js";

let home: string;
beforeEach(async () => {
  home = await useTempHome();
});

describe("project trust", () => {
  it("is stored per real path, so every spelling of a project agrees", async () => {
    const project = await tempDir();
    const link = path.join(await tempDir(), "link");
    await fsp.symlink(project, link);
    expect(await isTrusted(project)).toBe(false);
    expect(await trust(link)).toEqual({ path: project, already: false });
    expect(await isTrusted(project)).toBe(true);
    expect(await isTrusted(`${project}/`)).toBe(true);
    expect(await trust(project)).toEqual({ path: project, already: true });
    expect(await isTrusted(path.join(project, "sub"))).toBe(false);
    const store = JSON.parse(await fsp.readFile(trustFile(home), "utf8"));
    expect(Object.keys(store.projects)).toEqual([project]);
    expect((await fsp.stat(trustFile(home))).mode & 0o777).toBe(0o600);
    expect(await untrust(link)).toEqual({ path: project, was: true });
    expect(await isTrusted(project)).toBe(false);
  });

  it("writes atomically and keeps every concurrent grant", async () => {
    const projects = await Promise.all(Array.from({ length: 8 }, () => tempDir()));
    await Promise.all(projects.map((p) => trust(p)));
    for (const p of projects) expect(await isTrusted(p)).toBe(true);
    expect((await fsp.readdir(home)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });

  it("trusts nothing while the store is broken, and refuses to overwrite it", async () => {
    const project = await tempDir();
    await trust(project);
    await fsp.writeFile(trustFile(home), '{"version": 1, "projects": []}');
    expect(await isTrusted(project)).toBe(false);
    expect((await readTrust(home)).error).toMatch(/trusted\.json/);
    await expect(trust(project)).rejects.toThrow(/Fix or delete the file/);
    expect(await fsp.readFile(trustFile(home), "utf8")).toBe('{"version": 1, "projects": []}');
  });
});

describe("trust covers the project's contents as they were trusted", () => {
  const files = {
    ".toolhost/tools/x.ts": "export default 1;\n",
    ".toolhost/agents/a.md": "---\nname: a\ndescription: A\n---\n",
    ".mcp.json": '{"mcpServers": {}}\n',
    "src/app.ts": "not trusted content\n",
  };

  it("a file added, changed or removed under the trusted paths makes the project untrusted, naming it", async () => {
    const project = await tempDir(files);
    await trust(project);
    expect(await checkTrust(project)).toMatchObject({ trusted: true, changes: [], legacy: false });
    // Files outside the trusted paths are not part of it.
    await fsp.writeFile(path.join(project, "src/app.ts"), "changed\n");
    expect(await isTrusted(project)).toBe(true);

    await fsp.writeFile(path.join(project, ".toolhost/tools/x.ts"), "export default 2;\n");
    await fsp.writeFile(path.join(project, ".toolhost/tools/y.ts"), "export default 3;\n");
    await fsp.rm(path.join(project, ".toolhost/agents/a.md"));
    await fsp.writeFile(path.join(project, ".mcp.json"), '{"mcpServers": {"evil": {"command": "sh"}}}\n');
    const check = await checkTrust(project);
    expect(check.trusted).toBe(false);
    expect(check.changes).toEqual([
      { path: ".mcp.json", change: "modified" },
      { path: ".toolhost/agents/a.md", change: "removed" },
      { path: ".toolhost/tools/x.ts", change: "modified" },
      { path: ".toolhost/tools/y.ts", change: "added" },
    ]);
    // Trusting again records the contents as they are now.
    const again = await trust(project);
    expect(again).toMatchObject({ already: false, changes: check.changes });
    expect(await checkTrust(project)).toMatchObject({ trusted: true, changes: [] });
    expect(await trust(project)).toEqual({ path: project, already: true });
  });

  it("stores a sha256 per file in a version 2 store, and records a symlink as a link without following it out", async () => {
    const project = await tempDir(files);
    const outside = await tempDir({ "tool.ts": "export default 'outside';\n", "other.ts": "export default 'other';\n" });
    await fsp.symlink(path.join(outside, "tool.ts"), path.join(project, ".toolhost/tools/linked.ts"));
    await trust(project);
    const store = JSON.parse(await fsp.readFile(trustFile(home), "utf8"));
    expect(store.version).toBe(2);
    const recorded = store.projects[project].files as Record<string, string>;
    expect(recorded[".toolhost/tools/x.ts"]).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(recorded[".toolhost/tools/linked.ts"]).toBe(`symlink:${path.join(outside, "tool.ts")}`);
    expect(Object.keys(recorded)).not.toContain("src/app.ts");
    // Pointing the link elsewhere is a change.
    await fsp.rm(path.join(project, ".toolhost/tools/linked.ts"));
    await fsp.symlink(path.join(outside, "other.ts"), path.join(project, ".toolhost/tools/linked.ts"));
    expect((await checkTrust(project)).changes).toEqual([{ path: ".toolhost/tools/linked.ts", change: "modified" }]);
  });

  it("reads a version 1 entry (no recorded files) as trusting none of the project's files: they are asked about once", async () => {
    const project = await tempDir(files);
    const empty = await tempDir({ "src/a.ts": "" });
    const at = "2025-01-01T00:00:00.000Z";
    await fsp.mkdir(home, { recursive: true });
    await fsp.writeFile(
      trustFile(home),
      JSON.stringify({ version: 1, projects: { [project]: { trustedAt: at }, [empty]: { trustedAt: at } } }),
    );
    const check = await checkTrust(project);
    expect(check).toMatchObject({ trusted: false, legacy: true });
    expect(check.changes.map((c) => `${c.change} ${c.path}`)).toEqual([
      "added .mcp.json",
      "added .toolhost/agents/a.md",
      "added .toolhost/tools/x.ts",
    ]);
    // A project with none of those files has nothing to ask about.
    expect(await isTrusted(empty)).toBe(true);
    expect(await trust(project)).toMatchObject({ already: false, changes: check.changes, legacy: true });
    expect(await isTrusted(project)).toBe(true);
    expect(JSON.parse(await fsp.readFile(trustFile(home), "utf8")).projects[empty]).toEqual({ trustedAt: at });
  });
});
