import type { LanguageModelV3CallOptions, LanguageModelV3StreamPart } from "@ai-sdk/provider";
import { APICallError } from "ai";
import { MockLanguageModelV3, convertArrayToReadableStream } from "ai/test";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { History } from "../../src/agent/turn/history.js";
import { batches, resultText, runModelTurn } from "../../src/agent/turn/loop.js";
import { newMeter, type TurnBudget, type TurnObserver, type TurnOptions, type UsageReport } from "../../src/agent/turn/turn-types.js";
import { modelInfo } from "../../src/agent/model/models.js";
import type { Authorize } from "../../src/policy/call.js";
import { builtinRegistry } from "../../src/host/builtins.js";
import type { ToolRegistry } from "../../src/host/registry.js";
import { defineTool } from "../../src/tool/define.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { memoryWorkspace, type Workspace } from "../helpers.js";
import { LOCKED_TOOL_IDS } from "../../src/host/locked.js";

type Part = LanguageModelV3StreamPart;
type Reply = Part[] | Error | ((options: LanguageModelV3CallOptions) => ReadableStream<Part>);

const usage = (input = 100, output = 20) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: 0 },
});

const finish = (unified: "stop" | "length" | "content-filter" | "tool-calls", input = 100, output = 20): Part => ({
  type: "finish",
  finishReason: { unified, raw: unified },
  usage: usage(input, output),
});

const text = (...deltas: string[]): Part[] => [
  { type: "text-start", id: "t" },
  ...deltas.map((delta): Part => ({ type: "text-delta", id: "t", delta })),
  { type: "text-end", id: "t" },
];

const call = (id: string, toolName: string, input: unknown): Part[] => {
  const json = typeof input === "string" ? input : JSON.stringify(input);
  return [
    { type: "tool-input-start", id, toolName },
    { type: "tool-input-delta", id, delta: json },
    { type: "tool-input-end", id },
    { type: "tool-call", toolCallId: id, toolName, input: json },
  ];
};

/** A mock model answering each request with the next scripted reply. */
function scripted(replies: Reply[]) {
  let next = 0;
  return new MockLanguageModelV3({
    doStream: async (options) => {
      const reply = replies[next++];
      if (reply === undefined) throw new Error("the script ran out");
      if (reply instanceof Error) throw reply;
      return { stream: typeof reply === "function" ? reply(options) : convertArrayToReadableStream(reply) };
    },
  });
}

const httpError = (statusCode: number, message = `HTTP ${statusCode}`) =>
  new APICallError({ message, url: "http://model.test/v1/chat/completions", requestBodyValues: {}, statusCode });

interface Recorded {
  log: string[];
  texts: string[];
  thoughts: string[];
  usages: UsageReport[];
  envelopes: Map<string, Envelope>;
}

function recorder(): TurnObserver & Recorded {
  const r: Recorded = { log: [], texts: [], thoughts: [], usages: [], envelopes: new Map() };
  return {
    ...r,
    text: (t) => void r.texts.push(t),
    thought: (t) => void r.thoughts.push(t),
    usage: (u) => void r.usages.push(u),
    pending: (info) => void r.log.push(`pending ${info.callId} ${info.title} ${info.args === undefined ? "streaming" : "complete"}`),
    describe: (info) => void r.log.push(`describe ${info.callId} ${info.title}`),
    event: (callId, e) => void r.log.push(`event ${callId} ${e.type}`),
    running: (callId) => void r.log.push(`running ${callId}`),
    done: (callId, envelope) => {
      r.envelopes.set(callId, envelope);
      r.log.push(`done ${callId} ${envelope.type === "error" ? envelope.metadata.error_code : "output"}`);
    },
  };
}

let ws: Workspace;
let controller: AbortController;
let seq: number;

beforeEach(async () => {
  ws = await memoryWorkspace({ "src/a.ts": "export const a = 1; // TODO\n" });
  controller = new AbortController();
  seq = 0;
});

afterEach(() => ws.cleanup());

const allow: Authorize = async () => ({ outcome: "allow" });

function options(model: MockLanguageModelV3, extra: Partial<TurnOptions> = {}, registry: ToolRegistry = builtinRegistry()): TurnOptions {
  return {
    model,
    modelId: "openai-compatible/mock",
    info: modelInfo({ id: "openai-compatible/mock", provider: "openai-compatible", model: "mock" }),
    system: "You are a test.",
    history: new History(),
    prompt: [{ type: "text", text: "hello" }],
    tools: { registry, session: ws.session, authorize: allow, signal: controller.signal },
    nextCallId: () => `call_${++seq}`,
    keyHint: "TOOLHOST_API_KEY",
    retry: { retries: 2, baseDelayMs: 1, maxDelayMs: 5 },
    ...extra,
  };
}

