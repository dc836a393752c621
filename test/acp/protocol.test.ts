import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { McpServer } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { projectFolderName } from "../../src/config/workspace.js";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { tempDir } from "../helpers.js";
import { closeAndCheck, Harness, lastUpdate, selected, textOf, useAcpTest, type HarnessOptions, prompt } from "./harness.js";

// Issue 21, "Protocol and clients": sessions live but unrecorded, idempotent delete, replay of
// every prompt block, MCP servers a first prompt waits for, one command update per settle,
// informative first titles, no preview for refused calls, additionalDirectories.

const FIXTURE = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

const fixture = (name: string, env: Record<string, string> = {}): McpServer => ({
  name,
  command: process.execPath,
  args: [FIXTURE],
  env: Object.entries({ MCP_NAME: name, ...env }).map(([k, value]) => ({ name: k, value })),
});

async function start(script: FakeReply[] = [], options: HarnessOptions = {}) {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({
    ...options,
    env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home, ...options.env },
  });
  await t.h.initialize();
  return t.h;
}

const commandUpdates = (h: Harness, sessionId: string) => h.updatesOf(sessionId, "available_commands_update");
const commandNames = (h: Harness, sessionId: string) => (commandUpdates(h, sessionId).at(-1)?.availableCommands ?? []).map((c) => c.name);

describe("session/load and session/resume of a live session with no prompt yet (RESUME-001, LOAD-003)", () => {
  it("are answered from memory: resume returns normally, load replays nothing and returns modes and config", async () => {
    const h = await start([{ text: "Still here." }]);
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws, mcpServers: [] });
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await h.waitFor(() => commandUpdates(h, sessionId).length === 1);

    const resumed = await h.agent.request("session/resume", { sessionId, cwd: t.ws });
    expect(resumed.modes?.currentModeId).toBe("full");
    expect(resumed.configOptions?.find((o) => o.id === "mode")).toMatchObject({ currentValue: "full" });
    const loaded = await h.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    expect(loaded.modes?.currentModeId).toBe("full");
    expect(loaded.configOptions?.length).toBeGreaterThan(0);
    expect(h.updatesOf(sessionId, "user_message_chunk")).toEqual([]);
    // Each sends the command menu once.
    expect(commandUpdates(h, sessionId)).toHaveLength(3);

    // The same session goes on (acpx: `sessions new`, then `prompt -s`).
    expect((await prompt(h, sessionId, "hello")).stopReason).toBe("end_turn");
    expect(h.updatesOf(sessionId, "agent_message_chunk").some((u) => u.content.type === "text" && u.content.text === "Still here.")).toBe(
      true,
    );
    // An unknown id is still not found.
    await expect(h.agent.request("session/resume", { sessionId: "no-such-session", cwd: t.ws })).rejects.toMatchObject({ code: -32002 });
  });
});

describe("session/delete (DELETE-002)", () => {
  it("of an unknown id succeeds silently", async () => {
    const h = await start();
    await expect(h.agent.request("session/delete", { sessionId: "never-existed" })).resolves.toEqual({});
  });
});

