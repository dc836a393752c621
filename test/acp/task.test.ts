import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, textOf, useAcpTest } from "./harness.js";

// The task tool in the editor, over real stdio: a parent delegating to two children in parallel,
// each child's calls nested under its task call, every line checked against the ACP schema.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

function route(body: FakeBody): FakeReply {
  const who = firstUserText(body);
  const results = (body.messages ?? []).filter((m) => m.role === "tool");
  if (who.includes("Check both")) {
    if (!results.length)
      return {
        toolCalls: [
          { id: "t1", name: "task", arguments: { description: "Find the sources", prompt: "Child A: list the sources" } },
          { id: "t2", name: "task", arguments: { description: "Bump the value", prompt: "Child B: change a to 2" } },
        ],
        finish: "tool_calls",
      };
    return { text: "Both children answered." };
  }
  if (who.includes("Child A"))
    return results.length ? { text: "A: src/a.ts" } : { toolCalls: [{ id: "g", name: "glob", arguments: { pattern: "**/*.ts" } }] };
  if (results.length) return { text: `B: ${String(results[0]?.content)}` };
  return { toolCalls: [{ id: "e", name: "edit", arguments: { path: "src/a.ts", old_string: "= 1", new_string: "= 2" } }] };
}

describe("task in the editor", () => {
  it("shows a parent delegating to two children; the child's edit is refused by the read-only mode", async () => {
    t.fake = await startFakeOpenAI({ fallback: route });
    t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    await t.h.agent.request("session/set_mode", { sessionId, modeId: "read-only" });
    const response = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Check both" }] });
    expect(response.stopReason).toBe("end_turn");

    const calls = t.h.updatesOf(sessionId, "tool_call");
    const tasks = calls.filter((c) => c.name === "task");
    expect(tasks.map((t) => t.kind)).toEqual(["think", "think"]);
    const ids = tasks.map((t) => t.toolCallId);
    // The titles come with the complete arguments: the description.
    expect(ids.map((id) => lastTitle(id))).toEqual(["Find the sources", "Bump the value"]);
    // The children's calls name the task call that started them.
    const glob = calls.find((c) => c.name === "glob")!;
    const edit = calls.find((c) => c.name === "edit")!;
    expect(glob._meta).toEqual({ parentToolCallId: ids[0] });
    expect(edit._meta).toEqual({ parentToolCallId: ids[1] });
    // While it ran, the task call showed its child's calls, one line each with the status.
    const progress = t.h
      .updatesOf(sessionId, "tool_call_update")
      .filter((u) => u.toolCallId === ids[1] && !u.status && u.content?.length)
      .map((u) => textOf(u as never));
    expect(progress.at(-1)).toMatch(/^- Edit src\/a\.ts.* — failed$/);
    // Nobody was asked: the mode denies the edit in the child as in the parent.
    expect(t.h.permissionRequests).toHaveLength(0);
    expect(lastUpdate(t.h, sessionId, edit.toolCallId).status).toBe("failed");
    expect(await fsp.readFile(path.join(t.ws, "src/a.ts"), "utf8")).toBe("export const a = 1;\n");
    const a = lastUpdate(t.h, sessionId, ids[0]!);
    expect(a.status).toBe("completed");
    expect(textOf(a)).toContain("A: src/a.ts");
    expect(textOf(lastUpdate(t.h, sessionId, ids[1]!))).toMatch(/B: .*read-only/i);

    function lastTitle(id: string | undefined): string | undefined {
      return (
        t
          .h!.updatesOf(sessionId, "tool_call_update")
          .filter((u) => u.toolCallId === id && u.title)
          .at(-1)?.title ?? undefined
      );
    }
  });
});
