import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeAnthropic, type AnthropicTurn, type FakeAnthropic } from "../fixtures/fake-anthropic.mjs";
import { Harness, useAcpTest } from "./harness.js";

// The real @ai-sdk/anthropic provider, configured as a user would (model id + key in
// ~/.toolhost/config.json), against a local server speaking the Messages API's SSE stream.
const t = useAcpTest();

/**
 * A session of the agent on anthropic/claude-sonnet-4-5, whose key and endpoint (the local server
 * playing `turns`) are in the user's config file, as a user would set them.
 */
async function start(
  turns: AnthropicTurn[],
  files: Record<string, string>,
): Promise<{ h: Harness; fake: FakeAnthropic; sessionId: string }> {
  const fake = t.serve(await startFakeAnthropic(turns));
  const ws = await t.dir(files);
  await fsp.writeFile(
    path.join(t.home, "config.json"),
    JSON.stringify({ model: "anthropic/claude-sonnet-4-5", providers: { anthropic: { apiKey: "sk-ant-test", baseURL: fake.url } } }),
  );
  t.h = new Harness({ env: { TOOLHOST_HOME: t.home } });
  await t.h.initialize();
  return { h: t.h, fake, sessionId: await t.h.newSession(ws) };
}

describe("anthropic/ models", () => {
  it("stream text, call a tool and answer with the result, with the key from the config file", async () => {
    const { h, fake, sessionId } = await start(
      [{ text: "Let me look.", toolUse: { name: "grep", input: { pattern: "TODO" } } }, { text: "There is one TODO, in src/a.ts." }],
      { "src/a.ts": "export const a = 1; // TODO: rename\n" },
    );
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

  it("marks the prompt cache's breakpoints, so each request reads what the one before wrote, and reports the cached tokens", async () => {
    const { h, fake, sessionId } = await start(
      [{ toolUse: { name: "grep", input: { pattern: "TODO" } } }, { text: "One TODO." }, { text: "Still one." }],
      { "src/a.ts": "export const a = 1; // TODO: rename\n" },
    );
    for (const text of ["find the TODOs", "and now?"]) {
      await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
    }
    const [first, second, third] = fake.requests;
    // Breakpoints: the last tool, the system prompt, the last two messages (four, Anthropic's most).
    const body = first!.body as unknown as { tools: { cache_control?: unknown }[]; system: { cache_control?: unknown }[] };
    expect(body.tools.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
    expect(body.tools.slice(0, -1).every((t) => t.cache_control === undefined)).toBe(true);
    expect(body.system.at(-1)!.cache_control).toEqual({ type: "ephemeral" });
    // The first request writes the cache; the later ones read all of the earlier prefix from it.
    expect(first!.usage.cache_read_input_tokens).toBe(0);
    expect(first!.usage.cache_creation_input_tokens).toBeGreaterThan(1000);
    for (const later of [second!, third!]) {
      expect(later.usage.cache_read_input_tokens).toBeGreaterThanOrEqual(first!.usage.cache_creation_input_tokens);
      expect(later.usage.input_tokens).toBeLessThan(50);
    }
    // The editor sees the cached tokens (in _meta: ACP's usage has no field for them).
    const usage = h.updatesOf(sessionId, "usage_update").at(-1) as { _meta?: { toolhost?: { cachedInputTokens?: number } } };
    expect(usage._meta?.toolhost?.cachedInputTokens).toBe(third!.usage.cache_read_input_tokens);
  });

  it("offers thought_level for a model that thinks; high asks for a 32k thinking budget, and the thinking streams as thought", async () => {
    const { h, fake, sessionId } = await start([{ thinking: "Look for TODO comments first.", text: "None here." }], { "a.txt": "a\n" });
    await h.waitFor(() => h!.updatesOf(sessionId, "config_option_update").length > 0);
    const offered = h
      .updatesOf(sessionId, "config_option_update")
      .at(-1)!
      .configOptions.find((o) => o.id === "thought_level");
    expect(offered).toMatchObject({ category: "thought_level", currentValue: "default" });
    const set = await h.agent.request("session/set_config_option", { sessionId, configId: "thought_level", value: "high" });
    expect(set.configOptions.find((o) => o.id === "thought_level")?.currentValue).toBe("high");
    await expect(
      h.agent.request("session/set_config_option", { sessionId, configId: "thought_level", value: "extreme" }),
    ).rejects.toMatchObject({ code: -32602 });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "any TODOs?" }] });
    expect(fake.requests[0]!.body.thinking).toEqual({ type: "enabled", budget_tokens: 32000 });
    const thought = h
      .updatesOf(sessionId, "agent_thought_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""))
      .join("");
    expect(thought).toBe("Look for TODO comments first.");
    // A model that cannot be told how hard to think is not offered the option.
    await h.agent.request("session/set_config_option", { sessionId, configId: "model", value: "openai-compatible/local" });
    const after = await h.agent.request("session/set_config_option", { sessionId, configId: "mode", value: "ask" });
    expect(after.configOptions.map((o) => o.id)).not.toContain("thought_level");
  });
});
