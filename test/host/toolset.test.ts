import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { extensionLoader } from "../../src/agent/extension-loader.js";
import { BUILTIN_TOOLS } from "../../src/host/builtins.js";
import { projectToolDir } from "../../src/host/discovery.js";
import type { LoadFile } from "../../src/host/loader.js";
import { buildToolset } from "../../src/host/toolset.js";
import { diffToolsets, formatDiff, formatLoadProblems } from "../../src/host/toolset-report.js";
import { isTrusted, trust } from "../../src/host/trust.js";
import { tempDir } from "../helpers.js";
import { toolFile, useTempHome } from "./extension-fixtures.js";

// One loader for the file, as a session keeps one: every build must still import fresh.
const loader = extensionLoader();
/** Every builtin, in order, but web_search: it is unavailable until a search provider is configured. */
const BUILTIN_IDS = BUILTIN_TOOLS.map((tool) => tool.id).filter((id) => id !== "web_search");

let home: string;
let project: string;
let extra: string;
beforeEach(async () => {
  home = await useTempHome();
  project = await tempDir({ "README.md": "# p\n" });
  extra = await tempDir();
  await fsp.writeFile(path.join(home, "config.json"), JSON.stringify({ toolDirs: [extra] }));
});

const write = async (file: string, text: string) => {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, text);
  return file;
};
const profileTools = (name = "default") => path.join(home, "profiles", name, "tools");

