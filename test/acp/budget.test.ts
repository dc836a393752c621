import * as fsp from "node:fs/promises";
import path from "node:path";
import type { RequestPermissionRequest } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { startFakeAnthropic } from "../fixtures/fake-anthropic.mjs";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, selected, useAcpTest, type PermissionHandler, prompt, messageText } from "./harness.js";

// Budgets (issue 24 §2) over the real ACP wire: the agent spawned, its model a local fake server
// whose model calls tools on and on, its caps in the user's config file.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

const glob = (i: number): FakeReply => ({ toolCalls: [{ id: `g${i}`, name: "glob", arguments: { pattern: `*${i}` } }] });

/** A session whose model makes 50 glob calls, one per request, under `budget` in the user's config. */
async function start(budget: Record<string, number>, options: { mode?: string; permission?: PermissionHandler } = {}) {
  t.fake = await startFakeOpenAI({ script: [...Array.from({ length: 50 }, (_, i) => glob(i + 1)), { text: "All done." }] });
  await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ budget }));
  t.h = new Harness({
    env: { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url },
    ...(options.permission ? { permission: options.permission } : {}),
  });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  if (options.mode) await t.h.agent.request("session/set_mode", { sessionId, modeId: options.mode });
  return { h: t.h, fake: t.fake, sessionId };
}

/** Each glob call's last status, in order, and the text of the failed ones. */
function globs(h: Harness, sessionId: string) {
  const calls = h.updatesOf(sessionId, "tool_call").filter((c) => c.kind === "search");
  return calls.map((c) => {
    const last = h
      .updatesOf(sessionId, "tool_call_update")
      .filter((u) => u.toolCallId === c.toolCallId && u.status)
      .at(-1);
    const text = (last?.content ?? []).map((b) => (b.type === "content" && b.content.type === "text" ? b.content.text : "")).join("");
    return { status: last?.status, text };
  });
}

