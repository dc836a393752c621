import * as fsp from "node:fs/promises";
import path from "node:path";
import type { SessionUpdate } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, selected, type HarnessOptions, useAcpTest, prompt, messageText } from "./harness.js";

// The agent over real stdio, its model a local OpenAI-compatible server streaming scripted SSE.

const t = useAcpTest({
  "src/a.ts": "export const a = 1; // TODO: rename\n",
  "AGENTS.md": "Always answer in one sentence.\n",
});

async function start(script: FakeReply[], options: HarnessOptions = {}, model = "openai-compatible/fake") {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({ ...options, env: { TOOLHOST_MODEL: model, TOOLHOST_BASE_URL: t.fake.url, ...options.env } });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  return { h: t.h, fake: t.fake, sessionId };
}

/** The agent's side of the wire, compactly: updates by kind (consecutive chunks merged) and requests. */
function trace(h: Harness): string[] {
  const out: string[] = [];
  for (const m of h.checker.messages) {
    if (m.direction !== "agent->client") continue;
    const method = m.json.method;
    let tag: string | undefined;
    if (method === "session/request_permission") tag = "permission";
    if (method === "session/update") {
      const u = (m.json.params as { update: SessionUpdate }).update;
      switch (u.sessionUpdate) {
        case "agent_message_chunk":
          tag = "text";
          break;
        case "agent_thought_chunk":
          tag = "thought";
          break;
        case "tool_call":
          tag = `tool_call ${u.kind} ${u.status}`;
          break;
        case "tool_call_update":
          tag = u.status ? `update ${u.status}` : u.content?.some((c) => c.type === "diff") ? "update diff" : "update";
          break;
        case "usage_update":
          tag = "usage";
          break;
      }
    }
    if (tag && out[out.length - 1] !== tag) out.push(tag);
  }
  return out;
}

