import type { SessionUpdate as UnstableUpdate } from "@agentclientprotocol/sdk/unstable";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, useAcpTest } from "./harness.js";

// The todo tool's plan in the editor, over real stdio: plan operations (plan_update / plan_removed
// keyed by planId) for a client that advertises `clientCapabilities.plan`, the legacy `plan` for
// the others; every line checked against the SDK's unstable (resp. stable) v1 schema.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

type PlanUpdate = Extract<UnstableUpdate, { sessionUpdate: "plan_update" }>;
type PlanRemoved = Extract<UnstableUpdate, { sessionUpdate: "plan_removed" }>;

/** The plan operations of a session (the harness's client is the SDK's unstable one for these tests). */
function planOps(h: Harness, sessionId: string): (PlanUpdate | PlanRemoved)[] {
  return h.updates
    .filter((n) => n.sessionId === sessionId)
    .map((n) => n.update as unknown as UnstableUpdate)
    .filter((u): u is PlanUpdate | PlanRemoved => u.sessionUpdate === "plan_update" || u.sessionUpdate === "plan_removed");
}

const todo = (todos: unknown[]) => `/todo ${JSON.stringify({ todos })}`;

async function prompt(h: Harness, sessionId: string, text: string): Promise<void> {
  await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
}

async function start(options: ConstructorParameters<typeof Harness>[0]) {
  t.h = new Harness(options);
  await t.h.initialize();
  return { h: t.h, sessionId: await t.h.newSession(t.ws) };
}

describe("plan operations", () => {
  it("a client with clientCapabilities.plan gets plan_update with a stable planId, and plan_removed when cleared", async () => {
    const { h, sessionId } = await start({ capabilities: { plan: {} } as never, unstable: true });
    await prompt(h, sessionId, todo([{ content: "Read", status: "in_progress" }]));
    await prompt(
      h,
      sessionId,
      todo([
        { content: "Read", status: "completed" },
        { content: "Write", status: "in_progress", priority: "high" },
      ]),
    );
    await prompt(h, sessionId, todo([]));
    const ops = planOps(h, sessionId);
    expect(ops.map((u) => u.sessionUpdate)).toEqual(["plan_update", "plan_update", "plan_removed"]);
    const [first, second, removed] = ops as [PlanUpdate, PlanUpdate, PlanRemoved];
    expect(first.plan).toEqual({
      type: "items",
      planId: expect.any(String),
      entries: [{ content: "Read", status: "in_progress", priority: "medium" }],
    });
    expect(second.plan.planId).toBe(first.plan.planId);
    expect(second.plan).toMatchObject({
      type: "items",
      entries: [
        { content: "Read", status: "completed", priority: "medium" },
        { content: "Write", status: "in_progress", priority: "high" },
      ],
    });
    expect(removed.planId).toBe(first.plan.planId);
    // No legacy plan alongside.
    expect(h.updatesOf(sessionId, "plan")).toEqual([]);
    expect(h.checker.seenUpdates).toContain("plan_update");
    expect(h.checker.seenUpdates).toContain("plan_removed");
  });

  it("an empty list with no plan shown sends nothing", async () => {
    const { h, sessionId } = await start({ capabilities: { plan: {} } as never, unstable: true });
    await prompt(h, sessionId, todo([]));
    expect(h.updatesOf(sessionId, "tool_call")).toHaveLength(1);
    expect(planOps(h, sessionId)).toEqual([]);
    expect(h.updatesOf(sessionId, "plan")).toEqual([]);
  });

  it("a client without the capability keeps getting the legacy plan, an empty list included", async () => {
    const { h, sessionId } = await start({});
    await prompt(h, sessionId, todo([{ content: "Read", status: "in_progress", priority: "low" }]));
    await prompt(h, sessionId, todo([]));
    expect(h.updatesOf(sessionId, "plan").map((u) => u.entries)).toEqual([
      [{ content: "Read", status: "in_progress", priority: "low" }],
      [],
    ]);
    expect(planOps(h, sessionId)).toEqual([]);
  });

  it("a subagent's todo is its own plan, with its own planId", async () => {
    const route = (body: FakeBody): FakeReply => {
      const first = body.messages?.find((m) => m.role === "user");
      const who = typeof first?.content === "string" ? first.content : JSON.stringify(first?.content);
      const results = (body.messages ?? []).filter((m) => m.role === "tool");
      if (who.includes("Child")) {
        if (results.length) return { text: "Child done." };
        return {
          toolCalls: [{ id: "c1", name: "todo", arguments: { todos: [{ content: "Child step", status: "in_progress" }] } }],
          finish: "tool_calls",
        };
      }
      if (results.length === 0)
        return {
          toolCalls: [{ id: "p1", name: "todo", arguments: { todos: [{ content: "Parent step", status: "in_progress" }] } }],
          finish: "tool_calls",
        };
      if (results.length === 1)
        return {
          toolCalls: [{ id: "t1", name: "task", arguments: { description: "Delegate", prompt: "Child: plan your step" } }],
          finish: "tool_calls",
        };
      if (results.length === 2)
        return {
          toolCalls: [{ id: "p2", name: "todo", arguments: { todos: [{ content: "Parent step", status: "completed" }] } }],
          finish: "tool_calls",
        };
      return { text: "All done." };
    };
    t.fake = await startFakeOpenAI({ fallback: route });
    const { h, sessionId } = await start({
      capabilities: { plan: {} } as never,
      unstable: true,
      env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url },
    });
    const response = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Plan it" }] });
    expect(response.stopReason).toBe("end_turn");
    const updates = planOps(h, sessionId).filter((u): u is PlanUpdate => u.sessionUpdate === "plan_update");
    const byContent = (text: string) => updates.filter((u) => u.plan.type === "items" && u.plan.entries[0]?.content === text);
    const parent = byContent("Parent step");
    const child = byContent("Child step");
    expect(parent).toHaveLength(2);
    expect(child).toHaveLength(1);
    expect(parent[1]!.plan.planId).toBe(parent[0]!.plan.planId);
    expect(child[0]!.plan.planId).not.toBe(parent[0]!.plan.planId);
  });
});
