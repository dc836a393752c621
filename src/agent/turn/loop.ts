import type { FinishReason, LanguageModelUsage, ToolResultPart } from "ai";
import { envelopeToText, errorEnvelope, resultImage, type Envelope } from "../../tool/envelope.js";
import type { ErrorCode } from "../../tool/errors.js";
import { imageResult } from "../../tool/display.js";
import { isReadOnlyKind } from "../../tool/kinds.js";
import { COMPACT_AT, compactHistory, planCompaction } from "./compaction.js";
import { stepCost } from "../model/models.js";
import { classifyProviderError, providerErrorMessage } from "../model/provider-errors.js";
import { declareTools, requestStep, type Step, type StepCall } from "./step.js";
import { runToolCall } from "./tool-runner.js";
import type { BudgetStop, ToolOffer, TurnObserver, TurnOptions, TurnResult, TurnStopReason, UsageReport } from "./turn-types.js";

// The model turn: one model request at a time, tools declared without `execute`, every call
// run by us through runToolCall → invoke, so approvals, ordering and reporting stay ours.

export const DEFAULT_MAX_REQUESTS = 50;

/** The compact text a model gets back: the data or the error, plus where the full output is. */
export function resultText(envelope: Envelope): string {
  const text = envelopeToText(envelope);
  const file = envelope.metadata.output_path;
  if (!envelope.metadata.truncated || !file || text.includes(file)) return text;
  return `${text}\n[Output truncated. The full output is in ${file}: read it with the read tool (offset/limit) or search it with grep.]`;
}

/** Consecutive read-only calls form one parallel batch; every other call runs alone, in order. */
export function batches<T>(calls: readonly T[], readOnly: (call: T) => boolean): T[][] {
  const out: T[][] = [];
  for (const call of calls) {
    const last = out[out.length - 1];
    if (readOnly(call) && last && readOnly(last[0] as T)) last.push(call);
    else out.push([call]);
  }
  return out;
}

/**
 * Providers whose tool results can hold an image (Anthropic's tool_result, OpenAI's responses);
 * an OpenAI-compatible server would get the image as JSON text.
 */
const IMAGE_RESULT_PROVIDERS = new Set(["anthropic", "openai"]);

/** Whether this turn's model gets a result's image as an image. */
function takesResultImages(opts: Pick<TurnOptions, "modelId" | "info">): boolean {
  return opts.info.images && IMAGE_RESULT_PROVIDERS.has(opts.modelId.split("/")[0] ?? "");
}

/** A result's images and the rest of it: an MCP tool's content blocks, or web_fetch's `image` field. */
function resultPictures(data: unknown): { text: unknown; images: { data: string; mimeType: string }[] } | null {
  const blocks = imageResult(data);
  if (blocks) return blocks;
  const image = resultImage(data);
  return image ? { text: { ...(data as object), image: undefined }, images: [image] } : null;
}

function resultPart(call: StepCall, envelope: Envelope, takesImages: boolean): ToolResultPart {
  const base = { type: "tool-result" as const, toolCallId: call.modelCallId, toolName: call.toolName };
  // The images never go into the text: as images to a model that takes them, otherwise a note.
  const pictures = envelope.type === "output" ? resultPictures(envelope.data) : null;
  if (pictures && envelope.type === "output") {
    const text = resultText({ ...envelope, data: pictures.text });
    if (!takesImages) {
      const note = `[${pictures.images.length} image${pictures.images.length === 1 ? "" : "s"} not shown: this model does not take images in tool results]`;
      return { ...base, output: { type: "text", value: text ? `${text}\n${note}` : note } };
    }
    const images = pictures.images.map((i) => ({ type: "image-data" as const, data: i.data, mediaType: i.mimeType }));
    return { ...base, output: { type: "content", value: [...(text ? [{ type: "text" as const, text }] : []), ...images] } };
  }
  const value = resultText(envelope);
  return { ...base, output: envelope.type === "error" ? { type: "error-text", value } : { type: "text", value } };
}

/**
 * Runs a step's calls: read-only batches in parallel, the rest in the model's order. The budget is
 * asked before each call; from the first it stops, the step's calls are answered "not run".
 */
async function runCalls(
  opts: TurnOptions,
  observer: TurnObserver,
  calls: StepCall[],
  offer?: ToolOffer,
): Promise<{ results: ToolResultPart[]; stop: BudgetStop | null }> {
  const envelopes = new Map<StepCall, Envelope>();
  let stop: BudgetStop | null = null;
  for (const batch of batches(calls, (c) => isReadOnlyKind(c.info.kind))) {
    const allowed: StepCall[] = [];
    for (const call of batch) {
      stop ??= (await opts.budget?.beforeCall(opts.tools.signal)) ?? null;
      if (stop) {
        const envelope = errorEnvelope("aborted", `Not run: budget. ${stop.message}`, 0);
        await observer.done(call.info.callId, envelope, call.info);
        envelopes.set(call, envelope);
        continue;
      }
      allowed.push(call);
      if (opts.meter) opts.meter.toolCalls += 1;
    }
    await Promise.all(
      allowed.map(async (call) => {
        const envelope = await runToolCall(
          opts.tools,
          { callId: call.info.callId, toolId: call.toolName, args: call.input, announced: true, inputError: call.inputError },
          observer,
        );
        envelopes.set(call, offer && opts.afterCall ? opts.afterCall(call.toolName, envelope, offer) : envelope);
      }),
    );
  }
  return { results: calls.map((call) => resultPart(call, envelopes.get(call) as Envelope, takesResultImages(opts))), stop };
}

