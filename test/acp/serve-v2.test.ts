import { client, type SessionUpdate, type UpdateSessionNotification } from "@agentclientprotocol/sdk/experimental/v2";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { sleepMarker, survivors, useAgentEnv } from "../helpers.js";
import { checked, ServeProcess, until } from "./remote.js";
import { WireChecker } from "./wire.js";

// `toolhost serve` speaks v2 too (issue 27): the SDK's v2 client over the SDK's WebSocket and HTTP
// streams, beside a v1 client, against one spawned serve; every v2 message checked against schema/v2.

const t = useAgentEnv({ files: { "a.txt": "alpha file\n" } });
const TOKEN = "test-token-v2-0123456789abcdef";

function route(body: FakeBody): FakeReply {
  const results = (body.messages ?? []).filter((m) => m.role === "tool");
  if (!results.length) return { toolCalls: [{ id: "g", name: "glob", arguments: { pattern: "*.txt" } }] };
  return { text: `Found: ${String(results[0]?.content).includes("a.txt") ? "a.txt" : "nothing"}` };
}

/** A v2 client over a serve transport, its messages checked against the v2 schema. */
function v2Client(url: string, kind: "ws" | "http") {
  const checker = new WireChecker(false, true);
  const updates: UpdateSessionNotification[] = [];
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const stream = kind === "ws" ? createWebSocketStream(url, { WebSocket, headers }) : createHttpStream(url, { headers });
  const connection = client({ name: "toolhost-v2-remote-test" })
    .onNotification("session/update", ({ params }) => void updates.push(params))
    .onRequest("session/request_permission", () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }))
    .connect(checked(stream, checker));
  const of = <K extends string>(sessionId: string, kind: K) =>
    updates
      .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === kind)
      .map((n) => n.update as Extract<SessionUpdate, { sessionUpdate: K }>);
  return { checker, updates, connection, agent: connection.agent, of };
}

describe("toolhost serve, ACP v2", () => {
  it.each(["ws", "http"] as const)("a v2 client over %s completes a tool-using prompt; every message is v2", async (kind) => {
    t.fake = await startFakeOpenAI({ fallback: route });
    const server = await ServeProcess.start(
      t.env({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_SERVE_TOKEN: TOKEN }),
    );
    const c = v2Client(server.url(kind), kind);
    try {
      const init = await c.agent.request("initialize", {
        protocolVersion: 2,
        info: { name: "v2-remote", version: "1.0.0" },
        capabilities: {},
      });
      expect(init.protocolVersion).toBe(2);
      const { sessionId } = await c.agent.request("session/new", { cwd: t.ws });
      await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Which text files?" }] });
      await until(() => c.of(sessionId, "state_update").some((u) => (u as { state: string }).state === "idle"));
      const calls = c.of(sessionId, "tool_call_update");
      expect(calls.find((u) => u.name === "glob")).toMatchObject({ kind: "search" });
      expect(calls.filter((u) => u.status === "completed").length).toBeGreaterThan(0);
      const said = c
        .of(sessionId, "agent_message_chunk")
        .map((u) => (u.content.type === "text" ? u.content.text : ""))
        .join("");
      expect(said).toBe("Found: a.txt");
      expect(c.checker.problems).toEqual([]);
      expect(c.checker.messages.length).toBeGreaterThan(5);
    } finally {
      c.connection.close();
      expect(await server.stop()).toBe(0);
      expect(server.stdout.join("")).toBe("");
    }
  });

  it("a v2 client that goes away: its running command is killed, its session kept for a resume", async () => {
    const marker = sleepMarker();
    t.fake = await startFakeOpenAI({ fallback: { toolCalls: [{ id: "s", name: "bash", arguments: { command: `sleep ${marker}` } }] } });
    const server = await ServeProcess.start(
      t.env({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_SERVE_TOKEN: TOKEN }),
    );
    try {
      const c = v2Client(server.url("ws"), "ws");
      await c.agent.request("initialize", { protocolVersion: 2, info: { name: "v2-remote", version: "1.0.0" }, capabilities: {} });
      const { sessionId } = await c.agent.request("session/new", { cwd: t.ws });
      await c.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Sleep" }] });
      await until(async () => (await survivors(`sleep ${marker}`)).length > 0);
      c.connection.close();
      await until(async () => (await survivors(`sleep ${marker}`)).length === 0);
      await until(() => /a client left with 1 session\(s\): kept 60s for session\/resume/.test(server.stderr.join("")));
      expect(c.checker.problems).toEqual([]);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });

  it("a v2 client that reconnects resumes its session live, over the other transport; a replay resume starts it from its file", async () => {
    t.fake = await startFakeOpenAI({
      fallback: (body) => {
        const users = (body.messages ?? []).filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
        return { text: `I have seen ${users.length} prompt(s): ${users.join(" | ")}` };
      },
    });
    const server = await ServeProcess.start(
      t.env({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_SERVE_TOKEN: TOKEN }),
    );
    const clients: ReturnType<typeof v2Client>[] = [];
    const open = async (kind: "ws" | "http") => {
      const c = v2Client(server.url(kind), kind);
      clients.push(c);
      await c.agent.request("initialize", { protocolVersion: 2, info: { name: "v2-remote", version: "1.0.0" }, capabilities: {} });
      return c;
    };
    const said = (c: ReturnType<typeof v2Client>, sessionId: string) =>
      c
        .of(sessionId, "agent_message_chunk")
        .map((u) => (u.content.type === "text" ? u.content.text : ""))
        .join("");
    const idle = (c: ReturnType<typeof v2Client>, sessionId: string, count: number) =>
      until(() => c.of(sessionId, "state_update").filter((u) => (u as { state: string }).state === "idle").length >= count);
    try {
      const first = await open("ws");
      const { sessionId } = await first.agent.request("session/new", { cwd: t.ws });
      await first.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "remember the word kumquat" }] });
      await idle(first, sessionId, 1);
      first.connection.close();
      await until(() => /kept 60s for session\/resume/.test(server.stderr.join("")));

      // A resume without replay: the live session, taken over (nothing replayed; its state, then the answer).
      const second = await open("http");
      await second.agent.request("session/resume", { sessionId, cwd: t.ws });
      expect(second.of(sessionId, "user_message")).toEqual([]);
      expect(second.of(sessionId, "state_update").at(-1)).toMatchObject({ state: "idle" });
      await second.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "and again" }] });
      await idle(second, sessionId, 2);
      expect(said(second, sessionId)).toMatch(/I have seen 2 prompt\(s\): .*kumquat.*and again/);
      expect(server.stderr.join("").match(/session \S+ resumed on a new connection/g)).toHaveLength(1);
      second.connection.close();
      await until(() => (server.stderr.join("").match(/kept 60s for session\/resume/g) ?? []).length >= 2);

      // A resume that replays from the start: the kept session closes and starts again from its file.
      const third = await open("ws");
      await third.agent.request("session/resume", { sessionId, cwd: t.ws, replayFrom: { type: "start" } });
      const replayed = third.of(sessionId, "user_message_chunk").map((u) => (u.content.type === "text" ? u.content.text : ""));
      expect(replayed).toEqual(["remember the word kumquat", "and again"]);
      expect(server.stderr.join("").match(/session \S+ resumed on a new connection/g)).toHaveLength(1);
      for (const c of clients) expect(c.checker.problems).toEqual([]);
    } finally {
      for (const c of clients) c.connection.close();
      expect(await server.stop()).toBe(0);
    }
  });
});
