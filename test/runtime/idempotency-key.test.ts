import { afterEach, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";

// ctx.idempotencyKey: what an extension passes to an API that de-duplicates retries.

const sessions: RuntimeSession[] = [];
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
});

function key(sessionId: string, callId: string): string {
  const session = new RuntimeSession({ id: sessionId, workspace: "/tmp" });
  sessions.push(session);
  return createToolContext({ session, toolId: "t", callId, requires: {}, signal: new AbortController().signal }).idempotencyKey;
}

describe("ctx.idempotencyKey", () => {
  it("is the same for the same session and call (a loaded session too), and differs for any other", () => {
    const first = key("session-a", "call_1");
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(key("session-a", "call_1")).toBe(first);
    expect(key("session-a", "call_2")).not.toBe(first);
    expect(key("session-b", "call_1")).not.toBe(first);
  });
});
