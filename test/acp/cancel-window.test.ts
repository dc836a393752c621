import type { PromptResponse } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { Harness, useAcpTest } from "./harness.js";
import { V2Harness } from "./harness-v2.js";

// A session/cancel ends the turn `cancelled` whenever it arrives: in the same write as the prompt
// (before the turn's setup ran), once the turn's first update is out, or while the model answers.
// The model answers at once unless told to hang, so a cancel that is dropped shows as `end_turn`.

const t = useAcpTest({ "a.txt": "a\n" });

const text = (value: string) => [{ type: "text" as const, text: value }];

describe("a cancel at any moment of a turn (v1, stdio)", () => {
  it("ends the turn cancelled: sent with the prompt, after its first update, while the model answers", async () => {
    t.fake = await startFakeOpenAI({
      fallback: (body) => (JSON.stringify(body).includes("PLEASE-HANG") ? { hang: true } : { text: "answered" }),
    });
    const h = (t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } }));
    await h.initialize();

    // Right after the prompt request: both in flight before the agent read either.
    const first = await h.newSession(t.ws);
    const withPrompt = h.agent.request("session/prompt", { sessionId: first, prompt: text("first turn") });
    await h.agent.notify("session/cancel", { sessionId: first });
    expect(((await withPrompt) as PromptResponse).stopReason).toBe("cancelled");

    // Once the turn said something (its title, before the model is asked).
    const second = await h.newSession(t.ws);
    const afterTitle = h.agent.request("session/prompt", { sessionId: second, prompt: text("second turn") });
    await h.waitFor(() => h.updatesOf(second, "session_info_update").length > 0);
    await h.agent.notify("session/cancel", { sessionId: second });
    expect(((await afterTitle) as PromptResponse).stopReason).toBe("cancelled");

    // While the model is asked (it never answers): the request is cut and the turn ends.
    const third = await h.newSession(t.ws);
    const asked = t.fake.requests.length;
    const whileAsking = h.agent.request("session/prompt", { sessionId: third, prompt: text("PLEASE-HANG") });
    await h.waitFor(() => t.fake!.requests.length > asked);
    await h.agent.notify("session/cancel", { sessionId: third });
    expect(((await whileAsking) as PromptResponse).stopReason).toBe("cancelled");

    // A cancel ends only what was received: the next prompt of the same session runs.
    expect(((await h.agent.request("session/prompt", { sessionId: first, prompt: text("again") })) as PromptResponse).stopReason).toBe(
      "end_turn",
    );
  });
});

describe("a cancel at any moment of a turn (v2, stdio)", () => {
  it("ends the turn cancelled: sent with the prompt, or once the turn is running", async () => {
    t.fake = await startFakeOpenAI({ fallback: { text: "answered" } });
    const h = new V2Harness({ ...t.env(), TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url });
    t.defer(async () => {
      expect(await h.close()).toBe(0);
      expect(h.checker.problems).toEqual([]);
    });
    await h.initialize();
    for (const moment of ["with the prompt", "once running"] as const) {
      const { sessionId } = await h.agent.request("session/new", { cwd: t.ws });
      const answered = h.agent.request("session/prompt", { sessionId, prompt: text(`a turn cancelled ${moment}`) });
      if (moment === "once running") await h.waitFor(() => h.states(sessionId).includes("running"));
      await h.agent.notify("session/cancel", { sessionId });
      await answered;
      await h.waitFor(() => h.states(sessionId).some((s) => s.startsWith("idle")));
      expect(h.states(sessionId), moment).toEqual(["running", "idle:cancelled"]);
    }
  });
});
