import * as fsp from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { modelOptionState, noModelHelp, parseModelId, resolveModel } from "../../src/agent/model/model-config.js";
import { peekUserConfig } from "../../src/config/file.js";
import { DEFAULT_CONTEXT_WINDOW, modelInfo, stepCost } from "../../src/agent/model/models.js";
import { classifyProviderError, keyHint, providerErrorMessage } from "../../src/agent/model/provider-errors.js";
import { createLanguageModel, ModelSetupError, ollamaBaseURL } from "../../src/agent/model/providers.js";
import { buildSystemPrompt, DEFAULT_PROMPT } from "../../src/agent/turn/system-prompt.js";
import { promptContent } from "../../src/acp/prompt.js";
import { tempDir } from "../helpers.js";

let home: string;

beforeEach(async () => {
  home = await tempDir();
});

afterEach(() => fsp.rm(home, { recursive: true, force: true }));

const spec = (id: string) => {
  const parsed = parseModelId(id);
  if ("error" in parsed) throw new Error(parsed.error);
  return parsed;
};

describe("model ids and where they come from", () => {
  it("splits provider/model at the first slash", () => {
    expect(parseModelId("openai-compatible/meta-llama/Llama-3.3-70B")).toEqual({
      id: "openai-compatible/meta-llama/Llama-3.3-70B",
      provider: "openai-compatible",
      model: "meta-llama/Llama-3.3-70B",
    });
    expect(parseModelId("gpt-5")).toMatchObject({ error: expect.stringMatching(/provider\/model/) });
    expect(parseModelId("anthropic/")).toHaveProperty("error");
  });

  it("prefers the session's choice, then TOOLHOST_MODEL, then the config file", async () => {
    await fsp.writeFile(
      path.join(home, "config.json"),
      JSON.stringify({ model: "ollama/qwen3", providers: { anthropic: { apiKey: "k" } } }),
    );
    const peek = peekUserConfig(home);
    expect(peek).toMatchObject({ model: "ollama/qwen3", keyed: ["anthropic"] });
    expect(resolveModel(undefined, {}, peek)).toMatchObject({ source: "config", spec: { id: "ollama/qwen3" } });
    expect(resolveModel(undefined, { TOOLHOST_MODEL: "openai/gpt-5" }, peek)).toMatchObject({
      source: "env",
      spec: { provider: "openai" },
    });
    expect(resolveModel("anthropic/claude-sonnet-4-5", { TOOLHOST_MODEL: "openai/gpt-5" }, peek)).toMatchObject({ source: "session" });
    expect(resolveModel(undefined, {}, peekUserConfig(path.join(home, "missing")))).toBeUndefined();
    expect(resolveModel(undefined, { TOOLHOST_MODEL: "nonsense" }, peek)).toHaveProperty("error");
  });

  it("offers the current and configured models plus well-known ones of keyed providers", () => {
    const none = peekUserConfig(path.join(home, "missing"));
    expect(modelOptionState(undefined, {}, none)).toEqual({ current: "none", values: ["none"] });
    const state = modelOptionState("ollama/llama3.2", { TOOLHOST_MODEL: "openai/gpt-5-mini", OPENAI_API_KEY: "sk" }, none);
    expect(state.current).toBe("ollama/llama3.2");
    expect(state.values.slice(0, 2)).toEqual(["ollama/llama3.2", "openai/gpt-5-mini"]);
    expect(state.values).toContain("openai/gpt-5");
    expect(state.values.some((v) => v.startsWith("anthropic/"))).toBe(false);
  });

  it("says exactly how to configure a model, and reports a broken config file", async () => {
    await fsp.writeFile(path.join(home, "config.json"), "{ not json");
    const text = noModelHelp(peekUserConfig(home));
    expect(text).toMatch(/TOOLHOST_MODEL=anthropic\/claude-sonnet-4-5` with `ANTHROPIC_API_KEY/);
    expect(text).toMatch(/TOOLHOST_BASE_URL/);
    expect(text).toContain(path.join(home, "config.json"));
    expect(text).toMatch(/is not valid JSON/);
    expect(text).toMatch(/Slash commands run tools directly/);
  });
});

