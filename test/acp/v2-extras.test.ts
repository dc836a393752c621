import { existsSync, readFileSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { client as v1Client, type AnyMessage } from "@agentclientprotocol/sdk";
import { client as v2Client } from "@agentclientprotocol/sdk/experimental/v2";
import { describe, expect, it } from "vitest";
import { createAgent } from "../../src/acp/server.js";
import { versionRouter } from "../../src/acp/v2/agent.js";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { useAcpTest } from "./harness.js";
import { V2Harness, type V2HarnessOptions, type V2PermissionHandler } from "./harness-v2.js";

// What ACP v2 clients get beyond the basics (test/acp/v2.test.ts), each a mapping over the v1
// agent: auth methods with auth/login and auth/logout, tool_call/cancel, elicitation forms,
// requires_action while the turn waits on the client, the rewind extension, session/fork (unstable
// v2), and the v2 side built only when a client speaks v2. Over real stdio against `node
// dist/cli.js` and the fake model; every message of both directions checked against the v2 schema.

const t = useAcpTest({ "a.txt": "alpha\n" });

async function start(
  script: (FakeReply | ((body: FakeBody) => FakeReply))[],
  permission?: V2PermissionHandler,
  options?: V2HarnessOptions,
) {
  if (t.fake) t.fake.push(...script);
  else t.fake = await startFakeOpenAI({ script });
  return harness({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home }, permission, options);
}

function harness(env: Record<string, string>, permission?: V2PermissionHandler, options?: V2HarnessOptions) {
  const h = new V2Harness(env, permission, options);
  t.defer(async () => {
    expect(await h.close()).toBe(0);
    expect(h.checker.problems).toEqual([]);
  });
  return h;
}

const prompt = (h: V2Harness, sessionId: string, text: string) =>
  h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

const ended = (h: V2Harness, sessionId: string, count = 1) =>
  h.waitFor(() => h.states(sessionId).filter((s) => s.startsWith("idle:")).length >= count);

/** The session's agent text, all messages joined. */
const agentText = (h: V2Harness, sessionId: string) =>
  h
    .updatesOf(sessionId, "agent_message_chunk")
    .map((u) => (u.content.type === "text" ? u.content.text : ""))
    .join("");

/**
 * The wire as the turn's lifecycle: each state the session reports (`state:<state>`), each request
 * that waits on the person (`ask:<method>`) and the client's answer to it (`answer`), in order.
 */
function lifecycle(h: V2Harness, sessionId: string): string[] {
  const asked = new Set<unknown>();
  const out: string[] = [];
  for (const { direction, json } of h.checker.messages) {
    const params = json.params as { sessionId?: string; update?: { sessionUpdate?: string; state?: string } } | undefined;
    if (direction === "agent->client" && json.method === "session/update" && params?.sessionId === sessionId) {
      if (params.update?.sessionUpdate === "state_update") out.push(`state:${params.update.state}`);
    } else if (direction === "agent->client" && (json.method === "session/request_permission" || json.method === "elicitation/create")) {
      asked.add(json.id);
      out.push(`ask:${json.method}`);
    } else if (direction === "client->agent" && json.method === undefined && asked.has(json.id)) out.push("answer");
  }
  return out;
}

const WAITS = ["state:running", "state:requires_action", "answer", "state:running", "state:idle"];

describe("ACP v2: auth", () => {
  it("initialize offers the v1 agent's methods in v2's shape (the terminal login to a client that runs it); auth/login and auth/logout are v1's authenticate and logout", async () => {
    const plain = harness({ TOOLHOST_HOME: t.home });
    expect((await plain.initialize()).authMethods).toEqual([
      { type: "agent", methodId: "saved-login", name: "Use the saved login or API keys", description: expect.any(String) as string },
    ]);
    const h = harness({ TOOLHOST_HOME: t.home }, undefined, { capabilities: { auth: { terminal: {} } } });
    const init = await h.initialize();
    expect(init.authMethods?.map((m) => m.methodId)).toEqual(["toolhost-login", "saved-login"]);
    expect(init.authMethods?.[0]).toMatchObject({ type: "terminal", methodId: "toolhost-login", args: ["login"] });

    // No model, no key: the saved login is refused (auth_required); a terminal method is never passed to login.
    await expect(h.agent.request("auth/login", { methodId: "saved-login" })).rejects.toMatchObject({ code: -32000 });
    await expect(h.agent.request("auth/login", { methodId: "toolhost-login" })).rejects.toMatchObject({ code: -32602 });
    // A stored login (as `toolhost login` writes it): accepted.
    const file = path.join(t.home, "credentials.json");
    await fsp.writeFile(
      file,
      JSON.stringify({ model: "openai-compatible/fake", providers: { "openai-compatible": { baseURL: "http://127.0.0.1:9/v1" } } }),
      {
        mode: 0o600,
      },
    );
    expect(await h.agent.request("auth/login", { methodId: "saved-login" })).toEqual({});
    // auth/logout removes it, and the login is refused again.
    expect(await h.agent.request("auth/logout", {})).toEqual({});
    expect(existsSync(file)).toBe(false);
    await expect(h.agent.request("auth/login", { methodId: "saved-login" })).rejects.toMatchObject({ code: -32000 });
  });
});

describe("ACP v2: tool_call/cancel", () => {
  it("a running call advertises cancel; tool_call/cancel kills it, it ends `cancelled` without the capability, and the turn goes on; terminal/cancel is refused", async () => {
    const h = await start([
      { toolCalls: [{ id: "b1", name: "bash", arguments: { command: "sleep 30 && echo late > late.txt" } }] },
      { text: "Stopped it." },
    ]);
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await h.agent.request("session/set_config_option", { sessionId, configId: "mode", type: "id", value: "full" });
    await prompt(h, sessionId, "Run it");
    const calls = () => h.updatesOf(sessionId, "tool_call_update");
    const bash = () => calls().find((c) => c.name === "bash")?.toolCallId;
    await h.waitFor(() => calls().some((c) => c.toolCallId === bash() && c.capabilities?.cancel != null));
    // Advertised with the call's start (in_progress), not before.
    const own = () => calls().filter((c) => c.toolCallId === bash());
    expect(own().find((c) => c.capabilities?.cancel != null)?.status).toBe("in_progress");
    expect(
      own()
        .filter((c) => c.status === "pending")
        .every((c) => c.capabilities === undefined),
    ).toBe(true);

    expect(await h.agent.request("tool_call/cancel", { sessionId, toolCallId: bash()! })).toEqual({});
    await ended(h, sessionId);
    expect(h.states(sessionId)).toEqual(["running", "idle:end_turn"]);
    // Confirmed by the call's end: cancelled, and no longer cancellable.
    expect(own().at(-1)).toMatchObject({ status: "cancelled", capabilities: null });
    expect(existsSync(path.join(t.ws, "late.txt"))).toBe(false);
    // The model got the call's result and answered.
    expect(t.fake!.requests).toHaveLength(2);
    expect(agentText(h, sessionId)).toBe("Stopped it.");
    // An ended call, and terminals (a v2 client gets none: command output is in the call's content): -32602.
    await expect(h.agent.request("tool_call/cancel", { sessionId, toolCallId: bash()! })).rejects.toMatchObject({ code: -32602 });
    await expect(h.agent.request("terminal/cancel", { sessionId, terminalId: "t1" })).rejects.toMatchObject({ code: -32602 });
  });
});

describe("ACP v2: questions and requires_action", () => {
  const QUESTION = {
    questions: [{ question: "Which database?", header: "Database", options: [{ label: "Postgres" }, { label: "SQLite" }] }],
  };
  const asks: FakeReply = { toolCalls: [{ id: "call_q", name: "question", arguments: QUESTION }] };
  /** What the model was told of its question. */
  const told = () =>
    JSON.stringify(t.fake!.requests[1]?.body.messages?.find((m) => m.role === "tool" && m.tool_call_id === "call_q")?.content);

  it("with form elicitation: the question is one elicitation/create form; the answer reaches the model; the turn is requires_action while it is open", async () => {
    const h = await start([asks, { text: "SQLite it is." }], undefined, {
      capabilities: { elicitation: { form: {} } },
      elicitation: () => ({ action: "accept", content: { question_1: "SQLite" } }),
    });
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await prompt(h, sessionId, "Ask me");
    await ended(h, sessionId);
    expect(h.permissionRequests).toEqual([]);
    expect(h.elicitationRequests).toHaveLength(1);
    const question = h.updatesOf(sessionId, "tool_call_update").find((c) => c.name === "question")?.toolCallId;
    expect(h.elicitationRequests[0]).toMatchObject({
      mode: "form",
      sessionId,
      toolCallId: question,
      message: "Which database?",
      requestedSchema: {
        type: "object",
        properties: { question_1: { type: "string", oneOf: [{ const: "Postgres" }, { const: "SQLite" }] } },
      },
    });
    expect(told()).toContain("SQLite");
    // requires_action went out before the form, running after its answer, then idle.
    expect(lifecycle(h, sessionId)).toEqual(["state:running", "state:requires_action", "ask:elicitation/create", ...WAITS.slice(2)]);
    expect(h.states(sessionId).at(-1)).toBe("idle:end_turn");
  });

  it("without it: the question is a permission request, as before, and the turn is requires_action while it waits", async () => {
    const h = await start([asks, { text: "SQLite it is." }], () => ({ outcome: { outcome: "selected", optionId: "answer_2" } }));
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await prompt(h, sessionId, "Ask me");
    await ended(h, sessionId);
    expect(h.elicitationRequests).toEqual([]);
    expect(h.permissionRequests.map((r) => r.options.map((o) => o.optionId))).toEqual([["answer_1", "answer_2", "skip"]]);
    expect(told()).toContain("SQLite");
    expect(lifecycle(h, sessionId)).toEqual([
      "state:running",
      "state:requires_action",
      "ask:session/request_permission",
      ...WAITS.slice(2),
    ]);
  });

  it("a cancel while the turn waits ends it idle (cancelled), not running again", async () => {
    const h = await start(
      [{ toolCalls: [{ id: "b1", name: "bash", arguments: { command: "echo hi > hi.txt" } }] }],
      () => new Promise(() => {}),
    );
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await prompt(h, sessionId, "Run it");
    await h.waitFor(() => h.states(sessionId).includes("requires_action"));
    await h.agent.notify("session/cancel", { sessionId });
    await ended(h, sessionId);
    expect(h.states(sessionId)).toEqual(["running", "requires_action", "idle:cancelled"]);
    expect(existsSync(path.join(t.ws, "hi.txt"))).toBe(false);
  });
});

describe("ACP v2: rewind and fork", () => {
  it("_session/rewind_points and _session/rewind pass through (advertised in capabilities._meta); the rewind's message is its own; a resume with replay shows the rewound path", async () => {
    const h = await start([
      { toolCalls: [{ id: "w1", name: "write", arguments: { path: "n.txt", content: "one\n" } }] },
      { text: "Wrote one." },
      { toolCalls: [{ id: "e1", name: "edit", arguments: { path: "n.txt", old_string: "one", new_string: "two" } }] },
      { text: "Now two." },
    ]);
    const init = await h.initialize();
    expect(init.capabilities?._meta).toEqual({ toolhost: { rewind: { version: 1 } } });
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await h.agent.request("session/set_config_option", { sessionId, configId: "mode", type: "id", value: "full" });
    await prompt(h, sessionId, "first: write one");
    await ended(h, sessionId);
    await prompt(h, sessionId, "second: make it two");
    await ended(h, sessionId, 2);
    expect(readFileSync(path.join(t.ws, "n.txt"), "utf8")).toBe("two\n");

    const { points } = await h.agent.request<{ points: { messageId: string; preview: string }[] }>("_session/rewind_points", { sessionId });
    expect(points.map((p) => p.preview)).toEqual(["first: write one", "second: make it two"]);
    const lastTurnMessage = h.updatesOf(sessionId, "agent_message_chunk").at(-1)!.messageId;
    const answer = await h.agent.request<{ applied: boolean; files: { path: string }[]; _meta: { toolhost: { message: string } } }>(
      "_session/rewind",
      { sessionId, messageId: points[1]!.messageId, mode: "both" },
    );
    expect(answer.applied).toBe(true);
    expect(answer.files.map((f) => f.path)).toEqual(["n.txt"]);
    expect(readFileSync(path.join(t.ws, "n.txt"), "utf8")).toBe("one\n");
    // The session says what happened, as a message of its own (not the turn's last one); no state changes.
    await h.waitFor(() => agentText(h, sessionId).endsWith(answer._meta.toolhost.message));
    expect(h.updatesOf(sessionId, "agent_message_chunk").at(-1)!.messageId).not.toBe(lastTurnMessage);
    expect(h.states(sessionId).at(-1)).toBe("idle:end_turn");
    // Bad params are the v1 agent's -32602; an unknown session the v2 side's.
    await expect(
      h.agent.request("_session/rewind", { sessionId, messageId: points[0]!.messageId, mode: "sideways" }),
    ).rejects.toMatchObject({
      code: -32602,
    });
    await expect(h.agent.request("_session/rewind_points", { sessionId: "nope" })).rejects.toMatchObject({ code: -32002 });

    // A client that wants the rewound conversation resumes with a replay: the second prompt is gone.
    const before = h.updates.length;
    await h.agent.request("session/resume", { sessionId, cwd: t.ws, replayFrom: { type: "start" } });
    const replayed = h.updates.slice(before).map((n) => n.update);
    const said = (kind: string) =>
      replayed
        .filter((u) => u.sessionUpdate === kind)
        .map((u) => (u as { content: { text?: string } }).content.text ?? "")
        .join("|");
    expect(said("user_message_chunk")).toBe("first: write one");
    expect(said("agent_message_chunk")).toContain("Wrote one.");
    expect(said("agent_message_chunk")).not.toContain("Now two.");
  });

  it("session/fork (unstable v2) is advertised and starts a session from where this one is", async () => {
    const h = await start(
      [{ text: "Noted: banana." }, (body) => ({ text: JSON.stringify(body.messages).includes("banana") ? "It was banana." : "No idea." })],
      undefined,
      {
        unstable: true,
      },
    );
    const init = await h.initialize();
    expect((init.capabilities?.session as { fork?: unknown } | undefined)?.fork).toEqual({});
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await prompt(h, sessionId, "Remember the word banana");
    await ended(h, sessionId);
    const fork = await h.agent.request<{ sessionId: string; configOptions?: { configId: string }[] }, unknown, "session/fork">(
      "session/fork",
      {
        sessionId,
        cwd: t.ws,
      },
    );
    expect(fork.sessionId).not.toBe(sessionId);
    expect(fork.configOptions?.map((o) => o.configId)).toContain("mode");
    await prompt(h, fork.sessionId, "Which word?");
    await ended(h, fork.sessionId);
    expect(agentText(h, fork.sessionId)).toBe("It was banana.");
    // The original is untouched.
    expect(agentText(h, sessionId)).toBe("Noted: banana.");
  });
});

describe("ACP v2: the v2 side is built lazily", () => {
  /** A router over a v1 agent, counting the inner agents it builds and shuts down. */
  function routed() {
    const built: number[] = [];
    const closed: number[] = [];
    const { router, shutdown } = versionRouter(createAgent().app, (early, writeLines) => {
      const inner = createAgent(early, writeLines);
      built.push(built.length);
      return { app: inner.app, shutdown: async () => void closed.push(closed.length) };
    });
    const toAgent = new TransformStream<AnyMessage, AnyMessage>();
    const toClient = new TransformStream<AnyMessage, AnyMessage>();
    router.connect({ writable: toClient.writable, readable: toAgent.readable });
    return { built, closed, shutdown, stream: { writable: toAgent.writable, readable: toClient.readable } };
  }

  it("a v1 connection never builds the inner agent; a v2 one builds it once, at initialize, and shutdown closes it", async () => {
    const one = routed();
    const v1 = v1Client({ name: "t" }).connect(one.stream).agent;
    expect(
      (await v1.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "t", version: "1" } }))
        .protocolVersion,
    ).toBe(1);
    await one.shutdown();
    expect(one.built).toEqual([]);
    expect(one.closed).toEqual([]);

    const two = routed();
    expect(two.built).toEqual([]);
    const v2 = v2Client({ name: "t" }).connect(two.stream).agent;
    const init = { protocolVersion: 2, info: { name: "t", version: "1" }, capabilities: {} };
    expect((await v2.request("initialize", init)).protocolVersion).toBe(2);
    expect((await v2.request("initialize", init)).protocolVersion).toBe(2);
    expect(two.built).toEqual([0]);
    await two.shutdown();
    expect(two.closed).toEqual([0]);
  });

  it("a turn the agent starts by itself (a background task's answer) shows as running, then idle; a prompt sent meanwhile waits for it", async () => {
    let childMayAnswer = () => {};
    const childWaits = new Promise<void>((resolve) => (childMayAnswer = resolve));
    let ownMayAnswer = () => {};
    const ownWaits = new Promise<void>((resolve) => (ownMayAnswer = resolve));
    const user = (body: FakeBody) => (body.messages ?? []).filter((m) => m.role === "user").map((m) => JSON.stringify(m.content));
    t.fake = await startFakeOpenAI({
      fallback: async (body: FakeBody): Promise<FakeReply> => {
        const users = user(body);
        if (users[0]?.includes("Child S")) {
          await childWaits;
          return { text: "Survey: 2 files" };
        }
        if (users.at(-1)?.includes("[Background task")) {
          await ownWaits;
          return { text: "The survey is back." };
        }
        if (users.at(-1)?.includes("next")) return { text: "Next done." };
        if (!(body.messages ?? []).some((m) => m.role === "tool"))
          return {
            toolCalls: [{ id: "t1", name: "task", arguments: { description: "Survey", prompt: "Child S: survey", background: true } }],
            finish: "tool_calls",
          };
        return { text: "Started." };
      },
    });
    const h = await start([]);
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
    await prompt(h, sessionId, "Start the survey");
    await ended(h, sessionId);
    expect(h.states(sessionId)).toEqual(["running", "idle:end_turn"]);

    childMayAnswer();
    await h.waitFor(() => h.states(sessionId).length >= 3);
    // Sent while the agent's own turn runs: held until it ends, then a turn of its own.
    const next = prompt(h, sessionId, "next");
    await h.waitFor(() => t.fake!.requests.some((r) => JSON.stringify(r.body).includes("[Background task")));
    // Not inserted while the own turn waits on its model.
    expect(h.updatesOf(sessionId, "user_message")).toHaveLength(1);
    ownMayAnswer();
    await ended(h, sessionId, 3);
    await next;
    expect(h.states(sessionId)).toEqual(["running", "idle:end_turn", "running", "idle:end_turn", "running", "idle:end_turn"]);
    // The own turn's updates sit between its running and idle states.
    const kinds = h.updates
      .filter((n) => n.sessionId === sessionId)
      .map((n) => n.update)
      .flatMap((u) => {
        if (u.sessionUpdate === "state_update") return [`state:${(u as { state: string }).state}`];
        const content = (u as { content?: { type: string; text?: string } }).content;
        return u.sessionUpdate === "agent_message_chunk" && content?.type === "text" ? [content.text ?? ""] : [];
      });
    const own = kinds.slice(kinds.indexOf("state:idle") + 1);
    expect(own[0]).toBe("state:running");
    const ownEnd = own.indexOf("state:idle");
    expect(own.slice(1, ownEnd).join("")).toMatch(/^Background task .*finished.*: the answer goes to the model\.\s*The survey is back\.$/s);
    expect(agentText(h, sessionId)).toMatch(/Next done\.$/);
  });
});
