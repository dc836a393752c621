import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { restoredState } from "../../src/agent/record/session-restore.js";
import type { EntryData, TreeEntry } from "../../src/agent/record/session-format.js";
import { SessionStore, sessionDataDir, titleFromPrompt } from "../../src/agent/record/session-store.js";
import { projectFolderName } from "../../src/config/workspace.js";
import { tempDir } from "../helpers.js";

let home: string;
let store: SessionStore;

beforeEach(async () => {
  home = await tempDir();
  store = new SessionStore(home);
});

afterEach(async () => {
  await fsp.rm(home, { recursive: true, force: true });
});

const at = "2026-11-23T10:00:00.000Z";
let last: string | null = null;
let count = 0;
/** An entry under the one made before it (`parentId` given: under that one). */
const entry = (data: EntryData, parentId: string | null = last): TreeEntry => {
  const id = `e${++count}`;
  last = id;
  return { ...data, id, parentId, at } as TreeEntry;
};
const user = (text: string): TreeEntry => entry({ type: "message", message: { role: "user", content: text } });
/** Entries without their ids (a writer of its own numbered them). */
const strip = (entries: readonly TreeEntry[] | undefined) =>
  entries?.map((e) => ({ type: e.type, at: e.at, ...("message" in e ? { message: e.message } : {}) }));
const message = (text: string) => ({ type: "message", at, message: { role: "user", content: text } });

/** Writes a session with a title and one message, its file's mtime set to `minute` minutes past 10:00. */
async function session(id: string, cwd: string, minute: number, title?: string): Promise<string> {
  const writer = store.writer({ id, cwd });
  if (title) writer.append(entry({ type: "title", title }));
  writer.append(user(`prompt of ${id}`));
  writer.close();
  const time = new Date(Date.UTC(2026, 10, 23, 10, minute));
  await fsp.utimes(writer.file, time, time);
  return writer.file;
}

