import {
  jsonSchema,
  NoSuchToolError,
  streamText,
  type FinishReason,
  type JSONSchema7,
  type LanguageModelUsage,
  type ModelMessage,
  type SystemModelMessage,
  type ToolSet,
} from "ai";
import type { RetryPolicy, StepOptions, ToolDeclaration, TurnObserver } from "./turn-types.js";
import { classifyProviderError } from "../model/provider-errors.js";
import { DEFAULT_REQUEST_LIMITS, ModelTimeoutError, waitText, type ModelRequestLimits } from "../model/request-limits.js";
import { announceToolCall, type ToolCallInfo } from "./tool-runner.js";

// One model request: streamed to the observer as it arrives, retried while nothing reached the editor.

export const DEFAULT_RETRY: RetryPolicy = { retries: DEFAULT_REQUEST_LIMITS.retries, baseDelayMs: 1000, maxDelayMs: 30_000 };

/** After this long without a first part (or half the timeout, if shorter), the user is told the request waits. */
const WAIT_NOTICE_MS = 5000;

export interface StepCall {
  modelCallId: string;
  toolName: string;
  input: unknown;
  inputError?: string;
  info: ToolCallInfo;
}

export interface Step {
  outcome: "ok" | "error" | "cancelled";
  /** Calls announced to the editor, by the model's call id (some may never have completed). */
  announced: Map<string, ToolCallInfo>;
  calls: StepCall[];
  text: string;
  /** Whether anything reached the editor: then a failed request is not retried. */
  emitted: boolean;
  finishReason?: FinishReason;
  usage?: LanguageModelUsage;
  messages?: ModelMessage[];
  error?: unknown;
}

/** Tools as the model sees them: name, description, JSON Schema, no execute. */
export function declareTools(tools: readonly ToolDeclaration[]): ToolSet {
  const set: ToolSet = {};
  for (const tool of tools) {
    set[tool.id] = { description: tool.description, inputSchema: jsonSchema(tool.inputSchema as JSONSchema7) };
  }
  return set;
}

const CACHE_POINT = { anthropic: { cacheControl: { type: "ephemeral" } } } as const;

/**
 * Anthropic caches a prompt prefix only up to breakpoints the request marks (at most four): the
 * last tool (the declarations), the system prompt, and the last two messages, so each request
 * reads what the one before it wrote. Other providers cache a stable prefix on their own.
 */
function cachedRequest(
  modelId: string,
  system: string,
  messages: ModelMessage[],
  tools: ToolSet,
): { system: string | SystemModelMessage; messages: ModelMessage[]; tools: ToolSet } {
  if (!modelId.startsWith("anthropic/") || process.env.TOOLHOST_PROMPT_CACHE === "off") return { system, messages, tools };
  const names = Object.keys(tools);
  const last = names.at(-1);
  const cachedTools = last ? { ...tools, [last]: { ...tools[last], providerOptions: CACHE_POINT } as ToolSet[string] } : tools;
  const marked = messages.map((message, i) => (i >= messages.length - 2 ? { ...message, providerOptions: CACHE_POINT } : message));
  return { system: { role: "system", content: system, providerOptions: CACHE_POINT }, messages: marked, tools: cachedTools };
}

function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Says what a request is doing (waiting, retrying): on stderr (the log; `run` shows it) and to the front end. */
async function notify(observer: TurnObserver, text: string): Promise<void> {
  process.stderr.write(`toolhost: ${text}\n`);
  await observer.notice?.(text);
}

/**
 * The request's own abort: the turn's cancel, or a timeout — before the first part, or between
 * two parts (paused while a part is handled, which may wait on the editor). Aborting it closes
 * the connection.
 */
class RequestWatch {
  readonly controller = new AbortController();
  timedOut?: ModelTimeoutError;
  private timer?: NodeJS.Timeout;
  private noticeTimer?: NodeJS.Timeout;
  private readonly onCancel = () => this.controller.abort(this.turn.reason);

  constructor(
    private readonly turn: AbortSignal,
    private readonly limits: ModelRequestLimits,
  ) {
    if (turn.aborted) this.controller.abort(turn.reason);
    else turn.addEventListener("abort", this.onCancel, { once: true });
  }

  /** Waits for the first part; `waiting` is called once if it is slow to come. */
  start(waiting: (afterMs: number) => void): void {
    this.arm("first-byte", this.limits.firstByteTimeoutMs);
    const noticeAfter = Math.min(WAIT_NOTICE_MS, Math.floor(this.limits.firstByteTimeoutMs / 2));
    this.noticeTimer = setTimeout(() => waiting(noticeAfter), noticeAfter);
  }

  /** A part arrived: no timer runs while it is handled. */
  received(): void {
    clearTimeout(this.noticeTimer);
    clearTimeout(this.timer);
  }

  /** The part was handled: the next one may take the idle timeout. */
  handled(): void {
    this.arm("idle", this.limits.idleTimeoutMs);
  }

  end(): void {
    this.received();
    this.turn.removeEventListener("abort", this.onCancel);
  }

  private arm(phase: ModelTimeoutError["phase"], ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timedOut = new ModelTimeoutError(phase, ms);
      this.controller.abort(this.timedOut);
    }, ms);
  }
}

