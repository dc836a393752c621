import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SessionTree, type EntryOf, type TreeEntry } from "../../src/agent/record/session-format.js";
import { SessionStore, sessionDataDir } from "../../src/agent/record/session-store.js";
import { projectFolderName } from "../../src/config/workspace.js";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { tempDir } from "../helpers.js";
import type { SessionNotification, SessionUpdate } from "@agentclientprotocol/sdk";
import { closeAndCheck, Harness, lastUpdate, messageText, textOf, useAcpTest } from "./harness.js";

// Durable sessions over real stdio: what a session writes to ~/.toolhost/sessions as it happens.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

const READ_SCRIPT: FakeReply[] = [
  { toolCalls: [{ id: "c1", name: "read", arguments: { path: "src/a.ts" } }] },
  { text: "It exports a." },
  { text: "Nothing else." },
];

async function start(env: Record<string, string> = {}, script: (FakeReply | ((body: FakeBody) => FakeReply))[] = READ_SCRIPT) {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home, ...env } });
  await t.h.initialize();
  return { h: t.h, sessionId: await t.h.newSession(t.ws) };
}

const prompt = (h: Harness, sessionId: string, text: string) =>
  h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

describe("a session recorded on disk", () => {
  it("writes the title, the history, the tool-call record and the view as they happen", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "What does src/a.ts export?\nBe brief.");
    await prompt(h, sessionId, "Anything else?");

    // The title comes from the first prompt, to the editor and into the file.
    const info = h.updatesOf(sessionId, "session_info_update");
    expect(info).toHaveLength(1);
    expect(info[0]).toMatchObject({ title: "What does src/a.ts export?", updatedAt: expect.any(String) });

    const stored = await new SessionStore(t.home).read(sessionId);
    expect(stored).toBeDefined();
    expect(stored!.header).toMatchObject({ id: sessionId, cwd: t.ws, format: 2, ai: "6" });
    expect(path.dirname(stored!.file).startsWith(path.join(t.home, "sessions"))).toBe(true);
    expect((await fsp.stat(stored!.file)).mode & 0o777).toBe(0o600);
    const entries = stored!.entries;
    const of = <K extends TreeEntry["type"]>(type: K) => entries.filter((e): e is EntryOf<K> => e.type === type);

    // One linear branch: each entry under the one before it, ids unique; the current position is the last entry.
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
    entries.forEach((e, i) => expect(e.parentId).toBe(i === 0 ? null : entries[i - 1]!.id));
    expect(new SessionTree(entries).leafId).toBe(entries.at(-1)!.id);
    expect(entries.every((e) => /^[0-9a-f]{8}$/.test(e.id))).toBe(true);

    expect(of("setting")).toEqual([expect.objectContaining({ name: "mode", value: "full" })]);
    expect(of("title").map((e) => e.title)).toEqual(["What does src/a.ts export?"]);
    // Each turn: its prompt (with the blocks the editor sent), then its end.
    expect(
      entries
        .filter((e) => e.type === "user" || e.type === "turn_end")
        .map((e) => (e.type === "user" ? ["user", e.text] : ["end", e.stopReason])),
    ).toEqual([
      ["user", "What does src/a.ts export?\nBe brief."],
      ["end", "end_turn"],
      ["user", "Anything else?"],
      ["end", "end_turn"],
    ]);
    expect(of("user")[1]!.blocks).toEqual([{ type: "text", text: "Anything else?" }]);
    // The model's history, in order: what a load restores.
    expect(of("message").map((e) => e.message.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"]);
    // The tool call: its number, input and side-effect metadata; its result: status, envelope, the call as it ended.
    const [started] = of("tool_call");
    const [ended] = of("tool_result");
    expect(of("tool_call")).toHaveLength(1);
    expect(started).toMatchObject({ seq: 1, info: { toolId: "read", args: { path: "src/a.ts" }, sideEffect: false, idempotent: true } });
    expect(ended).toMatchObject({
      seq: 1,
      callId: started!.info.callId,
      status: "completed",
      envelope: { type: "output" },
      info: { callId: started!.info.callId, toolId: "read" },
    });
    // The call's life in order: pending, call, running, result.
    const callId = started!.info.callId;
    const life = entries.filter((e) => ("callId" in e ? e.callId : "info" in e ? e.info.callId : undefined) === callId).map((e) => e.type);
    expect(life).toEqual(["tool_pending", "tool_call", "tool_running", "tool_result"]);
    // Streamed text kept as one entry per run, not per token.
    expect(of("agent_text").map((e) => e.text)).toEqual(["It exports a.", "Nothing else."]);
  });

  it("records a call the user refused as refused, with its error code", async () => {
    const { h, sessionId } = await start({}, [
      { toolCalls: [{ id: "w1", name: "write", arguments: { path: "b.txt", content: "b\n" } }] },
      { text: "Not written." },
    ]);
    await prompt(h, sessionId, "Write b.txt");
    expect(h.permissionRequests).toHaveLength(1);
    const stored = await new SessionStore(t.home).read(sessionId);
    const ended = stored!.entries.find((e) => e.type === "tool_result");
    expect(ended).toMatchObject({ status: "refused", errorCode: "rejected", envelope: { type: "error" } });
  });

  it("lists no session that never got a prompt (its file, a header, only loads by id)", async () => {
    const { h } = await start();
    const sessionId = await h.newSession(t.ws);
    const store = new SessionStore(t.home);
    await h.waitFor(async () => (await store.find(sessionId)) !== undefined);
    expect((await store.list()).sessions).toEqual([]);
  });

  it("writes nothing with TOOLHOST_SESSIONS=off", async () => {
    const { h, sessionId } = await start({ TOOLHOST_SESSIONS: "off" });
    await prompt(h, sessionId, "What does src/a.ts export?");
    expect(h.updatesOf(sessionId, "agent_message_chunk").length).toBeGreaterThan(0);
    expect((await new SessionStore(t.home).list()).sessions).toEqual([]);
  });
});

