import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SessionStore, type SessionEntry } from "../../src/agent/session-store.js";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { tempDir } from "../helpers.js";
import { Harness, useAcpTest } from "./harness.js";

// Durable sessions over real stdio: what a session writes to ~/.toolhost/sessions as it happens.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });
let home: string;

beforeEach(async () => {
  home = await tempDir();
});

afterEach(async () => {
  await fsp.rm(home, { recursive: true, force: true });
});

const READ_SCRIPT: FakeReply[] = [
  { toolCalls: [{ id: "c1", name: "read", arguments: { path: "src/a.ts" } }] },
  { text: "It exports a." },
  { text: "Nothing else." },
];

async function start(env: Record<string, string> = {}, script = READ_SCRIPT) {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: home, ...env } });
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

    const stored = await new SessionStore(home).read(sessionId);
    expect(stored).toBeDefined();
    expect(stored!.header).toMatchObject({ id: sessionId, cwd: t.ws, format: 1 });
    expect(path.dirname(stored!.file).startsWith(path.join(home, "sessions"))).toBe(true);
    expect((await fsp.stat(stored!.file)).mode & 0o777).toBe(0o600);
    const entries = stored!.entries;
    const of = <K extends SessionEntry["type"]>(type: K) => entries.filter((e): e is Extract<SessionEntry, { type: K }> => e.type === type);

    expect(of("setting")).toEqual([expect.objectContaining({ name: "mode", value: "full" })]);
    expect(of("title").map((e) => e.title)).toEqual(["What does src/a.ts export?"]);
    expect(of("turn").map((e) => [e.phase, e.prompt ?? e.stopReason])).toEqual([
      ["start", "What does src/a.ts export?\nBe brief."],
      ["end", "end_turn"],
      ["start", "Anything else?"],
      ["end", "end_turn"],
    ]);
    // The model's history, in order: what a load restores.
    expect(of("message").map((e) => e.message.role)).toEqual(["user", "assistant", "tool", "assistant", "user", "assistant"]);
    // The tool-call record: input, status, envelope.
    const [started] = of("tool_start");
    const [ended] = of("tool_end");
    expect(started).toMatchObject({ seq: 1, tool: "read", input: { path: "src/a.ts" } });
    expect(ended).toMatchObject({ seq: 1, callId: started!.callId, status: "completed", envelope: { type: "output" } });
    // The view: streamed text kept as one entry per run, not per token.
    const texts = of("view").filter((e) => e.call.method === "text");
    expect(texts.map((e) => e.call.args[0])).toEqual(["It exports a.", "Nothing else."]);
    expect(of("view").map((e) => e.call.method)).toContain("done");
  });

  it("records a call the user refused as refused, with its error code", async () => {
    const { h, sessionId } = await start({}, [
      { toolCalls: [{ id: "w1", name: "write", arguments: { path: "b.txt", content: "b\n" } }] },
      { text: "Not written." },
    ]);
    await prompt(h, sessionId, "Write b.txt");
    expect(h.permissionRequests).toHaveLength(1);
    const stored = await new SessionStore(home).read(sessionId);
    const ended = stored!.entries.find((e) => e.type === "tool_end");
    expect(ended).toMatchObject({ status: "refused", errorCode: "rejected", envelope: { type: "error" } });
  });

  it("writes nothing for a session that never got a prompt", async () => {
    const { h } = await start();
    await h.newSession(t.ws);
    expect((await new SessionStore(home).list()).sessions).toEqual([]);
  });

  it("writes nothing with TOOLHOST_SESSIONS=off", async () => {
    const { h, sessionId } = await start({ TOOLHOST_SESSIONS: "off" });
    await prompt(h, sessionId, "What does src/a.ts export?");
    expect(h.updatesOf(sessionId, "agent_message_chunk").length).toBeGreaterThan(0);
    expect((await new SessionStore(home).list()).sessions).toEqual([]);
  });
});
