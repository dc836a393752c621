import { spawn } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { McpServer } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { liveness } from "../mcp/liveness.js";
import { closeAndCheck, Harness, lastUpdate, messageText, selected, textOf, type HarnessOptions, useAcpTest, prompt } from "./harness.js";

// MCP servers over the real wire: the editor gives them in session/new, toolhost connects them
// after answering, and the model calls their tools through the usual approval.

const FIXTURE = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));

const t = useAcpTest({ "a.txt": "a\n" });

const fixture = (name: string, env: Record<string, string> = {}): McpServer => ({
  name,
  command: process.execPath,
  args: [FIXTURE],
  env: Object.entries({ MCP_NAME: name, ...env }).map(([k, value]) => ({ name: k, value })),
});

async function start(mcpServers: McpServer[], script: FakeReply[] = [], options: HarnessOptions = {}) {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({
    ...options,
    env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_MCP_TIMEOUT_MS: "3000", ...options.env },
  });
  await t.h.initialize();
  const started = Date.now();
  const { sessionId } = await t.h.agent.request("session/new", { cwd: t.ws, mcpServers });
  return { h: t.h, fake: t.fake, sessionId, answeredMs: Date.now() - started };
}

/** The commands of the last available_commands_update. */
const commands = (h: Harness, sessionId: string) =>
  (h.updatesOf(sessionId, "available_commands_update").at(-1)?.availableCommands ?? []).map((c) => c.name);