/** The text of every tool result the model was sent in a request. */
function toolResultsIn(request: LanguageModelV3CallOptions): string[] {
  return request.prompt.flatMap((m) =>
    m.role === "tool"
      ? m.content.flatMap((p) =>
          p.type === "tool-result" && (p.output.type === "text" || p.output.type === "error-text") ? [p.output.value] : [],
        )
      : [],
  );
}

describe("the model turn loop", () => {
  it("streams text and reasoning, reports usage, keeps the history", async () => {
    const model = scripted([
      [
        { type: "reasoning-start", id: "r" },
        { type: "reasoning-delta", id: "r", delta: "Thinking." },
        { type: "reasoning-end", id: "r" },
        ...text("Hel", "lo!"),
        finish("stop", 1200, 30),
      ],
    ]);
    const observer = recorder();
    const opts = options(model);
    const result = await runModelTurn(opts, observer);
    expect(result).toEqual({ stopReason: "end_turn" });
    expect(observer.texts).toEqual(["Hel", "lo!"]);
    expect(observer.thoughts).toEqual(["Thinking."]);
    expect(observer.usages).toEqual([{ used: 1230, size: 128_000 }]);
    expect(opts.history.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const request = model.doStreamCalls[0]!;
    expect(request.prompt[0]).toEqual({ role: "system", content: "You are a test." });
    // Every locked tool, in the RFC's order, then the builtin outside the locked set.
    expect(request.tools?.map((t) => t.name)).toEqual([...LOCKED_TOOL_IDS, "process", "lsp"]);
    expect(request.tools?.[0]).toMatchObject({
      type: "function",
      inputSchema: { type: "object", properties: { path: { type: "string" } } },
    });
  });

  it("announces a call once its arguments are complete, with the title they give, runs it through invoke, and sends the result back", async () => {
    const model = scripted([
      [...text("Let me read it."), ...call("m1", "read", { path: "src/a.ts" }), finish("tool-calls")],
      [...text("It exports a."), finish("stop")],
    ]);
    const observer = recorder();
    const opts = options(model);
    expect((await runModelTurn(opts, observer)).stopReason).toBe("end_turn");
    expect(observer.log).toEqual([
      "pending call_1 Read src/a.ts complete",
      "describe call_1 Read src/a.ts",
      "running call_1",
      "done call_1 output",
    ]);
    const [result] = toolResultsIn(model.doStreamCalls[1]!);
    expect(result).toContain("export const a = 1; // TODO");
    // Raw file content (never JSON-escaped) after the scalar fields.
    expect(result).toMatch(/^path: \/ws\/src\/a\.ts$/m);
    expect(result).toMatch(/^start_line: 1$/m);
    expect(result).toContain("content:\n1\texport const a = 1; // TODO");
    expect(opts.history.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
    expect(observer.usages).toHaveLength(2);
  });

  it("asks for approval of a mutating call and sends the refusal back as the call's error", async () => {
    const asked: string[] = [];
    const reject: Authorize = async (request) => {
      asked.push(request.tool.id);
      return { outcome: "deny", code: "rejected", reason: "The user rejected this edit call." };
    };
    const model = scripted([
      [...call("m1", "edit", { path: "src/a.ts", old_string: "= 1", new_string: "= 2" }), finish("tool-calls")],
      [...text("Understood."), finish("stop")],
    ]);
    const observer = recorder();
    const opts = options(model);
    opts.tools.authorize = reject;
    await runModelTurn(opts, observer);
    expect(asked).toEqual(["edit"]);
    // A refused call shows no preview.
    expect(observer.log).not.toContain("event call_1 diff");
    expect(toolResultsIn(model.doStreamCalls[1]!)).toEqual(["Error (rejected): The user rejected this edit call."]);
    expect(await ws.text("src/a.ts")).toBe("export const a = 1; // TODO\n");
  });

  it("sends a result's image as an image to a model whose provider takes it, and a note to any other", async () => {
    const picture = defineTool({
      id: "picture",
      description: "picture",
      kind: "fetch",
      parameters: z.object({}),
      requires: {},
      execute: async () => ({ content: "[image: image/png, 3 bytes]", image: { data: "AAEC", mimeType: "image/png" } }),
    });
    const registry = builtinRegistry();
    registry.register(picture);
    const turn = async (modelId: string) => {
      const [provider = "", name = ""] = modelId.split("/");
      const model = scripted([
        [...call("c1", "picture", {}), finish("tool-calls")],
        [...text("ok"), finish("stop")],
      ]);
      await runModelTurn(options(model, { modelId, info: modelInfo({ id: modelId, provider, model: name }) }, registry), recorder());
      const tool = model.doStreamCalls[1]!.prompt.find((m) => m.role === "tool");
      return tool?.role === "tool" && tool.content[0]?.type === "tool-result" ? tool.content[0].output : undefined;
    };
    expect(await turn("anthropic/claude-sonnet-4-5")).toEqual({
      type: "content",
      value: [
        { type: "text", text: "content: [image: image/png, 3 bytes]" },
        { type: "image-data", data: "AAEC", mediaType: "image/png" },
      ],
    });
    expect(await turn("openai-compatible/mock")).toEqual({
      type: "text",
      value: "content: [image: image/png, 3 bytes]\n[1 image not shown: this model does not take images in tool results]",
    });
  });

  it("runs read-only calls of one step in parallel and mutating ones alone, in the model's order", async () => {
    const events: string[] = [];
    const probe = (id: string, kind: "read" | "edit") =>
      defineTool({
        id,
        description: id,
        kind,
        parameters: z.object({ name: z.string() }),
        requires: {},
        execute: async ({ name }) => {
          events.push(`start ${name}`);
          await new Promise((r) => setTimeout(r, 30));
          events.push(`end ${name}`);
          return name;
        },
      });
    const registry = builtinRegistry();
    registry.register(probe("look", "read"));
    registry.register(probe("change", "edit"));
    const model = scripted([
      [
        ...call("m1", "look", { name: "A" }),
        ...call("m2", "look", { name: "B" }),
        ...call("m3", "change", { name: "C" }),
        ...call("m4", "change", { name: "D" }),
        ...call("m5", "look", { name: "E" }),
        finish("tool-calls"),
      ],
      [...text("done"), finish("stop")],
    ]);
    await runModelTurn(options(model, {}, registry), recorder());
    expect(events.slice(0, 2).sort()).toEqual(["start A", "start B"]);
    expect(events.slice(4)).toEqual(["start C", "end C", "start D", "end D", "start E", "end E"]);
    expect(toolResultsIn(model.doStreamCalls[1]!)).toEqual(["A", "B", "C", "D", "E"]);
  });

  it("turns malformed arguments and unknown tools into errors the model can correct", async () => {
    const model = scripted([
      [...call("m1", "read", '{"path": "src/a.ts"'), ...call("m2", "nope", "{}"), ...call("m3", "read", { path: 5 }), finish("tool-calls")],
      [...text("Sorry."), finish("stop")],
    ]);
    const observer = recorder();
    await runModelTurn(options(model), observer);
    const [bad, unknown, invalid] = toolResultsIn(model.doStreamCalls[1]!);
    expect(bad).toMatch(/^Error \(invalid_arguments\): The read tool was called with arguments that are not valid JSON/);
    expect(unknown).toMatch(/^Error \(unknown_tool\): There is no tool "nope"/);
    expect(invalid).toMatch(/^Error \(invalid_arguments\): The read tool was called with invalid arguments/);
    expect([...observer.envelopes.values()].map((e) => e.type)).toEqual(["error", "error", "error"]);
  });

  it("stops at the per-turn cap on model requests", async () => {
    const again = (): Part[] => [...call(`m${Math.random()}`, "glob", { pattern: "**/*.ts" }), finish("tool-calls")];
    const model = scripted([again(), again(), again(), again()]);
    const opts = options(model, { maxRequests: 3 });
    expect((await runModelTurn(opts, recorder())).stopReason).toBe("max_turn_requests");
    expect(model.doStreamCalls).toHaveLength(3);
    expect(opts.history.messages.at(-1)?.role).toBe("tool");
  });

  it("adds what arrived in the inbox (a background task's answer) before the next request, once, after that request's tool results", async () => {
    const model = scripted([
      [...call("m1", "glob", { pattern: "**/*.ts" }), finish("tool-calls")],
      [...text("ok"), finish("stop")],
    ]);
    const mail = ["", "[Background task task_1 finished]"];
    const opts = options(model, { inbox: () => mail.shift() || undefined });
    expect((await runModelTurn(opts, recorder())).stopReason).toBe("end_turn");
    const [first, second] = model.doStreamCalls;
    const users = (r: LanguageModelV3CallOptions | undefined) => JSON.stringify(r?.prompt.filter((m) => m.role === "user"));
    expect(users(first)).not.toContain("Background task");
    expect(users(second)).toContain("[Background task task_1 finished]");
    // After the step's tool results: the model's call is answered before the news.
    expect(second!.prompt.map((m) => m.role).slice(-3)).toEqual(["assistant", "tool", "user"]);
    expect(JSON.stringify(opts.history.messages).split("Background task").length).toBe(2);
  });

  it("maps the length stop to max_tokens and a content filter to refusal, answering calls it does not run", async () => {
    const cut = scripted([[...text("Here is a long"), ...call("m1", "glob", { pattern: "*" }), finish("length")]]);
    const observer = recorder();
    const opts = options(cut);
    expect((await runModelTurn(opts, observer)).stopReason).toBe("max_tokens");
    expect(observer.log).toEqual(['pending call_1 glob "*" complete', "done call_1 aborted"]);
    expect(opts.history.messages.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
    const refused = scripted([[...text("I can't help with that."), finish("content-filter")]]);
    expect((await runModelTurn(options(refused), recorder())).stopReason).toBe("refusal");
  });

  it("retries 5xx and 429 with backoff, then succeeds", async () => {
    const model = scripted([httpError(500), httpError(429), [...text("ok"), finish("stop")]]);
    const observer = recorder();
    expect(await runModelTurn(options(model), observer)).toEqual({ stopReason: "end_turn" });
    expect(model.doStreamCalls).toHaveLength(3);
    expect(observer.texts).toEqual(["ok"]);
  });

  it("gives up after the bounded retries and states the error", async () => {
    const model = scripted([httpError(503, "overloaded"), httpError(503, "overloaded"), httpError(503, "overloaded"), [...text("never")]]);
    const result = await runModelTurn(options(model), recorder());
    expect(model.doStreamCalls).toHaveLength(3);
    expect(result.stopReason).toBe("end_turn");
    expect(result.error).toMatch(/failed for openai-compatible\/mock \(503\) \(tried 3 times\): overloaded/);
  });

  it("does not retry a 401 and says to check the key", async () => {
    const model = scripted([httpError(401, "Incorrect API key provided")]);
    const opts = options(model);
    const result = await runModelTurn(opts, recorder());
    expect(model.doStreamCalls).toHaveLength(1);
    expect(result.error).toMatch(/\(401\): Incorrect API key provided\nCheck the key: TOOLHOST_API_KEY/);
    // The prompt stays in the history; the next turn can follow it.
    expect(opts.history.messages.map((m) => m.role)).toEqual(["user"]);
  });

  it("does not retry once something streamed, and keeps the partial text", async () => {
    const model = scripted([[...text("Half an answ"), { type: "error", error: httpError(500, "stream broke") }, finish("stop")]]);
    const opts = options(model);
    const result = await runModelTurn(opts, recorder());
    expect(model.doStreamCalls).toHaveLength(1);
    expect(result.error).toMatch(/stream broke/);
    expect(opts.history.messages.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "Half an answ" }] });
  });

  it("cancellation aborts the stream; a call whose arguments never completed was never announced", async () => {
    let streamAborted = false;
    let started = () => {};
    const streaming = new Promise<void>((resolve) => (started = resolve));
    const model = scripted([
      ({ abortSignal }) =>
        new ReadableStream<Part>({
          start(c) {
            for (const part of [...text("Let me"), { type: "tool-input-start", id: "m1", toolName: "edit" } as Part]) c.enqueue(part);
            abortSignal?.addEventListener("abort", () => {
              streamAborted = true;
              c.error(abortSignal.reason);
            });
            started();
          },
        }),
    ]);
    const observer = recorder();
    const turn = runModelTurn(options(model), observer);
    await streaming;
    controller.abort(new Error("Cancelled by the user"));
    expect(await turn).toEqual({ stopReason: "cancelled" });
    expect(streamAborted).toBe(true);
    expect(observer.log).toEqual([]);
  });

  it("cancellation during a backoff ends the turn at once", async () => {
    const model = scripted([httpError(500), [...text("late")]]);
    const turn = runModelTurn(options(model, { retry: { retries: 3, baseDelayMs: 10_000, maxDelayMs: 10_000 } }), recorder());
    await vi.waitUntil(() => model.doStreamCalls.length === 1, { timeout: 20_000 });
    controller.abort();
    expect(await turn).toEqual({ stopReason: "cancelled" });
    expect(model.doStreamCalls).toHaveLength(1);
  });

  it("reports the session's running cost when the model's price is known", async () => {
    const model = scripted([
      [...call("m1", "glob", { pattern: "*" }), finish("tool-calls", 1_000_000, 0)],
      [...text("ok"), finish("stop", 1_000_000, 100_000)],
    ]);
    const meter = newMeter();
    const observer = recorder();
    const info = modelInfo({ id: "anthropic/claude-sonnet-4-5", provider: "anthropic", model: "claude-sonnet-4-5" });
    await runModelTurn(options(model, { info, meter }), observer);
    expect(observer.usages.map((u) => [u.size, u.cost?.amount])).toEqual([
      [200_000, 3],
      [200_000, 7.5],
    ]);
    expect(meter.amount).toBeCloseTo(7.5);
    // What a budget reads: the requests, calls and tokens (input + output) of the turn.
    expect(meter).toMatchObject({ requests: 2, toolCalls: 1, tokens: 2_100_000 });
    // What `run --json`'s totals read: the provider's counts, and how many requests had a price.
    expect(meter).toMatchObject({ inputTokens: 2_000_000, outputTokens: 100_000, cacheReadTokens: 0, pricedRequests: 2 });
  });
});

