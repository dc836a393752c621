import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, cleanEnv } from "../helpers.js";
import { useAcpTest } from "./harness.js";
import { V2Harness, type V2PermissionHandler } from "./harness-v2.js";

// ACP v2 beside v1 (issue 27 §1): a v2 client (the SDK's v2 client side) over real stdio against
// `node dist/cli.js` and the fake model. The same build serves v1 (the rest of test/acp). Every v2
// message, both directions, is checked against schema/v2/schema.json.

const t = useAcpTest({ "a.txt": "alpha\n" });

async function start(script: FakeReply[], permission?: V2PermissionHandler) {
  // One model server per test: a second process of the test gets the next replies.
  if (t.fake) t.fake.push(...script);
  else t.fake = await startFakeOpenAI({ script });
  const h = new V2Harness({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home }, permission);
  t.defer(async () => {
    expect(await h.close()).toBe(0);
    expect(h.checker.problems).toEqual([]);
  });
  return h;
}

const text = (h: V2Harness, sessionId: string, kind: "agent_message_chunk" | "user_message_chunk") =>
  h
    .updatesOf(sessionId, kind)
    .map((u) => (u.content.type === "text" ? u.content.text : ""))
    .join("");

/** Whether the session's state went out on the wire before the answer to the client's last `method` request. */
function stateBeforeAnswer(h: V2Harness, method: string, state = '"sessionUpdate":"state_update"'): boolean {
  const wire = h.checker.messages;
  const request = wire.filter((m) => m.direction === "client->agent" && m.json.method === method).at(-1);
  const answer = wire.findIndex((m) => m.direction === "agent->client" && m.json.method === undefined && m.json.id === request?.json.id);
  const sent = wire.findIndex(
    (m) =>
      m.direction === "agent->client" &&
      JSON.stringify(m.json.params ?? {}).includes('"sessionUpdate":"state_update"') &&
      m.raw.includes(state),
  );
  return answer > 0 && sent >= 0 && sent < answer;
}

