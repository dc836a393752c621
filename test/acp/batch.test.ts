import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CLI_PATH, useAgentEnv } from "../helpers.js";
import { ServeProcess, until } from "./remote.js";

// JSON-RPC 2.0 batches (issue 34 §5; the conformance kit's BATCH-201..208) on stdio and over
// `serve`'s WebSocket and Streamable HTTP: a raw client, since the SDK's own client refuses to send
// or read an array.

const t = useAgentEnv();
const TOKEN = "test-token-0123456789abcdef";

/** A raw JSON-RPC peer: `send` one frame or line, `next` the agent's next answer (its notifications and requests skipped). */
interface Peer {
  send(text: string): void;
  next(): Promise<unknown>;
}

function queue(): { push(message: unknown): void; next(): Promise<unknown> } {
  const ready: unknown[] = [];
  const waiting: ((message: unknown) => void)[] = [];
  return {
    push(message) {
      // Notifications and the agent's requests (session/update and the like) are not answers.
      if (!Array.isArray(message) && typeof (message as { method?: unknown }).method === "string") return;
      const waiter = waiting.shift();
      if (waiter) waiter(message);
      else ready.push(message);
    },
    next: () => (ready.length > 0 ? Promise.resolve(ready.shift()) : new Promise((resolve) => waiting.push(resolve))),
  };
}

const request = (id: unknown, method: string, params?: object) => ({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) });
const initialize = JSON.stringify(request(0, "initialize", { protocolVersion: 1, clientCapabilities: {} }));
const code = (message: unknown) => (message as { error?: { code?: number } }).error?.code;

/** BATCH-201..208, in order on one connection. */
async function checkBatches(peer: Peer, cwd: string) {
  peer.send(initialize);
  expect(await peer.next()).toMatchObject({ id: 0, result: { protocolVersion: 1 } });

  // An empty array: one error, not an array, id null.
  peer.send("[]");
  const empty = await peer.next();
  expect(Array.isArray(empty)).toBe(false);
  expect(empty).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });

  // Invalid entries: an array with an error each.
  peer.send("[1]");
  expect(await peer.next()).toEqual([expect.objectContaining({ id: null, error: expect.objectContaining({ code: -32600 }) })]);
  peer.send("[1,2,3]");
  const three = (await peer.next()) as unknown[];
  expect(three).toHaveLength(3);
  expect(three.map(code)).toEqual([-32600, -32600, -32600]);

  // Only notifications: no answer at all (the next answer is the request sent after them).
  peer.send(
    JSON.stringify([
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "none" } },
      { jsonrpc: "2.0", method: "toolhost/note" },
    ]),
  );
  peer.send(JSON.stringify(request("after-notes", "toolhost/nothing")));
  expect(await peer.next()).toMatchObject({ id: "after-notes", error: { code: -32601 } });

  // Requests, an invalid entry and a notification: one array with an answer per request and the error.
  peer.send(
    JSON.stringify([
      request("n1", "session/new", { cwd, mcpServers: [] }),
      { foo: "bar" },
      { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "none" } },
      request(7, "toolhost/nothing"),
    ]),
  );
  const mixed = (await peer.next()) as { id: unknown; result?: { sessionId?: string } }[];
  expect(Array.isArray(mixed)).toBe(true);
  expect(mixed.map((m) => m.id)).toEqual(["n1", null, 7]);
  expect(typeof mixed[0]!.result?.sessionId).toBe("string");
  expect(mixed.slice(1).map(code)).toEqual([-32600, -32601]);

  // Not JSON: a parse error, as for any line; and single messages are answered as before.
  peer.send('[{"jsonrpc":"2.0","id":1,"method":"x"');
  expect(await peer.next()).toMatchObject({ id: null, error: { code: -32700 } });
  peer.send(JSON.stringify(request(8, "toolhost/nothing")));
  expect(await peer.next()).toMatchObject({ id: 8, error: { code: -32601 } });
}