describe("buildToolset", () => {
  it("has only the builtins when there are no extensions, and nothing to report", async () => {
    const importsNothing: LoadFile = (file) => Promise.reject(new Error(`imported ${file}`));
    const { registry, report, manifest, profile } = await buildToolset({ loader: importsNothing, cwd: project });
    expect(registry.ids()).toEqual(BUILTIN_IDS);
    expect(report).toMatchObject({ profile: "default", trusted: false, shadowed: [], errors: [], skipped: [], disabled: [] });
    expect(profile.origin).toBe("shipped");
    expect(manifest).toEqual({});
    expect(formatLoadProblems(report)).toBeNull();
  });

  it("first found wins across profile, config and project folders (the user's before the project's); every loser is reported with both paths", async () => {
    const inProfile = await write(path.join(profileTools(), "hello.ts"), toolFile("hello", "profile"));
    const inProject = await write(path.join(projectToolDir(project), "hello.ts"), toolFile("hello", "project"));
    const projectOnly = await write(path.join(projectToolDir(project), "greet.ts"), toolFile("greet", "project"));
    const inExtra = await write(path.join(extra, "hello.ts"), toolFile("hello", "extra"));
    const greetExtra = await write(path.join(extra, "greet.ts"), toolFile("greet", "extra"));
    await trust(project);

    const { registry, report } = await buildToolset({ loader, cwd: project });
    expect(registry.ids()).toEqual([...BUILTIN_IDS, "hello", "greet"]);
    expect(registry.entry("hello")!.source).toBe(inProfile);
    expect(await registry.get("hello")!.execute({ name: "x" }, {} as never)).toEqual({ tag: "profile", hello: "x" });
    // The user's tool folders (config toolDirs) come before the project's (issue 26 §4's order).
    expect(registry.entry("greet")!.source).toBe(greetExtra);
    expect(report.shadowed).toEqual([
      // files load in name order within a folder
      { id: "hello", file: inExtra, winner: inProfile },
      { id: "greet", file: projectOnly, winner: greetExtra },
      { id: "hello", file: inProject, winner: inProfile },
    ]);
    expect(report.tools.find((t) => t.id === "hello")).toEqual({ id: "hello", kind: "read", source: inProfile });
    expect(report.folders.map((f) => [f.origin, f.status, f.files])).toEqual([
      ["profile", "loaded", 1],
      ["profile", "missing", 0], // the shipped default profile has no tools/
      ["config", "loaded", 2],
      ["project", "loaded", 2],
    ]);
    expect(formatLoadProblems(report)).toContain(`- hello: ${inProject} is shadowed by ${inProfile}`);
  });

  it("refuses a locked id with a visible error, and a builtin shadows nothing silently", async () => {
    const file = await write(path.join(extra, "read.ts"), toolFile("read"));
    const bashLike = await write(path.join(extra, "task.ts"), toolFile("task"));
    const { registry, report } = await buildToolset({ loader, cwd: project });
    expect(registry.entry("read")!.source).toBe("builtin");
    expect(registry.entry("task")!.source).toBe("builtin");
    expect(report.errors).toEqual([
      { file, id: "read", message: `"read" is a locked tool id: an extension cannot take it` },
      { file: bashLike, id: "task", message: `"task" is a locked tool id: an extension cannot take it` },
    ]);
  });

  it("loads the rest when one file has a syntax error, one throws at import and one exports nothing valid", async () => {
    const broken = await write(path.join(extra, "a_broken.ts"), "export default {{{");
    const thrower = await write(path.join(extra, "b_thrower.ts"), `throw new Error("boom at import");`);
    const bad = await write(path.join(extra, "c_bad.ts"), `export default { id: "bad", description: "d" };`);
    await write(path.join(extra, "d_good.ts"), toolFile("good"));
    const { registry, report } = await buildToolset({ loader, cwd: project });
    expect(registry.has("good")).toBe(true);
    expect(report.errors.map((e) => e.file)).toEqual([broken, thrower, bad]);
    expect(report.errors[1]!.message).toContain("boom at import");
    expect(report.errors[2]!.message).toMatch(/kind undefined is not an ACP kind.*execute must be a function/);
    expect(formatLoadProblems(report)).toMatch(/Some tools could not be loaded:\n- .*a_broken\.ts: failed to import/);
  });

  it("never imports an untrusted project's tools (lists them as skipped), and loads them once trusted", async () => {
    const marker = path.join(project, "imported.marker");
    const file = await write(
      path.join(projectToolDir(project), "sneaky.ts"),
      `import { writeFileSync } from "node:fs";
writeFileSync(${JSON.stringify(marker)}, "the file ran");
${toolFile("sneaky")}`,
    );
    const untrusted = await buildToolset({ loader, cwd: project });
    expect(untrusted.registry.has("sneaky")).toBe(false);
    expect(untrusted.report.trusted).toBe(false);
    expect(untrusted.report.skipped).toEqual([{ file, reason: "the project is not trusted (toolhost trust)" }]);
    expect(untrusted.report.folders.find((f) => f.origin === "project")).toMatchObject({ status: "untrusted", files: 1 });
    expect(formatLoadProblems(untrusted.report)).toContain("not trusted");
    await expect(fsp.access(marker)).rejects.toThrow();

    // "allow once" for a session: trusted without storing anything
    const once = await buildToolset({ loader, cwd: project, trusted: true });
    expect(once.registry.has("sneaky")).toBe(true);
    expect(await isTrusted(project)).toBe(false);
    await fsp.rm(marker);

    await trust(project);
    const trusted = await buildToolset({ loader, cwd: project });
    expect(trusted.report.trusted).toBe(true);
    expect(trusted.registry.entry("sneaky")!.source).toBe(file);
    expect(await fsp.readFile(marker, "utf8")).toBe("the file ran");
  });

  it("reload re-imports edited files and reports added, removed, moved, shadowed and failed", async () => {
    const one = await write(path.join(extra, "one.ts"), toolFile("one", "v1"));
    await write(path.join(extra, "two.ts"), toolFile("two"));
    const before = await buildToolset({ loader, cwd: project });
    expect(await before.registry.get("one")!.execute({}, {} as never)).toMatchObject({ tag: "v1" });

    await fsp.writeFile(one, toolFile("one", "v2"));
    await fsp.rm(path.join(extra, "two.ts"));
    await write(path.join(extra, "three.ts"), toolFile("three"));
    await write(path.join(extra, "four.ts"), "syntax error here (");
    const moved = await write(path.join(profileTools(), "one.ts"), toolFile("one", "profile"));
    const after = await buildToolset({ loader, cwd: project });

    expect(await after.registry.get("one")!.execute({}, {} as never)).toMatchObject({ tag: "profile" });
    const diff = diffToolsets(before.report, after.report);
    expect(diff.added.map((t) => t.id)).toEqual(["three"]);
    expect(diff.removed.map((t) => t.id)).toEqual(["two"]);
    expect(diff.moved).toEqual([{ id: "one", from: one, to: moved }]);
    expect(diff.shadowed).toEqual([{ id: "one", file: one, winner: moved }]);
    expect(diff.failed.map((f) => path.basename(f.file))).toEqual(["four.ts"]);
    const text = formatDiff(diff);
    expect(text).toContain(`Added: three (${path.join(extra, "three.ts")})`);
    expect(text).toContain("Removed: two");
    expect(text).toMatch(/Failed:\n- .*four\.ts: failed to import/);

    await fsp.writeFile(one, toolFile("one", "v3"));
    await fsp.rm(moved);
    const third = await buildToolset({ loader, cwd: project });
    expect(await third.registry.get("one")!.execute({}, {} as never)).toMatchObject({ tag: "v3" });
  });

  it("applies the profile: tools.disable, tools.kinds and tools.enable; unknown extension ids are reported", async () => {
    await write(path.join(extra, "shell_thing.ts"), toolFile("shell_thing").replace('kind: "read"', 'kind: "execute"'));
    await write(path.join(extra, "reader.ts"), toolFile("reader"));
    const readOnly = await buildToolset({ loader, cwd: project, profile: "read-only" });
    expect(readOnly.registry.ids()).toEqual(["read", "glob", "grep", "todo", "task", "web_fetch", "skill", "tool_search", "lsp", "reader"]);
    expect(readOnly.report.disabled.map((d) => [d.id, d.reason])).toEqual([
      ["write", "the read-only profile disables it"],
      ["edit", "the read-only profile disables it"],
      ["bash", "the read-only profile disables it"],
      ["question", "kind other is not among the read-only profile's kinds"],
      ["process", "the read-only profile disables it"],
      ["shell_thing", "kind execute is not among the read-only profile's kinds"],
    ]);
    expect(readOnly.profile.permissions).toContainEqual({ permission: "bash", pattern: "*", action: "deny" });
    expect(readOnly.profile.prompt).toMatch(/read-only/);

    await write(
      path.join(home, "profiles", "narrow", "profile.json"),
      JSON.stringify({ name: "narrow", description: "Only two tools", tools: { enable: ["read", "reader", "missing_tool", "task"] } }),
    );
    const narrow = await buildToolset({ loader, cwd: project, profile: "narrow" });
    expect(narrow.registry.ids()).toEqual(["read", "task", "reader"]);
    expect(narrow.report.errors).toEqual([
      {
        file: path.join(home, "profiles", "narrow", "profile.json"),
        message: 'tools.enable names "missing_tool", which no tool folder provides (or it failed to load)',
      },
    ]);
  });

  it("asks isAvailable: an unavailable tool leaves its id to the next definition; a throwing one is reported", async () => {
    await write(path.join(profileTools(), "pkg.ts"), toolFile("pkg", "profile", `isAvailable: ({ exists }) => exists("package.json"),`));
    const fallback = await write(path.join(extra, "pkg.ts"), toolFile("pkg", "extra"));
    const broken = await write(
      path.join(extra, "flaky.ts"),
      toolFile("flaky", "x", `isAvailable: () => { throw new Error("no daemon"); },`),
    );
    const without = await buildToolset({ loader, cwd: project });
    expect(without.registry.entry("pkg")!.source).toBe(fallback);
    expect(without.report.unavailable).toEqual([
      // No search provider is configured in this home.
      { id: "web_search", kind: "fetch", source: "builtin" },
      { id: "pkg", kind: "read", source: path.join(profileTools(), "pkg.ts") },
    ]);
    expect(without.report.errors).toEqual([{ file: broken, id: "flaky", message: 'tool "flaky": no daemon' }]);

    await fsp.writeFile(path.join(project, "package.json"), "{}");
    const withPackage = await buildToolset({ loader, cwd: project });
    expect(withPackage.registry.entry("pkg")!.source).toBe(path.join(profileTools(), "pkg.ts"));
    expect(withPackage.report.shadowed).toEqual([{ id: "pkg", file: fallback, winner: path.join(profileTools(), "pkg.ts") }]);
  });

  it("reports a broken config, profile and trust store with their files, failing closed", async () => {
    await fsp.writeFile(path.join(home, "config.json"), `{"toolDirs": "not a list"}`);
    await fsp.writeFile(path.join(home, "trusted.json"), "{oops");
    await write(path.join(home, "profiles", "default", "profile.json"), JSON.stringify({ name: "default" }));
    const { registry, report, profile } = await buildToolset({ loader, cwd: project, trusted: undefined });
    expect(report.errors.map((e) => path.basename(e.file))).toEqual(["config.json", "profile.json", "trusted.json"]);
    expect(report.errors[1]!.message).toMatch(/description/);
    expect(report.errors[2]!.message).toMatch(/no project counts as trusted/);
    expect(profile.origin).toBe("fallback");
    expect(registry.ids()).toEqual(["read", "glob", "grep", "todo", "task", "web_fetch", "skill", "tool_search", "lsp"]);
  });
});