/** Closes calls that will not run (the request failed, was cancelled or cut off); returns results for the complete ones. */
async function abandon(step: Step, observer: TurnObserver, code: ErrorCode, text: string): Promise<ToolResultPart[]> {
  const envelope = errorEnvelope(code, text, 0);
  for (const info of step.announced.values()) await observer.done(info.callId, envelope, info);
  return step.calls.map((call) => resultPart(call, envelope, false));
}

/** Announced calls whose input the model never finished. */
async function closeUnfinished(step: Step, observer: TurnObserver): Promise<void> {
  const complete = new Set(step.calls.map((call) => call.info.callId));
  const envelope = errorEnvelope("aborted", "The model did not finish this call", 0);
  for (const info of step.announced.values()) if (!complete.has(info.callId)) await observer.done(info.callId, envelope, info);
}

/** Whether a provider refused the request because the context is longer than the model takes. */
function isContextOverflow(error: unknown): boolean {
  const failure = classifyProviderError(error);
  if (failure.status !== undefined && failure.status !== 400 && failure.status !== 413) return false;
  return /context.{0,20}(length|window|limit)|too long|too many tokens|maximum.{0,20}tokens|exceeds?.{0,30}tokens|tokens?.{0,30}exceed/i.test(
    failure.message,
  );
}

let compactionSeq = 0;

/**
 * Compacts the turn's history, telling the observer as it starts and ends. True when the history
 * got smaller; a failed compaction is reported and the turn goes on as it was.
 */
export async function compactTurnHistory(
  opts: Pick<TurnOptions, "model" | "history" | "info">,
  observer: Pick<TurnObserver, "compaction">,
  signal: AbortSignal,
  force: boolean,
): Promise<boolean> {
  const plan = planCompaction(opts.history, opts.info.contextWindow, force);
  // Nothing to prune or summarize (the context is mostly the system prompt and the tools): say nothing.
  if (!plan) return false;
  const id = `compaction_${++compactionSeq}`;
  await observer.compaction?.({ id, status: "in_progress" });
  try {
    const result = await compactHistory({
      model: opts.model,
      history: opts.history,
      plan,
      signal,
      onSummary: (summaryDelta) => observer.compaction?.({ id, status: "in_progress", summaryDelta }),
    });
    if (result.kept) {
      const error = `it would have made the context larger, not smaller (about ${result.before} → ${result.after} tokens), so the conversation is kept as it was`;
      await observer.compaction?.({ id, status: "failed", error });
      return false;
    }
    const note = `Compacted the conversation (about ${result.before} → ${result.after} tokens): ${
      result.summary ? "older turns summarized" : "no summary needed"
    }${result.pruned ? `, ${result.pruned} old tool output${result.pruned === 1 ? "" : "s"} pruned` : ""}.`;
    await observer.compaction?.({ id, status: "completed", summary: result.summary, note, messages: opts.history.messages });
    return result.after < result.before;
  } catch (err) {
    const error = signal.aborted ? "cancelled" : err instanceof Error ? err.message : String(err);
    await observer.compaction?.({ id, status: "failed", error });
    return false;
  }
}

async function reportUsage(opts: TurnOptions, observer: TurnObserver, usage: LanguageModelUsage | undefined): Promise<number> {
  const input = usage?.inputTokens;
  const output = usage?.outputTokens ?? 0;
  const used = input !== undefined ? input + output : opts.history.estimateTokens(opts.system);
  const report: UsageReport = { used, size: opts.info.contextWindow };
  const read = usage?.inputTokenDetails?.cacheReadTokens ?? 0;
  const write = usage?.inputTokenDetails?.cacheWriteTokens ?? 0;
  if (read || write) report.cache = { read, write };
  const cost = input !== undefined ? stepCost(opts.info, { input, output, cachedInput: read, cacheWrite: write }) : undefined;
  if (opts.meter) {
    opts.meter.tokens += used;
    opts.meter.inputTokens += input ?? 0;
    opts.meter.outputTokens += input !== undefined ? output : 0;
    opts.meter.cacheReadTokens += read;
    opts.meter.cacheWriteTokens += write;
  }
  if (cost !== undefined && opts.meter) {
    opts.meter.amount += cost;
    opts.meter.pricedRequests += 1;
    report.cost = { amount: Math.round(opts.meter.amount * 1e6) / 1e6, currency: "USD" };
  }
  await observer.usage(report);
  return used;
}

