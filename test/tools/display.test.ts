import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { AnyTool } from "../../src/tool/define.js";
import { displayResult } from "../../src/tool/display.js";
import bash from "../../src/tools/bash.js";
import edit from "../../src/tools/edit.js";
import glob from "../../src/tools/glob.js";
import grep from "../../src/tools/grep.js";
import read from "../../src/tools/read.js";
import todo from "../../src/tools/todo.js";
import write from "../../src/tools/write.js";
import { call, diskWorkspace, memoryWorkspace, output, type Workspace } from "../helpers.js";

// What the editor shows of each locked tool's real result: the text and locations the ACP
// adapter showed before the tools spoke for themselves (content.ts readableText, session.ts
// resultLocations), except where a test says otherwise.

let ws: Workspace;
afterEach(async () => ws?.cleanup());

/** Runs a call through the real pipeline and shows its result. */
async function shown(tool: AnyTool, args: Record<string, unknown>) {
  const { envelope } = await call(tool, args, ws.session);
  return displayResult(tool, output(envelope), args);
}

const TREE = {
  "a.ts": "one\nTODO two\nthree\n",
  "src/b.ts": "TODO\nx\n",
};

describe("bash", () => {
  it("shows stdout, stderr and the exit code as console output", async () => {
    ws = await diskWorkspace();
    expect(await shown(bash, { command: "echo out; echo err >&2; exit 3" })).toEqual({
      text: "out\nerr\n[exit code 3]",
      language: "console",
      failed: true,
      failure: "exit code 3",
      exitCode: 3,
    });
    expect((await shown(bash, { command: "printf out" })).text).toBe("out\n[exit code 0]");
    expect(await shown(bash, { command: "true" })).toEqual({ text: "[exit code 0]", language: "console" });
  });

  it("starts each part on its own line even when stderr has no final line break", async () => {
    // The adapter glued these ("err[exit code 1]", "err\n\n[exit code 1]") before.
    ws = await diskWorkspace();
    expect((await shown(bash, { command: "echo out; printf err >&2; exit 1" })).text).toBe("out\nerr\n[exit code 1]");
    expect((await shown(bash, { command: "printf out; echo err >&2; exit 1" })).text).toBe("out\nerr\n[exit code 1]");
  });

  it("says when the command was killed or timed out", async () => {
    ws = await diskWorkspace();
    expect((await shown(bash, { command: "echo before; kill -TERM $$" })).text).toBe("before\n[killed by SIGTERM]");
    expect((await shown(bash, { command: "sleep 5", timeout_ms: 200 })).text).toBe("[timed out]");
    // A kill and a timeout are failures in the editor's eyes (the model still gets the data).
    expect(await shown(bash, { command: "kill -TERM $$" })).toMatchObject({ failed: true, failure: "killed by SIGTERM" });
    expect(await shown(bash, { command: "sleep 5", timeout_ms: 200 })).toMatchObject({ failed: true, failure: "timed out" });
    expect((await shown(bash, { command: "kill -TERM $$" })).exitCode).toBeUndefined();
  });
});

describe("read", () => {
  it("shows the numbered lines and points at the first line read", async () => {
    ws = await memoryWorkspace(TREE);
    expect(await shown(read, { path: "a.ts" })).toEqual({
      text: "1\tone\n2\tTODO two\n3\tthree",
      locations: [{ path: "/ws/a.ts", line: 1 }],
    });
    expect(await shown(read, { path: "a.ts", offset: 2, limit: 1 })).toEqual({
      text: "2\tTODO two",
      locations: [{ path: "/ws/a.ts", line: 2 }],
    });
  });

  it("points at a directory or a byte range without a line", async () => {
    ws = await memoryWorkspace(TREE);
    expect(await shown(read, { path: "src" })).toEqual({ text: "b.ts", locations: [{ path: "/ws/src" }] });
    expect(await shown(read, { path: "a.ts", byte_offset: 4, byte_limit: 4 })).toEqual({
      text: "TODO",
      locations: [{ path: "/ws/a.ts" }],
    });
  });
});