describe("JSON-RPC batches (BATCH-201..208)", () => {
  it("are answered per JSON-RPC 2.0 on stdio", async () => {
    const child = spawn(process.execPath, [CLI_PATH], { env: t.env(), stdio: ["pipe", "pipe", "pipe"] });
    const exited = new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)));
    const answers = queue();
    let pending = "";
    child.stdout.on("data", (d: Buffer) => {
      pending += d.toString("utf8");
      let nl: number;
      while ((nl = pending.indexOf("\n")) >= 0) {
        answers.push(JSON.parse(pending.slice(0, nl)));
        pending = pending.slice(nl + 1);
      }
    });
    child.stderr.resume();
    try {
      await checkBatches({ send: (text) => void child.stdin.write(`${text}\n`), next: answers.next }, t.ws);
    } finally {
      child.stdin.end();
    }
    expect(await exited).toBe(0);
    expect(pending).toBe("");
  });

  it("are answered per JSON-RPC 2.0 over serve's WebSocket", async () => {
    const server = await ServeProcess.start(t.env({ TOOLHOST_SERVE_TOKEN: TOKEN }));
    t.defer(async () => expect(await server.stop()).toBe(0));
    const socket = new WebSocket(server.url("ws"), { headers: { Authorization: `Bearer ${TOKEN}` } });
    const answers = queue();
    socket.on("message", (data: Buffer) => answers.push(JSON.parse(data.toString("utf8"))));
    await new Promise((resolve, reject) => socket.once("open", resolve).once("error", reject));
    try {
      await checkBatches({ send: (text) => socket.send(text), next: answers.next }, t.ws);
    } finally {
      socket.close();
    }
  });

  it("are answered per JSON-RPC 2.0 over serve's Streamable HTTP: one body with the array, 202 for notifications only", async () => {
    const server = await ServeProcess.start(t.env({ TOOLHOST_SERVE_TOKEN: TOKEN }));
    t.defer(async () => expect(await server.stop()).toBe(0));
    const url = server.url("http");
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const post = (body: string, connection?: string) =>
      fetch(url, {
        method: "POST",
        headers: { ...auth, "Content-Type": "application/json", ...(connection ? { "Acp-Connection-Id": connection } : {}) },
        body,
      });
    const opened = await post(initialize);
    expect(opened.status).toBe(200);
    expect(await opened.json()).toMatchObject({ id: 0, result: { protocolVersion: 1 } });
    const id = opened.headers.get("acp-connection-id")!;
    // The connection stream, open as a client keeps it (a connection without one is taken as gone).
    const stream = new AbortController();
    const sse = await fetch(url, { headers: { ...auth, Accept: "text/event-stream", "Acp-Connection-Id": id }, signal: stream.signal });
    expect(sse.status).toBe(200);
    // What the connection stream carries, read as it comes.
    let streamed = "";
    const reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of sse.body!) streamed += decoder.decode(chunk as Uint8Array);
    })().catch(() => {});
    try {
      const answer = async (body: string, connection: string | null = id) => {
        const response = await post(body, connection ?? undefined);
        return { status: response.status, type: response.headers.get("content-type"), body: (await response.text()) || undefined };
      };
      // An empty array: one error, not an array, id null.
      const empty = await answer("[]");
      expect(empty.status).toBe(400);
      expect(JSON.parse(empty.body!)).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
      // Invalid entries: an array with an error each.
      const three = await answer("[1,2,3]");
      expect(three.status).toBe(200);
      expect((JSON.parse(three.body!) as unknown[]).map(code)).toEqual([-32600, -32600, -32600]);
      // Only notifications: 202 Accepted, no body.
      const notes = [
        { jsonrpc: "2.0", method: "session/cancel", params: { sessionId: "none" } },
        { jsonrpc: "2.0", method: "toolhost/note" },
      ];
      expect(await answer(JSON.stringify(notes))).toEqual({ status: 202, type: null, body: undefined });
      // Requests, an invalid entry and a notification: one JSON body, an answer per request and the error, in order.
      const mixed = await answer(
        JSON.stringify([
          request("n1", "session/new", { cwd: t.ws, mcpServers: [] }),
          { foo: "bar" },
          notes[0],
          request(7, "toolhost/nothing"),
        ]),
      );
      expect(mixed.status).toBe(200);
      expect(mixed.type).toMatch(/^application\/json/);
      const entries = JSON.parse(mixed.body!) as { id: unknown; result?: { sessionId?: string } }[];
      expect(entries.map((m) => m.id)).toEqual(["n1", null, 7]);
      expect(typeof entries[0]!.result?.sessionId).toBe("string");
      expect(entries.slice(1).map(code)).toEqual([-32600, -32601]);
      // initialize opens a connection: alone only. A batch without a connection: each request says so.
      expect((JSON.parse((await answer(`[${initialize}]`, null)).body!) as unknown[]).map(code)).toEqual([-32600]);
      const orphan = JSON.parse((await answer(JSON.stringify([request(9, "toolhost/nothing")]), null)).body!) as unknown[];
      expect(orphan).toEqual([
        expect.objectContaining({ id: 9, error: expect.objectContaining({ message: expect.stringMatching(/Acp-Connection-Id/) }) }),
      ]);
      // Not JSON: the SDK's answer, as before; a single message is accepted as before.
      expect((await answer('[{"jsonrpc":"2.0","id":1,"method":"x"')).status).toBe(400);
      expect((await answer(JSON.stringify(request(8, "toolhost/nothing")))).status).toBe(202);
      // Its answer comes on the stream; the batches' answers, all before it, never did.
      await until(() => streamed.includes('"id":8'));
      expect(streamed).not.toMatch(/"id":("n1"|7|9|"toolhost-http-batch)/);
    } finally {
      stream.abort();
      await reading;
    }
  });
});
