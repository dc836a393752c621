import type { ToolEvent } from "../tool/context.js";
import type { ToolDisplay } from "../tool/define.js";
import { displayResult } from "../tool/display.js";
import { errorEnvelope, type Envelope } from "../tool/envelope.js";
import type { ToolKind } from "../tool/kinds.js";
import type { RequirementSet } from "../tool/requirements.js";
import type { HostServices } from "../tool/services.js";
import type { Authorize } from "../policy/call.js";
import { discardPreparedCall, prepareCall, runPreparedCall, type ToolCallInfo } from "../host/invoke.js";
import type { ToolRegistry } from "../host/registry.js";
import type { RuntimeSession } from "../runtime/session.js";

export type { ToolCallInfo };

/** Follows one call through its life; a front end maps these onto its own updates. */
export interface ToolCallObserver {
  /** The call is known (a model may still be streaming its arguments; then `args` is undefined). */
  pending(info: ToolCallInfo): void | Promise<void>;
  /** The arguments of an announced call are complete: its title and locations are now known. */
  describe?(info: ToolCallInfo): void | Promise<void>;
  /** Events the tool emits (diff, plan, terminal, live output), in order, before and during the run. */
  event(callId: string, event: ToolEvent): void | Promise<void>;
  running(callId: string): void | Promise<void>;
  /** The call ended; `display` is what the tool says to show of a successful result. */
  done(callId: string, envelope: Envelope, info: ToolCallInfo, display?: ToolDisplay): void | Promise<void>;
}

export interface ToolRunContext {
  registry: ToolRegistry;
  session: RuntimeSession;
  manifest?: RequirementSet;
  hostCapabilities?: ReadonlySet<string>;
  host?: HostServices;
  authorize: Authorize;
  signal: AbortSignal;
}

/** Reports a call a model has started to stream, before its arguments are complete. */
export async function announceToolCall(
  registry: ToolRegistry,
  call: { callId: string; toolId: string },
  observer: ToolCallObserver,
): Promise<ToolCallInfo> {
  const kind: ToolKind = registry.get(call.toolId)?.kind ?? "other";
  const info: ToolCallInfo = { ...call, kind, title: call.toolId, locations: [], args: undefined };
  await observer.pending(info);
  return info;
}

export interface ToolCallInput {
  callId: string;
  toolId: string;
  args: unknown;
  /** Already reported with `announceToolCall`: the observer gets `describe` instead of `pending`. */
  announced?: boolean;
  /** The arguments could not be read (a model's malformed JSON): the call fails with this text. */
  inputError?: string;
}

/**
 * Runs one call and reports each step: prepared once (lookup, validation, title), announced,
 * then run (preview → approval → execute). Model calls and slash commands both come through
 * here, so they are validated, approved and reported the same way.
 */
export async function runToolCall(ctx: ToolRunContext, call: ToolCallInput, observer: ToolCallObserver): Promise<Envelope> {
  // Events may arrive from synchronous tool code: chain them so the front end sees them in order.
  let chain: Promise<void> = Promise.resolve();
  const queue = (fn: () => void | Promise<void>) => {
    chain = chain.then(fn).catch((err: unknown) => {
      process.stderr.write(`toolhost: observer failed: ${String(err)}\n`);
    });
    return chain;
  };
  const report = (info: ToolCallInfo) => (call.announced ? observer.describe?.(info) : observer.pending(info));
  const finish = async (envelope: Envelope, info: ToolCallInfo, display?: ToolDisplay) => {
    await chain;
    await observer.done(call.callId, envelope, info, display);
    return envelope;
  };

  if (call.inputError) {
    const info: ToolCallInfo = {
      callId: call.callId,
      toolId: call.toolId,
      kind: ctx.registry.get(call.toolId)?.kind ?? "other",
      title: call.toolId,
      locations: [],
      args: call.args,
    };
    await report(info);
    return finish(errorEnvelope("invalid_arguments", call.inputError, 0), info);
  }
  const prepared = prepareCall(ctx.registry, call.toolId, call.args, {
    session: ctx.session,
    callId: call.callId,
    signal: ctx.signal,
    manifest: ctx.manifest,
    hostCapabilities: ctx.hostCapabilities,
    host: ctx.host,
    emit: (event) => void queue(() => observer.event(call.callId, event)),
  });
  if (!prepared.ok) {
    await report(prepared.info);
    return finish(prepared.envelope, prepared.info);
  }
  const { info } = prepared.call;
  await report(info);
  if (ctx.signal.aborted) {
    discardPreparedCall(prepared.call);
    return finish(errorEnvelope("aborted", "The call was cancelled before it started", 0), info);
  }
  const envelope = await runPreparedCall(prepared.call, async (request, signal) => {
    await chain; // the preview's diff reaches the editor before the approval request
    const decision = await ctx.authorize(request, signal);
    if (decision.outcome === "allow") await queue(() => observer.running(call.callId));
    return decision;
  });
  const { tool, args } = prepared.call;
  return finish(envelope, info, envelope.type === "output" ? displayResult(tool, envelope.data, args) : undefined);
}