describe("a prompt answered by a model", () => {
  it("streams thoughts and text, runs grep, read and an approved edit, and reports usage", async () => {
    const { h, fake, sessionId } = await start(
      [
        {
          reasoning: "The user wants the TODO handled.",
          text: ["Let me ", "find the TODO."],
          toolCalls: [{ id: "call_grep", name: "grep", arguments: { pattern: "TODO" } }],
          usage: { prompt_tokens: 1000, completion_tokens: 20 },
        },
        {
          toolCalls: [{ id: "call_read", name: "read", arguments: { path: "src/a.ts" } }],
          usage: { prompt_tokens: 1100, completion_tokens: 10 },
        },
        {
          text: "Renaming it.",
          toolCalls: [{ id: "call_edit", name: "edit", arguments: { path: "src/a.ts", old_string: "= 1", new_string: "= 42" } }],
          usage: { prompt_tokens: 1200, completion_tokens: 30 },
        },
        { text: ["Done: ", "`a` is now 42."], usage: { prompt_tokens: 1300, completion_tokens: 8 } },
      ],
      // A client of ACP's unstable schema (it advertises session.compaction), whose PromptResponse has usage.
      { permission: () => selected("allow_once"), capabilities: { session: { compaction: {} } } },
    );
    const response = await prompt(h, sessionId, "Rename the TODO value to 42");
    expect(response.stopReason).toBe("end_turn");
    // The turn's totals as ACP's (unstable) PromptResponse.usage: the four requests' counts summed.
    expect((response as { usage?: unknown }).usage).toEqual({
      inputTokens: 4600,
      outputTokens: 68,
      totalTokens: 4668,
      cachedReadTokens: 0,
      cachedWriteTokens: 0,
    });

    expect(trace(h).slice(trace(h).indexOf("thought"))).toEqual([
      "thought",
      "text",
      "tool_call search pending",
      "usage",
      "update",
      "update in_progress",
      "update completed",
      "tool_call read pending",
      "usage",
      "update",
      "update in_progress",
      "update completed",
      "text",
      "tool_call edit pending",
      "usage",
      "update",
      // The approval carries the diff; the call shows it once allowed.
      "permission",
      "update diff",
      "update in_progress",
      "update completed",
      "text",
      "usage",
    ]);
    expect(messageText(h, sessionId, "")).toBe("Let me find the TODO.Renaming it.Done: `a` is now 42.");
    expect(h.updatesOf(sessionId, "agent_thought_chunk")[0]!.content).toEqual({ type: "text", text: "The user wants the TODO handled." });

    const calls = h.updatesOf(sessionId, "tool_call");
    expect(calls.map((c) => [c.name, c.kind])).toEqual([
      ["grep", "search"],
      ["read", "read"],
      ["edit", "edit"],
    ]);
    const titles = h
      .updatesOf(sessionId, "tool_call_update")
      .filter((u) => u.title)
      .map((u) => u.title);
    expect(titles).toEqual([
      expect.stringMatching(/grep "TODO"/),
      expect.stringMatching(/Read src\/a\.ts/),
      expect.stringMatching(/src\/a\.ts/),
    ]);
    const file = path.join(t.ws, "src/a.ts");
    const diff = {
      type: "diff",
      path: file,
      oldText: "export const a = 1; // TODO: rename\n",
      newText: "export const a = 42; // TODO: rename\n",
    };
    expect(h.permissionRequests).toHaveLength(1);
    const why = { type: "content", content: { type: "text", text: "Why it asks: no rule matched; ask mode asks before changing files." } };
    expect(h.permissionRequests[0]!.toolCall).toMatchObject({ toolCallId: calls[2]!.toolCallId, content: [diff, why] });
    const editUpdates = h.updatesOf(sessionId, "tool_call_update").filter((u) => u.toolCallId === calls[2]!.toolCallId);
    // The diff is shown once; the completed update leaves that content as it is.
    expect(editUpdates.filter((u) => u.content?.length).map((u) => u.content)).toEqual([[diff]]);
    expect(editUpdates.at(-1)).toMatchObject({ status: "completed" });
    expect(editUpdates.at(-1)!.content).toBeUndefined();
    expect(await fsp.readFile(file, "utf8")).toBe("export const a = 42; // TODO: rename\n");

    expect(h.updatesOf(sessionId, "usage_update").map((u) => [u.used, u.size, u.cost])).toEqual([
      [1020, 128_000, undefined],
      [1110, 128_000, undefined],
      [1230, 128_000, undefined],
      [1308, 128_000, undefined],
    ]);

    // What the model was sent: system prompt, tools, and each result as compact text.
    expect(fake.requests).toHaveLength(4);
    const first = fake.requests[0]!.body;
    expect(first.model).toBe("fake");
    expect(first.messages?.[0]).toMatchObject({ role: "system" });
    expect(first.messages?.[0]!.content).toContain(`Working directory: ${t.ws}`);
    expect(first.messages?.[0]!.content).toContain("# Project instructions (AGENTS.md)\n\nAlways answer in one sentence.");
    expect(first.tools?.map((t) => t.function.name)).toEqual(expect.arrayContaining(["read", "grep", "edit", "bash"]));
    const grepResult = fake.requests[1]!.body.messages!.find((m) => m.role === "tool" && m.tool_call_id === "call_grep");
    expect(String(grepResult!.content)).toContain('matches:\n{"path":"src/a.ts","line":1,');
    const editResult = fake.requests[3]!.body.messages!.find((m) => m.role === "tool" && m.tool_call_id === "call_edit");
    expect(String(editResult!.content)).toMatch(/^replacements: 1$/m);
    expect(String(editResult!.content)).toMatch(/^first_changed_line: 1$/m);
  });

  it("a cancel in the middle of a streamed answer stops the stream and answers cancelled once", async () => {
    const words = Array.from({ length: 200 }, (_, i) => `word${i} `);
    const { h, fake, sessionId } = await start([{ text: words, chunkDelayMs: 25 }]);
    const turn = prompt(h, sessionId, "Tell me a long story");
    await h.waitFor(() => h.updatesOf(sessionId, "agent_message_chunk").length >= 3);
    await h.agent.notify("session/cancel", { sessionId });
    expect((await turn).stopReason).toBe("cancelled");
    await h.waitFor(() => fake.requests[0]!.aborted);
    const answers = h.checker.messages.filter(
      (m) => m.direction === "agent->client" && (m.json.result as { stopReason?: string } | undefined)?.stopReason,
    );
    expect(answers).toHaveLength(1);
    expect(h.updatesOf(sessionId, "agent_message_chunk").length).toBeLessThan(words.length);

    // The session goes on, and the model sees what it had said before the cancel.
    fake.push({ text: "Short version: the end." });
    expect((await prompt(h, sessionId, "Shorter please")).stopReason).toBe("end_turn");
    const roles = fake.requests[1]!.body.messages!.map((m) => m.role);
    expect(roles).toEqual(["system", "user", "assistant", "user"]);
    expect(String(fake.requests[1]!.body.messages![2]!.content)).toMatch(/^word0 word1 word2 /);
  });

  it("a client of the stable schema gets a PromptResponse with no key that schema lacks (no usage)", async () => {
    const { h, sessionId } = await start([{ text: "Hi.", usage: { prompt_tokens: 10, completion_tokens: 2 } }]);
    const response = await prompt(h, sessionId, "hello");
    expect(Object.keys(response)).toEqual(["stopReason"]);
  });

  it("retries a 500 and then answers", async () => {
    const { h, fake, sessionId } = await start([{ status: 500, message: "upstream exploded" }, { text: "Recovered." }]);
    expect((await prompt(h, sessionId, "hi")).stopReason).toBe("end_turn");
    expect(fake.requests).toHaveLength(2);
    expect(messageText(h, sessionId, "")).toBe("Recovered.");
  });

  it("a 401 becomes an agent message that says to check the key; the key never shows", async () => {
    const key = "sk-test-secret-4f9a";
    const { h, fake, sessionId } = await start([{ status: 401, message: "Incorrect API key provided" }], {
      env: { TOOLHOST_API_KEY: key },
    });
    expect((await prompt(h, sessionId, "hi")).stopReason).toBe("end_turn");
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
    expect(messageText(h, sessionId, "")).toMatch(
      /refused the request for openai-compatible\/fake \(401\): Incorrect API key provided\nCheck the key: TOOLHOST_API_KEY/,
    );
    expect(h.checker.messages.some((m) => m.direction === "agent->client" && m.raw.includes(key))).toBe(false);
    expect(h.stderr.join("")).not.toContain(key);
    // The agent is still there.
    expect((await prompt(h, sessionId, "/tools")).stopReason).toBe("end_turn");
  });

  it("maps the length stop to max_tokens and a content filter to refusal", async () => {
    const { h, sessionId } = await start([
      { text: "This answer is cut", finish: "length" },
      { text: "I can't", finish: "content_filter" },
    ]);
    expect((await prompt(h, sessionId, "long")).stopReason).toBe("max_tokens");
    expect((await prompt(h, sessionId, "bad")).stopReason).toBe("refusal");
  });

  it("offers the model as a config option and follows the session's choice", async () => {
    const { h, fake, sessionId } = await start([{ text: "from other" }]);
    const created = h.checker.messages.find((m) => m.direction === "agent->client" && (m.json.result as { sessionId?: string })?.sessionId);
    const options = (created!.json.result as { configOptions: { id: string; category?: string; currentValue: string }[] }).configOptions;
    expect(options.map((o) => [o.id, o.category, o.currentValue])).toEqual([
      ["mode", "mode", "ask"],
      ["model", "model", "openai-compatible/fake"],
      ["profile", undefined, "default"],
    ]);
    const set = await h.agent.request("session/set_config_option", { sessionId, configId: "model", value: "openai-compatible/other" });
    expect(set.configOptions.find((o) => o.id === "model")).toMatchObject({ currentValue: "openai-compatible/other" });
    await expect(h.agent.request("session/set_config_option", { sessionId, configId: "model", value: "no-slash" })).rejects.toMatchObject({
      code: -32602,
    });
    await prompt(h, sessionId, "hi");
    expect(fake.requests[0]!.body.model).toBe("other");
  });

  it("passes prompt images to a vision model and embedded resources as context", async () => {
    const { h, fake, sessionId } = await start([{ text: "A red pixel." }], {}, "openai-compatible/llava");
    await h.agent.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "What is this?" },
        { type: "image", data: Buffer.from("png").toString("base64"), mimeType: "image/png" },
        { type: "resource", resource: { uri: `file://${t.ws}/notes.md`, text: "the notes", mimeType: "text/markdown" } },
      ],
    });
    const user = fake.requests[0]!.body.messages!.find((m) => m.role === "user")!;
    expect(user.content).toEqual([
      { type: "text", text: "What is this?" },
      { type: "image_url", image_url: { url: `data:image/png;base64,${Buffer.from("png").toString("base64")}` } },
      { type: "text", text: `<context uri="file://${t.ws}/notes.md" type="text/markdown">\nthe notes\n</context>` },
    ]);
  });
});