describe("providers", () => {
  it("builds each provider's model, keys from env first", async () => {
    const config = { providers: { anthropic: { apiKey: "from-file" } } };
    expect(await createLanguageModel(spec("anthropic/claude-sonnet-4-5"), config, "cfg")).toMatchObject({
      provider: "anthropic.messages",
      modelId: "claude-sonnet-4-5",
    });
    expect(await createLanguageModel(spec("openai/gpt-5"), {}, "cfg", { OPENAI_API_KEY: "sk" })).toMatchObject({ modelId: "gpt-5" });
    expect(await createLanguageModel(spec("ollama/qwen3"), {}, "cfg", {})).toMatchObject({ provider: "ollama.chat", modelId: "qwen3" });
    const compatible = await createLanguageModel(spec("openai-compatible/m"), {}, "cfg", { TOOLHOST_BASE_URL: "http://127.0.0.1:9/v1" });
    expect(compatible).toMatchObject({ provider: "openai-compatible.chat", modelId: "m" });
    const custom = await createLanguageModel(
      spec("openrouter/x/y"),
      { providers: { openrouter: { baseURL: "https://openrouter.ai/api/v1", apiKey: "k" } } },
      "cfg",
      {},
    );
    expect(custom).toMatchObject({ provider: "openrouter.chat", modelId: "x/y" });
  });

  it("says what is missing instead of failing later", async () => {
    const fail = async (id: string, env = {}) => {
      try {
        await createLanguageModel(spec(id), {}, "/home/u/.toolhost/config.json", env);
      } catch (err) {
        expect(err).toBeInstanceOf(ModelSetupError);
        return (err as Error).message;
      }
      throw new Error("expected a setup error");
    };
    expect(await fail("anthropic/claude-sonnet-4-5")).toMatch(
      /needs an API key: set ANTHROPIC_API_KEY .* in \/home\/u\/\.toolhost\/config\.json/,
    );
    expect(await fail("openai/gpt-5")).toMatch(/OPENAI_API_KEY/);
    expect(await fail("openai-compatible/m")).toMatch(/TOOLHOST_BASE_URL/);
    expect(await fail("mystery/m")).toMatch(/Unknown provider "mystery"/);
  });

  it("reads OLLAMA_HOST the ways Ollama users write it", () => {
    expect(ollamaBaseURL(undefined)).toBe("http://localhost:11434/v1");
    expect(ollamaBaseURL("0.0.0.0:11434")).toBe("http://localhost:11434/v1");
    expect(ollamaBaseURL("http://gpu-box:11434")).toBe("http://gpu-box:11434/v1");
    expect(ollamaBaseURL("https://ollama.example/v1/")).toBe("https://ollama.example/v1");
  });
});

describe("model facts", () => {
  it("knows windows, prices and image support of well-known models, with defaults for the rest", () => {
    expect(modelInfo(spec("anthropic/claude-sonnet-4-5-20250929"))).toEqual({
      contextWindow: 200_000,
      price: { input: 3, output: 15, cachedInput: 0.3 },
      images: true,
    });
    expect(modelInfo(spec("openai/gpt-4.1-mini"))).toMatchObject({ contextWindow: 1_047_576, price: { input: 0.4 } });
    expect(modelInfo(spec("openai/gpt-9"))).toEqual({ contextWindow: DEFAULT_CONTEXT_WINDOW, price: undefined, images: true });
    expect(modelInfo(spec("ollama/qwen3:8b"))).toEqual({ contextWindow: DEFAULT_CONTEXT_WINDOW, price: undefined, images: false });
    expect(modelInfo(spec("ollama/llava:13b")).images).toBe(true);
    expect(modelInfo(spec("openai-compatible/Qwen/Qwen2.5-VL-7B")).images).toBe(true);
  });

  it("prices cached input at the cached rate", () => {
    const info = modelInfo(spec("openai/gpt-5"));
    expect(stepCost(info, { input: 1_000_000, cachedInput: 0, output: 0 })).toBeCloseTo(1.25);
    expect(stepCost(info, { input: 1_000_000, cachedInput: 1_000_000, output: 1_000_000 })).toBeCloseTo(10.125);
    expect(stepCost(modelInfo(spec("ollama/qwen3")), { input: 1, cachedInput: 0, output: 1 })).toBeUndefined();
    // Anthropic: tokens written to the cache cost 1.25× the input price ($3/M for Sonnet 4.5), read ones $0.30/M.
    const sonnet = modelInfo(spec("anthropic/claude-sonnet-4-5"));
    expect(stepCost(sonnet, { input: 1_000_000, cachedInput: 0, cacheWrite: 1_000_000, output: 0 })).toBeCloseTo(3.75);
    expect(stepCost(sonnet, { input: 2_000_000, cachedInput: 1_000_000, cacheWrite: 500_000, output: 0 })).toBeCloseTo(0.3 + 1.875 + 1.5);
  });

  it("takes the window of a model it does not know from TOOLHOST_CONTEXT_WINDOW", () => {
    expect(modelInfo(spec("openai-compatible/local"), { TOOLHOST_CONTEXT_WINDOW: "32768" }).contextWindow).toBe(32768);
    expect(modelInfo(spec("openai-compatible/local"), { TOOLHOST_CONTEXT_WINDOW: "lots" }).contextWindow).toBe(DEFAULT_CONTEXT_WINDOW);
  });
});