/** What the editor shows of a session, comparable across a replay: text runs joined, times left out. */
function shown(updates: SessionNotification[], sessionId: string): unknown[] {
  const kinds = new Set([
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "session_info_update",
  ]);
  const out: { sessionUpdate: string; [key: string]: unknown }[] = [];
  for (const n of updates) {
    if (n.sessionId !== sessionId || !kinds.has(n.update.sessionUpdate)) continue;
    const update = { ...(n.update as SessionUpdate & Record<string, unknown>) };
    delete update.updatedAt;
    const last = out.at(-1);
    if (update.sessionUpdate === "agent_message_chunk" && last?.sessionUpdate === "agent_message_chunk") {
      const text = (update.content as { text: string }).text;
      last.content = { type: "text", text: (last.content as { text: string }).text + text };
      continue;
    }
    out.push(update);
  }
  return out;
}

/** A second agent process (the editor restarted) on the same ~/.toolhost. */
async function restart(): Promise<Harness> {
  await closeAndCheck(t.h);
  t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake!.url, TOOLHOST_HOME: t.home } });
  await t.h.initialize();
  return t.h;
}

describe("session/list, session/load, session/resume, session/delete", () => {
  it("advertises them", async () => {
    const { h } = await start();
    const init = h.checker.messages
      .map((m) => m.json)
      .find((m) => (m as { result?: { agentCapabilities?: unknown } }).result?.agentCapabilities);
    expect((init as { result: { agentCapabilities: unknown } }).result.agentCapabilities).toMatchObject({
      loadSession: true,
      sessionCapabilities: { close: {}, list: {}, resume: {}, delete: {} },
    });
  });

  it("a closed session is listed, loaded with what the editor saw replayed, and continued with its history", async () => {
    const { h, sessionId } = await start({}, [
      { toolCalls: [{ id: "c1", name: "read", arguments: { path: "src/a.ts" } }] },
      { text: "It exports a." },
      { toolCalls: [{ id: "c2", name: "read", arguments: { path: "src/a.ts" } }] },
      { text: "Still a." },
    ]);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "What does src/a.ts export?");
    const before = shown(h.updates, sessionId);
    await h.agent.request("session/close", { sessionId });

    const h2 = await restart();
    const listed = await h2.agent.request("session/list", { cwd: t.ws });
    expect(listed.sessions).toEqual([{ sessionId, cwd: t.ws, title: "What does src/a.ts export?", updatedAt: expect.any(String) }]);

    const loaded = await h2.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    // The mode came back with it.
    expect(loaded.modes?.currentModeId).toBe("full");
    // Replayed before the answer: the prompt as a user message, then exactly what the editor was shown.
    const replayed = shown(h2.updates, sessionId);
    expect(replayed[0]).toEqual({ sessionUpdate: "user_message_chunk", content: { type: "text", text: "What does src/a.ts export?" } });
    expect(replayed.slice(1)).toEqual(before);

    // Continued: the model gets the whole history, and the new call does not reuse an old call id.
    await prompt(h2, sessionId, "And now?");
    const last = t.fake!.requests.at(-1)!.body;
    const roles = (last.messages ?? []).filter((m) => m.role !== "system").map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant", "tool"]);
    expect(messageText(h2, sessionId, "")).toMatch(/Still a\.$/);
    const callIds = h2.updatesOf(sessionId, "tool_call").map((c) => c.toolCallId);
    expect(callIds).toHaveLength(2);
    expect(new Set(callIds).size).toBe(2);
  });

  it("a slash command's call, a notice and a failed turn replay exactly as the editor saw them", async () => {
    const { h, sessionId } = await start({}, [{ status: 400, message: "Bad request from the fake" }]);
    await prompt(h, sessionId, "/help");
    await prompt(h, sessionId, "/read src/a.ts");
    await prompt(h, sessionId, "Fail now.");
    const before = shown(h.updates, sessionId) as { sessionUpdate: string }[];
    // The slash command's call was shown (pending, running, done) and never described.
    expect(before.filter((u) => u.sessionUpdate === "tool_call")).toHaveLength(1);
    await h.agent.request("session/close", { sessionId });

    const stored = await new SessionStore(t.home).read(sessionId);
    const calls = stored!.entries.filter((e) => e.type === "tool_call" || e.type === "tool_result");
    expect(calls).toMatchObject([
      { type: "tool_call", seq: 1, info: { toolId: "read", args: { path: "src/a.ts" } } },
      { type: "tool_result", seq: 1, status: "completed" },
    ]);
    expect(stored!.entries.filter((e) => e.type === "notice").map((e) => e.type === "notice" && e.failed)).toEqual([undefined, true]);

    const h2 = await restart();
    await h2.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    const replayed = (shown(h2.updates, sessionId) as { sessionUpdate: string }[]).filter((u) => u.sessionUpdate !== "user_message_chunk");
    expect(replayed).toEqual(before.filter((u) => u.sessionUpdate !== "user_message_chunk"));
  });

  it("a load or a resume of a session file with a torn last line tells the editor the line was skipped", async () => {
    const { h, sessionId } = await start();
    await prompt(h, sessionId, "What does src/a.ts export?");
    await h.agent.request("session/close", { sessionId });
    const file = (await new SessionStore(t.home).read(sessionId))!.file;
    await fsp.appendFile(file, '{"type":"agent_text","id":"0badf00d","text":"cut off he');
    const skippedNotices = (h2: Harness) =>
      h2
        .updatesOf(sessionId, "agent_message_chunk")
        .map((u) => (u.content.type === "text" ? u.content.text : ""))
        .filter((text) => text.includes("skipped"));

    const h2 = await restart();
    await h2.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    expect(skippedNotices(h2)).toEqual([expect.stringContaining(`1 line of the session file ${file} could not be read`)]);
    await h2.agent.request("session/close", { sessionId });

    await h2.agent.request("session/resume", { sessionId, cwd: t.ws });
    expect(skippedNotices(h2)).toHaveLength(2);
  });

  it("resume restores the history without replaying it", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "What does src/a.ts export?");
    const h2 = await restart();
    const resumed = await h2.agent.request("session/resume", { sessionId, cwd: t.ws });
    expect(resumed.modes?.currentModeId).toBe("full");
    expect(shown(h2.updates, sessionId)).toEqual([]);
    await prompt(h2, sessionId, "Anything else?");
    const roles = (t.fake!.requests.at(-1)!.body.messages ?? []).filter((m) => m.role !== "system").map((m) => m.role);
    expect(roles).toEqual(["user", "assistant", "tool", "assistant", "user"]);
  });

  it("lists a page at a time and filters by cwd; delete removes the session", async () => {
    const { h } = await start({}, [{ text: "one" }, { text: "two" }, { text: "three" }]);
    const ids: string[] = [];
    for (const text of ["first", "second", "third"]) {
      const id = await h.newSession(t.ws);
      await prompt(h, id, text);
      ids.push(id);
    }
    const other = await tempDir();
    try {
      const everything = await h.agent.request("session/list", {});
      expect(everything.sessions.map((s) => s.sessionId).sort()).toEqual([...ids].sort());
      expect((await h.agent.request("session/list", { cwd: other })).sessions).toEqual([]);

      const store = new SessionStore(t.home);
      const first = await store.list({ limit: 2 });
      expect(first.nextCursor).toBeDefined();
      const rest = await h.agent.request("session/list", { cursor: first.nextCursor });
      expect(rest.sessions).toHaveLength(1);
      expect(new Set([...first.sessions.map((s) => s.id), rest.sessions[0]!.sessionId])).toEqual(new Set(ids));
      await expect(h.agent.request("session/list", { cursor: "bogus" })).rejects.toMatchObject({ code: -32602 });

      await h.agent.request("session/delete", { sessionId: ids[0]! });
      expect((await h.agent.request("session/list", {})).sessions.map((s) => s.sessionId)).not.toContain(ids[0]);
      await expect(h.agent.request("session/load", { sessionId: ids[0]!, cwd: t.ws, mcpServers: [] })).rejects.toMatchObject({
        code: -32002,
      });
    } finally {
      await fsp.rm(other, { recursive: true, force: true });
    }
  });

  it("after a kill -9 mid-call, a load keeps everything written and reports the interrupted call to the editor and the model", async () => {
    const { h, sessionId } = await start({}, [
      { toolCalls: [{ id: "b1", name: "bash", arguments: { command: "sleep 3" } }] },
      { text: "Checked." },
    ]);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    const turn = prompt(h, sessionId, "Run the slow thing").catch(() => "killed");
    await h.waitFor(() => h.updatesOf(sessionId, "tool_call_update").some((u) => u.status === "in_progress"));
    const [call] = h.updatesOf(sessionId, "tool_call");
    h.child.kill("SIGKILL");
    await turn;

    t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake!.url, TOOLHOST_HOME: t.home } });
    await t.h.initialize();
    const h2 = t.h;
    await h2.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    const updates = h2.updatesOf(sessionId, "tool_call_update").filter((u) => u.toolCallId === call!.toolCallId);
    expect(updates.at(-1)).toMatchObject({ status: "failed" });
    expect(textOf(updates.at(-1)!)).toMatch(/may have run/);

    // The model is told too, in the call's result, and the conversation goes on.
    await prompt(h2, sessionId, "Go on");
    const tool = (t.fake!.requests.at(-1)!.body.messages ?? []).find((m) => m.role === "tool");
    expect(JSON.stringify(tool)).toMatch(/may have run in part or in full/);
    // And before the prompt, which calls that change things had started in the cut-short turn (once).
    const users = (t.fake!.requests.at(-1)!.body.messages ?? []).filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
    expect(users.at(-1)).toMatch(/the previous turn \(the request \\"Run the slow thing\\"\) was interrupted/);
    expect(users.at(-1)).toMatch(/- bash \{\\"command\\":\\"sleep 3\\"\}: did not finish; it may have run in part or in full/);
    expect(messageText(h2, sessionId, "")).toMatch(/Checked\.$/);
  });
});

