import type { ToolEvent } from "../tool/context.js";
import type { AnyTool, ToolLocation } from "../tool/define.js";
import { errorEnvelope, type Envelope } from "../tool/envelope.js";
import type { ToolKind } from "../tool/kinds.js";
import type { RequirementSet } from "../tool/requirements.js";
import { invoke, type Authorize } from "../host/invoke.js";
import type { ToolRegistry } from "../host/registry.js";
import type { RuntimeSession } from "../runtime/session.js";

/** What the editor needs to show a call before it runs. */
export interface ToolCallInfo {
  callId: string;
  toolId: string;
  kind: ToolKind;
  title: string;
  locations: ToolLocation[];
  args: unknown;
}

/** Follows one call through its life; the ACP adapter maps these onto session/update. */
export interface ToolCallObserver {
  /** The call is known (a model may still be streaming its arguments; then `args` is undefined). */
  pending(info: ToolCallInfo): void | Promise<void>;
  /** The arguments of an announced call are complete: its title and locations are now known. */
  describe?(info: ToolCallInfo): void | Promise<void>;
  /** Events the tool emits (diff, plan, terminal, live output), in order, before and during the run. */
  event(callId: string, event: ToolEvent): void | Promise<void>;
  running(callId: string): void | Promise<void>;
  done(callId: string, envelope: Envelope, info: ToolCallInfo): void | Promise<void>;
}

export interface ToolRunContext {
  registry: ToolRegistry;
  session: RuntimeSession;
  manifest?: RequirementSet;
  hostCapabilities?: ReadonlySet<string>;
  authorize: Authorize;
  signal: AbortSignal;
}

/** Title and locations of a call, from the tool's own hooks when its arguments are valid. */
export function describeCall(tool: AnyTool | undefined, toolId: string, args: unknown, workspace: string) {
  const fallback = { kind: (tool?.kind ?? "other") as ToolKind, title: toolId, locations: [] as ToolLocation[] };
  if (!tool) return fallback;
  const parsed = tool.parameters.safeParse(args ?? {});
  if (!parsed.success) return fallback;
  try {
    return {
      kind: tool.kind,
      title: tool.title?.(parsed.data) ?? toolId,
      locations: tool.locations?.(parsed.data, { workspace }) ?? [],
    };
  } catch {
    return fallback;
  }
}

/** Reports a call a model has started to stream, before its arguments are complete. */
export async function announceToolCall(
  registry: ToolRegistry,
  call: { callId: string; toolId: string },
  observer: ToolCallObserver,
): Promise<ToolCallInfo> {
  const kind = (registry.get(call.toolId)?.kind ?? "other") as ToolKind;
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
 * Runs one call through `invoke` and reports each step. Model calls and slash commands both
 * come through here, so they are validated, approved and reported the same way.
 */
export async function runToolCall(
  ctx: ToolRunContext,
  call: ToolCallInput,
  observer: ToolCallObserver,
): Promise<Envelope> {
  const tool = ctx.registry.get(call.toolId);
  const info: ToolCallInfo = {
    callId: call.callId,
    toolId: call.toolId,
    args: call.args,
    ...describeCall(tool, call.toolId, call.args, ctx.session.workspace),
  };
  if (call.announced) await observer.describe?.(info);
  else await observer.pending(info);
  const early = call.inputError
    ? errorEnvelope("invalid_arguments", call.inputError, 0)
    : ctx.signal.aborted
      ? errorEnvelope("aborted", "The call was cancelled before it started", 0)
      : undefined;
  if (early) {
    await observer.done(call.callId, early, info);
    return early;
  }
  // Events may arrive from synchronous tool code: chain them so the editor sees them in order.
  let chain: Promise<void> = Promise.resolve();
  const queue = (fn: () => void | Promise<void>) => {
    chain = chain.then(fn).catch((err: unknown) => {
      process.stderr.write(`toolhost: observer failed: ${String(err)}\n`);
    });
    return chain;
  };
  const envelope = await invoke(ctx.registry, call.toolId, call.args, {
    session: ctx.session,
    callId: call.callId,
    signal: ctx.signal,
    manifest: ctx.manifest,
    hostCapabilities: ctx.hostCapabilities,
    emit: (event) => void queue(() => observer.event(call.callId, event)),
    authorize: async (request, signal) => {
      await chain; // the preview's diff reaches the editor before the approval request
      const decision = await ctx.authorize(request, signal);
      if (decision.outcome === "allow") await queue(() => observer.running(call.callId));
      return decision;
    },
  });
  await chain;
  await observer.done(call.callId, envelope, info);
  return envelope;
}
