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

  it("a v2 client that goes away: its session ends and its running command is killed", async () => {
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
      expect(c.checker.problems).toEqual([]);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
