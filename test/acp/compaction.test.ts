import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { closeAndCheck, Harness, messageText, useAcpTest, prompt } from "./harness.js";

// Compaction over real stdio, against a local model server with a small window (2,000 tokens):
// the context passes 85% → the older turns are summarized by the model → the turn carries on.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

const LONG_PROMPT = `Here is the plan: ${"step ".repeat(1500)}`;
/** Under the threshold by the estimate: only the provider can say it is too long. */
const MEDIUM_PROMPT = `Here is the plan: ${"step ".repeat(400)}`;
const SUMMARY = "The user laid out a long plan of steps; nothing is done yet.";

async function start(script: FakeReply[], capabilities?: object) {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({
    ...(capabilities ? { capabilities: capabilities as never } : {}),
    env: {
      TOOLHOST_MODEL: "openai-compatible/fake",
      TOOLHOST_BASE_URL: t.fake.url,
      TOOLHOST_HOME: t.home,
      TOOLHOST_CONTEXT_WINDOW: "2000",
    },
  });
  await t.h.initialize();
  return { h: t.h, sessionId: await t.h.newSession(t.ws) };
}

/** The request that asked for the summary. */
const isSummaryRequest = (body: FakeBody) => JSON.stringify(body.messages?.at(-1)).includes("Summarize the conversation above");

/** The user messages a request sent, as text. */
const userTexts = (body: FakeBody) =>
  (body.messages ?? [])
    .filter((m) => m.role === "user")
    .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)));

describe("compaction", () => {
  it("summarizes the older turns when the context passes 85% of the window, and the turn carries on", async () => {
    const { h, sessionId } = await start(
      [{ text: "Noted.", usage: { prompt_tokens: 1900, completion_tokens: 5 } }, { text: SUMMARY }, { text: "Starting with step one." }],
      { session: { compaction: {} } },
    );
    await prompt(h, sessionId, LONG_PROMPT);
    const response = await prompt(h, sessionId, "Go on");
    expect(response.stopReason).toBe("end_turn");

    const requests = t.fake!.requests.map((r) => r.body);
    expect(requests).toHaveLength(3);
    // The summary request is in the server's log: the older turn, then the instructions.
    expect(isSummaryRequest(requests[1]!)).toBe(true);
    expect(userTexts(requests[1]!)[0]).toContain("step step step");
    // The next request starts from the summary; the long prompt is gone, the recent turn is kept.
    const after = userTexts(requests[2]!);
    expect(after[0]).toContain(SUMMARY);
    expect(after.join("")).not.toContain("step step step");
    expect(after.at(-1)).toBe("Go on");
    expect(messageText(h, sessionId, "")).toContain("Starting with step one.");

    // The editor saw it as a compaction (it advertised session.compaction).
    const updates = h.updatesOf(sessionId, "compaction_update");
    expect(updates.map((u) => u.status)).toEqual(["in_progress", "completed"]);
    expect(updates[1]!.summary).toEqual([{ type: "text", text: SUMMARY }]);
    expect(updates[0]!.compactionId).toBe(updates[1]!.compactionId);
    // The summary streamed in as it was written, under the same id.
    const chunks = h.updatesOf(sessionId, "compaction_summary_chunk");
    expect(chunks.every((c) => c.compactionId === updates[0]!.compactionId)).toBe(true);
    expect(chunks.map((c) => (c.content.type === "text" ? c.content.text : "")).join("")).toBe(SUMMARY);
    expect(h.checker.seenUpdates).toContain("compaction_update");
  });

  it("tells a client without session.compaction with an agent message", async () => {
    const { h, sessionId } = await start([
      { text: "Noted.", usage: { prompt_tokens: 1900, completion_tokens: 5 } },
      { text: SUMMARY },
      { text: "Going on." },
    ]);
    await prompt(h, sessionId, LONG_PROMPT);
    await prompt(h, sessionId, "Go on");
    expect(h.updatesOf(sessionId, "compaction_update")).toEqual([]);
    expect(messageText(h, sessionId)).toMatch(/Compacted the conversation \(about \d+ → \d+ tokens\): older turns summarized/);
  });

  it("compacts and asks again when the provider says the context is too long", async () => {
    const { h, sessionId } = await start([
      { text: "Noted." },
      { status: 400, message: "This model's maximum context length is 2000 tokens. However, your messages resulted in 2400 tokens." },
      { text: SUMMARY },
      { text: "Recovered." },
    ]);
    await prompt(h, sessionId, MEDIUM_PROMPT);
    const response = await prompt(h, sessionId, "Go on");
    expect(response.stopReason).toBe("end_turn");
    expect(isSummaryRequest(t.fake!.requests[2]!.body)).toBe(true);
    expect(userTexts(t.fake!.requests[3]!.body)[0]).toContain(SUMMARY);
    expect(messageText(h, sessionId, "")).toMatch(/Recovered\.$/);
  });

  it("/compact compacts on demand, and a resumed session starts from the compacted history", async () => {
    const { h, sessionId } = await start(
      [{ text: "Short answer." }, { text: "Short again." }, { text: SUMMARY }, { text: "Still here." }],
      {
        session: { compaction: {} },
      },
    );
    // An older turn longer than the summary: a summary that would not make the context smaller is not kept (below).
    await prompt(h, sessionId, MEDIUM_PROMPT);
    await prompt(h, sessionId, "A small question");
    await prompt(h, sessionId, "/compact");
    expect(isSummaryRequest(t.fake!.requests[2]!.body)).toBe(true);
    expect(h.updatesOf(sessionId, "compaction_update").map((u) => u.status)).toEqual(["in_progress", "completed"]);

    await closeAndCheck(t.h);
    t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake!.url, TOOLHOST_HOME: t.home } });
    await t.h.initialize();
    await t.h.agent.request("session/resume", { sessionId, cwd: t.ws });
    await prompt(t.h, sessionId, "And then?");
    const users = userTexts(t.fake!.requests.at(-1)!.body);
    expect(users[0]).toContain(SUMMARY);
    expect(users.at(-1)).toBe("And then?");
  });

  it("/compact whose summary would make the context larger keeps the original history and says so", async () => {
    const WORDY = `A summary: ${"and so on ".repeat(600)}`;
    const { h, sessionId } = await start([{ text: "Short answer." }, { text: WORDY }, { text: "Still here." }], {
      session: { compaction: {} },
    });
    await prompt(h, sessionId, "A small question");
    await prompt(h, sessionId, "/compact");
    expect(isSummaryRequest(t.fake!.requests[1]!.body)).toBe(true);
    const updates = h.updatesOf(sessionId, "compaction_update");
    expect(updates.map((u) => u.status)).toEqual(["in_progress", "failed"]);
    expect(JSON.stringify(updates[1])).toMatch(
      /would have made the context larger, not smaller \(about \d+ → \d+ tokens\), so the conversation is kept as it was/,
    );
    // The next request carries the original history, not the summary.
    await prompt(h, sessionId, "And then?");
    const users = userTexts(t.fake!.requests.at(-1)!.body);
    expect(users).toEqual(["A small question", "And then?"]);
  });
});