describe("ACP v2", () => {
  it("initialize answers v2 with `info`; a tool-using prompt is accepted with its messageId, approved through session/request_permission, run by toolhost's own shell, and ends idle", async () => {
    const h = await start(
      [
        {
          toolCalls: [
            { id: "r1", name: "read", arguments: { path: "a.txt" } },
            { id: "b1", name: "bash", arguments: { command: "echo made > made.txt" } },
          ],
        },
        { text: "All done." },
      ],
      () => ({ outcome: { outcome: "selected", optionId: "allow_once" } }),
    );
    const init = await h.initialize();
    expect(init.protocolVersion).toBe(2);
    expect(init.info).toMatchObject({ name: "toolhost" });
    // What a v2 client gets: sessions (new, list, resume, close, delete, additional roots), MCP over stdio and HTTP.
    expect(init.capabilities?.session).toMatchObject({ mcp: { stdio: {}, http: {} }, delete: {}, additionalDirectories: {} });

    const { sessionId, configOptions } = await h.agent.request("session/new", { cwd: t.ws });
    // Config options only (no modes API): the mode is an option.
    expect(configOptions?.map((o) => o.configId)).toContain("mode");

    const { messageId } = await h.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "Read a.txt, then make made.txt" }],
    });
    await h.waitFor(() => h.states(sessionId).includes("idle:end_turn"));
    // The user message is echoed with the prompt's messageId; the turn is running, waits on the
    // approval (requires_action), runs again once it is answered, then is idle.
    expect(h.updatesOf(sessionId, "user_message")).toEqual([
      { sessionUpdate: "user_message", messageId, content: [{ type: "text", text: "Read a.txt, then make made.txt" }] },
    ]);
    expect(h.states(sessionId)).toEqual(["running", "requires_action", "running", "idle:end_turn"]);

    // The tool calls are v2 upserts (tool_call_update only), each ending completed.
    const calls = h.updatesOf(sessionId, "tool_call_update");
    expect(h.updatesOf(sessionId, "tool_call")).toEqual([]);
    const idOf = (name: string) => calls.find((c) => c.name === name)?.toolCallId;
    const last = (name: string) => calls.filter((c) => c.toolCallId === idOf(name)).at(-1);
    expect(calls.find((c) => c.name === "bash")).toMatchObject({ kind: "execute", status: "pending" });
    expect(last("read")?.status).toBe("completed");
    expect(last("bash")?.status).toBe("completed");
    expect(JSON.stringify(last("read")?.content)).toContain("alpha");

    // The approval is v2's: a title, and the call as its subject.
    expect(h.permissionRequests).toHaveLength(1);
    const ask = h.permissionRequests[0]!;
    expect(ask.title).toBe("Allow echo made > made.txt?");
    expect(ask.subject).toMatchObject({ type: "tool_call", toolCall: { toolCallId: idOf("bash") } });
    expect(ask.options.map((o) => o.optionId)).toContain("allow_once");
    // toolhost's own shell ran it (a v2 client has no terminals), in the workspace.
    expect(readFileSync(path.join(t.ws, "made.txt"), "utf8")).toBe("made\n");

    // The answer is one agent message: its chunks share a messageId.
    const chunks = h.updatesOf(sessionId, "agent_message_chunk");
    expect(text(h, sessionId, "agent_message_chunk")).toBe("All done.");
    expect(new Set(chunks.map((c) => c.messageId)).size).toBe(1);
    // Each of these was checked against its own variant of the v2 schema (the harness's close checks the problems).
    for (const kind of [
      "user_message",
      "state_update",
      "tool_call_update",
      "agent_message_chunk",
      "config_option_update",
      "available_commands_update",
    ]) {
      expect(h.checker.seenUpdates.has(kind)).toBe(true);
    }
    // Nothing of v1 alone reached the v2 client.
    for (const kind of ["current_mode_update", "plan", "tool_call"]) expect(h.checker.seenUpdates.has(kind)).toBe(false);
    expect([...h.checker.seenMethods].filter((m) => m.startsWith("fs/") || m.startsWith("terminal/"))).toEqual([]);
  });

  it("a rejected approval leaves the command unrun; edits show as v2 diffs with a git patch", async () => {
    const h = await start([
      { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
      {
        toolCalls: [
          { name: "edit", arguments: { path: "a.txt", old_string: "alpha", new_string: "beta" } },
          { name: "bash", arguments: { command: "echo no > no.txt" } },
        ],
      },
      { text: "Stopped." },
    ]);
    // The edit is allowed, the command rejected.
    h.permission = (request) =>
      (request.subject as { toolCall?: { kind?: string } } | undefined)?.toolCall?.kind === "edit"
        ? { outcome: { outcome: "selected", optionId: "allow_once" } }
        : { outcome: { outcome: "selected", optionId: "reject_once" } };
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Edit" }] });
    await h.waitFor(() => h.states(sessionId).some((s) => s.startsWith("idle")));
    expect(h.permissionRequests).toHaveLength(2);
    expect(readFileSync(path.join(t.ws, "a.txt"), "utf8")).toBe("beta\n");
    expect(existsSync(path.join(t.ws, "no.txt"))).toBe(false);
    const diffs = h
      .updatesOf(sessionId, "tool_call_update")
      .filter((u) => u.toolCallId === h.updatesOf(sessionId, "tool_call_update").find((c) => c.name === "edit")?.toolCallId)
      .flatMap((u) => u.content ?? [])
      .filter((c) => c.type === "diff");
    expect(diffs.length).toBeGreaterThan(0);
    const diff = diffs[0] as { changes: unknown[]; patch: { format: string; text: string } };
    expect(diff.changes).toEqual([{ operation: "modify", path: path.join(t.ws, "a.txt"), fileType: "text" }]);
    expect(diff.patch.format).toBe("git_patch");
    expect(diff.patch.text).toContain("-alpha");
    expect(diff.patch.text).toContain("+beta");
    // The approval's subject carried the diff too.
    expect(JSON.stringify(h.permissionRequests[0]?.subject)).toContain("git_patch");
  });

  it("cancel ends the running turn idle with stopReason cancelled, and a prompt held behind it is answered -32800", async () => {
    const h = await start([{ hang: true, text: "thinking" }]);
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Go" }] });
    await h.waitFor(() => t.fake!.requests.length === 1 && text(h, sessionId, "agent_message_chunk") === "thinking");
    // A second prompt while the turn runs: held, not inserted (no second user message yet).
    const held = h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Then this" }] });
    const heldOutcome = held.then(
      () => "answered",
      (err: { code?: number }) => err.code,
    );
    await h.agent.notify("session/cancel", { sessionId });
    expect(await heldOutcome).toBe(-32800);
    await h.waitFor(() => h.states(sessionId).includes("idle:cancelled"));
    expect(h.updatesOf(sessionId, "user_message")).toHaveLength(1);
    expect(h.states(sessionId)).toEqual(["running", "idle:cancelled"]);
  });

  it("the todo plan is a plan_update with items; session/close during a turn ends it idle (cancelled) before the close is answered", async () => {
    const h = await start([
      {
        toolCalls: [
          {
            name: "todo",
            arguments: {
              todos: [
                { content: "Read the code", status: "in_progress" },
                { content: "Fix the bug", status: "pending", priority: "high" },
              ],
            },
          },
        ],
      },
      { hang: true, text: "working" },
    ]);
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Plan it" }] });
    await h.waitFor(() => text(h, sessionId, "agent_message_chunk") === "working");
    const plans = h.updatesOf(sessionId, "plan_update");
    expect(plans).toHaveLength(1);
    expect(plans[0]!.plan).toMatchObject({
      type: "items",
      entries: [
        { content: "Read the code", status: "in_progress", priority: "medium" },
        { content: "Fix the bug", status: "pending", priority: "high" },
      ],
    });
    await h.agent.request("session/close", { sessionId });
    // The turn's end (idle, cancelled) went out before the close's answer.
    expect(stateBeforeAnswer(h, "session/close", '"stopReason":"cancelled"')).toBe(true);
    await h.waitFor(() => h.states(sessionId).length === 2);
    expect(h.states(sessionId)).toEqual(["running", "idle:cancelled"]);
  });

  it("session/resume replays from the start in a new process (messages keyed by messageId), sends the state before its answer, and the session goes on", async () => {
    const first = await start([{ toolCalls: [{ id: "r2", name: "read", arguments: { path: "a.txt" } }] }, { text: "It says alpha." }]);
    await first.initialize();
    const { sessionId } = await first.agent.request("session/new", { cwd: t.ws });
    const prompted = await first.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "What is in a.txt?" }] });
    await first.waitFor(() => first.states(sessionId).includes("idle:end_turn"));
    expect((await first.agent.request("session/list", {})).sessions.map((s) => s.sessionId)).toContain(sessionId);
    await first.agent.request("session/close", { sessionId });
    expect(await first.close()).toBe(0);

    const h = await start([{ text: "Still alpha." }]);
    await h.initialize();
    const answer = await h.agent.request("session/resume", { sessionId, cwd: t.ws, replayFrom: { type: "start" } });
    // The replay and the current state went out before the answer.
    expect(stateBeforeAnswer(h, "session/resume")).toBe(true);
    await h.waitFor(() => h.states(sessionId).length > 0);
    expect(answer.configOptions?.map((o) => o.configId)).toContain("mode");
    // The replay: the user's words and the agent's answer, each chunk keyed by a messageId.
    expect(text(h, sessionId, "user_message_chunk")).toContain("What is in a.txt?");
    expect(text(h, sessionId, "agent_message_chunk")).toBe("It says alpha.");
    for (const u of h.updatesOf(sessionId, "agent_message_chunk")) expect(u.messageId).toMatch(/^msg_/);
    // acp-tck's RESUME-204, ported: the replayed user message keeps the messageId its prompt got.
    const users = h.updatesOf(sessionId, "user_message_chunk");
    expect(users.length).toBeGreaterThan(0);
    for (const u of users) expect(u.messageId).toBe(prompted.messageId);
    // acp-tck's RESUME-205, ported: every replayed chunk follows its message's whole-message header (no content).
    const replay = h.updates
      .filter((n) => n.sessionId === sessionId)
      .map((n) => n.update as { sessionUpdate: string; messageId?: string; content?: unknown });
    const chunks = replay.filter((u) => u.sessionUpdate.endsWith("_chunk"));
    expect(chunks.length).toBeGreaterThan(0);
    replay.forEach((u, i) => {
      if (!u.sessionUpdate.endsWith("_chunk")) return;
      const whole = u.sessionUpdate.slice(0, -"_chunk".length);
      expect(
        replay
          .slice(0, i)
          .some((p) => p.sessionUpdate === whole && p.messageId === u.messageId && Array.isArray(p.content) && p.content.length === 0),
        `${u.sessionUpdate} ${u.messageId}`,
      ).toBe(true);
    });
    // The call, replayed as v2 upserts: named, then completed.
    const replayed = h.updatesOf(sessionId, "tool_call_update");
    const read = replayed.find((u) => u.name === "read")?.toolCallId;
    expect(read).toBeDefined();
    expect(replayed.filter((u) => u.toolCallId === read).at(-1)?.status).toBe("completed");
    expect(h.states(sessionId)).toEqual(["idle"]);

    // The session goes on from its history.
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "And now?" }] });
    await h.waitFor(() => h.states(sessionId).includes("idle:end_turn"));
    expect(JSON.stringify(t.fake!.requests.at(-1)!.body.messages)).toContain("What is in a.txt?");
    expect(text(h, sessionId, "agent_message_chunk")).toBe("It says alpha.Still alpha.");
  });

  it("session/resume without a replay sends no history, only the state; an unknown cursor is -32602", async () => {
    const first = await start([{ text: "Hello." }]);
    await first.initialize();
    const { sessionId } = await first.agent.request("session/new", { cwd: t.ws });
    await first.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Hi" }] });
    await first.waitFor(() => first.states(sessionId).includes("idle:end_turn"));
    expect(await first.close()).toBe(0);

    const h = await start([]);
    await h.initialize();
    await expect(
      h.agent.request("session/resume", { sessionId, cwd: t.ws, replayFrom: { type: "_toolhost_nowhere" } as never }),
    ).rejects.toMatchObject({ code: -32602 });
    await h.agent.request("session/resume", { sessionId, cwd: t.ws });
    expect(stateBeforeAnswer(h, "session/resume")).toBe(true);
    await h.waitFor(() => h.states(sessionId).length > 0);
    expect(h.updatesOf(sessionId, "agent_message_chunk")).toEqual([]);
    expect(h.updatesOf(sessionId, "user_message_chunk")).toEqual([]);
    expect(h.states(sessionId)).toEqual(["idle"]);
    await h.agent.request("session/close", { sessionId });
  });

  it("acp-tck's other v2 rows, ported: version probes, session set-up, list, delete, close, extension methods, cancel's shape, prompt content, `_` values, `_meta`", async () => {
    // INIT-003 and INIT-202: an unsupported (65535) or older (1) version still initializes, with
    // toolhost's latest (2) or the older one it also speaks (1), never the request echoed back.
    const firstAnswer = async (protocolVersion: number) => {
      const child = spawn(process.execPath, [CLI_PATH], {
        stdio: ["pipe", "pipe", "ignore"],
        env: { ...cleanEnv(), TOOLHOST_HOME: t.home },
      });
      child.stdin.write(
        `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion, info: { name: "tck", version: "1" }, capabilities: {} } })}\n`,
      );
      const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
      child.stdin.end();
      await once(child, "exit");
      return JSON.parse(line) as { result?: { protocolVersion: number } };
    };
    const [future, older] = await Promise.all([firstAnswer(65535), firstAnswer(1)]);
    expect(future.result?.protocolVersion).toBe(2);
    expect(older.result?.protocolVersion).toBe(1);

    const h = await start([
      { toolCalls: [{ id: "b1", name: "bash", arguments: { command: "echo hi" } }] },
      { text: "Not run." },
      { text: "Two." },
      { text: "An image." },
      { text: "A note." },
    ]);
    // ENUM-203: a `_` permission outcome (not understood, so not an approval) does not stop the turn.
    h.permission = () => ({ outcome: { outcome: "_tck/unknown" } }) as never;
    const init = await h.initialize();
    // INIT-204: capability markers are objects, never booleans; AUTH-202/206: no terminal login
    // offered to a client that did not ask for one, and every method's type is a defined one.
    expect(JSON.stringify(init.capabilities)).not.toMatch(/:(true|false)/);
    expect(init.authMethods?.map((m) => m.type)).not.toContain("terminal");
    for (const m of init.authMethods ?? []) expect(m.type === "agent" || m.type === "terminal" || m.type.startsWith("_")).toBe(true);

    // SESSION-002/203, ADDDIRS-201: mcpServers omitted or [], extra roots; distinct ids.
    const { sessionId, configOptions } = await h.agent.request("session/new", { cwd: t.ws });
    const other = await h.agent.request("session/new", { cwd: t.ws, mcpServers: [], additionalDirectories: [t.home] });
    expect(other.sessionId).not.toBe(sessionId);
    // CONFIG-204: a select's current value is one of its options; CONFIG-202: setting one answers the whole list.
    type Choice = { value: string } | { options: { value: string }[] };
    for (const o of (configOptions ?? []) as { type: string; currentValue?: unknown; options?: Choice[] }[])
      if (o.type === "select")
        expect(o.options?.flatMap((c) => ("options" in c ? c.options : [c])).map((c) => c.value)).toContain(o.currentValue);
    const set = await h.agent.request("session/set_config_option", { sessionId, configId: "mode", type: "id", value: "ask" });
    expect(set.configOptions.map((o) => o.configId)).toEqual(configOptions?.map((o) => o.configId));

    // META-001, PATCH-203: a prompt with `_meta` runs; two prompts get two messageIds.
    const one = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Run it" }], _meta: { tck: 1 } });
    await h.waitFor(() => h.states(sessionId).includes("idle:end_turn"));
    expect(h.permissionRequests).toHaveLength(1);
    expect(h.updatesOf(sessionId, "tool_call_update").at(-1)?.status).toBe("failed");
    const two = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Again" }] });
    await h.waitFor(() => h.states(sessionId).filter((s) => s === "idle:end_turn").length === 2);
    expect(two.messageId).not.toBe(one.messageId);
    // PROMPTCAP-001/003: the image and embedded-context prompts toolhost advertises run to idle.
    const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "image", mimeType: "image/png", data: png }] });
    await h.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "resource", resource: { uri: "file:///n.txt", text: "note" } }],
    });
    await h.waitFor(() => h.states(sessionId).filter((s) => s === "idle:end_turn").length === 4);
    expect(text(h, sessionId, "agent_message_chunk")).toMatch(/An image\.A note\.$/);

    // CANCEL-205/206: a cancel with `_meta` (and one for an idle session) is taken, never answered.
    await h.agent.notify("session/cancel", { sessionId, _meta: { tck: 1 } });
    // EXT-001, JSONRPC-004: a `_` method it does not know gets an answer, -32601.
    await expect(h.agent.request("_tck/nothing" as never, {} as never)).rejects.toMatchObject({ code: -32601 });

    // LIST-201..204: a filter no session uses is [], a real one gives that cwd only, absolute.
    expect((await h.agent.request("session/list", { cwd: path.join(t.ws, "nowhere") })).sessions).toEqual([]);
    const listed = (await h.agent.request("session/list", { cwd: t.ws })).sessions;
    expect(listed.map((s) => s.sessionId)).toContain(sessionId);
    for (const s of listed) expect(s.cwd).toBe(t.ws);
    // CLOSE-201, ADDDIRS-202: an idle close answers {}; a resume with extra roots is taken.
    expect(await h.agent.request("session/close", { sessionId })).toEqual({});
    await h.agent.request("session/resume", { sessionId, cwd: t.ws, additionalDirectories: [t.home] });
    // DELETE-201..203: deleted, gone from the list; deleting again or a never-made id succeeds.
    expect(await h.agent.request("session/delete", { sessionId })).toEqual({});
    expect((await h.agent.request("session/list", {})).sessions.map((s) => s.sessionId)).not.toContain(sessionId);
    expect(await h.agent.request("session/delete", { sessionId })).toEqual({});
    expect(await h.agent.request("session/delete", { sessionId: "never-made" })).toEqual({});

    // CANCEL-205 and JSONRPC-003: every answer is to a request the client sent. META-201: every
    // `_meta` toolhost sent is an object (or null).
    const asked = new Set(
      h.checker.messages.filter((m) => m.direction === "client->agent" && m.json.method !== undefined).map((m) => m.json.id),
    );
    const metas: unknown[] = [];
    const walk = (value: unknown): void => {
      if (value === null || typeof value !== "object") return;
      for (const [key, inner] of Object.entries(value)) {
        if (key === "_meta") metas.push(inner);
        walk(inner);
      }
    };
    for (const m of h.checker.messages.filter((m) => m.direction === "agent->client")) {
      if (m.json.method === undefined) expect(asked.has(m.json.id)).toBe(true);
      walk(m.json);
    }
    for (const meta of metas) expect(meta === null || (typeof meta === "object" && !Array.isArray(meta))).toBe(true);
  });
});