describe("the session store", () => {
  it("writes nothing until the first entry, then a user-only file with the header first", async () => {
    const writer = store.writer({ id: "s1", cwd: "/work/p" });
    expect(fs.existsSync(writer.file)).toBe(false);
    const hello = user("hello");
    const setting = entry({ type: "setting", name: "mode", value: "full" });
    writer.append(hello);
    writer.append(setting);
    writer.close();
    expect((await fsp.stat(writer.file)).mode & 0o777).toBe(0o600);
    expect((await fsp.stat(path.dirname(writer.file))).mode & 0o777).toBe(0o700);
    expect(path.dirname(writer.file)).toBe(path.join(home, "sessions", projectFolderName("/work/p")));
    const lines = (await fsp.readFile(writer.file, "utf8")).trim().split("\n");
    expect(JSON.parse(lines[0]!)).toEqual({
      type: "session",
      format: 2,
      id: "s1",
      cwd: "/work/p",
      created: expect.any(String),
      toolhost: expect.any(String),
      ai: "6",
    });
    const read = await store.read("s1");
    expect(read?.entries).toEqual([hello, setting]);
    expect(read?.skippedLines).toBe(0);
    expect(read?.migratedFrom).toBeUndefined();
  });

  it("appends to an existing session's file without a second header", async () => {
    const first = store.writer({ id: "s1", cwd: "/work/p" });
    first.append(user("one"));
    first.close();
    const again = store.writer({ id: "s1", cwd: "/work/p" });
    again.append(user("two"));
    again.close();
    const read = await store.read("s1");
    expect(read?.entries.map((e) => (e.type === "message" ? e.message.content : null))).toEqual(["one", "two"]);
  });

  it("skips a torn last line (a crash mid-write) and keeps everything before it", async () => {
    const writer = store.writer({ id: "s1", cwd: "/work/p" });
    writer.append(user("kept"));
    writer.close();
    await fsp.appendFile(writer.file, '{"type":"message","at":"2026-11-23T10:00:00.000Z","message":{"role":"us');
    const read = await store.read("s1");
    expect(strip(read?.entries)).toEqual([message("kept")]);
    expect(read?.skippedLines).toBe(1);
    // The next writer appends on a fresh line: a torn line never swallows the next entry.
    const next = store.writer({ id: "s1", cwd: "/work/p" });
    next.append(user("after"));
    next.close();
    expect(strip((await store.read("s1"))?.entries)).toEqual([message("kept"), message("after")]);
  });

  it("lists the newest first, a page at a time, with titles, filtered by working directory", async () => {
    await session("a", "/work/p", 1, "First");
    await session("b", "/work/p", 3, "Second");
    await session("c", "/work/q", 2);
    await session("d", "/work/p", 4, "Third");

    const all = await store.list();
    expect(all.sessions.map((s) => s.id)).toEqual(["d", "b", "c", "a"]);
    expect(all.nextCursor).toBeUndefined();
    expect(all.sessions[0]).toMatchObject({ id: "d", cwd: "/work/p", title: "Third", updatedAt: "2026-11-23T10:04:00.000Z" });
    expect(all.sessions.find((s) => s.id === "c")?.title).toBeUndefined();

    const first = await store.list({ limit: 2 });
    expect(first.sessions.map((s) => s.id)).toEqual(["d", "b"]);
    const second = await store.list({ limit: 2, cursor: first.nextCursor });
    expect(second.sessions.map((s) => s.id)).toEqual(["c", "a"]);
    expect(second.nextCursor).toBeUndefined();

    expect((await store.list({ cwd: "/work/p" })).sessions.map((s) => s.id)).toEqual(["d", "b", "a"]);
    expect((await store.list({ cwd: "/elsewhere" })).sessions).toEqual([]);
    await expect(store.list({ cursor: "not-a-cursor" })).rejects.toThrow(/Invalid cursor/);
  });

  it("deletes a session's file and its folder of large outputs", async () => {
    const file = await session("a", "/work/p", 1);
    await fsp.mkdir(sessionDataDir(file));
    await fsp.writeFile(path.join(sessionDataDir(file), "out.txt"), "big");
    expect(await store.delete("a")).toBe(true);
    expect(fs.existsSync(file)).toBe(false);
    expect(fs.existsSync(sessionDataDir(file))).toBe(false);
    expect(await store.delete("a")).toBe(false);
    expect(await store.read("a")).toBeUndefined();
  });

  it("sweeps data folders whose session file is gone, once they are an hour old", async () => {
    const kept = await session("kept", "/work/p", 1);
    const project = path.dirname(kept);
    const folder = async (name: string, hoursAgo: number) => {
      const dir = path.join(project, name);
      await fsp.mkdir(dir, { recursive: true });
      await fsp.writeFile(path.join(dir, "bash-0001.txt"), "big");
      const time = new Date(Date.now() - hoursAgo * 3600_000);
      await fsp.utimes(dir, time, time);
      return dir;
    };
    await folder("kept", 48);
    await folder("orphan", 2);
    await folder("young-orphan", 0);
    await folder("not.an-id", 48);
    expect(await store.sweepOrphans()).toBe(1);
    expect((await fsp.readdir(project)).sort()).toEqual(["kept", "kept.jsonl", "not.an-id", "young-orphan"]);
    // Nothing to sweep, or no sessions folder at all: quietly nothing.
    expect(await store.sweepOrphans()).toBe(0);
    expect(await new SessionStore(path.join(home, "none")).sweepOrphans()).toBe(0);
  });

  it("refuses ids that could leave the sessions folder", () => {
    expect(() => store.writer({ id: "../x", cwd: "/work/p" })).toThrow(/Not a session id/);
    return expect(store.read("../../etc/passwd")).resolves.toBeUndefined();
  });

  it("takes a title from the prompt's first line", () => {
    expect(titleFromPrompt("\n  Fix the login bug\nmore")).toBe("Fix the login bug");
    expect(titleFromPrompt("x".repeat(100))).toHaveLength(80);
    expect(titleFromPrompt("  \n ")).toBeUndefined();
  });

  it("restores the settings, the tools tool_search wired, and the history from the last compaction on", async () => {
    const writer = store.writer({ id: "r1", cwd: "/work/p" });
    writer.append(user("old prompt"));
    writer.append(entry({ type: "setting", name: "mode", value: "full" }));
    writer.append(entry({ type: "setting", name: "thought_level", value: "high" }));
    writer.append(entry({ type: "wired", ids: ["mcp__fx__a"] }));
    writer.append(entry({ type: "compaction", summary: "S", history: [{ role: "user", content: "[Summary] S" }] }));
    writer.append(user("new prompt"));
    writer.append(entry({ type: "wired", ids: ["mcp__fx__b", "mcp__fx__a"] }));
    writer.close();
    const state = restoredState((await store.read("r1"))!);
    expect(state).toMatchObject({ mode: "full", thoughtLevel: "high", wired: ["mcp__fx__a", "mcp__fx__b"] });
    expect(state.messages).toEqual([
      { role: "user", content: "[Summary] S" },
      { role: "user", content: "new prompt" },
    ]);
    expect(state.interruptedNote).toBeUndefined();
  });
});

