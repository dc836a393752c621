import { request as httpRequest } from "node:http";
import type { ContentBlock } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { sleepMarker, survivors, useAgentEnv } from "../helpers.js";
import { closeAndCheck, Harness, lastUpdate, messageText } from "./harness.js";
import { RemoteClient, ServeProcess, until } from "./remote.js";

// `toolhost serve` over the network, as issue 27 §2 asks: the SDK's WebSocket and HTTP clients
// against a spawned `node dist/cli.js serve`, the fake model behind it, every message schema-checked.

const t = useAgentEnv({ files: { "a.txt": "alpha file\n", "b.txt": "bravo file\n" } });
const TOKEN = "test-token-0123456789abcdef";

function toolResults(body: FakeBody): string[] {
  return (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
}

interface Started {
  server: ServeProcess;
  clients: RemoteClient[];
}

/** A serve process with the fake model (`reply` answers every request), stopped and checked after the test. */
async function serve(
  reply: (body: FakeBody) => FakeReply | Promise<FakeReply>,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<Started> {
  t.fake = await startFakeOpenAI({ fallback: reply });
  const server = await ServeProcess.start(
    t.env({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_SERVE_TOKEN: TOKEN, ...env }),
    args,
  );
  const started: Started = { server, clients: [] };
  t.defer(async () => {
    for (const c of started.clients) c.close();
    expect(await server.stop()).toBe(0);
    // serve writes nothing to stdout, and no client saw a message outside the ACP v1 schema.
    expect(server.stdout.join("")).toBe("");
    for (const c of started.clients) expect(c.checker.problems).toEqual([]);
  });
  return started;
}

function connect(s: Started, kind: "ws" | "http", options: ConstructorParameters<typeof RemoteClient>[2] = { token: TOKEN }) {
  const c = new RemoteClient(s.server.url(kind), kind, options);
  s.clients.push(c);
  return c;
}

/** What the agent said to a remote client in a session. */
const messageTextOf = (c: RemoteClient, sessionId: string) =>
  c.updates
    .filter((u) => u.sessionId === sessionId)
    .map((u) => u.update)
    .map((u) => (u.sessionUpdate === "agent_message_chunk" && u.content.type === "text" ? u.content.text : ""))
    .join("");

/** A prompt's text. */
const text = (value: string): ContentBlock[] => [{ type: "text", text: value }];

describe("toolhost serve", () => {
  it("serves two clients at once, WebSocket and HTTP, each its own session and a tool-using prompt", async () => {
    // Each conversation reads the file its prompt names, then answers with what it read. The first
    // model request of each waits for the other's: both turns are under way at the same time.
    let arrived = 0;
    let both = () => {};
    const bothArrived = new Promise<void>((resolve) => (both = resolve));
    const s = await serve(async (body) => {
      const results = toolResults(body);
      if (results.length === 0) {
        if (++arrived === 2) both();
        await bothArrived;
        return { toolCalls: [{ name: "read", arguments: { path: firstUserText(body).trim() } }] };
      }
      return { text: `I read: ${results[0]!.includes("alpha") ? "alpha" : "bravo"}` };
    });
    const ws = connect(s, "ws");
    const http = connect(s, "http");
    await Promise.all([ws.initialize(), http.initialize()]);
    const [wsSession, httpSession] = await Promise.all([ws.newSession(t.ws), http.newSession(t.ws)]);
    expect(wsSession).not.toBe(httpSession);
    const [a, b] = await Promise.all([
      ws.agent.request("session/prompt", { sessionId: wsSession, prompt: text("a.txt") }),
      http.agent.request("session/prompt", { sessionId: httpSession, prompt: text("b.txt") }),
    ]);
    expect(a.stopReason).toBe("end_turn");
    expect(b.stopReason).toBe("end_turn");
    for (const [c, sessionId, word] of [
      [ws, wsSession, "alpha"],
      [http, httpSession, "bravo"],
    ] as const) {
      // Each client sees its own session only: its read, completed, and the answer built on it.
      expect(new Set(c.updates.map((u) => u.sessionId))).toEqual(new Set([sessionId]));
      const calls = c.updates.filter((u) => u.update.sessionUpdate === "tool_call").map((u) => u.update);
      expect(calls).toEqual([expect.objectContaining({ kind: "read" })]);
      const done = c.updates.filter((u) => u.update.sessionUpdate === "tool_call_update").at(-1)!.update;
      expect(done).toMatchObject({ status: "completed" });
      const said = c.updates
        .map((u) => u.update)
        .filter((u) => u.sessionUpdate === "agent_message_chunk")
        .map((u) => (u.content.type === "text" ? u.content.text : ""))
        .join("");
      expect(said).toBe(`I read: ${word}`);
    }
  });

  it("refuses a missing or wrong token, a foreign Origin and a rebinding Host, before ACP starts", async () => {
    const s = await serve(() => ({ text: "never asked" }));
    const url = s.server.url("http");
    const post = (headers: Record<string, string>) =>
      fetch(url, {
        method: "POST",
        headers: { "Content-Type": "application/json", ...headers },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } }),
      });
    const none = await post({});
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect((await post({ Authorization: "Bearer wrong-token-0123456789abcdef" })).status).toBe(401);
    expect((await post({ Authorization: TOKEN })).status).toBe(401);
    // A proper prefix of the token, over the wire.
    expect((await post({ Authorization: `Bearer ${TOKEN.slice(0, -1)}` })).status).toBe(401);
    expect((await post({ Authorization: `Bearer ${TOKEN.slice(0, 8)}` })).status).toBe(401);
    expect((await post({ Authorization: `Bearer ${TOKEN}`, Origin: "https://evil.example" })).status).toBe(403);
    // The right token: the SDK answers the initialize.
    const ok = await post({ Authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("acp-connection-id")).toBeTruthy();
    // A page on a rebinding domain reaches 127.0.0.1 with its own name as Host.
    const [host, port] = s.server.address.split(":");
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host,
          port: Number(port),
          path: "/acp",
          method: "POST",
          headers: { Host: `rebind.example:${port}`, Authorization: `Bearer ${TOKEN}` },
        },
        (res) => resolve(res.statusCode ?? 0),
      );
      req.on("error", reject);
      req.end("{}");
    });
    expect(status).toBe(421);

    // The SDK's clients: refused at the WebSocket upgrade and at the HTTP initialize.
    for (const kind of ["ws", "http"] as const) {
      const wrong = connect(s, kind, { token: "wrong-token-0123456789abcdef" });
      await expect(wrong.initialize()).rejects.toThrow();
      const missing = connect(s, kind, {});
      await expect(missing.initialize()).rejects.toThrow();
    }
    const browser = connect(s, "ws", { token: TOKEN, headers: { Origin: "https://evil.example" } });
    await expect(browser.initialize()).rejects.toThrow();
    // The upgrade's status, as ws reports it.
    const refused = await new Promise<number>((resolve) => {
      const socket = new WebSocket(s.server.url("ws"), { headers: { Authorization: "Bearer nope-nope-nope-nope" } });
      socket.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      socket.on("error", () => {});
    });
    expect(refused).toBe(401);
    // Only the raw initialize with the right token became a connection.
    expect(s.server.stderr.join("").match(/a client connected/g)).toHaveLength(1);
  });

  it("lets an allowed Origin in", async () => {
    const s = await serve(() => ({ text: "hello" }), ["--allow-origin", "https://app.example"]);
    const c = connect(s, "ws", { token: TOKEN, headers: { Origin: "https://app.example" } });
    await c.initialize();
    expect(await c.newSession(t.ws)).toBeTruthy();
  });

  it("a client that disappears: its running command is killed", async () => {
    const marker = sleepMarker();
    const s = await serve(() => ({ text: "unused" }));
    const c = connect(s, "ws");
    await c.initialize();
    const sessionId = await c.newSession(t.ws);
    await c.agent.request("session/set_mode", { sessionId, modeId: "full" });
    const running = c.agent.request("session/prompt", { sessionId, prompt: text(`/bash sleep ${marker}`) });
    running.catch(() => {});
    await until(async () => (await survivors(`sleep ${marker}`)).length > 0);
    c.drop();
    await until(async () => (await survivors(`sleep ${marker}`)).length === 0);
    await until(() => /a client left \(0 connected\)/.test(s.server.stderr.join("")));
  });

  it("a client that reconnects resumes its session: the same history, on a new connection", async () => {
    const s = await serve((body) => {
      const users = (body.messages ?? []).filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
      return { text: `I have seen ${users.length} prompt(s): ${users.join(" | ")}` };
    });
    const first = connect(s, "ws");
    await first.initialize();
    const sessionId = await first.newSession(t.ws);
    await first.agent.request("session/prompt", { sessionId, prompt: text("remember the word kumquat") });
    first.drop();
    await until(() => /kept 60s for session\/resume/.test(s.server.stderr.join("")));

    for (const kind of ["http", "ws"] as const) {
      const again = connect(s, kind);
      await again.initialize();
      const resumed = await again.agent.request("session/resume", { sessionId, cwd: t.ws, mcpServers: [] });
      expect(resumed.configOptions).toBeTruthy();
      const answer = await again.agent.request("session/prompt", { sessionId, prompt: text(`and again over ${kind}`) });
      expect(answer.stopReason).toBe("end_turn");
      const said = again.updates
        .filter((u) => u.sessionId === sessionId)
        .map((u) => u.update)
        .filter((u) => u.sessionUpdate === "agent_message_chunk")
        .map((u) => (u.content.type === "text" ? u.content.text : ""))
        .join("");
      expect(said).toMatch(/kumquat/);
      expect(said).toContain(`and again over ${kind}`);
      // The next connection takes it over from this one, as a client that reconnects again would.
      again.close();
      await until(() => (s.server.stderr.join("").match(/a client left \(0 connected\)/g) ?? []).length >= (kind === "http" ? 2 : 3));
    }
    // Both times the live session was taken over, not started again from its file.
    expect(s.server.stderr.join("").match(/session \S+ resumed on a new connection/g)).toHaveLength(2);
    // Other roots: the kept session closes, and the resume starts it again from its file with them.
    const other = await t.dir({ "c.txt": "c\n" });
    const elsewhere = connect(s, "ws");
    await elsewhere.initialize();
    await elsewhere.agent.request("session/resume", { sessionId, cwd: other, mcpServers: [] });
    await elsewhere.agent.request("session/prompt", { sessionId, prompt: text("from elsewhere") });
    const said = elsewhere.updates
      .map((u) => u.update)
      .filter((u) => u.sessionUpdate === "agent_message_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""))
      .join("");
    expect(said).toMatch(/I have seen 4 prompt\(s\): .*kumquat.*from elsewhere/);
    expect(s.server.stderr.join("").match(/session \S+ resumed on a new connection/g)).toHaveLength(2);
  });

  it("drops a WebSocket client that stops answering pings, and a new connection takes a session over at once, even from a live one", async () => {
    const s = await serve(
      (body) => ({ text: `prompt ${(body.messages ?? []).filter((m) => m.role === "user").length}` }),
      ["--ping-interval", "2"],
    );
    const silent = connect(s, "ws");
    await silent.initialize();
    const sessionId = await silent.newSession(t.ws);
    // Its process hangs: nothing it receives is read, no ping answered.
    silent.socket!.pause();
    await until(() => /did not answer a ping: dropped/.test(s.server.stderr.join("")));
    await until(() => /kept 60s for session\/resume/.test(s.server.stderr.join("")));

    const second = connect(s, "ws");
    await second.initialize();
    await second.agent.request("session/resume", { sessionId, cwd: t.ws, mcpServers: [] });
    expect((await second.agent.request("session/prompt", { sessionId, prompt: text("one") })).stopReason).toBe("end_turn");
    // A client that answers its pings stays; a third connection still takes the session from it.
    const third = connect(s, "ws");
    await third.initialize();
    await third.agent.request("session/resume", { sessionId, cwd: t.ws, mcpServers: [] });
    expect(s.server.stderr.join("")).toMatch(new RegExp(`session ${sessionId} taken over from a connection still open`));
    expect((await third.agent.request("session/prompt", { sessionId, prompt: text("two") })).stopReason).toBe("end_turn");
    expect(messageTextOf(third, sessionId)).toContain("prompt 2");
    expect(s.server.stderr.join("").match(/did not answer a ping/g)).toHaveLength(1);
  });

  it("an HTTP client whose streams close and stay closed is gone too: its command is killed", async () => {
    const marker = sleepMarker();
    const s = await serve(() => ({ text: "unused" }), [], { TOOLHOST_SERVE_ABSENCE_MS: "300" });
    // The client's network: every request through one abort, which the test pulls.
    const network = new AbortController();
    const cut: typeof fetch = (input, init) => {
      if (network.signal.aborted) return Promise.reject(new Error("network down"));
      const signal = init?.signal ? AbortSignal.any([init.signal, network.signal]) : network.signal;
      return fetch(input, { ...init, signal });
    };
    const c = connect(s, "http", { token: TOKEN, fetch: cut });
    await c.initialize();
    const sessionId = await c.newSession(t.ws);
    await c.agent.request("session/set_mode", { sessionId, modeId: "full" });
    c.agent.request("session/prompt", { sessionId, prompt: text(`/bash sleep ${marker}`) }).catch(() => {});
    await until(async () => (await survivors(`sleep ${marker}`)).length > 0);
    network.abort();
    await until(async () => (await survivors(`sleep ${marker}`)).length === 0);
    // The server's log (its pipe may lag behind /proc) says the connection ended.
    await until(() => /a client left \(0 connected\)/.test(s.server.stderr.join("")));
  });

  it("an HTTP client that never opens its connection stream after initialize is gone too", async () => {
    t.fake = await startFakeOpenAI({ fallback: { text: "unused" } });
    const server = await ServeProcess.start(t.env({ TOOLHOST_SERVE_TOKEN: TOKEN, TOOLHOST_SERVE_ABSENCE_MS: "300" }));
    t.defer(async () => expect(await server.stop()).toBe(0));
    const answer = await fetch(server.url("http"), {
      method: "POST",
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("acp-connection-id")).toBeTruthy();
    await answer.text();
    await until(() => /a client connected \(1 connected\)/.test(server.stderr.join("")));
    await until(() => /a client left \(0 connected\)/.test(server.stderr.join("")));
  });

  it("holds to its limits: connections at once, sessions per connection; and serves a unix socket", async () => {
    const socket = `${await t.dir()}/acp.sock`;
    t.fake = await startFakeOpenAI({ fallback: { text: "hi" } });
    const server = await ServeProcess.start(t.env({ TOOLHOST_SERVE_TOKEN: TOKEN }), [
      "--socket",
      socket,
      "--max-connections",
      "1",
      "--max-sessions",
      "1",
    ]);
    const s: Started = { server, clients: [] };
    t.defer(async () => {
      for (const c of s.clients) c.close();
      expect(await server.stop()).toBe(0);
      for (const c of s.clients) expect(c.checker.problems).toEqual([]);
    });
    const url = `ws+unix://${socket}:/acp`;
    const one = new RemoteClient(url, "ws", { token: TOKEN });
    s.clients.push(one);
    await one.initialize();
    await one.newSession(t.ws);
    await expect(one.newSession(t.ws)).rejects.toMatchObject({ code: -32600, message: expect.stringMatching(/--max-sessions/) });
    const two = new RemoteClient(url, "ws", { token: TOKEN });
    s.clients.push(two);
    await expect(two.initialize()).rejects.toThrow();
    const refused = await new Promise<number>((resolve) => {
      const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
      ws.on("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0));
      ws.on("error", () => {});
    });
    expect(refused).toBe(503);
  });

  it("toolhost connect: an editor's stdio reaches the server, over WebSocket and HTTP", async () => {
    const s = await serve((body) =>
      toolResults(body).length === 0 ? { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] } : { text: "read a.txt" },
    );
    for (const kind of ["ws", "http"] as const) {
      // An editor that offers its files and terminals: across the network they are not used.
      const h = new Harness({
        args: ["connect", s.server.url(kind)],
        env: { TOOLHOST_SERVE_TOKEN: TOKEN },
        capabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: true },
      });
      try {
        await h.initialize();
        const sessionId = await h.newSession(t.ws);
        const answer = await h.agent.request("session/prompt", { sessionId, prompt: text("read it") });
        expect(answer.stopReason).toBe("end_turn");
        expect(lastUpdate(h, sessionId, h.updatesOf(sessionId, "tool_call")[0]!.toolCallId).status).toBe("completed");
        expect(messageText(h, sessionId)).toBe("read a.txt");
        expect(h.clientCalls).toEqual([]);
      } finally {
        // stdin's end ends the bridge (exit 0) and its connection; every line on its stdio is ACP v1.
        await closeAndCheck(h);
      }
    }
    await until(() => (s.server.stderr.join("").match(/a client left \(0 connected\)/g) ?? []).length === 2);
    // Without the token the bridge cannot start.
    const h = new Harness({ args: ["connect", s.server.url("ws")], env: { TOOLHOST_SERVE_TOKEN: "wrong-token-0123456789abcdef" } });
    await expect(h.initialize()).rejects.toThrow();
    expect(await h.close()).toBe(1);
    expect(h.stderr.join("")).toMatch(/toolhost connect: ws:\/\/.*401/);
  });
});