describe("session/load replays every block of a prompt", () => {
  it("a second text block and a resource_link come back in the restored chat", async () => {
    const h = await start([{ text: "Read both." }]);
    const sessionId = await h.newSession(t.ws);
    const blocks = [
      { type: "text" as const, text: "Compare these" },
      { type: "text" as const, text: "and say which is newer." },
      { type: "resource_link" as const, uri: `file://${t.ws}/src/a.ts`, name: "a.ts" },
    ];
    await h.agent.request("session/prompt", { sessionId, prompt: blocks });
    await h.agent.request("session/close", { sessionId });
    await h.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    expect(h.updatesOf(sessionId, "user_message_chunk").map((u) => u.content)).toEqual(blocks);
  });

  it("a file written before blocks were recorded still replays its prompt's text", async () => {
    const h = await start();
    const id = "old-format-session";
    const file = path.join(t.home, "sessions", projectFolderName(t.ws), `${id}.jsonl`);
    await fsp.mkdir(path.dirname(file), { recursive: true });
    const lines = [
      { type: "session", format: 1, id, cwd: t.ws, created: new Date().toISOString(), toolhost: "0.0.1" },
      { type: "turn", at: new Date().toISOString(), phase: "start", prompt: "An old prompt" },
      { type: "turn", at: new Date().toISOString(), phase: "end", stopReason: "end_turn" },
    ];
    await fsp.writeFile(file, lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    await h.agent.request("session/load", { sessionId: id, cwd: t.ws, mcpServers: [] });
    expect(h.updatesOf(id, "user_message_chunk").map((u) => u.content)).toEqual([{ type: "text", text: "An old prompt" }]);
  });
});

describe("MCP servers of session/new and the first prompt", () => {
  it("a prompt sent at once waits for a server still connecting, and the model gets its tools", async () => {
    const h = await start([{ text: "Ready." }], { env: { TOOLHOST_MCP_TIMEOUT_MS: "8000" } });
    const { sessionId } = await h.agent.request("session/new", {
      cwd: t.ws,
      mcpServers: [fixture("slow", { MCP_START_DELAY_MS: "1200" })],
    });
    await prompt(h, sessionId, "use the slow server");
    const first = t.fake!.requests[0]!.body;
    expect((first.tools ?? []).map((x) => x.function.name)).toContain("mcp__slow__echo");
    expect(JSON.stringify(first.messages?.[0])).not.toContain("still starting");
  });

  it("the wait is bounded; the model is told which servers are still starting", async () => {
    const h = await start([{ text: "Without it." }], { env: { TOOLHOST_MCP_READY_WAIT_MS: "300" } });
    const { sessionId } = await h.agent.request("session/new", {
      cwd: t.ws,
      mcpServers: [fixture("sleepy", { MCP_START_DELAY_MS: "60000" })],
    });
    const started = Date.now();
    await prompt(h, sessionId, "go");
    expect(Date.now() - started).toBeLessThan(5000);
    const first = t.fake!.requests[0]!.body;
    expect((first.tools ?? []).some((x) => x.function.name.startsWith("mcp__"))).toBe(false);
    const system = first.messages?.find((m) => m.role === "system");
    expect(JSON.stringify(system)).toMatch(/MCP servers are still starting.*sleepy/);
  });
});

describe("the command menu", () => {
  it("is sent once per settle with the MCP prompts and no MCP tools, and once again after a load", async () => {
    const h = await start([]);
    const servers = [fixture("fx"), fixture("other")];
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws, mcpServers: servers });
    await h.waitFor(() => commandNames(h, sessionId).includes("fx:greet") && commandNames(h, sessionId).includes("other:greet"));
    await prompt(h, sessionId, "/help");
    expect(commandUpdates(h, sessionId)).toHaveLength(1);
    const names = commandNames(h, sessionId);
    expect(names).toEqual(expect.arrayContaining(["read", "edit", "help", "fx:greet", "other:greet"]));
    expect(names.some((n) => n.startsWith("mcp__"))).toBe(false);
    // An MCP tool still runs as a slash command.
    await prompt(h, sessionId, '/mcp__fx__echo {"text": "hi"}');
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(textOf(lastUpdate(h, sessionId, call.toolCallId))).toContain("echo: hi");

    await h.agent.request("session/close", { sessionId });
    const before = commandUpdates(h, sessionId).length;
    await h.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: servers });
    await h.waitFor(() => commandUpdates(h, sessionId).length > before);
    await prompt(h, sessionId, "/help");
    expect(commandUpdates(h, sessionId).length - before).toBe(1);
    expect(commandNames(h, sessionId)).toEqual(expect.arrayContaining(["fx:greet", "other:greet"]));
  });
});

describe("a model's tool call", () => {
  it("is first sent with the title, kind and locations its arguments give, never the bare tool id", async () => {
    const h = await start(
      [
        {
          toolCalls: [
            { id: "e1", name: "edit", arguments: { path: "src/a.ts", old_string: "= 1", new_string: "= 2" } },
            { id: "m1", name: "mcp__fx__echo", arguments: { text: "hi" } },
            { id: "u1", name: "no_such_tool", arguments: {} },
          ],
        },
        { text: "Done." },
      ],
      { permission: () => selected("allow_once") },
    );
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws, mcpServers: [fixture("fx")] });
    await prompt(h, sessionId, "edit and echo");
    const [edit, echo, unknown] = h.updatesOf(sessionId, "tool_call");
    expect(edit).toMatchObject({
      title: "Edit src/a.ts",
      kind: "edit",
      locations: [{ path: path.join(t.ws, "src/a.ts") }],
      rawInput: { path: "src/a.ts" },
    });
    expect(echo).toMatchObject({ title: "fx: echo", name: "mcp__fx__echo" });
    expect(unknown!.title).toBe("No such tool (unknown tool)");
    expect(await fsp.readFile(path.join(t.ws, "src/a.ts"), "utf8")).toBe("export const a = 2;\n");
  });
});