describe("a budget (TurnOptions.budget)", () => {
  it("is asked before each call: from the first it stops, the step's calls are answered not run, and the turn ends max_turn_requests", async () => {
    // Three read-only calls in one step: one parallel batch, each checked in the model's order before it starts.
    const model = scripted([
      [
        ...call("m1", "glob", { pattern: "*" }),
        ...call("m2", "glob", { pattern: "src/*" }),
        ...call("m3", "glob", { pattern: "*.md" }),
        finish("tool-calls", 100, 20),
      ],
      [...text("never sent"), finish("stop")],
    ]);
    const meter = newMeter();
    const asked: string[] = [];
    const budget: TurnBudget = {
      beforeRequest: async () => (asked.push(`request ${meter.requests}`), null),
      beforeCall: async () => (asked.push(`call ${meter.toolCalls}`), meter.toolCalls >= 2 ? { message: "The cap." } : null),
      afterRequest: async () => void asked.push("after"),
    };
    const observer = recorder();
    const history = new History();
    expect(await runModelTurn(options(model, { meter, budget, history }), observer)).toEqual({
      stopReason: "max_turn_requests",
      notice: "The cap.",
    });
    expect(asked).toEqual(["request 0", "after", "call 0", "call 1", "call 2"]);
    expect(model.doStreamCalls).toHaveLength(1);
    expect(meter).toMatchObject({ amount: 0, requests: 1, toolCalls: 2, tokens: 120, pricedRequests: 0 });
    const third = observer.envelopes.get("call_3")!;
    expect(third.type === "error" && [third.metadata.error_code, third.error_text]).toEqual(["aborted", "Not run: budget. The cap."]);
    expect(["call_1", "call_2"].map((id) => observer.envelopes.get(id)!.type)).toEqual(["output", "output"]);
    // Every call has its result in the history, so the next turn can be sent.
    const results = history.messages.filter((m) => m.role === "tool").flatMap((m) => m.content);
    expect(results).toHaveLength(3);
  });

  it("is asked before each request: a stop there sends nothing more", async () => {
    const model = scripted([
      [...call("m1", "glob", { pattern: "*" }), finish("tool-calls")],
      [...text("never sent"), finish("stop")],
    ]);
    const meter = newMeter();
    const budget: TurnBudget = {
      beforeRequest: async () => (meter.requests >= 1 ? { message: "One request only." } : null),
      beforeCall: async () => null,
      afterRequest: async () => {},
    };
    expect(await runModelTurn(options(model, { meter, budget }), recorder())).toEqual({
      stopReason: "max_turn_requests",
      notice: "One request only.",
    });
    expect(model.doStreamCalls).toHaveLength(1);
    expect(meter).toMatchObject({ requests: 1, toolCalls: 1 });
  });
});

describe("helpers", () => {
  it("batches consecutive read-only calls only", () => {
    const kinds = ["r", "r", "w", "r", "w", "w", "r", "r"];
    expect(batches(kinds, (k) => k === "r")).toEqual([["r", "r"], ["w"], ["r"], ["w"], ["w"], ["r", "r"]]);
  });

  it("adds the truncation hint unless the data already names the file", () => {
    const meta = { duration_ms: 1, truncated: true, output_path: "/tmp/sidecar/out.txt" };
    expect(resultText({ type: "output", data: { head: [1, 2] }, metadata: meta })).toMatch(
      /\[Output truncated\. The full output is in \/tmp\/sidecar\/out\.txt/,
    );
    const named = resultText({ type: "output", data: "… see /tmp/sidecar/out.txt", metadata: meta });
    expect(named).toBe("… see /tmp/sidecar/out.txt");
    expect(resultText({ type: "error", error_text: "nope", metadata: { duration_ms: 1, error_code: "not_found" } })).toBe(
      "Error (not_found): nope",
    );
  });
});