/** A bash call printing 60,000 numbered lines (about 350 KB): past the cap, so the output goes to a sidecar. */
const BIG = { command: "seq 1 60000" };

/** The sidecar a call's result names. */
function outputPath(h: Harness, sessionId: string, callId: string): string {
  const raw = lastUpdate(h, sessionId, callId).rawOutput as { metadata: { truncated?: boolean; output_path?: string } };
  expect(raw.metadata.truncated).toBe(true);
  return raw.metadata.output_path!;
}

describe("the sidecar files of a recorded session", () => {
  it("stay with the session: an old output_path reads after a restart and a load, new ones join it, and delete removes them", async () => {
    let saved = "";
    const { h, sessionId } = await start({}, [
      { toolCalls: [{ id: "b1", name: "bash", arguments: BIG }] },
      { text: "Long." },
      // After the restart, the model reads on in the output its first call saved.
      () => ({ toolCalls: [{ id: "r1", name: "read", arguments: { path: saved, offset: 59_998, limit: 3 } }] }),
      { toolCalls: [{ id: "b2", name: "bash", arguments: BIG }] },
      { text: "Read it." },
    ]);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "Count");
    const [first] = h.updatesOf(sessionId, "tool_call");
    saved = outputPath(h, sessionId, first!.toolCallId);
    const file = (await new SessionStore(t.home).find(sessionId))!;
    const folder = sessionDataDir(file);
    // Next to the session's file, user-only; not in the temporary folder.
    expect(path.dirname(saved)).toBe(folder);
    expect((await fsp.stat(folder)).mode & 0o777).toBe(0o700);
    const size = (await fsp.stat(saved)).size;
    expect(size).toBeGreaterThan(200_000);

    // Closed, and the editor gone: the file stays.
    await h.agent.request("session/close", { sessionId });
    const h2 = await restart();
    expect((await fsp.stat(saved)).size).toBe(size);
    await h2.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    await prompt(h2, sessionId, "Read on in it");
    const [read, second] = h2.updatesOf(sessionId, "tool_call").filter((c) => c.toolCallId !== first!.toolCallId);
    const readDone = lastUpdate(h2, sessionId, read!.toolCallId);
    expect(readDone.status).toBe("completed");
    expect(JSON.stringify(readDone.rawOutput)).toMatch(/59998.*59999.*60000/s);

    // The loaded session's new output joins the folder under a new name; the old file is untouched.
    const again = outputPath(h2, sessionId, second!.toolCallId);
    expect(path.dirname(again)).toBe(folder);
    expect(again).not.toBe(saved);
    expect((await fsp.stat(saved)).size).toBe(size);

    await h2.agent.request("session/delete", { sessionId });
    await expect(fsp.stat(folder)).rejects.toThrow();
    await expect(fsp.stat(file)).rejects.toThrow();
  });

  it("the agent sweeps, in the background, data folders whose session file is gone", async () => {
    const project = path.join(t.home, "sessions", projectFolderName(t.ws));
    const folder = async (name: string) => {
      const dir = path.join(project, name);
      await fsp.mkdir(dir, { recursive: true });
      await fsp.writeFile(path.join(dir, "bash-0001.txt"), "old output");
      const time = new Date(Date.now() - 3 * 3600_000);
      await fsp.utimes(dir, time, time);
      return dir;
    };
    const orphan = await folder("gone-session");
    const kept = await folder("kept-session");
    await fsp.writeFile(`${kept}.jsonl`, "");
    const { h, sessionId } = await start();
    // session/new is answered before the sweep runs (about 2 s after the start).
    expect(sessionId).toBeTruthy();
    expect((await fsp.stat(orphan)).isDirectory()).toBe(true);
    await h.waitFor(() =>
      fsp.stat(orphan).then(
        () => false,
        () => true,
      ),
    );
    // (The new session's own file and hold are there from session/new on.)
    expect((await fsp.readdir(project)).filter((name) => !name.startsWith(sessionId)).sort()).toEqual([
      "kept-session",
      "kept-session.jsonl",
    ]);
  });

  it("with TOOLHOST_SESSIONS=off, stay in the temporary folder and go when the session closes", async () => {
    const tmp = await tempDir();
    try {
      const { h, sessionId } = await start({ TOOLHOST_SESSIONS: "off", TOOLHOST_SIDECAR_DIR: tmp }, [
        { toolCalls: [{ id: "b1", name: "bash", arguments: BIG }] },
        { text: "Long." },
      ]);
      await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
      await prompt(h, sessionId, "Count");
      const [call] = h.updatesOf(sessionId, "tool_call");
      const saved = outputPath(h, sessionId, call!.toolCallId);
      expect(path.dirname(path.dirname(saved))).toBe(tmp);
      await h.agent.request("session/close", { sessionId });
      await expect(fsp.stat(path.dirname(saved))).rejects.toThrow();
      await expect(fsp.stat(path.join(t.home, "sessions"))).rejects.toThrow();
    } finally {
      await fsp.rm(tmp, { recursive: true, force: true });
    }
  });
});
