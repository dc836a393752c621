import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import grep, { type GrepData } from "../../src/tools/grep.js";
import { BACKENDS, call, diskWorkspace, errorOf, output, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

const TREE = {
  "a.ts": "const a = 1;\n// TODO: first\nexport { a };\n",
  "src/b.ts": "line one\nTODO second\ntodo lower\nfoo(bar)\n",
  "src/c.md": "nothing here\n",
  "docs/notes.txt": "one\ntwo\nthree TODO\nfour\nfive\nsix\nseven TODO\neight\n",
};

describe.each(BACKENDS)("grep on $name", ({ make }) => {
  const run = async (args: Record<string, unknown>) => (await call(grep, args, workspaces.current.session)).envelope;

  it("finds regex matches as {path, line, text}, sorted by path", async () => {
    await workspaces.use(make(TREE));
    const data = output<GrepData>(await run({ pattern: "TODO\\b" }));
    expect(data.mode).toBe("content");
    expect(data.matches).toEqual([
      { path: "a.ts", line: 2, text: "// TODO: first" },
      { path: "docs/notes.txt", line: 3, text: "three TODO" },
      { path: "docs/notes.txt", line: 7, text: "seven TODO" },
      { path: "src/b.ts", line: 2, text: "TODO second" },
    ]);
    expect(data.total).toBe(4);
    expect(data.notice).toBeUndefined();
  });

  it("ignore_case widens the match", async () => {
    await workspaces.use(make(TREE));
    const data = output<GrepData>(await run({ pattern: "todo", path: "src", ignore_case: true }));
    expect(data.matches.map((m) => m.line)).toEqual([2, 3]);
    expect(output<GrepData>(await run({ pattern: "todo", path: "src" })).matches).toEqual([
      { path: "src/b.ts", line: 3, text: "todo lower" },
    ]);
  });

  it("literal searches the text as written; the same text as a regex is an error", async () => {
    await workspaces.use(make(TREE));
    const data = output<GrepData>(await run({ pattern: "foo(bar", literal: true }));
    expect(data.matches).toEqual([{ path: "src/b.ts", line: 4, text: "foo(bar)" }]);
    const text = errorOf(await run({ pattern: "foo(bar" }), "invalid_arguments");
    expect(text).toMatch(/Invalid regex/);
    expect(text).toContain("literal: true");
    // As a regex "." is any character; literally it is a dot.
    expect(output<GrepData>(await run({ pattern: "a.ts" })).total).toBe(0);
    expect(output<GrepData>(await run({ pattern: "foo.bar", path: "src" })).total).toBe(1);
    expect(output<GrepData>(await run({ pattern: "foo.bar", path: "src", literal: true })).total).toBe(0);
  });

  it("includes flagged context lines", async () => {
    await workspaces.use(make(TREE));
    const data = output<GrepData>(await run({ pattern: "TODO", path: "docs", context: 1 }));
    expect(data.matches).toEqual([
      { path: "docs/notes.txt", line: 2, text: "two", context: true },
      { path: "docs/notes.txt", line: 3, text: "three TODO" },
      { path: "docs/notes.txt", line: 4, text: "four", context: true },
      { path: "docs/notes.txt", line: 6, text: "six", context: true },
      { path: "docs/notes.txt", line: 7, text: "seven TODO" },
      { path: "docs/notes.txt", line: 8, text: "eight", context: true },
    ]);
    expect(data.total).toBe(2);
  });

  it("files and count modes", async () => {
    await workspaces.use(make(TREE));
    const files = output<GrepData>(await run({ pattern: "TODO", output_mode: "files" }));
    expect(files.matches).toEqual([{ path: "a.ts" }, { path: "docs/notes.txt" }, { path: "src/b.ts" }]);
    expect(files.total).toBe(3);
    const counts = output<GrepData>(await run({ pattern: "TODO", output_mode: "count", ignore_case: true }));
    expect(counts.matches).toEqual([
      { path: "a.ts", count: 1 },
      { path: "docs/notes.txt", count: 2 },
      { path: "src/b.ts", count: 2 },
    ]);
    expect(counts.total).toBe(5);
  });

  it("filters files with a glob", async () => {
    await workspaces.use(make(TREE));
    expect(output<GrepData>(await run({ pattern: "TODO", glob: "*.ts", output_mode: "files" })).matches).toEqual([
      { path: "a.ts" },
      { path: "src/b.ts" },
    ]);
    expect(output<GrepData>(await run({ pattern: "TODO", glob: "!*.ts", output_mode: "files" })).matches).toEqual([
      { path: "docs/notes.txt" },
    ]);
  });

  it("a glob never brings back ignored files; a glob with a slash matches the path", async () => {
    await workspaces.use(make({ ...TREE, ".gitignore": "gen.ts\nout/\n", "gen.ts": "TODO", "out/o.ts": "TODO", "src/deep/d.ts": "TODO" }));
    const files = (args: Record<string, unknown>) =>
      run({ pattern: "TODO", output_mode: "files", ...args }).then((env) => output<GrepData>(env).matches.map((m) => m.path));
    expect(await files({ glob: "*.ts" })).toEqual(["a.ts", "src/b.ts", "src/deep/d.ts"]);
    expect(await files({ glob: "src/**/*.ts" })).toEqual(["src/b.ts", "src/deep/d.ts"]);
    expect(await files({ glob: "src/*.ts" })).toEqual(["src/b.ts"]);
    // Relative to the searched directory as well as to the workspace.
    expect(await files({ glob: "deep/*.ts", path: "src" })).toEqual(["src/deep/d.ts"]);
    expect(await files({ glob: "!src/**" })).toEqual(["a.ts", "docs/notes.txt"]);
    const content = output<GrepData>(await run({ pattern: "TODO", glob: "docs/*.txt", context: 1 }));
    expect(content.matches.every((m) => m.path === "docs/notes.txt")).toBe(true);
    expect(content.total).toBe(2);
  });

  it("searches a single file", async () => {
    await workspaces.use(make(TREE));
    const data = output<GrepData>(await run({ pattern: "TODO", path: "src/b.ts", output_mode: "count" }));
    expect(data.matches).toEqual([{ path: "src/b.ts", count: 1 }]);
  });

  it("no match is an output with a notice", async () => {
    await workspaces.use(make(TREE));
    const env = await run({ pattern: "absent_word" });
    const data = output<GrepData>(env);
    expect(data.matches).toEqual([]);
    expect(data.total).toBe(0);
    expect(data.notice).toMatch(/No matches for "absent_word"/);
    expect(data.notice).toContain("ignore_case");
  });

  it("cuts long lines at 500 characters, keeping the match in view", async () => {
    await workspaces.use(make({ "long.txt": `${"x".repeat(2000)}NEEDLE${"y".repeat(2000)}\nshort NEEDLE\n` }));
    const data = output<GrepData>(await run({ pattern: "NEEDLE" }));
    const [long, short] = data.matches;
    expect(long?.text?.length).toBeLessThan(560);
    expect(long?.text).toContain("NEEDLE");
    expect(long?.text).toContain("[line cut: 4006 chars]");
    expect(short?.text).toBe("short NEEDLE");
  });

  it("respects .gitignore and skips .git", async () => {
    await workspaces.use(make({ ...TREE, ".gitignore": "gen/\n", "gen/x.ts": "TODO gen", ".git/HEAD": "TODO git" }));
    const data = output<GrepData>(await run({ pattern: "TODO", output_mode: "files" }));
    expect(data.matches.map((m) => m.path)).toEqual(["a.ts", "docs/notes.txt", "src/b.ts"]);
  });

  it("caps at 200 matches with a sidecar of all of them", async () => {
    const lines = Array.from({ length: 150 }, (_, i) => `hit ${i}`).join("\n");
    await workspaces.use(make({ "one.txt": lines, "two.txt": lines }));
    const env = await run({ pattern: "^hit" });
    const data = output<GrepData>(env);
    expect(data.matches).toHaveLength(200);
    expect(data.total).toBe(300);
    expect(env.metadata.truncated).toBe(true);
    expect(data.notice).toContain(env.metadata.output_path);
    const sidecar = readFileSync(env.metadata.output_path as string, "utf8")
      .trimEnd()
      .split("\n");
    expect(sidecar).toHaveLength(300);
    expect(sidecar[0]).toBe("one.txt:1: hit 0");
    expect(sidecar[299]).toBe("two.txt:150: hit 149");
  });

  it("limit stops the search early and says so", async () => {
    const lines = Array.from({ length: 50 }, (_, i) => `hit ${i}`).join("\n");
    await workspaces.use(make({ "one.txt": lines }));
    const env = await run({ pattern: "hit", limit: 10, context: 1 });
    const data = output<GrepData>(env);
    expect(data.matches.filter((m) => !m.context)).toHaveLength(10);
    expect(data.matches.at(-1)).toEqual({ path: "one.txt", line: 10, text: "hit 9" });
    expect(data.limited).toBe(true);
    expect(data.notice).toMatch(/Stopped after 10 results/);
    expect(env.metadata.truncated).toBeUndefined();
  });

  it("refuses paths outside the workspace and reports missing ones", async () => {
    await workspaces.use(make(TREE));
    errorOf(await run({ pattern: "x", path: "/etc" }), "outside_root");
    errorOf(await run({ pattern: "x", path: "../../.." }), "outside_root");
    expect(errorOf(await run({ pattern: "x", path: "missing/dir" }), "not_found")).toContain("missing/dir");
  });

  it("rejects bad arguments with a schema error", async () => {
    await workspaces.use(make(TREE));
    errorOf(await run({ pattern: "" }), "invalid_arguments");
    errorOf(await run({ pattern: "x", output_mode: "lines" }), "invalid_arguments");
    errorOf(await run({ pattern: "x", limit: 0 }), "invalid_arguments");
  });
});

describe("grep on disk", () => {
  it("reports files searched and decodes non-UTF-8 lines", async () => {
    const ws = await workspaces.use(
      diskWorkspace({
        "a.txt": "TODO\n",
        "latin1.txt": Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x20, 0x54, 0x4f, 0x44, 0x4f, 0x0a]),
      }),
    );
    const data = output<GrepData>((await call(grep, { pattern: "TODO" }, ws.session)).envelope);
    expect(data.files_searched).toBe(2);
    expect(data.matches.map((m) => m.path)).toEqual(["a.txt", "latin1.txt"]);
    expect(data.matches[1]?.text).toMatch(/^caf.* TODO$/);
  });

  it("refuses a FIFO or a device at once instead of blocking on it", async () => {
    const ws = await workspaces.use(diskWorkspace({ "a.txt": "x\n" }));
    const name = `blocked-${process.pid}-${Date.now()}.fifo`;
    execFileSync("mkfifo", [path.join(ws.root, name)]);
    const started = Date.now();
    const message = errorOf((await call(grep, { pattern: "x", path: name }, ws.session)).envelope, "invalid_arguments");
    expect(Date.now() - started).toBeLessThan(2000);
    expect(message).toMatch(/not a regular file or a directory/);
    expect(message).not.toMatch(/regex|pattern/i);
    expect(rgRunningOn(name)).toBe(false);
  });

  it("says what a bad regex is without rg's wrapper or flags the tool does not offer", async () => {
    const ws = await workspaces.use(diskWorkspace({ "a.txt": "ab\n" }));
    const run = async (pattern: string) => errorOf((await call(grep, { pattern }, ws.session)).envelope, "invalid_arguments");
    const unclosed = await run("a[b");
    expect(unclosed).toContain("a[b");
    expect(unclosed).toMatch(/unclosed character class/);
    expect(unclosed).not.toContain("(?:");
    const look = await run("(?<=a)b");
    expect(look).toMatch(/look-around/);
    expect(look).not.toMatch(/pcre2|\(\?:/i);
    expect(look).toMatch(/literal: true|rewrite/i);
    const backref = await run("(a)\\1");
    expect(backref).toMatch(/backreferences/);
    expect(backref).not.toMatch(/pcre2/i);
  });

  it("at its ceiling says the search stopped, what the sidecar holds, and how to narrow", async () => {
    const lines = Array.from({ length: 6000 }, (_, i) => `hit ${i}`).join("\n");
    const ws = await workspaces.use(diskWorkspace({ "one.txt": lines, "two.txt": lines }));
    const env = (await call(grep, { pattern: "^hit" }, ws.session)).envelope;
    const data = output<GrepData>(env);
    expect(data.limited).toBe(true);
    expect(data.matches).toHaveLength(200);
    expect(data.total).toBe(10_000);
    expect(env.metadata.truncated).toBe(true);
    const sidecar = readFileSync(env.metadata.output_path as string, "utf8");
    expect(sidecar.trimEnd().split("\n")).toHaveLength(10_000);
    expect(data.notice).toContain(env.metadata.output_path);
    expect(data.notice).toMatch(/stopped at 10000 matching lines/);
    expect(data.notice).toMatch(/first 10000/);
    expect(data.notice).toMatch(/Narrow path, glob or pattern/);
    expect(data.notice).not.toMatch(/of 10000|full output/i);
  });
});

describe("grep", () => {
  it("publishes title, locations and shorthand", () => {
    expect(grep.title?.({ pattern: "TODO", path: "src/" })).toBe('grep "TODO" in src/');
    expect(grep.title?.({ pattern: "TODO" })).toBe('grep "TODO"');
    expect(grep.locations).toBeUndefined();
    expect(grep.shorthand?.("TODO")).toEqual({ pattern: "TODO" });
    expect(grep.kind).toBe("search");
  });
});

function rgRunningOn(fifo: string): boolean {
  try {
    return execFileSync("pgrep", ["-f", path.basename(fifo)], { encoding: "utf8" }).trim() !== "";
  } catch {
    return false;
  }
}