describe("format 2 on disk", () => {
  const FIXTURES = path.resolve(import.meta.dirname, "../fixtures/sessions-v1");

  it("skips a line without an id or a parentId, or with an id taken, as unreadable", async () => {
    const writer = store.writer({ id: "s2", cwd: "/work/p" });
    const kept = user("kept");
    writer.append(kept);
    writer.close();
    const bad = [
      { type: "message", parentId: null, at, message: { role: "user", content: "no id" } },
      { type: "message", id: "f1", at, message: { role: "user", content: "no parentId" } },
      { type: "message", id: "f2", parentId: 7, at, message: { role: "user", content: "a number" } },
      { ...kept, message: { role: "user", content: "the same id" } },
      { id: "f3", parentId: null, at },
    ];
    await fsp.appendFile(writer.file, bad.map((b) => `${JSON.stringify(b)}\n`).join(""));
    const after = entry({ type: "title", title: "T" }, kept.id);
    await fsp.appendFile(writer.file, `${JSON.stringify(after)}\n`);
    const read = await store.read("s2");
    expect(read?.entries).toEqual([kept, after]);
    expect(read?.skippedLines).toBe(bad.length);
  });

  it("rewrites a format-1 file as format 2 (0600, nothing beside it) before the first append, and reads it the same after", async () => {
    const file = store.fileFor("old", "/work/p");
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.copyFile(path.join(FIXTURES, "compacted.jsonl"), file);
    await fsp.chmod(file, 0o644);
    const before = (await store.read("old"))!;
    expect(before).toMatchObject({ migratedFrom: 1, header: { format: 2, id: "old", ai: "6" } });
    // Nothing changes on disk until something is appended.
    expect((await store.list()).sessions[0]).toMatchObject({ id: "old", title: expect.stringMatching(/^Here is the plan/) });
    const writer = store.writerFor(before);
    expect((await fsp.readFile(file, "utf8")).startsWith('{"type":"session","format":1')).toBe(true);
    const added = entry({ type: "title", title: "New" }, before.entries.at(-1)!.id);
    writer.append(added);
    writer.close();
    expect((await fsp.stat(file)).mode & 0o777).toBe(0o600);
    expect(await fsp.readdir(path.dirname(file))).toEqual(["old.jsonl"]);
    const after = (await store.read("old"))!;
    expect(after.migratedFrom).toBeUndefined();
    expect(after.header).toEqual(before.header);
    expect(after.entries).toEqual([...before.entries, added]);
    expect(after.skippedLines).toBe(0);
    // Listed with its first title either way.
    const title = before.entries.find((e) => e.type === "title");
    expect(title).toBeDefined();
    expect((await store.list()).sessions[0]).toMatchObject({ id: "old", title: title?.type === "title" && title.title });
  });

  it("restores from the path to the current position (or a given one); call numbering goes on after every branch's calls", async () => {
    last = null;
    const info = (n: number) => ({
      callId: `call_${n}`,
      toolId: "write",
      kind: "edit",
      title: "Write",
      locations: [],
      args: { path: "x" },
    });
    const first = entry({ type: "user", text: "first" });
    {
      const writer = store.writer({ id: "t1", cwd: "/work/p" });
      const kept = [
        first,
        user("first"),
        entry({ type: "setting", name: "mode", value: "full" }),
        entry({ type: "turn_end", stopReason: "end_turn" }),
      ];
      const fork = kept.at(-1)!.id;
      const left = [
        entry({ type: "user", text: "left" }),
        user("left"),
        entry({ type: "setting", name: "mode", value: "read-only" }),
        entry({ type: "tool_call", seq: 1, info: info(7) } as EntryData),
      ];
      const branch = entry({ type: "branch", fromId: left.at(-1)!.id, summary: "left" }, fork);
      const now = [entry({ type: "user", text: "right" }), user("right"), entry({ type: "tool_call", seq: 2, info: info(3) } as EntryData)];
      for (const e of [...kept, ...left, branch, ...now]) writer.append(e);
      writer.close();
      const stored = (await store.read("t1"))!;
      const state = restoredState(stored);
      expect(state.messages).toEqual([
        { role: "user", content: "first" },
        { role: "user", content: "right" },
      ]);
      expect(state.mode).toBe("full");
      expect(state.lastCallNumber).toBe(7);
      // The path's last turn never ended, and its call changes things.
      expect(state.interruptedNote).toMatch(/the request "right"\) was interrupted/);
      expect(state.interruptedNote).toContain('- write {"path":"x"}: did not finish');
      // At the abandoned branch's tip: its history and settings.
      const there = restoredState(stored, left.at(-1)!.id);
      expect(there.messages.map((m) => m.content)).toEqual(["first", "left"]);
      expect(there.mode).toBe("read-only");
      // At the first turn's end: nothing interrupted.
      expect(restoredState(stored, fork).interruptedNote).toBeUndefined();
    }
  });
});
