import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, useAcpTest } from "./harness.js";

// One tool call cancelled over ACP v1: toolhost's `_tool_call/cancel` (acp/cancel-call.ts, the
// shape of v2's tool_call/cancel), over real stdio against `node dist/cli.js` and the fake model.
// The call's command is killed, the model gets its result, and the turn goes on.

const t = useAcpTest({ "a.txt": "alpha\n" });

describe("_tool_call/cancel", () => {
  it("stops one running command; the model is told and the turn ends end_turn; an unknown or ended call is -32602", async () => {
    t.fake = await startFakeOpenAI({
      script: [
        { toolCalls: [{ id: "b1", name: "bash", arguments: { command: "sleep 30 && echo late > late.txt" } }] },
        { text: "It was stopped." },
      ],
    });
    const h = (t.h = new Harness({
      env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home },
    }));
    const init = await h.agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: "t", version: "1" },
    });
    expect((init.agentCapabilities?._meta as { toolhost?: Record<string, unknown> }).toolhost?.cancelToolCall).toEqual({ version: 1 });
    const sessionId = await h.newSession(t.ws);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    const turn = h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Run it" }] });
    const callId = () => h.updatesOf(sessionId, "tool_call").find((c) => c.name === "bash")?.toolCallId;
    await h.waitFor(() => h.updatesOf(sessionId, "tool_call_update").some((u) => u.toolCallId === callId() && u.status === "in_progress"));
    const started = Date.now();
    expect(await h.agent.request("_tool_call/cancel", { sessionId, toolCallId: callId()! })).toEqual({});
    expect((await turn).stopReason).toBe("end_turn");
    // Killed at once, not after its 30 s: the file it would have made is not there.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(existsSync(path.join(t.ws, "late.txt"))).toBe(false);
    expect(lastUpdate(h, sessionId, callId()!).status).toBe("failed");
    // The model got the call's result (the kill), and answered.
    expect(t.fake.requests).toHaveLength(2);
    expect(JSON.stringify(t.fake.requests[1]!.body.messages)).toMatch(/cancelled/);
    // Ended, or never there: -32602.
    await expect(h.agent.request("_tool_call/cancel", { sessionId, toolCallId: callId()! })).rejects.toMatchObject({ code: -32602 });
    await expect(h.agent.request("_tool_call/cancel", { sessionId, toolCallId: "nope" })).rejects.toMatchObject({ code: -32602 });
  });
});