async function streamStep(opts: StepOptions, observer: TurnObserver, tools: ToolSet, attempt: number): Promise<Step> {
  const signal = opts.tools.signal;
  const limits = opts.limits ?? DEFAULT_REQUEST_LIMITS;
  const watch = new RequestWatch(signal, limits);
  const step: Step = { outcome: "ok", announced: new Map(), calls: [], text: "", emitted: false };
  // A call is announced once its arguments are complete: its first tool_call carries the title
  // they give (`Edit src/a.ts`), which clients that keep the first title go on showing.
  const announce = async (modelCallId: string, toolName: string, args: unknown): Promise<ToolCallInfo> => {
    const known = step.announced.get(modelCallId);
    if (known) return known;
    const call = { callId: opts.nextCallId(), toolId: toolName, args };
    const info = await announceToolCall(opts.tools.registry, call, observer, opts.tools.session.workspace);
    step.announced.set(modelCallId, info);
    return info;
  };
  // A snapshot of the history: it grows once the step is read.
  const request = cachedRequest(opts.modelId, opts.system, [...opts.history.messages], tools);
  const result = streamText({
    model: opts.model,
    system: request.system,
    messages: request.messages,
    tools: request.tools,
    ...(opts.providerOptions ? { providerOptions: opts.providerOptions as never } : {}),
    maxRetries: 0, // retried here, where we know whether anything reached the editor yet
    abortSignal: watch.controller.signal,
    onError: () => {}, // errors arrive as stream parts; the SDK would log them to the console
  });
  const retries = opts.retry?.retries ?? limits.retries;
  watch.start((afterMs) => {
    const gives = `gives up after ${waitText(limits.firstByteTimeoutMs)}${attempt <= retries ? ", then retries" : ""}`;
    void notify(observer, `waiting for ${opts.modelId}: no answer yet after ${waitText(afterMs)} (attempt ${attempt}; ${gives})`);
  });
  try {
    for await (const part of result.fullStream) {
      // "start" is the SDK's own, before the request is even sent; the server's first part is "start-step".
      if (part.type === "start") continue;
      watch.received();
      switch (part.type) {
        case "text-delta":
          if (!part.text) break;
          step.emitted = true;
          step.text += part.text;
          await observer.text(part.text);
          break;
        case "reasoning-delta":
          if (!part.text) break;
          step.emitted = true;
          await observer.thought(part.text);
          break;
        case "tool-input-start":
          step.emitted = true;
          break;
        case "tool-call": {
          step.emitted = true;
          const info = await announce(part.toolCallId, part.toolName, part.input);
          const unreadable = part.invalid === true && !NoSuchToolError.isInstance(part.error);
          step.calls.push({
            modelCallId: part.toolCallId,
            toolName: part.toolName,
            input: part.input,
            info,
            inputError: unreadable
              ? `The ${part.toolName} tool was called with arguments that are not valid JSON (${errorText(part.error)}). Send the call again with one JSON object that satisfies the tool's schema.`
              : undefined,
          });
          break;
        }
        case "finish-step":
          step.finishReason = part.finishReason;
          step.usage = part.usage;
          break;
        case "error":
          step.error ??= part.error;
          break;
      }
      watch.handled();
    }
    if (step.error === undefined && !watch.controller.signal.aborted) step.messages = (await result.response).messages;
  } catch (err) {
    step.error ??= err;
  } finally {
    watch.end();
  }
  // A timeout's abort surfaces as whatever the SDK made of it: the timeout is what happened.
  if (watch.timedOut && !signal.aborted) step.error = watch.timedOut;
  if (signal.aborted) step.outcome = "cancelled";
  else if (step.error !== undefined) step.outcome = "error";
  return step;
}

function errorText(err: unknown): string {
  const cause = (err as { cause?: unknown })?.cause;
  const source = cause instanceof Error ? cause : err;
  return source instanceof Error ? source.message : String(source);
}

/** One model request, retried with backoff while nothing of it has reached the editor. */
export async function requestStep(opts: StepOptions, observer: TurnObserver, tools: ToolSet): Promise<Step & { attempts: number }> {
  const retry = opts.retry ?? { ...DEFAULT_RETRY, retries: opts.limits?.retries ?? DEFAULT_RETRY.retries };
  for (let attempt = 1; ; attempt++) {
    const step = await streamStep(opts, observer, tools, attempt);
    if (step.outcome !== "error") return { ...step, attempts: attempt };
    const failure = classifyProviderError(step.error);
    if (step.emitted || !failure.retryable || attempt > retry.retries) return { ...step, attempts: attempt };
    const delay = Math.min(retry.maxDelayMs, failure.retryAfterMs ?? retry.baseDelayMs * 2 ** (attempt - 1));
    const why = failure.timedOut ? `: ${failure.message}` : ` request failed (${failure.status ?? "network"})`;
    await notify(observer, `${opts.modelId}${why}; retry ${attempt} of ${retry.retries} in ${waitText(Math.round(delay))}`);
    if (!(await sleep(delay, opts.tools.signal))) return { ...step, outcome: "cancelled", attempts: attempt };
  }
}