describe("a call's preview", () => {
  const diffUpdates = (h: Harness, sessionId: string) =>
    h.updatesOf(sessionId, "tool_call_update").filter((u) => (u.content ?? []).some((c) => c.type === "diff"));

  it("is not shown for a call the mode refuses outright (read-only /write)", async () => {
    const h = await start();
    const sessionId = await h.newSession(t.ws);
    await h.agent.request("session/set_mode", { sessionId, modeId: "read-only" });
    await prompt(h, sessionId, '/write {"path": "b.txt", "content": "b\\n"}');
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(h, sessionId, call.toolCallId)).toMatchObject({ status: "failed" });
    expect(textOf(lastUpdate(h, sessionId, call.toolCallId))).toMatch(/read-only mode/);
    expect(diffUpdates(h, sessionId)).toEqual([]);
    expect(h.permissionRequests).toEqual([]);
  });

  it("is sent once for a call that runs", async () => {
    const h = await start([], { permission: () => selected("allow_once") });
    const sessionId = await h.newSession(t.ws);
    await prompt(h, sessionId, '/write {"path": "b.txt", "content": "b\\n"}');
    expect(h.permissionRequests[0]!.toolCall.content?.[0]).toMatchObject({ type: "diff" });
    expect(diffUpdates(h, sessionId)).toHaveLength(1);
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(h, sessionId, call.toolCallId)).toMatchObject({ status: "completed" });
  });
});

describe("additionalDirectories (ADDDIRS-001)", () => {
  it("are advertised, checked like cwd, extra workspace roots of the session, and listed", async () => {
    const other = await tempDir({ "notes.txt": "from the other root\n" });
    try {
      const h = await start();
      const init = h.checker.messages
        .map((m) => m.json)
        .find((m) => (m as { result?: { agentCapabilities?: unknown } }).result?.agentCapabilities);
      expect(init).toMatchObject({ result: { agentCapabilities: { sessionCapabilities: { additionalDirectories: {} } } } });

      // The first session/new is answered by the early reader, the second by the SDK's handler: both take them.
      for (const round of [1, 2]) {
        const { sessionId } = await h.agent.request("session/new", { cwd: t.ws, additionalDirectories: [other], mcpServers: [] });
        await prompt(h, sessionId, `/read ${path.join(other, "notes.txt")}`);
        const call = h.updatesOf(sessionId, "tool_call")[0]!;
        expect(lastUpdate(h, sessionId, call.toolCallId), `round ${round}`).toMatchObject({ status: "completed" });
        expect(textOf(lastUpdate(h, sessionId, call.toolCallId))).toContain("from the other root");
        expect(h.permissionRequests).toEqual([]);
        if (round === 2) {
          const listed = await h.agent.request("session/list", { cwd: t.ws });
          expect(listed.sessions.find((s) => s.sessionId === sessionId)?.additionalDirectories).toEqual([other]);
        }
      }
      // Without them the same read is outside the session's roots.
      const plain = await h.newSession(t.ws);
      await prompt(h, plain, `/read ${path.join(other, "notes.txt")}`);
      const outside = h.updatesOf(plain, "tool_call")[0]!;
      expect(lastUpdate(h, plain, outside.toolCallId).status).toBe("failed");

      for (const bad of ["relative/dir", path.join(other, "missing"), path.join(other, "notes.txt")]) {
        await expect(h.agent.request("session/new", { cwd: t.ws, additionalDirectories: [bad], mcpServers: [] })).rejects.toMatchObject({
          code: -32602,
        });
      }
      await closeAndCheck(h);
      t.h = undefined;
    } finally {
      await fsp.rm(other, { recursive: true, force: true });
    }
  });
});
