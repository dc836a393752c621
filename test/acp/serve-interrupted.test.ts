import type { ContentBlock } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { sleepMarker, survivors, useAgentEnv } from "../helpers.js";
import { RemoteClient, ServeProcess, until } from "./remote.js";

// Issue 34 §5: a turn that ends with a tool call unanswered — its client gone mid-approval or
// mid-command, a cancel, the agent killed — leaves a history the model provider still takes. Over
// `serve` with the SDK's WebSocket client; the fake model refuses a request that lacks a result for
// any of its tool calls, as real providers do, and says what each interrupted call was told.

const t = useAgentEnv();
const TOKEN = "test-token-0123456789abcdef";
const text = (value: string): ContentBlock[] => [{ type: "text", text: value }];

type Message = NonNullable<FakeBody["messages"]>[number] & { tool_calls?: { id: string }[]; tool_call_id?: string };

/** The tool call ids of a request that no tool message answers. */
function unanswered(body: FakeBody): string[] {
  const open = new Set<string>();
  for (const m of (body.messages ?? []) as Message[]) {
    for (const call of m.tool_calls ?? []) open.add(call.id);
    if (m.role === "tool" && m.tool_call_id) open.delete(m.tool_call_id);
  }
  return [...open];
}

/** A model that runs `sleep MARKER` when asked to sleep, and otherwise says what the calls' results were. */
async function fakeModel(marker: string) {
  return startFakeOpenAI({
    fallback: (body: FakeBody): FakeReply => {
      const missing = unanswered(body);
      if (missing.length) return { status: 400, message: `Missing tool results for ${missing.join(", ")}` };
      const messages = (body.messages ?? []) as Message[];
      const last = messages.at(-1)?.content;
      const lastText = typeof last === "string" ? last : JSON.stringify(last);
      // Only the prompt itself: the note about an interrupted turn quotes it.
      if (lastText === "please sleep" || lastText === JSON.stringify([{ type: "text", text: "please sleep" }]))
        return { toolCalls: [{ name: "bash", arguments: { command: `sleep ${marker}` } }] };
      const results = messages.filter((m) => m.role === "tool").map((m) => String(m.content).split(":")[0]);
      return { text: `answered; results: ${results.join(" | ")}` };
    },
  });
}

function start(env: Record<string, string> = {}): Promise<ServeProcess> {
  return ServeProcess.start(
    t.env({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake!.url, TOOLHOST_SERVE_TOKEN: TOKEN, ...env }),
  );
}

/** What the agent said in the session since `from` updates. */
function said(c: RemoteClient, sessionId: string): string {
  return c.updates
    .filter((u) => u.sessionId === sessionId)
    .map((u) => u.update)
    .map((u) => (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" ? u.content.text : ""))
    .join("");
}

describe("serve: a turn cut short with a tool call unanswered", () => {
  it("a client gone mid-approval or mid-command, or a cancel: the resumed session's next prompt works", async () => {
    const marker = sleepMarker();
    t.fake = await fakeModel(marker);
    const server = await start();
    const clients: RemoteClient[] = [];
    const connect = async (options: ConstructorParameters<typeof RemoteClient>[2] = {}) => {
      const c = new RemoteClient(server.url("ws"), "ws", { token: TOKEN, ...options });
      clients.push(c);
      await c.initialize();
      return c;
    };
    t.defer(async () => {
      for (const c of clients) c.close();
      expect(await server.stop()).toBe(0);
      for (const c of clients) expect(c.checker.problems).toEqual([]);
    });
    const drops = () => (server.stderr.join("").match(/kept 60s for session\/resume/g) ?? []).length;

    // A client that never answers the approval, then vanishes; and one whose command runs when it vanishes.
    for (const mode of ["ask", "full"] as const) {
      const first = await connect({ permission: () => new Promise<never>(() => {}) });
      const sessionId = await first.newSession(t.ws);
      await first.agent.request("session/set_mode", { sessionId, modeId: mode });
      first.agent.request("session/prompt", { sessionId, prompt: text("please sleep") }).catch(() => {});
      if (mode === "ask") await until(() => first.permissionRequests.length > 0);
      else await until(async () => (await survivors(`sleep ${marker}`)).length > 0);
      const before = drops();
      first.drop();
      await until(() => drops() > before);
      const again = await connect();
      await again.agent.request("session/resume", { sessionId, cwd: t.ws, mcpServers: [] });
      const answer = await again.agent.request("session/prompt", { sessionId, prompt: text("still there?") });
      expect(answer.stopReason).toBe("end_turn");
      // The model got the interrupted call's result: cancelled, or (the command killed) its failure.
      expect(said(again, sessionId)).toMatch(mode === "ask" ? /^answered; results: Cancelled$/ : /^answered; results: \S/);
    }

    // A cancel while the approval waits, on the same connection.
    const c = await connect({ permission: () => new Promise<never>(() => {}) });
    const sessionId = await c.newSession(t.ws);
    await c.agent.request("session/set_mode", { sessionId, modeId: "ask" });
    const cancelled = c.agent.request("session/prompt", { sessionId, prompt: text("please sleep") });
    await until(() => c.permissionRequests.length > 0);
    await c.agent.notify("session/cancel", { sessionId });
    expect((await cancelled).stopReason).toBe("cancelled");
    expect((await c.agent.request("session/prompt", { sessionId, prompt: text("next") })).stopReason).toBe("end_turn");
    expect(said(c, sessionId)).toMatch(/^answered; results: ./);
    expect(t.fake.requests.filter((r) => unanswered(r.body).length)).toEqual([]);
  });

  it("the agent killed mid-call (kill -9): the session loaded by another process answers its next prompt", async () => {
    const marker = sleepMarker();
    t.fake = await fakeModel(marker);
    const killed = await start();
    const first = new RemoteClient(killed.url("ws"), "ws", { token: TOKEN });
    await first.initialize();
    const sessionId = await first.newSession(t.ws);
    await first.agent.request("session/set_mode", { sessionId, modeId: "full" });
    first.agent.request("session/prompt", { sessionId, prompt: text("please sleep") }).catch(() => {});
    await until(async () => (await survivors(`sleep ${marker}`)).length > 0);
    killed.child.kill("SIGKILL");
    await new Promise((resolve) => killed.child.once("exit", resolve));
    first.close();
    // Its command ends with it (the guard of process-groups.ts), soon after: wait for that.
    await until(async () => (await survivors(`sleep ${marker}`)).length === 0, 30_000);

    const server = await start();
    const again = new RemoteClient(server.url("ws"), "ws", { token: TOKEN });
    t.defer(async () => {
      again.close();
      expect(await server.stop()).toBe(0);
      expect(again.checker.problems).toEqual([]);
    });
    await again.initialize();
    await again.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    const answer = await again.agent.request("session/prompt", { sessionId, prompt: text("still there?") });
    expect(answer.stopReason).toBe("end_turn");
    expect(said(again, sessionId)).toMatch(/answered; results: No result$/);
  });
});