describe("MCP servers over ACP", () => {
  it("advertises HTTP and SSE MCP servers", async () => {
    t.h = new Harness();
    const answer = await t.h.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {} });
    expect(answer.agentCapabilities?.mcpCapabilities).toEqual({ http: true, sse: true });
  });

  it("connects the editor's server after session/new and the model calls its tool, approved through session/request_permission", async () => {
    const { h, fake, sessionId } = await start(
      [fixture("fx")],
      [{ toolCalls: [{ id: "c1", name: "mcp__fx__add", arguments: { a: 2, b: 3 } }] }, { text: "The sum is 5." }],
      { permission: () => selected("allow_once") },
    );
    // Its prompts join the command menu; its tools do not (they still run as /mcp__fx__add).
    await h.waitFor(() => commands(h, sessionId).includes("fx:greet"));
    expect(commands(h, sessionId).some((c) => c.startsWith("mcp__"))).toBe(false);
    const { stopReason } = await prompt(h, sessionId, "add 2 and 3");
    expect(stopReason).toBe("end_turn");
    // Declared to the model with the server's JSON Schema.
    const declared = fake.requests[0]?.body.tools?.find((x) => x.function.name === "mcp__fx__add");
    expect(declared?.function.parameters).toMatchObject({ type: "object", required: ["a", "b"] });
    // An execute kind asks in ask mode; the answer let it run.
    expect(h.permissionRequests).toHaveLength(1);
    expect(h.permissionRequests[0]?.toolCall.title).toBe("fx: add");
    const call = h.updatesOf(sessionId, "tool_call")[0];
    expect(call).toMatchObject({ kind: "execute" });
    expect(lastUpdate(h, sessionId, call!.toolCallId)).toMatchObject({ status: "completed" });
    const toolMessage = fake.requests[1]?.body.messages?.find((m) => m.role === "tool");
    expect(JSON.stringify(toolMessage?.content)).toContain("5");
  });

  // An OpenAI-compatible server's tool messages hold text only: even a vision model there gets a note,
  // not the base64 as text (Anthropic and OpenAI get the image: test/agent/loop.test.ts).
  it.each([
    { model: "openai-compatible/fake", sent: "[1 image not shown: this model does not take images in tool results]" },
    { model: "openai-compatible/fake-vision", sent: "[1 image not shown: this model does not take images in tool results]" },
  ])("passes an image result to the editor, and to $model as a note", async ({ model, sent }) => {
    const { h, fake, sessionId } = await start(
      [fixture("fx")],
      [{ toolCalls: [{ id: "c1", name: "mcp__fx__picture", arguments: {} }] }, { text: "A red pixel." }],
      { env: { TOOLHOST_MODEL: model } },
    );
    await h.waitFor(() => commands(h, sessionId).includes("fx:greet"));
    await prompt(h, sessionId, "show me the picture");
    // A read-only MCP tool runs without asking.
    expect(h.permissionRequests).toHaveLength(0);
    const call = h.updatesOf(sessionId, "tool_call")[0];
    expect(call).toMatchObject({ kind: "read" });
    const done = lastUpdate(h, sessionId, call!.toolCallId);
    expect(done.status).toBe("completed");
    expect(done.content?.some((c) => c.type === "content" && c.content.type === "image" && c.content.mimeType === "image/png")).toBe(true);
    const tool = JSON.stringify(fake.requests[1]?.body.messages?.find((m) => m.role === "tool")?.content);
    expect(tool).toContain("a red pixel");
    expect(tool).toContain(sent.replaceAll('"', '\\"'));
    // The image's base64 never reaches the model as text.
    expect(tool.includes("iVBOR")).toBe(false);
  });

  it("connects an editor's streamable HTTP server (type http, with its headers)", async () => {
    const child = spawn(process.execPath, [FIXTURE, "--http", "0"], {
      env: { ...process.env, MCP_NAME: "web", MCP_REQUIRE_HEADER: "x-token: s3cret" },
    });
    try {
      const port = await new Promise<number>((resolve) =>
        child.stdout!.on("data", (d: Buffer) => resolve(Number(/listening (\d+)/.exec(String(d))?.[1]))),
      );
      const { h, sessionId } = await start([
        { type: "http", name: "web", url: `http://127.0.0.1:${port}/mcp`, headers: [{ name: "x-token", value: "s3cret" }] },
      ]);
      await h.waitFor(() => commands(h, sessionId).includes("web:greet"));
      await prompt(h, sessionId, '/mcp__web__echo {"text": "over the wire"}');
      const call = h.updatesOf(sessionId, "tool_call")[0];
      expect(lastUpdate(h, sessionId, call!.toolCallId)).toMatchObject({ status: "completed" });
      expect(textOf(lastUpdate(h, sessionId, call!.toolCallId))).toContain("echo: over the wire");
    } finally {
      child.kill("SIGKILL");
    }
  });

  it("an 'always' answer covers that MCP tool; the tools survive /reload, and /tools lists the servers", async () => {
    const add = (id: string) => ({ toolCalls: [{ id, name: "mcp__fx__add", arguments: { a: 1, b: 1 } }] });
    const { h, sessionId } = await start([fixture("fx")], [add("c1"), { text: "2" }, add("c2"), { text: "2 again" }], {
      permission: () => selected("allow_always"),
    });
    await h.waitFor(() => commands(h, sessionId).includes("fx:greet"));
    await prompt(h, sessionId, "one plus one");
    expect(h.permissionRequests[0]?.options.find((o) => o.optionId === "allow_always")?.name).toMatch(/mcp__fx__add/);
    await prompt(h, sessionId, "/reload");
    expect(commands(h, sessionId)).toContain("fx:greet");
    await prompt(h, sessionId, "again");
    expect(h.permissionRequests).toHaveLength(1);
    const calls = h.updatesOf(sessionId, "tool_call");
    expect(lastUpdate(h, sessionId, calls.at(-1)!.toolCallId)).toMatchObject({ status: "completed" });
    await prompt(h, sessionId, "/tools");
    expect(messageText(h, sessionId)).toMatch(/\| mcp__fx__add \| execute \| mcp:fx \|/);
    expect(messageText(h, sessionId)).toContain("- fx (stdio, editor): 7 tools, 1 prompts");
  });

  it("starts a project's servers (.mcp.json) only once the project is trusted (/trust)", async () => {
    await fsp.writeFile(
      path.join(t.ws, ".mcp.json"),
      // A project's server starts inside the sandbox: its start costs more than the suite's 3 s allow on a busy machine.
      JSON.stringify({
        mcpServers: { proj: { command: process.execPath, args: [FIXTURE], env: { MCP_NAME: "proj" }, startupTimeoutMs: 30_000 } },
      }),
    );
    const { h, sessionId } = await start([]);
    await h.waitFor(() => messageText(h, sessionId).includes("they start only in a trusted project"));
    expect(commands(h, sessionId).some((c) => c.startsWith("proj:"))).toBe(false);
    await prompt(h, sessionId, "/trust");
    await h.waitFor(() => commands(h, sessionId).includes("proj:greet"));
  });

  it("a server killed mid-call fails that call clearly; the session goes on and says once that the server stopped", async () => {
    const { h, sessionId } = await start([fixture("fx"), fixture("other")], [], { permission: () => selected("allow_once") });
    await h.waitFor(() => commands(h, sessionId).includes("fx:greet") && commands(h, sessionId).includes("other:greet"));
    await prompt(h, sessionId, "/mcp__fx__crash {}");
    const crash = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(h, sessionId, crash.toolCallId).status).toBe("failed");
    expect(textOf(lastUpdate(h, sessionId, crash.toolCallId))).toMatch(/"fx" stopped during the call/);
    await h.waitFor(() => !commands(h, sessionId).includes("fx:greet"));
    await prompt(h, sessionId, '/mcp__other__echo {"text": "alive"}');
    const echo = h.updatesOf(sessionId, "tool_call")[1]!;
    expect(textOf(lastUpdate(h, sessionId, echo.toolCallId))).toContain("echo: alive");
    expect(messageText(h, sessionId).match(/The MCP server "fx" stopped/g)).toHaveLength(1);
  });

  it("/reload right after a server crashed starts it again and says what came back", async () => {
    const { h, sessionId } = await start([fixture("fx")], [], { permission: () => selected("allow_once") });
    await h.waitFor(() => commands(h, sessionId).includes("fx:greet"));
    await prompt(h, sessionId, "/mcp__fx__crash {}");
    await h.waitFor(() => messageText(h, sessionId).includes('The MCP server "fx" stopped'));
    await prompt(h, sessionId, "/tools");
    expect(messageText(h, sessionId)).not.toMatch(/\| mcp__fx__add \|/);

    await prompt(h, sessionId, "/reload");
    const answer = h.updatesOf(sessionId, "agent_message_chunk").at(-1)!;
    expect(answer.content.type === "text" && answer.content.text).toMatch(
      /MCP servers that had stopped:\n- fx: started again, 7 tools, 1 prompt back/,
    );
    // Back at once: its tools and its prompt.
    expect(commands(h, sessionId)).toContain("fx:greet");
    await prompt(h, sessionId, '/mcp__fx__add {"a": 2, "b": 2}');
    const add = h.updatesOf(sessionId, "tool_call").at(-1)!;
    expect(lastUpdate(h, sessionId, add.toolCallId)).toMatchObject({ status: "completed" });
  });

  it("stops stdio servers with their process trees when toolhost exits (stdin closed)", async () => {
    const pidFile = path.join(t.ws, "child.pid");
    const { h, sessionId } = await start([fixture("fx", { MCP_CHILD_PID_FILE: pidFile })], [], {
      permission: () => selected("allow_once"),
    });
    await h.waitFor(() => commands(h, sessionId).includes("fx:greet"));
    await prompt(h, sessionId, "/mcp__fx__spawn_child {}");
    const pid = Number(await fsp.readFile(pidFile, "utf8"));
    expect(await liveness(pid)).toBe("alive");
    await closeAndCheck(h);
    t.h = undefined;
    await expect.poll(() => liveness(pid)).toBe("gone");
  });

  it("stops a server still starting when its session closes", async () => {
    const pidFile = path.join(t.ws, "server.pid");
    const { h, sessionId } = await start([fixture("slow", { MCP_PID_FILE: pidFile, MCP_START_DELAY_MS: "60000" })]);
    await expect.poll(() => fsp.readFile(pidFile, "utf8").catch(() => ""), { timeout: 10_000 }).not.toBe("");
    const pid = Number(await fsp.readFile(pidFile, "utf8"));
    expect(await liveness(pid)).toBe("alive");
    await h.agent.request("session/close", { sessionId });
    await expect.poll(() => liveness(pid)).toBe("gone");
  });

  it("runs a prompt as /<server>:<prompt>: its messages are the user turn", async () => {
    const { h, fake, sessionId } = await start([fixture("fx")], [{ text: "Hello, Ada!" }]);
    await h.waitFor(() => commands(h, sessionId).includes("fx:greet"));
    await prompt(h, sessionId, "/fx:greet Ada");
    const user = fake.requests[0]?.body.messages?.filter((m) => m.role === "user").at(-1);
    expect(JSON.stringify(user?.content)).toContain("Say hello to Ada.");
  });

  it("reports a failing server once and keeps the others; stops stdio servers with their process trees on session/close", async () => {
    const pidFile = path.join(t.ws, "child.pid");
    const { h, sessionId, answeredMs } = await start(
      [fixture("good", { MCP_CHILD_PID_FILE: pidFile }), fixture("bad", { MCP_FAIL_START: "1" })],
      [],
      {
        permission: () => selected("allow_once"),
      },
    );
    expect(answeredMs).toBeLessThan(3000);
    await h.waitFor(() => messageText(h, sessionId).includes('"bad"') && commands(h, sessionId).includes("good:greet"));
    expect(messageText(h, sessionId).match(/MCP server "bad"/g)).toHaveLength(1);
    await prompt(h, sessionId, "/mcp__good__spawn_child");
    const pid = Number(await fsp.readFile(pidFile, "utf8"));
    expect(await liveness(pid)).toBe("alive");
    await h.agent.request("session/close", { sessionId });
    await expect.poll(() => liveness(pid)).toBe("gone");
    // Its stderr reached toolhost's, prefixed with the server's name.
    expect(h.stderr.join("")).toContain("[mcp good] fixture good starting");
  });
});
