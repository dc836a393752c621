import { mkdtempSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startFakeAnthropic, type FakeAnthropic } from "../fixtures/fake-anthropic.mjs";
import { tempDir } from "../helpers.js";
import { Harness, closeAndCheck } from "./harness.js";

// The real @ai-sdk/anthropic provider, configured as a user would (model id + key in
// ~/.toolhost/config.json), against a local server speaking the Messages API's SSE stream.
let fake: FakeAnthropic | undefined;
let h: Harness | undefined;
const dirs: string[] = [];

afterEach(async () => {
  await closeAndCheck(h);
  h = undefined;
  await fake?.close();
  fake = undefined;
  await Promise.all(dirs.splice(0).map((d) => fsp.rm(d, { recursive: true, force: true })));
});

describe("anthropic/ models", () => {
  it("stream text, call a tool and answer with the result, with the key from the config file", async () => {
    fake = await startFakeAnthropic([
      { text: "Let me look.", toolUse: { name: "grep", input: { pattern: "TODO" } } },
      { text: "There is one TODO, in src/a.ts." },
    ]);
    const home = mkdtempSync(path.join(os.tmpdir(), "toolhost-home-"));
    const ws = await tempDir({ "src/a.ts": "export const a = 1; // TODO: rename\n" });
    dirs.push(home, ws);
    await fsp.writeFile(
      path.join(home, "config.json"),
      JSON.stringify({ model: "anthropic/claude-sonnet-4-5", providers: { anthropic: { apiKey: "sk-ant-test", baseURL: fake.url } } }),
    );
    h = new Harness({ env: { TOOLHOST_HOME: home } });
    await h.initialize();
    const sessionId = await h.newSession(ws);
    const response = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "find the TODOs" }] });
    expect(response.stopReason).toBe("end_turn");

    expect(fake.requests).toHaveLength(2);
    expect(fake.requests[0]!.url).toBe("/v1/messages");
    expect(fake.requests[0]!.headers["x-api-key"]).toBe("sk-ant-test");
    expect(fake.requests[0]!.body.model).toBe("claude-sonnet-4-5");
    expect(fake.requests[0]!.body.tools?.map((t) => t.name)).toContain("grep");
    // The tool result goes back to the model as a tool_result block.
    const toolResult = (fake.requests[1]!.body.messages as { content: { type: string; content?: string }[] }[])
      .flatMap((m) => m.content)
      .find((c) => c.type === "tool_result")!;
    expect(toolResult.content).toContain('{"path":"src/a.ts","line":1,"text":"export const a = 1; // TODO: rename"}');

    const text = h
      .updatesOf(sessionId, "agent_message_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""))
      .join("");
    expect(text).toBe("Let me look.There is one TODO, in src/a.ts.");
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(call).toMatchObject({ name: "grep", kind: "search" });
    const done = h
      .updatesOf(sessionId, "tool_call_update")
      .filter((u) => u.toolCallId === call.toolCallId)
      .at(-1)!;
    expect(done.status).toBe("completed");
    expect(h.updatesOf(sessionId, "usage_update").length).toBeGreaterThan(0);
  });
});
