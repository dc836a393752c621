import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { appendProjectRules, projectConfigPath } from "../../src/config/project-permissions.js";
import { loadRules } from "../../src/policy/ruleset.js";
import { tempDir } from "../helpers.js";

// "Always, for this project" writes the project's config file: atomically, keeping what is there.

let project: string;
let home: string;
beforeEach(async () => {
  project = await tempDir();
  home = await tempDir();
});
afterEach(async () => {
  await fsp.rm(project, { recursive: true, force: true });
  await fsp.rm(home, { recursive: true, force: true });
});

const allow = (pattern: string) => ({ permission: "bash", pattern, action: "allow" as const });
const read = async () => JSON.parse(await fsp.readFile(projectConfigPath(project), "utf8")) as Record<string, unknown>;

describe("appendProjectRules", () => {
  it("creates the folder and file when missing, and the ruleset reads the rules back as project rules", async () => {
    const result = await appendProjectRules(project, [allow("git status"), allow("git status *")]);
    expect(result).toEqual({ file: path.join(project, ".toolhost", "config.json") });
    expect(await read()).toEqual({ permissions: [allow("git status"), allow("git status *")] });
    const loaded = loadRules({ manifest: { rules: [] }, home, project: { dir: project, trusted: true } });
    expect(loaded.problems).toEqual([]);
    expect(loaded.rules.map((r) => `${r.source} ${r.pattern}`)).toEqual(["project git status", "project git status *"]);
  });

  it("keeps every other key and rule, adds none twice, and leaves no temp file", async () => {
    await fsp.mkdir(path.join(project, ".toolhost"));
    const before = {
      toolDirs: ["tools"],
      note: { keep: true },
      permissions: [{ permission: "read", action: "deny", pattern: "secret/**" }],
    };
    await fsp.writeFile(projectConfigPath(project), JSON.stringify(before));
    await appendProjectRules(project, [allow("make")]);
    await appendProjectRules(project, [allow("make"), allow("make *")]);
    expect(await read()).toEqual({ ...before, permissions: [...before.permissions, allow("make"), allow("make *")] });
    expect(await fsp.readdir(path.join(project, ".toolhost"))).toEqual(["config.json"]);
  });

  it("never overwrites a file that is not valid JSON, or whose permissions is not a list", async () => {
    await fsp.mkdir(path.join(project, ".toolhost"));
    await fsp.writeFile(projectConfigPath(project), "{ not json");
    expect((await appendProjectRules(project, [allow("make")])).error).toMatch(/not valid JSON/);
    expect(await fsp.readFile(projectConfigPath(project), "utf8")).toBe("{ not json");
    await fsp.writeFile(projectConfigPath(project), '{"permissions": {"a": 1}}');
    expect((await appendProjectRules(project, [allow("make")])).error).toMatch(/not a list/);
    expect(await fsp.readFile(projectConfigPath(project), "utf8")).toBe('{"permissions": {"a": 1}}');
  });

  it("replaces the file by rename: a reader holding the old file keeps its old text", async () => {
    await appendProjectRules(project, [allow("a")]);
    const handle = await fsp.open(projectConfigPath(project), "r");
    try {
      const inode = (await handle.stat()).ino;
      await appendProjectRules(project, [allow("b")]);
      expect((await fsp.stat(projectConfigPath(project))).ino).not.toBe(inode);
      expect(JSON.parse(await handle.readFile("utf8"))).toEqual({ permissions: [allow("a")] });
    } finally {
      await handle.close();
    }
  });
});
