import { describe, expect, it } from "vitest";
import { Harness, useAcpTest } from "./harness.js";
import { V2Harness } from "./harness-v2.js";

// The handshake answered before the SDK loads (acp/stdio.ts): the client sees one answer per
// request, the SDK still validates and serves everything after it, and what the early reader
// cannot answer goes to the SDK in order.

const t = useAcpTest({ "a.txt": "hello\n" });

const answers = (h: Harness) => h.checker.messages.filter((m) => m.direction === "agent->client" && m.json.method === undefined);

describe("the early handshake", () => {
  it("answers initialize and session/new once each, and the session then works through the SDK", async () => {
    t.h = new Harness();
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const response = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/read a.txt" }] });
    expect(response.stopReason).toBe("end_turn");
    // The SDK was given the same initialize (it gates on it); its second answer never reaches the client.
    expect(answers(t.h).map((m) => m.json.id)).toEqual([...new Set(answers(t.h).map((m) => m.json.id))]);
    expect(t.h.checker.messages.some((m) => JSON.stringify(m.json).includes("toolhost-early-initialize"))).toBe(false);
    expect(t.h.updatesOf(sessionId, "tool_call_update").some((u) => u.status === "completed")).toBe(true);
  });

  it("leaves what it cannot answer to the SDK, in order", async () => {
    t.h = new Harness();
    await t.h.initialize();
    // A session with MCP servers is the SDK's to validate; a session/new right after it still works.
    t.h.sendRaw(
      JSON.stringify({ jsonrpc: "2.0", id: 901, method: "session/new", params: { cwd: t.ws, mcpServers: [{ name: "x", command: 5 }] } }),
    );
    t.h.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: 902, method: "session/new", params: { cwd: t.ws, mcpServers: [] } }));
    await t.h.waitFor(() => answers(t.h!).filter((m) => m.json.id === 901 || m.json.id === 902).length === 2);
    const byId = new Map(answers(t.h).map((m) => [m.json.id, m.json]));
    expect(byId.get(901)).toMatchObject({ error: { code: -32602 } });
    expect(byId.get(902)).toMatchObject({ result: { sessionId: expect.any(String) } });
  });
});

describe("the early handshake of a v2 client", () => {
  /** initialize and session/new of a v2 client; `viaSdk` pads the initialize past what the early reader parses. */
  async function handshake(viaSdk: boolean) {
    const h = new V2Harness({ TOOLHOST_HOME: t.home });
    t.defer(async () => {
      expect(await h.close()).toBe(0);
      expect(h.checker.problems).toEqual([]);
    });
    const init = await h.agent.request("initialize", {
      protocolVersion: 2,
      info: { name: "toolhost-v2-test", version: "1.0.0" },
      capabilities: {},
      ...(viaSdk ? { _meta: { pad: "x".repeat(1_100_000) } } : {}),
    });
    const { sessionId, ...rest } = await h.agent.request("session/new", { cwd: t.ws });
    return { h, init, sessionId, rest };
  }

  it("answers initialize and session/new as the v2 side does, and the session then works through it", async () => {
    const early = await handshake(false);
    const sdk = await handshake(true);
    expect(early.init).toEqual(sdk.init);
    expect(early.rest).toEqual(sdk.rest);
    expect(early.h.checker.messages.some((m) => JSON.stringify(m.json).includes("toolhost-early-initialize"))).toBe(false);
    // The early session is the v2 side's: a prompt is inserted and ends idle.
    await early.h.agent.request("session/prompt", { sessionId: early.sessionId, prompt: [{ type: "text", text: "/read a.txt" }] });
    await early.h.waitFor(() => early.h.states(early.sessionId).includes("idle:end_turn"));
    expect(early.h.updatesOf(early.sessionId, "tool_call_update").some((u) => u.status === "completed")).toBe(true);
    // A session with MCP servers is the SDK's: it still opens after the early handshake.
    const withServer = await early.h.agent.request("session/new", {
      cwd: t.ws,
      mcpServers: [{ type: "http", name: "none", url: "http://127.0.0.1:9/mcp", headers: [] }],
    });
    expect(withServer.sessionId).not.toBe(early.sessionId);
  });
});

describe("one answer per request, whatever came before (JSONRPC-005)", () => {
  // v1's session/new requires mcpServers. The early reader once took a session/new without them as a
  // connection's first request, while the SDK refused the same request after anything it had handled.
  for (const before of ["nothing", "an unknown method"]) {
    it(`session/new without mcpServers after ${before}: -32602`, async () => {
      t.h = new Harness();
      await t.h.initialize();
      if (before !== "nothing") {
        t.h.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: 900, method: "no/such_method", params: {} }));
        await t.h.waitFor(() => answers(t.h!).some((m) => m.json.id === 900));
        expect(answers(t.h).find((m) => m.json.id === 900)?.json).toMatchObject({ error: { code: -32601 } });
      }
      t.h.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: 901, method: "session/new", params: { cwd: t.ws } }));
      await t.h.waitFor(() => answers(t.h!).some((m) => m.json.id === 901));
      expect(answers(t.h).find((m) => m.json.id === 901)?.json).toMatchObject({ error: { code: -32602 } });
      // The connection goes on: the same request with its servers is answered.
      t.h.sendRaw(JSON.stringify({ jsonrpc: "2.0", id: 902, method: "session/new", params: { cwd: t.ws, mcpServers: [] } }));
      await t.h.waitFor(() => answers(t.h!).some((m) => m.json.id === 902));
      expect(answers(t.h).find((m) => m.json.id === 902)?.json).toMatchObject({ result: { sessionId: expect.any(String) } });
    });
  }
});

describe("a client that goes away during the handshake", () => {
  it("ends the agent quietly with exit 0", async () => {
    const { spawn } = await import("node:child_process");
    const { CLI_PATH } = await import("../helpers.js");
    const child = spawn(process.execPath, [CLI_PATH], { stdio: ["pipe", "pipe", "pipe"], cwd: t.ws });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += String(d)));
    // The reading end closes before the answer can be written.
    child.stdout.destroy();
    child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1 } })}\n`);
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
  });
});
