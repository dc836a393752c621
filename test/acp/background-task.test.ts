import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, messageText, textOf, useAcpTest } from "./harness.js";

// Background tasks over real stdio: `task({background: true})` answers with its task_id at once,
// the child runs on past the parent's turn (and past a cancel of it), and its answer reaches the
// parent's model as a message — in a turn of its own when the parent is idle. status and cancel
// work on it; closing the session ends it.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n", "src/b.ts": "export const b = 2;\n" });

function env(url: string) {
  return { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: url };
}

/** The text of a request's last user message (a background answer arrives as one). */
function lastUserText(body: FakeBody): string {
  const m = (body.messages ?? []).filter((x) => x.role === "user").at(-1);
  return typeof m?.content === "string" ? m.content : JSON.stringify(m?.content);
}

function toolResults(body: FakeBody): string[] {
  return (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
}

/** A promise with its resolve, for a reply the test releases when it chooses. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe("background tasks in the editor", () => {
  it("delivers a background task's answer after the parent went on: a turn of its own, while the parent is idle", async () => {
    const childMayAnswer = gate();
    let parentRequests = 0;
    const route = async (body: FakeBody): Promise<FakeReply> => {
      if (firstUserText(body).includes("Child S")) {
        // The child's first request waits until the parent's turn is over.
        if (!toolResults(body).length) {
          await childMayAnswer.promise;
          return { toolCalls: [{ id: "g", name: "glob", arguments: { pattern: "src/*.ts" } }] };
        }
        return { text: "Survey: 2 source files, a.ts and b.ts" };
      }
      parentRequests += 1;
      if (lastUserText(body).startsWith("[Background task")) return { text: "The survey is back: two files." };
      if (!toolResults(body).length)
        return {
          toolCalls: [
            { id: "t1", name: "task", arguments: { description: "Survey the sources", prompt: "Child S: survey src", background: true } },
          ],
          finish: "tool_calls",
        };
      return { text: "Started the survey; going on meanwhile." };
    };
    t.fake = await startFakeOpenAI({ fallback: route });
    t.h = new Harness({ env: env(t.fake.url) });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const response = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Start the survey" }] });
    expect(response.stopReason).toBe("end_turn");

    // The task call ended at once, with the id; the parent's turn went on and ended while the child waits.
    const task = t.h.updatesOf(sessionId, "tool_call").find((c) => c.kind === "think")!;
    const taskResult = lastUpdate(t.h, sessionId, task.toolCallId);
    expect(taskResult.status).toBe("completed");
    const taskId = /task_id: (task_\w+)/.exec(JSON.stringify(t.fake.requests[1]?.body.messages))?.[1];
    expect(taskId).toMatch(/^task_/);
    expect(textOf(taskResult)).toMatch(/runs in the background/);
    expect(parentRequests).toBe(2);
    expect(messageText(t.h, sessionId)).toContain("going on meanwhile");
    expect(JSON.stringify(t.fake.requests.map((r) => r.body))).not.toContain("Survey: 2 source files");

    // The child answers now: the idle parent gets a turn of its own, its request carrying the answer.
    childMayAnswer.open();
    await t.h.waitFor(() => messageText(t.h!, sessionId).includes("The survey is back"));
    expect(parentRequests).toBe(3);
    // The person was told why the agent spoke up unasked.
    expect(messageText(t.h, sessionId)).toContain(
      `Background task "Survey the sources" (${taskId}) finished: the answer goes to the model.`,
    );
    const delivered = t.fake.requests.filter((r) => !firstUserText(r.body).includes("Child S")).at(-1)!;
    const note = lastUserText(delivered.body);
    expect(note).toContain(`[Background task ${taskId} ("Survey the sources") finished.`);
    expect(note).toContain("Survey: 2 source files, a.ts and b.ts");
    // Delivered once: the earlier conversation is there, the answer one time.
    expect(JSON.stringify(delivered.body.messages).split("Survey: 2 source files").length).toBe(2);
    // The child's call showed nested under the task call, after that call had ended.
    const glob = t.h.updatesOf(sessionId, "tool_call").find((c) => c.title?.startsWith("Glob") || c.kind === "search")!;
    expect(glob._meta).toEqual({ parentToolCallId: task.toolCallId });
    expect(lastUpdate(t.h, sessionId, glob.toolCallId).status).toBe("completed");
  });

  it("keeps a background child through a cancel of the parent's turn; status, cancel, and a close ends the rest", async () => {
    // Each child's request by the child (they start side by side: either may ask first).
    const childRequests: number[] = [];
    const route = (body: FakeBody): FakeReply => {
      const who = firstUserText(body);
      if (who.includes("Child")) {
        childRequests[who.includes("Child one") ? 0 : 1] = t.fake!.requests.length - 1;
        return { hang: true }; // a child that works until it is stopped
      }
      const last = lastUserText(body);
      const results = toolResults(body);
      if (last.includes("Start two")) {
        if (!results.length)
          return {
            toolCalls: [
              { id: "t1", name: "task", arguments: { description: "Long work one", prompt: "Child one", background: true } },
              { id: "t2", name: "task", arguments: { description: "Long work two", prompt: "Child two", background: true } },
            ],
            finish: "tool_calls",
          };
        return { hang: true }; // the parent's turn goes on until the user cancels it
      }
      const ids = [...JSON.stringify(body.messages).matchAll(/task_id: (task_\w+)/g)].map((m) => m[1]!);
      const first = ids[0]!;
      if (last.includes("Check one")) {
        if (results.length === 2) return { toolCalls: [{ id: "s", name: "task", arguments: { task_id: first, action: "status" } }] };
        if (results.length === 3) return { toolCalls: [{ id: "c", name: "task", arguments: { task_id: first, action: "cancel" } }] };
        return { text: "Checked and cancelled." };
      }
      return { text: "?" };
    };
    t.fake = await startFakeOpenAI({ fallback: route });
    t.h = new Harness({ env: env(t.fake.url) });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const turn = t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Start two" }] });
    // Both children are asking their model, and the parent its second request: cancel the parent's turn.
    await t.h.waitFor(() => childRequests.filter((i) => i !== undefined).length === 2 && t.fake!.requests.length === 4);
    await t.h.agent.notify("session/cancel", { sessionId });
    expect((await turn).stopReason).toBe("cancelled");
    // The children's requests are still open: the cancel was the parent turn's alone.
    expect(childRequests.map((i) => t.fake!.requests[i]!.aborted)).toEqual([false, false]);

    const check = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Check one" }] });
    expect(check.stopReason).toBe("end_turn");
    const [status, cancel] = t.h
      .updatesOf(sessionId, "tool_call")
      .filter((c) => c.kind === "think")
      .slice(2)
      .map((c) => textOf(lastUpdate(t.h!, sessionId, c.toolCallId)));
    expect(status).toMatch(/is running in the background: \d+ s, 0 tool calls so far/);
    expect(cancel).toMatch(/\("Long work one"\) was cancelled/);
    await t.h.waitFor(() => t.fake!.requests[childRequests[0]!]!.aborted);
    expect(t.fake.requests[childRequests[1]!]!.aborted).toBe(false);
    // A cancelled task's end is not delivered as news: the last request holds no background message.
    expect(JSON.stringify(t.fake.requests.at(-1)!.body.messages)).not.toContain("[Background task");

    // Closing the session ends the second child, with the agent still running.
    await t.h.agent.request("session/close", { sessionId });
    await t.h.waitFor(() => t.fake!.requests[childRequests[1]!]!.aborted);
    expect(t.h.child.exitCode).toBeNull();
  });

  it("refuses a background task to a subagent (nothing would take its answer after the subagent's turn)", async () => {
    await fsp.mkdir(path.join(t.home, "agents"), { recursive: true });
    await fsp.writeFile(
      path.join(t.home, "agents", "delegator.md"),
      "---\nname: delegator\ndescription: Delegates further.\ntools: [task, glob]\n---\nDelegate.\n",
    );
    const route = (body: FakeBody): FakeReply => {
      const results = toolResults(body);
      if (firstUserText(body).includes("Child D")) {
        if (!results.length)
          return { toolCalls: [{ id: "g", name: "task", arguments: { description: "Deeper", prompt: "Grandchild", background: true } }] };
        return { text: `child saw: ${results[0]}` };
      }
      if (!results.length)
        return { toolCalls: [{ id: "t", name: "task", arguments: { description: "Delegate", prompt: "Child D", agent: "delegator" } }] };
      return { text: "done" };
    };
    t.fake = await startFakeOpenAI({ fallback: route });
    t.h = new Harness({ env: { ...env(t.fake.url), TOOLHOST_HOME: t.home } });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const response = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Go" }] });
    expect(response.stopReason).toBe("end_turn");
    const childSaw = t.fake.requests.map((r) => JSON.stringify(r.body.messages)).find((m) => m.includes("child saw"));
    expect(childSaw ?? JSON.stringify(t.fake.requests.at(-1)?.body.messages)).toContain("A subagent cannot start background tasks");
    // No grandchild ever asked the model.
    expect(t.fake.requests.filter((r) => firstUserText(r.body).includes("Grandchild"))).toEqual([]);
  });
});
