import fs from "node:fs";
import path from "node:path";
import type { PromptResponse } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { Harness, messageText, prompt, useAcpTest } from "./harness.js";

// A model server that hangs: toolhost's own timeouts (the config file's `modelRequest`, read each
// turn) end the request and say why, the wait and each retry are shown as they happen, and a
// cancel closes a hanging request at once. The server records each request's connection closing.

const t = useAcpTest({ "a.txt": "a\n" });

function thoughts(h: Harness, sessionId: string): string {
  return h
    .updatesOf(sessionId, "agent_thought_chunk")
    .map((u) => (u.content.type === "text" ? u.content.text : ""))
    .join("");
}

describe("a model server that hangs (v1, stdio)", () => {
  it("times out before the first part and between parts, says so while it waits, and a cancel ends a hang at once", async () => {
    const writeLimits = (limits: Record<string, number>) =>
      fs.writeFileSync(path.join(t.home, "config.json"), JSON.stringify({ modelRequest: limits }));
    writeLimits({ firstByteTimeoutMs: 400, idleTimeoutMs: 400, retries: 1 });
    t.fake = await startFakeOpenAI({
      fallback: (body) => {
        const request = JSON.stringify(body.messages?.at(-1));
        // Accepts the request and never answers: not even the headers.
        if (request.includes("SILENT")) return new Promise<never>(() => {});
        // The headers and one chunk, then nothing.
        if (request.includes("STALL")) return { text: "Hel", hang: true };
        return { text: "answered" };
      },
    });
    const h = (t.h = new Harness({
      env: { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url },
    }));
    await h.initialize();
    const requests = t.fake.requests;

    // Nothing comes: the first-byte timeout, shown while it waits, then one retry, said, then the error.
    const silent = await h.newSession(t.ws);
    const before = requests.length;
    expect(((await prompt(h, silent, "SILENT please")) as PromptResponse).stopReason).toBe("end_turn");
    expect(thoughts(h, silent)).toContain(
      "waiting for openai-compatible/fake: no answer yet after 200 ms (attempt 1; gives up after 400 ms, then retries)",
    );
    expect(thoughts(h, silent)).toContain("openai-compatible/fake: the model sent nothing for 400 ms; retry 1 of 1 in 1 s");
    expect(messageText(h, silent)).toContain(
      "The model request for openai-compatible/fake timed out (tried 2 times): the model sent nothing for 400 ms.",
    );
    await h.waitFor(() => requests.slice(before).every((r) => r.aborted));

    // One chunk, then a stall: the idle timeout. The chunk reached the editor, so it is not retried.
    const stalled = await h.newSession(t.ws);
    const beforeStall = requests.length;
    expect(((await prompt(h, stalled, "STALL please")) as PromptResponse).stopReason).toBe("end_turn");
    expect(messageText(h, stalled, "")).toContain("Hel");
    expect(messageText(h, stalled)).toContain("timed out: the model stopped sending for 400 ms mid-answer.");
    expect(thoughts(h, stalled)).not.toContain("retry");
    await h.waitFor(() => requests[beforeStall]!.aborted);

    // Long timeouts, a hang: the cancel ends the turn, and the server sees the connection closed.
    writeLimits({ firstByteTimeoutMs: 600_000, idleTimeoutMs: 600_000, retries: 3 });
    const hung = await h.newSession(t.ws);
    const beforeHang = requests.length;
    const answer = prompt(h, hung, "SILENT again");
    await h.waitFor(() => requests.length > beforeHang);
    await h.agent.notify("session/cancel", { sessionId: hung });
    expect(((await answer) as PromptResponse).stopReason).toBe("cancelled");
    await h.waitFor(() => requests[beforeHang]!.aborted);

    // The session goes on.
    expect(((await prompt(h, hung, "and now?")) as PromptResponse).stopReason).toBe("end_turn");
  });
});