describe("grep", () => {
  it("shows one line per match, context lines with a dash", async () => {
    ws = await memoryWorkspace(TREE);
    expect(await shown(grep, { pattern: "TODO" })).toEqual({ text: "a.ts:2: TODO two\nsrc/b.ts:1: TODO" });
    expect((await shown(grep, { pattern: "TODO", path: "a.ts", context: 1 })).text).toBe("a.ts:1- one\na.ts:2: TODO two\na.ts:3- three");
  });

  it("shows counts, file paths and the notice", async () => {
    ws = await memoryWorkspace(TREE);
    expect((await shown(grep, { pattern: "TODO|x", output_mode: "count" })).text).toBe("a.ts: 1\nsrc/b.ts: 2");
    expect((await shown(grep, { pattern: "TODO", output_mode: "files" })).text).toBe("a.ts\nsrc/b.ts");
    expect((await shown(grep, { pattern: "TODO", limit: 1 })).text).toMatch(/^a\.ts:2: TODO two\nStopped after 1 results; more exist\./);
    expect((await shown(grep, { pattern: "nowhere" })).text).toMatch(/^No matches for "nowhere" in \./);
  });

  it("says so when a result has neither matches nor a notice", () => {
    expect(displayResult(grep, { mode: "content", pattern: "x", matches: [], total: 0 }, { pattern: "x" })).toEqual({
      text: "(no matches)",
    });
  });
});

describe("glob", () => {
  it("shows the files and the notice", async () => {
    ws = await memoryWorkspace(TREE);
    expect(await shown(glob, { pattern: "**/*.ts" })).toEqual({ text: "a.ts\nsrc/b.ts" });
    expect((await shown(glob, { pattern: "**/*.ts", limit: 1 })).text).toBe(
      "a.ts\nShowing 1 of 2 files; raise limit (max 1000) or narrow the pattern to see the rest.",
    );
    expect((await shown(glob, { pattern: "*.md" })).text).toMatch(/^No files match "\*\.md" in \./);
  });

  it("says so when a result has neither files nor a notice", () => {
    expect(displayResult(glob, { root: ".", pattern: "*", files: [], total: 0 }, { pattern: "*" })).toEqual({ text: "(no files)" });
  });
});

describe("edit", () => {
  it("shows the diff and points at the first changed line", async () => {
    ws = await memoryWorkspace(TREE);
    const display = await shown(edit, { path: "a.ts", old_string: "three", new_string: "3" });
    expect(display).toEqual({
      text: "--- a.ts\n+++ a.ts\n@@ -1,3 +1,3 @@\n one\n TODO two\n-three\n+3\n",
      language: "diff",
      locations: [{ path: "/ws/a.ts", line: 3 }],
    });
  });

  it("points at line 1 of a file it created", async () => {
    ws = await memoryWorkspace(TREE);
    const display = await shown(edit, { path: "src/new.ts", old_string: "", new_string: "x\n" });
    expect(display.text).toMatch(/^--- src\/new\.ts\n\+\+\+ src\/new\.ts\n@@ -0,0 \+1,1 @@\n\+x\n$/);
    expect(display.locations).toEqual([{ path: "/ws/src/new.ts", line: 1 }]);
  });
});

describe("write", () => {
  // The adapter showed the result's JSON here; one line says the same to a person.
  it("says what it created, changed or left alone, and points at the file", async () => {
    ws = await memoryWorkspace(TREE);
    expect(await shown(write, { path: "w.txt", content: "a\nb\n" })).toEqual({
      text: "Created w.txt (2 lines, 4 bytes)",
      locations: [{ path: "/ws/w.txt" }],
    });
    expect((await shown(write, { path: "w.txt", content: "a\nc\nd\n" })).text).toBe("Wrote w.txt: +2 -1 lines (3 lines, 6 bytes)");
    expect((await shown(write, { path: "w.txt", content: "a\nc\nd\n" })).text).toBe(
      "w.txt unchanged (3 lines, 6 bytes)\nThe file already had exactly this content; nothing was written.",
    );
  });

  it("shows the notice of a replaced binary file", async () => {
    ws = await memoryWorkspace({ "img.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]) });
    expect(await shown(write, { path: "img.png", content: "text\n" })).toEqual({
      text: "Wrote img.png (1 line, 5 bytes)\nReplaced a binary file.",
      locations: [{ path: path.posix.join("/ws", "img.png") }],
    });
  });
});

describe("todo", () => {
  it("shows the summary", async () => {
    ws = await memoryWorkspace();
    const display = await shown(todo, {
      todos: [
        { content: "Read", status: "completed" },
        { content: "Write", status: "in_progress" },
      ],
    });
    expect(display).toEqual({ text: "2 todos: 1 completed, 1 in progress, 0 pending" });
  });
});

describe("shorthand hints", () => {
  it("sit next to each shorthand", () => {
    const hints = [read, grep, glob, bash].map((tool) => [tool.id, tool.shorthandHint]);
    expect(hints).toEqual([
      ["read", "a path (src/a.ts or src/a.ts:10-40)"],
      ["grep", "a pattern"],
      ["glob", "a glob pattern"],
      ["bash", "a command line"],
    ]);
    for (const tool of [edit, write, todo]) expect(tool.shorthand === undefined && tool.shorthandHint === undefined).toBe(true);
  });
});
