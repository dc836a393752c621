import type { LanguageModel, ModelMessage, UserContent } from "ai";
import type { Envelope } from "../../tool/envelope.js";
import type { History } from "./history.js";
import type { ModelInfo } from "../model/models.js";
import type { ModelRequestLimits } from "../model/request-limits.js";
import type { ToolCallObserver, ToolRunContext } from "./tool-runner.js";

// The vocabulary of a model turn, shared by the loop and the step (which would otherwise import each other).

export type TurnStopReason = "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled";

export interface UsageReport {
  /** Tokens in the context after the last request. */
  used: number;
  /** The model's context window. */
  size: number;
  /** The session's running cost, when the model's price is known. */
  cost?: { amount: number; currency: string };
  /** Input tokens of the last request read from the provider's prompt cache, and written to it. */
  cache?: { read: number; write: number };
}

/** A compaction of the session's history, as it starts and ends. */
export interface CompactionEvent {
  id: string;
  status: "in_progress" | "completed" | "failed";
  /** The model's summary of the older turns (when one was written). */
  summary?: string;
  /** In progress: the next piece of the summary as it streams in. */
  summaryDelta?: string;
  /** What happened, in a sentence, for front ends that show a message. */
  note?: string;
  error?: string;
  /** The history after the compaction (completed only): what a restore starts from. */
  messages?: readonly ModelMessage[];
}

/** What the editor sees of a turn: streamed text and reasoning, tool calls, usage. */
export interface TurnObserver extends ToolCallObserver {
  text(delta: string): void | Promise<void>;
  thought(delta: string): void | Promise<void>;
  usage(report: UsageReport): void | Promise<void>;
  /** The history is being compacted; absent: the front end is not told. */
  compaction?(event: CompactionEvent): void | Promise<void>;
  /** A line about the request itself (it waits for the model, it is retried): not model text, not recorded. */
  notice?(text: string): void | Promise<void>;
}

/**
 * What the session has used, carried from turn to turn; a subagent adds to its parent's (shared).
 * The loop counts; a budget (agent/session/budget.ts) reads it.
 */
export interface CostMeter {
  /** Cost in USD, of the requests whose model has a known price. */
  amount: number;
  /** Model requests made (agent turns; a compaction's summary is not one). */
  requests: number;
  /** Tool calls run. */
  toolCalls: number;
  /** Tokens used (input + output of each request; the estimate when a provider reports none). */
  tokens: number;
  /** As the providers report them, summed over requests: input (cache reads and writes included), output, and of the input, read from and written to the prompt cache. */
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** Requests whose model has a known price (their cost is in `amount`). */
  pricedRequests: number;
}

/** The meter's counts, in the order a record keeps them. */
export const METER_KEYS = [
  "amount",
  "requests",
  "toolCalls",
  "tokens",
  "inputTokens",
  "outputTokens",
  "cacheReadTokens",
  "cacheWriteTokens",
  "pricedRequests",
] as const satisfies readonly (keyof CostMeter)[];

/** A new meter, at zero. */
export function newMeter(): CostMeter {
  return Object.fromEntries(METER_KEYS.map((key) => [key, 0])) as unknown as CostMeter;
}

/** Why a budget stops the turn: said to the user, and in the result of each call it leaves unrun. */
export interface BudgetStop {
  message: string;
}

/**
 * The session's caps as the loop sees them (agent/session/budget.ts implements it): asked before each model
 * request and each tool call; null lets it go on. It may ask the user first, so it takes the turn's
 * signal. The loop counts on the meter; this decides.
 */
export interface TurnBudget {
  beforeRequest(model: { modelId: string; priced: boolean }, signal: AbortSignal): Promise<BudgetStop | null>;
  beforeCall(signal: AbortSignal): Promise<BudgetStop | null>;
  /** After a request's usage is on the meter (the warning line). */
  afterRequest(): Promise<void>;
}

/** A tool as the model is offered it this turn. */
export interface ToolDeclaration {
  id: string;
  description: string;
  inputSchema: Record<string, unknown>;
}

/** What the model is offered for one request (agent/deferral.ts): the declared tools, and a system prompt section for the deferred ones. */
export interface ToolOffer {
  declarations: ToolDeclaration[];
  /** Appended to the system prompt: the tools not declared, reached through tool_search. */
  promptSection?: string;
  /** The ids of the tools not declared this request. */
  deferred: string[];
}

// One vocabulary for a turn's options, built up on the way down: the session hands turn.ts a
// `TurnRequest` (plus the model's spec, in turn.ts's `PromptTurn`); turn.ts resolves the model
// (`TurnModel`) and the request's settings into the loop's `TurnOptions`; the step and compaction
// take the `Pick` of it they read.

/** The session's side of a turn, whichever model runs it. */
export interface TurnRequest {
  history: History;
  prompt: UserContent;
  /** Registry, runtime, approvals and the turn's abort signal. */
  tools: ToolRunContext;
  /** The tools the model is offered (the session's visible set); default: every registry tool. */
  declarations?: ToolDeclaration[];
  /** Decides the offer before each request (tools wired or added since count); replaces `declarations`. */
  offer?: () => Promise<ToolOffer>;
  /** Sees each call's envelope before the model does, with the offer of the request that made the call. */
  afterCall?: (toolId: string, envelope: Envelope, offer: ToolOffer) => Envelope;
  nextCallId(): string;
  maxRequests?: number;
  meter?: CostMeter;
  /** The session's caps (shared with its subagents); absent: none. */
  budget?: TurnBudget;
  /** Tokens in the context at the session's last request (its last usage report), for compaction. */
  contextUsed?: number;
  /** Messages that arrived since the last request (background tasks' answers), added before each request. */
  inbox?: () => string | undefined;
}

/** The model a turn runs on, resolved from its spec. */
export interface TurnModel {
  model: LanguageModel;
  modelId: string;
  info: ModelInfo;
}

/** What the loop runs: the session's request on a resolved model, with the requests' settings. */
export interface TurnOptions extends TurnRequest, TurnModel {
  system: string;
  /** Where this provider's key is set, for a 401 message. */
  keyHint: string;
  retry?: RetryPolicy;
  /** The requests' timeouts and retries (default: model/request-limits.ts's); `retry` wins for the retries. */
  limits?: ModelRequestLimits;
  /** Compact the history when the context nears the window (default true). */
  compaction?: boolean;
  /** Provider options of every request (how hard the model thinks). */
  providerOptions?: Record<string, Record<string, unknown>>;
}

/** What one model request reads (agent/step.ts). */
export type StepOptions = Pick<
  TurnOptions,
  "model" | "modelId" | "system" | "history" | "tools" | "nextCallId" | "providerOptions" | "retry" | "limits"
>;

export interface TurnResult {
  stopReason: TurnStopReason;
  /** A provider failure, stated for the user; the turn then ends with `end_turn`. */
  error?: string;
  /** The error is a missing model, key or server URL: what `toolhost login` sets. */
  needsLogin?: true;
  /** Why the turn stopped, for the user (a budget's cap; stop reason `max_turn_requests`). */
  notice?: string;
}

export interface RetryPolicy {
  /** Retries after the first attempt, for 429, 5xx and network errors before anything streamed. */
  retries: number;
  baseDelayMs: number;
  maxDelayMs: number;
}
