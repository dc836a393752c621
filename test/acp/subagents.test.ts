import { execFileSync } from "node:child_process";
import type { ClientCapabilities, SessionNotification } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { sleepMarker } from "../helpers.js";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, selected, textOf, useAcpTest } from "./harness.js";

// ACP subagent sessions over real stdio, for a client that advertises `subagents`: each child on
// its own session id, announced on the parent by subagent_update, cancellable alone. Every line
// is checked against the SDK's unstable schema.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

// A marker of this run's own: another test run on the machine must not look the same.
const SLEEP = `sleep ${sleepMarker()}`;

function route(body: FakeBody): FakeReply {
  const who = firstUserText(body);
  const results = (body.messages ?? []).filter((m) => m.role === "tool");
  if (who.includes("Delegate") || who.includes("Cancel it")) {
    if (!results.length) {
      const prompt = who.includes("Cancel it") ? "Child S: run the sleep" : "Child A: list the sources";
      return { toolCalls: [{ id: "t1", name: "task", arguments: { description: "Do the child's part", prompt } }], finish: "tool_calls" };
    }
    return { text: `Parent goes on after: ${String(results[0]?.content).slice(0, 80)}` };
  }
  if (who.includes("Child S"))
    return results.length ? { text: "S: slept" } : { toolCalls: [{ id: "s", name: "bash", arguments: { command: SLEEP } }] };
  return results.length ? { text: "A: src/a.ts" } : { toolCalls: [{ id: "g", name: "glob", arguments: { pattern: "**/*.ts" } }] };
}

type Raw = {
  sessionUpdate: string;
  sessionId?: string;
  state?: { state: string; stopReason?: string };
  title?: string;
  capabilities?: unknown;
};

/** The parent's subagent_update notifications (an unstable variant: not in the stable types). */
function subagentUpdates(h: Harness, parentId: string): Raw[] {
  return h.updates
    .filter((n: SessionNotification) => n.sessionId === parentId && (n.update as Raw).sessionUpdate === "subagent_update")
    .map((n) => n.update as Raw);
}

const SUBAGENTS = { subagents: {} } as ClientCapabilities;

function env(url: string) {
  return { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: url };
}

describe("ACP subagent sessions", () => {
  it("gives the child its own session id: subagent_update on the parent, the child's calls and text on its id", async () => {
    t.fake = await startFakeOpenAI({ fallback: route });
    t.h = new Harness({ capabilities: SUBAGENTS, env: env(t.fake.url) });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const response = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Delegate" }] });
    expect(response.stopReason).toBe("end_turn");

    const subs = subagentUpdates(t.h, sessionId);
    const childId = subs[0]?.sessionId;
    expect(childId).toBeTruthy();
    expect(childId).not.toBe(sessionId);
    expect(subs[0]).toMatchObject({ title: "Do the child's part", capabilities: { cancel: {} }, state: { state: "running" } });
    expect(subs.at(-1)).toMatchObject({ sessionId: childId, state: { state: "idle", stopReason: "end_turn" } });
    // The child's call and text are on its own id, not on the parent's.
    expect(t.h.updatesOf(childId!, "tool_call").map((c) => c.name)).toEqual(["glob"]);
    expect(t.h.updatesOf(sessionId, "tool_call").map((c) => c.name)).toEqual(["task"]);
    expect(
      t.h
        .updatesOf(childId!, "agent_message_chunk")
        .map((u) => (u.content.type === "text" ? u.content.text : ""))
        .join(""),
    ).toContain("A: src/a.ts");
    // The announcement comes before any of the child's own traffic.
    const first = t.h.checker.messages.findIndex((m) => JSON.stringify(m.json).includes(childId!));
    expect(JSON.stringify(t.h.checker.messages[first]!.json)).toContain("subagent_update");
    const task = t.h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(t.h, sessionId, task.toolCallId).status).toBe("completed");
    expect(textOf(lastUpdate(t.h, sessionId, task.toolCallId))).toContain("A: src/a.ts");
  });

  it("asks the child's approval on its id; session/cancel on the child ends only the child and its process", async () => {
    t.fake = await startFakeOpenAI({ fallback: route });
    t.h = new Harness({ capabilities: SUBAGENTS, env: env(t.fake.url), permission: () => selected("allow_once") });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const turn = t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Cancel it" }] });
    let childId = "";
    await t.h.waitFor(() => {
      childId = subagentUpdates(t.h!, sessionId)[0]?.sessionId ?? "";
      return childId !== "" && t.h!.updatesOf(childId, "tool_call_update").some((u) => u.status === "in_progress");
    }, 20_000);
    expect(t.h.permissionRequests.map((r) => r.sessionId)).toEqual([childId]);
    await t.h.waitFor(() => running() > 0);
    await t.h.agent.notify("session/cancel", { sessionId: childId });
    const response = await turn;
    // The parent's turn went on past the cancelled task.
    expect(response.stopReason).toBe("end_turn");
    const said = t.h
      .updatesOf(sessionId, "agent_message_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""))
      .join("");
    expect(said).toContain("Parent goes on");
    expect(subagentUpdates(t.h, sessionId).at(-1)).toMatchObject({ sessionId: childId, state: { state: "idle", stopReason: "cancelled" } });
    const task = t.h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(t.h, sessionId, task.toolCallId).status).toBe("failed");
    await t.h.waitFor(() => running() === 0);
  });

  it("keeps the nested fallback for a client without the capability", async () => {
    t.fake = await startFakeOpenAI({ fallback: route });
    t.h = new Harness({ env: env(t.fake.url) });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Delegate" }] });
    expect(subagentUpdates(t.h, sessionId)).toEqual([]);
    const calls = t.h.updatesOf(sessionId, "tool_call");
    const task = calls.find((c) => c.name === "task")!;
    expect(calls.find((c) => c.name === "glob")?._meta).toEqual({ parentToolCallId: task.toolCallId });
    expect(new Set(t.h.updates.map((n) => n.sessionId))).toEqual(new Set([sessionId]));
  });
});

/** How many of the child's sleep processes run on this machine. */
function running(): number {
  try {
    return execFileSync("pgrep", ["-f", SLEEP], { encoding: "utf8" }).trim().split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}
