import * as fsp from "node:fs/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionTree, type TreeEntry } from "../../src/agent/record/session-format.js";
import { loadedSessionRecorder, SessionRecorder } from "../../src/agent/record/session-recorder.js";
import { SessionStore } from "../../src/agent/record/session-store.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { tempDir } from "../helpers.js";

// The recorder's tree API (issue 23): what rewind and fork build on.

let home: string;
let store: SessionStore;

beforeEach(async () => {
  home = await tempDir();
  store = new SessionStore(home);
});

afterEach(async () => {
  await fsp.rm(home, { recursive: true, force: true });
});

const read = async (id: string): Promise<TreeEntry[]> => (await store.read(id))!.entries;
const ok: Envelope = { type: "output", data: "x", metadata: { duration_ms: 1 } };
const info = (callId: string) => ({ callId, toolId: "read", kind: "read" as const, title: "Read", locations: [], args: { path: "a" } });

describe("the session recorder", () => {
  it("appends each entry under the current position, which it becomes; a given parent, a root, a leaf entry", async () => {
    const recorder = new SessionRecorder(store.writer({ id: "r", cwd: "/work/p" }));
    expect(recorder.leafId).toBeUndefined();
    expect(recorder.promptId).toBeUndefined();
    const { title, promptId } = recorder.turnStarted("Fix the bug\nplease", [{ type: "text", text: "Fix the bug\nplease" }]);
    expect(title).toBe("Fix the bug");
    expect(recorder.promptId).toBe(promptId);
    recorder.textDelta("Do");
    recorder.textDelta("ne.");
    // The streamed text is not written until flushed (or another entry comes).
    expect((await read("r")).map((e) => e.type)).toEqual(["user", "title"]);
    recorder.flush();
    const text = recorder.leafId!;
    recorder.turnEnded("end_turn");
    const end = recorder.leafId!;
    const entries = await read("r");
    expect(entries.map((e) => [e.type, e.parentId])).toEqual([
      ["user", null],
      ["title", promptId],
      ["agent_text", entries[1]!.id],
      ["turn_end", text],
    ]);
    expect(entries[2]).toMatchObject({ id: text, text: "Done." });
    expect(entries.every((e) => /^[0-9a-f]{8}$/.test(e.id))).toBe(true);

    // Under a given entry (a rewind's branch), then on from it.
    const branch = recorder.append({ type: "branch", fromId: end, summary: "s" }, promptId);
    expect(recorder.leafId).toBe(branch);
    const second = recorder.turnStarted("Again").promptId;
    expect(recorder.promptId).toBe(second);
    // A leaf entry moves the position to its target; a root has no parent.
    recorder.append({ type: "leaf", targetId: end });
    expect(recorder.leafId).toBe(end);
    const root = recorder.append({ type: "label", targetId: end, label: "here" }, null);
    recorder.close();
    const all = await read("r");
    expect(all.find((e) => e.id === branch)?.parentId).toBe(promptId);
    expect(all.find((e) => e.id === second)?.parentId).toBe(branch);
    expect(all.find((e) => e.id === root)?.parentId).toBeNull();
    expect(new SessionTree(all).leafId).toBe(root);
  });

  it("numbers calls, writes a call that was only pending (a slash command's) before its result, and a loaded session goes on", async () => {
    const recorder = new SessionRecorder(store.writer({ id: "c", cwd: "/work/p" }));
    recorder.turnStarted("/read a");
    recorder.pending(info("call_1"));
    recorder.running("call_1");
    recorder.done("call_1", ok, info("call_1"));
    recorder.pending(info("call_2"));
    recorder.describe(info("call_2"));
    recorder.event("call_2", { type: "output", text: "live" } as never);
    recorder.running("call_2");
    recorder.done("call_2", { type: "error", error_text: "no", metadata: { duration_ms: 1, error_code: "rejected" } }, info("call_2"));
    recorder.turnEnded("end_turn");
    recorder.close();
    const entries = await read("c");
    expect(entries.slice(2).map((e) => [e.type, "seq" in e ? e.seq : undefined])).toEqual([
      ["tool_pending", undefined],
      ["tool_running", undefined],
      ["tool_call", 1],
      ["tool_result", 1],
      ["tool_pending", undefined],
      ["tool_call", 2],
      ["tool_running", undefined],
      ["tool_result", 2],
      ["turn_end", undefined],
    ]);
    expect(entries.filter((e) => e.type === "tool_result")).toMatchObject([
      { callId: "call_1", status: "completed" },
      { callId: "call_2", status: "refused", errorCode: "rejected" },
    ]);

    const stored = (await store.read("c"))!;
    const loaded = loadedSessionRecorder(store, stored);
    expect(loaded.leafId).toBe(entries.at(-1)!.id);
    expect(loaded.promptId).toBe(entries[0]!.id);
    expect(loaded.file).toBe(stored.file);
    // Titled already (by "/read a"), so no second title; calls numbered on.
    expect(loaded.turnStarted("More")).toEqual({ promptId: expect.any(String) });
    loaded.pending(info("call_3"));
    loaded.done("call_3", ok, info("call_3"));
    loaded.close();
    const more = (await read("c")).slice(entries.length);
    expect(more[0]!.parentId).toBe(entries.at(-1)!.id);
    expect(more.filter((e) => e.type === "tool_call" || e.type === "tool_result").map((e) => "seq" in e && e.seq)).toEqual([3, 3]);
  });
});