describe("a budget over the wire", () => {
  it("stops a turn of 50 calls at maxToolCalls: the 11th call is not run, the turn ends max_turn_requests with the message", async () => {
    const { h, fake, sessionId } = await start({ maxToolCalls: 10 }, { mode: "accept-edits" });
    expect((await prompt(h, sessionId, "look everywhere")).stopReason).toBe("max_turn_requests");
    const ran = globs(h, sessionId);
    expect(ran.map((c) => c.status)).toEqual([...Array(10).fill("completed"), "failed"]);
    const message = `Stopped: the session reached its budget of 10 tool calls (budget.maxToolCalls in ${path.join(t.home, "config.json")}). The session has made 10 tool calls. In ask mode you are asked whether to go on past it; or raise budget.maxToolCalls for new sessions.`;
    expect(ran[10]!.text).toContain(`Not run: budget. ${message}`);
    expect(messageText(h, sessionId, "")).toBe(message);
    // The eleventh request made the call past the cap; nothing was asked of anyone.
    expect(fake.requests).toHaveLength(11);
    expect(h.permissionRequests).toEqual([]);
    // The next prompt's request carries the answer to the refused call; the model's next call is refused too.
    expect((await prompt(h, sessionId, "and now?")).stopReason).toBe("max_turn_requests");
    expect(fake.requests).toHaveLength(12);
    const refused = fake.requests[11]!.body.messages!.find((m) => m.role === "tool" && m.tool_call_id === "g11");
    expect(String(refused?.content)).toContain("Not run: budget.");
    expect(globs(h, sessionId).map((c) => c.status)).toEqual([...Array(10).fill("completed"), "failed", "failed"]);
  });

  it("in ask mode asks at the cap: yes goes on to the next cap (the same amount again), no stops the turn", async () => {
    const answers = ["yes", "no"];
    const confirmations: RequestPermissionRequest[] = [];
    const { h, fake, sessionId } = await start(
      { maxToolCalls: 10 },
      {
        permission: (request) => {
          if (!request.toolCall.toolCallId.startsWith("confirm_")) return selected("reject_once");
          confirmations.push(request);
          return selected(answers.shift()!);
        },
      },
    );
    expect((await prompt(h, sessionId, "look everywhere")).stopReason).toBe("max_turn_requests");
    expect(confirmations.map((r) => [r.toolCall.title, r.options.map((o) => [o.optionId, o.name])])).toEqual([
      [
        "The session reached its budget of 10 tool calls: go on?",
        [
          ["yes", "Go on (up to 20 tool calls)"],
          ["no", "Stop"],
        ],
      ],
      [
        "The session reached its budget of 20 tool calls: go on?",
        [
          ["yes", "Go on (up to 30 tool calls)"],
          ["no", "Stop"],
        ],
      ],
    ]);
    // Each question is shown as a call of its own, pending, then completed (yes) or failed (no).
    const questions = h.updatesOf(sessionId, "tool_call").filter((c) => c.toolCallId.startsWith("confirm_"));
    expect(questions.map((q) => [q.kind, q.status])).toEqual([
      ["other", "pending"],
      ["other", "pending"],
    ]);
    const ends = questions.map(
      (q) =>
        h
          .updatesOf(sessionId, "tool_call_update")
          .filter((u) => u.toolCallId === q.toolCallId)
          .at(-1)?.status,
    );
    expect(ends).toEqual(["completed", "failed"]);
    const ran = globs(h, sessionId);
    expect(ran.map((c) => c.status)).toEqual([...Array(20).fill("completed"), "failed"]);
    expect(ran[20]!.text).toContain("Not run: budget. Stopped: the session reached its budget of 20 tool calls");
    expect(messageText(h, sessionId, "")).toBe(
      `Stopped: the session reached its budget of 20 tool calls (budget.maxToolCalls in ${path.join(t.home, "config.json")}), and you chose to stop. The next prompt asks again.`,
    );
    expect(fake.requests).toHaveLength(21);
  });

  it("a priced model's cost: a notice once at the warning line, then the turn stops at the cap", async () => {
    // Each request bills 100,000 input tokens and no output: $0.30 at Sonnet 4.5's $3 per million.
    const usage = { input_tokens: 100_000, output_tokens: 0 };
    const anthropic = t.serve(
      await startFakeAnthropic(Array.from({ length: 10 }, (_, i) => ({ toolUse: { name: "glob", input: { pattern: `*${i}` } }, usage }))),
    );
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({
        model: "anthropic/claude-sonnet-4-5",
        providers: { anthropic: { apiKey: "sk-ant-test", baseURL: anthropic.url } },
        budget: { warnAtUsd: 0.5, maxCostUsd: 1 },
      }),
    );
    t.h = new Harness({ env: { TOOLHOST_HOME: t.home } });
    const h = t.h;
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    expect((await prompt(h, sessionId, "look everywhere")).stopReason).toBe("max_turn_requests");
    // $0.30 a request: past $0.50 after the second, at $1.00 after the fourth; the fifth is not sent.
    expect(anthropic.requests).toHaveLength(4);
    expect(h.updatesOf(sessionId, "usage_update").map((u) => u.cost?.amount)).toEqual([0.3, 0.6, 0.9, 1.2]);
    const file = path.join(t.home, "config.json");
    expect(messageText(h, sessionId, "")).toBe(
      `The session has cost $0.60, past its warning line of $0.50 (budget.warnAtUsd in ${file}).` +
        `Stopped: the session reached its budget of $1.00 (budget.maxCostUsd in ${file}). The session has cost $1.20. In ask mode you are asked whether to go on past it; or raise budget.maxCostUsd for new sessions.`,
    );
    // The notice came when the cost passed the line: before the third request's call.
    const order = h.checker.messages
      .filter((m) => m.direction === "agent->client" && m.json.method === "session/update")
      .map((m) => (m.json.params as { update: { sessionUpdate: string } }).update.sessionUpdate)
      .filter((kind) => kind === "agent_message_chunk" || kind === "usage_update");
    expect(order).toEqual(["usage_update", "usage_update", "agent_message_chunk", "usage_update", "usage_update", "agent_message_chunk"]);
    expect(globs(h, sessionId).map((c) => c.status)).toEqual(Array(4).fill("completed"));
  });

  it("the counts go on after a load in a new process: what was spent before counts against the cap", async () => {
    t.fake = await startFakeOpenAI({ fallback: { text: "ok" } });
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ budget: { maxTurns: 3 } }));
    const env = { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url };
    const first = new Harness({ env });
    t.h = first;
    await first.initialize();
    const sessionId = await first.newSession(t.ws);
    await first.agent.request("session/set_mode", { sessionId, modeId: "accept-edits" });
    expect((await prompt(first, sessionId, "one")).stopReason).toBe("end_turn");
    expect((await prompt(first, sessionId, "two")).stopReason).toBe("end_turn");
    await first.close();

    const again = new Harness({ env });
    t.h = again;
    await again.initialize();
    await again.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    expect((await prompt(again, sessionId, "three")).stopReason).toBe("end_turn");
    // Three requests in all: the fourth is not sent.
    expect((await prompt(again, sessionId, "four")).stopReason).toBe("max_turn_requests");
    expect(t.fake.requests).toHaveLength(3);
    expect(messageText(again, sessionId, "")).toContain("Stopped: the session reached its budget of 3 model requests");
  });
});