describe("provider errors", () => {
  const error = (statusCode: number | undefined, message: string, extra: Record<string, unknown> = {}) => ({
    name: "AI_APICallError",
    statusCode,
    message,
    isRetryable: false,
    ...extra,
  });

  it("retries 429, 5xx and network failures, honouring retry-after", () => {
    expect(classifyProviderError(error(429, "slow down", { responseHeaders: { "retry-after": "2" } }))).toMatchObject({
      retryable: true,
      retryAfterMs: 2000,
    });
    expect(classifyProviderError(error(503, "busy", { responseHeaders: { "retry-after-ms": "150" } }))).toMatchObject({
      retryable: true,
      retryAfterMs: 150,
    });
    expect(classifyProviderError(error(undefined, "Cannot connect to API: ECONNREFUSED", { isRetryable: true }))).toMatchObject({
      retryable: true,
    });
    expect(classifyProviderError(error(400, "bad request"))).toMatchObject({ retryable: false, status: 400 });
    expect(classifyProviderError(new Error("plain"))).toMatchObject({ retryable: false, message: "plain" });
  });

  it("says a model's answer that broke off mid-body was cut, not that a 200 failed", async () => {
    // A real local server answers 200 and closes the socket half-way through the body.
    const server = http.createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-length": "400" });
      res.write('{"id":"r1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assist');
      setImmediate(() => res.socket?.destroy());
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const model = createOpenAI({ apiKey: "sk", baseURL: `http://127.0.0.1:${port}/v1` }).chat("gpt-5");
      const err: unknown = await generateText({ model, prompt: "hi", maxRetries: 0 }).then(
        () => undefined,
        (e: unknown) => e,
      );
      const failure = classifyProviderError(err);
      expect(failure).toMatchObject({ streamCut: true, retryable: true });
      const text = providerErrorMessage(failure, { modelId: "openai/gpt-5", keyHint: "", attempts: 1 });
      expect(text).toMatch(/^The model's stream for openai\/gpt-5 was cut: the connection closed mid-answer \(.+\)/);
      expect(text).not.toMatch(/Failed to process successful response/);
    } finally {
      server.close();
    }
  });

  it("tells the user what to do", () => {
    const ctx = { modelId: "openai/gpt-5", keyHint: keyHint("openai", "/cfg.json"), attempts: 1 };
    expect(providerErrorMessage(classifyProviderError(error(401, "Incorrect API key")), ctx)).toBe(
      "The model provider refused the request for openai/gpt-5 (401): Incorrect API key\nCheck the key: OPENAI_API_KEY (or providers.openai.apiKey in /cfg.json), or run `toolhost login` to store another (a key set in the environment wins over it).",
    );
    expect(providerErrorMessage(classifyProviderError(error(404, "no such model")), ctx)).toMatch(/Check the model id/);
    expect(providerErrorMessage(classifyProviderError(error(500, "oops")), { ...ctx, attempts: 4 })).toMatch(
      /\(500\) \(tried 4 times\): oops/,
    );
  });
});

describe("system prompt", () => {
  it("has the default prompt, the environment and AGENTS.md before CLAUDE.md", async () => {
    const ws = await tempDir({ "AGENTS.md": "Use tabs.\n", "CLAUDE.md": "Use spaces.\n", ".git/HEAD": "ref: refs/heads/main\n" });
    try {
      const prompt = await buildSystemPrompt({ cwd: ws, platform: "linux", date: new Date("2025-06-01T12:00:00Z") });
      expect(prompt.startsWith(DEFAULT_PROMPT)).toBe(true);
      expect(prompt).toContain(`- Working directory: ${ws}`);
      expect(prompt).toContain("- Platform: linux\n- Date: 2025-06-01\n- Git repository: yes");
      expect(prompt).toContain("# Project instructions (AGENTS.md)\n\nUse tabs.");
      expect(prompt).not.toContain("Use spaces.");
      await fsp.rm(path.join(ws, "AGENTS.md"));
      await fsp.rm(path.join(ws, ".git"), { recursive: true });
      const fallback = await buildSystemPrompt({ cwd: ws, profilePrompt: "You review code." });
      expect(fallback.startsWith("You review code.")).toBe(true);
      expect(fallback).toContain("# Project instructions (CLAUDE.md)");
    } finally {
      await fsp.rm(ws, { recursive: true, force: true });
    }
  });
});

describe("prompt content", () => {
  const blocks = [
    { type: "text" as const, text: "Look at this" },
    { type: "image" as const, data: "aGVsbG8=", mimeType: "image/png" },
    { type: "resource_link" as const, uri: "file:///ws/b.ts", name: "b.ts" },
    { type: "resource" as const, resource: { uri: "file:///ws/notes.md", text: "notes", mimeType: "text/markdown" } },
  ];

  it("passes images to models that take them and resources as text context", () => {
    expect(promptContent(blocks, { images: true, modelId: "anthropic/claude-sonnet-4-5" })).toEqual([
      { type: "text", text: "Look at this" },
      { type: "image", image: "aGVsbG8=", mediaType: "image/png" },
      { type: "text", text: "[Referenced: b.ts — file:///ws/b.ts]" },
      { type: "text", text: '<context uri="file:///ws/notes.md" type="text/markdown">\nnotes\n</context>' },
    ]);
  });

  it("says an image was left out for a model without vision", () => {
    const parts = promptContent(blocks, { images: false, modelId: "ollama/qwen3" });
    expect(parts[1]).toEqual({ type: "text", text: "[Image omitted: ollama/qwen3 does not take images]" });
  });
});
