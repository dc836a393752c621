import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { CLI_PATH, useAgentEnv } from "../helpers.js";
import { ServeProcess } from "./remote.js";

// JSON-RPC 2.0 batches (issue 34 §5; the conformance kit's BATCH-201..208) on stdio and over
// `serve`'s WebSocket: a raw client, since the SDK's own client refuses to send or read an array.

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
});
