import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { closeAndCheck, Harness, messageText, useAcpTest } from "./harness.js";

// Issue 21 item 19: one 25 MB write made a 105 MB session file (the content stored four times:
// the history's tool call, tool_start, the view of the call and its diff).

const t = useAcpTest({});

describe("the session record of a huge write", () => {
  it("one 25 MB write keeps the session file under 1 MB, and the session still loads and continues", async () => {
    const line = "0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm\n";
    const content = line.repeat(Math.ceil((25 * 1024 * 1024) / line.length));
    t.fake = await startFakeOpenAI({
      script: [
        { toolCalls: [{ id: "w1", name: "write", arguments: { path: "big.txt", content } }] },
        { text: "Written." },
        { text: "Still here." },
      ],
    });
    const env = { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home };
    t.h = new Harness({ env });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    await t.h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Write big.txt" }] });
    expect((await fsp.stat(path.join(t.ws, "big.txt"))).size).toBe(content.length);
    await t.h.agent.request("session/close", { sessionId });
    await closeAndCheck(t.h);

    const file = (await new SessionStore(t.home).find(sessionId))!;
    expect((await fsp.stat(file)).size).toBeLessThan(1024 * 1024);
    const text = await fsp.readFile(file, "utf8");
    expect(text).toContain(`the session record keeps the first 16384 of ${content.length} characters`);

    t.h = new Harness({ env });
    await t.h.initialize();
    await t.h.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    const replayed = t.h.updatesOf(sessionId, "tool_call_update").filter((u) => u.toolCallId);
    expect(replayed.at(-1)).toMatchObject({ status: "completed" });
    await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "And?" }] });
    expect(messageText(t.h, sessionId, "")).toMatch(/Still here\.$/);
    // The restored history holds the call with its input cut, not 25 MB.
    const sent = JSON.stringify(t.fake.requests.at(-1)!.body.messages);
    expect(sent.length).toBeLessThan(1024 * 1024);
    expect(sent).toContain("the session record keeps the first");
  }, 120_000);
});