function stopReasonOf(finish: FinishReason | undefined): TurnStopReason {
  if (finish === "length") return "max_tokens";
  if (finish === "content-filter") return "refusal";
  return "end_turn";
}

/**
 * Answers one prompt: model request → streamed text, reasoning and tool calls → the calls run
 * → results back to the model, until it stops calling tools or a bound is hit.
 */
export async function runModelTurn(opts: TurnOptions, observer: TurnObserver): Promise<TurnResult> {
  try {
    return await modelTurn(opts, observer);
  } catch (err) {
    // However the turn broke off (a client gone mid-approval, an observer or a tool that threw),
    // the calls the model made get a result: the history stays one a provider takes.
    opts.history.answerOpenCalls(
      opts.tools.signal.aborted
        ? "Cancelled: the turn was cancelled (or its client went away) before this call finished. It may have run in part: check its effects before you run it again."
        : `Not finished: the turn failed (${err instanceof Error ? err.message : String(err)}) before this call finished. It may have run in part: check its effects before you run it again.`,
    );
    throw err;
  }
}

async function modelTurn(opts: TurnOptions, observer: TurnObserver): Promise<TurnResult> {
  const signal = opts.tools.signal;
  const maxRequests = opts.maxRequests ?? DEFAULT_MAX_REQUESTS;
  const fixed = opts.offer ? undefined : declareTools(opts.declarations ?? opts.tools.registry.list().map(({ tool }) => tool));
  opts.history.addUser(opts.prompt);
  let used = opts.contextUsed;
  let overflowCompacted = false;
  for (let request = 1; ; request++) {
    // The session's caps (agent/session/budget.ts), before anything of this request is spent; it may ask the user.
    if (opts.budget) {
      const budgetStop = await opts.budget.beforeRequest({ modelId: opts.modelId, priced: opts.info.price !== undefined }, signal);
      if (signal.aborted) return { stopReason: "cancelled" };
      if (budgetStop) return { stopReason: "max_turn_requests", notice: budgetStop.message };
    }
    // A background task that ended since the last request: its answer goes with this one.
    const mail = opts.inbox?.();
    if (mail) opts.history.addUser(mail);
    // Decided per request: tools wired by tool_search (or added by an MCP server) count from the next one.
    const offer = await opts.offer?.();
    const tools = fixed ?? declareTools(offer?.declarations ?? []);
    const requestOpts = offer?.promptSection ? { ...opts, system: `${opts.system}\n\n${offer.promptSection}` } : opts;
    // Before a request that would pass the threshold: the usage reported last, or the history's estimate.
    const inContext = Math.max(used ?? 0, opts.history.estimateTokens(requestOpts.system));
    // (The usage of the next response replaces `used`, so it need not be reset here.)
    if (opts.compaction !== false && inContext > COMPACT_AT * opts.info.contextWindow)
      await compactTurnHistory(opts, observer, signal, false);
    if (opts.meter) opts.meter.requests += 1;
    const step = await requestStep(requestOpts, observer, tools);
    // A provider that says the context is too long: compact once and ask again, instead of ending the turn.
    if (step.outcome === "error" && !step.emitted && !overflowCompacted && opts.compaction !== false && isContextOverflow(step.error)) {
      overflowCompacted = true;
      if (await compactTurnHistory(opts, observer, signal, true)) {
        used = undefined;
        request--;
        continue;
      }
    }
    if (step.outcome !== "ok") {
      opts.history.addPartialText(step.text);
      if (step.outcome === "cancelled") {
        await abandon(step, observer, "aborted", "The turn was cancelled before the call ran");
        return { stopReason: "cancelled" };
      }
      await abandon(step, observer, "aborted", "The model request failed before the call ran");
      const failure = classifyProviderError(step.error);
      process.stderr.write(`toolhost: ${opts.modelId} request failed: ${failure.status ?? ""} ${failure.message}\n`);
      return {
        stopReason: "end_turn",
        error: providerErrorMessage(failure, { modelId: opts.modelId, keyHint: opts.keyHint, attempts: step.attempts }),
      };
    }
    opts.history.addAssistant(step.messages ?? []);
    used = await reportUsage(opts, observer, step.usage);
    await opts.budget?.afterRequest();
    const stop = stopReasonOf(step.finishReason);
    if (step.calls.length === 0 || stop !== "end_turn") {
      // A response cut off by the token limit or a refusal: its calls are not run, but answered.
      opts.history.addToolResults(
        await abandon(step, observer, "aborted", `Not run: the model's response ended with "${step.finishReason}".`),
      );
      return { stopReason: stop };
    }
    await closeUnfinished(step, observer);
    const ran = await runCalls(opts, observer, step.calls, offer);
    opts.history.addToolResults(ran.results);
    if (signal.aborted) return { stopReason: "cancelled" };
    if (ran.stop) return { stopReason: "max_turn_requests", notice: ran.stop.message };
    const halt = opts.tools.hooks?.takeHalt();
    if (halt) return { stopReason: "end_turn", notice: `A hook ended the turn: ${halt}` };
    if (request >= maxRequests) return { stopReason: "max_turn_requests" };
  }
}
