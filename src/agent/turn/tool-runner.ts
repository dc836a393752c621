import type { ToolEvent } from "../../tool/context.js";
import type { ToolDisplay } from "../../tool/define.js";
import { displayResult } from "../../tool/display.js";
import { errorEnvelope, type Envelope } from "../../tool/envelope.js";
import type { ToolKind } from "../../tool/kinds.js";
import type { RequirementSet } from "../../tool/requirements.js";
import type { HostServices } from "../../tool/services.js";
import type { SessionAuthorize } from "../../policy/authorizer.js";
import type { Decision } from "../../policy/call.js";
import { discardPreparedCall, prepareCall, runPreparedCall, type CallOptions, type ToolCallInfo } from "../../host/invoke.js";
import type { HookOutcome, HookTool } from "../../host/hooks/events.js";
import { hookPolicyLayers } from "../../host/hooks/policy-layer.js";
import type { ToolRegistry } from "../../host/registry.js";
import type { RuntimeSession } from "../../runtime/session.js";
import { callTitle, shownTitle } from "./call-title.js";

export type { ToolCallInfo };

/** Follows one call through its life; a front end maps these onto its own updates. */
export interface ToolCallObserver {
  /** The call is known, with its title, kind and locations (a model's call once its arguments are complete). */
  pending(info: ToolCallInfo): void | Promise<void>;
  /** An announced call is prepared: its validated arguments, title and locations. */
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
  authorize: SessionAuthorize;
  signal: AbortSignal;
  /** Where each call keeps its own abort while it runs (a front end cancels one call through it); none: calls stop with the turn only. */
  calls?: Map<string, AbortController>;
  /** The session's tool_call and tool_result hooks (agent/session/hooks.ts); none: no hooks run. */
  hooks?: CallHooks;
  /**
   * Awaited before a call that may change something runs (approved, and its tool not read-only:
   * `sideEffect !== false`): the session's checkpoint of the workspace before the turn's first change.
   */
  beforeChange?: () => Promise<void>;
  /** The session's language servers around file changes (agent/session/lsp.ts); none: no diagnostics. */
  diagnostics?: EditDiagnostics;
}

/** Diagnostics around the calls that change files: what an edit broke, said in its result. */
export interface EditDiagnostics {
  /** Files a call read: their language servers start and open them in the background. */
  touched(paths: readonly string[]): void;
  /** Before a call changes `paths` (their text read now); `after` resolves, bounded, to the block of new problems. */
  beginEdit(paths: readonly string[]): Promise<{ after(): Promise<string | undefined> } | undefined>;
}

/** The kinds whose file targets a call changes. */
const CHANGING_KINDS: ReadonlySet<ToolKind> = new Set(["edit", "delete", "move"]);

/** A result with the new problems after it: a string's text gets them as a block, an object a `problems` field. */
function withProblems(envelope: Envelope, block: string): Envelope {
  if (envelope.type !== "output") return envelope;
  const { data } = envelope;
  if (typeof data === "string") return { ...envelope, data: `${data}\n\n${block}` };
  if (typeof data === "object" && data !== null && !Array.isArray(data)) return { ...envelope, data: { ...data, problems: block } };
  return { ...envelope, data: { result: data, problems: block } };
}

/**
 * Reports a model's call once its arguments are complete, with the title and locations its tool
 * gives them (clients that keep a call's first title show that one), before it is prepared and run.
 */
export async function announceToolCall(
  registry: ToolRegistry,
  call: { callId: string; toolId: string; args: unknown },
  observer: ToolCallObserver,
  workspace: string,
): Promise<ToolCallInfo> {
  const kind: ToolKind = registry.get(call.toolId)?.kind ?? "other";
  const info: ToolCallInfo = { ...call, kind, ...callTitle(registry, call.toolId, call.args, workspace) };
  await observer.pending(info);
  return info;
}

/** A call as its hooks see it. */
export interface HookedCall {
  callId: string;
  tool: HookTool;
  args: Record<string, unknown>;
}

/** The hooks around each call: undefined when none listens. */
export interface CallHooks {
  toolCall(call: HookedCall, signal: AbortSignal): Promise<HookOutcome<"tool_call"> | undefined>;
  toolResult(call: HookedCall, result: Envelope, signal: AbortSignal): Promise<HookOutcome<"tool_result"> | undefined>;
  /** A call's hook said `"continue": false` since the last look: why (the turn ends after the step's calls). */
  takeHalt(): string | undefined;
}

/**
 * What the model sees of a result the tool_result hooks changed (the editor shows the real one):
 * their replacement, and their notes (and the tool_call hooks' context) after it.
 */
function modelEnvelope(envelope: Envelope, replaced: HookOutcome<"tool_result"> | undefined, context: readonly string[]): Envelope {
  const notes = [...context, ...(replaced?.annotation ? [replaced.annotation] : [])];
  let out: Envelope = envelope;
  if (replaced && "replaceModelResult" in replaced)
    out = { type: "output", data: replaced.replaceModelResult ?? null, metadata: { duration_ms: envelope.metadata.duration_ms } };
  if (!notes.length) return out;
  const note = `[hook] ${notes.join("\n\n")}`;
  if (out.type === "error") return { ...out, error_text: `${out.error_text}\n\n${note}` };
  return { ...out, data: typeof out.data === "string" ? `${out.data}\n\n${note}` : { result: out.data, hook_note: note } };
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
  // The call stops with the turn, or alone (ctx.calls: the session's cancel of one call).
  const own = new AbortController();
  ctx.calls?.set(call.callId, own);
  try {
    return await runOneCall(ctx, call, observer, AbortSignal.any([ctx.signal, own.signal]));
  } finally {
    if (ctx.calls?.get(call.callId) === own) ctx.calls.delete(call.callId);
  }
}

/** runToolCall's body: `signal` is the call's own (the turn's, or this call's cancel). */
async function runOneCall(ctx: ToolRunContext, call: ToolCallInput, observer: ToolCallObserver, signal: AbortSignal): Promise<Envelope> {
  // Events may arrive from synchronous tool code: chain them so the front end sees them in order.
  let chain: Promise<void> = Promise.resolve();
  const queue = (fn: () => void | Promise<void>) => {
    chain = chain.then(fn).catch((err: unknown) => {
      process.stderr.write(`toolhost: observer failed: ${String(err)}\n`);
    });
    return chain;
  };
  const report = (prepared: ToolCallInfo) => {
    // A tool without a title hook is shown by its label, not its bare id.
    const info = { ...prepared, title: shownTitle(prepared.title, prepared.toolId) };
    return call.announced ? observer.describe?.(info) : observer.pending(info);
  };
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
  // The preview's events (an edit's diff) wait for the policy: a call it refuses shows no preview,
  // an approval request carries the diff itself, and an allowed call shows it once, as it runs.
  let held: ToolEvent[] | null = [];
  const options: CallOptions = {
    session: ctx.session,
    callId: call.callId,
    signal,
    manifest: ctx.manifest,
    hostCapabilities: ctx.hostCapabilities,
    host: ctx.host,
    emit: (event) => (held ? void held.push(event) : void queue(() => observer.event(call.callId, event))),
  };
  let prepared = prepareCall(ctx.registry, call.toolId, call.args, options);
  // The tool_call hooks see the validated call; a rewrite is validated again (and not shown to them again).
  const hooked = (c: { tool: HookTool; args: Record<string, unknown> }): HookedCall => ({
    callId: call.callId,
    tool: { id: c.tool.id, kind: c.tool.kind },
    args: c.args,
  });
  const verdict = prepared.ok && !ctx.signal.aborted ? await ctx.hooks?.toolCall(hooked(prepared.call), ctx.signal) : undefined;
  if (prepared.ok && verdict?.updatedArgs && verdict.decision !== "deny") {
    discardPreparedCall(prepared.call);
    prepared = prepareCall(ctx.registry, call.toolId, verdict.updatedArgs, options);
    if (!prepared.ok && prepared.envelope.type === "error") {
      const text = `The hook ${verdict.updatedBy ?? ""} rewrote the call's arguments into ones that do not validate: ${prepared.envelope.error_text}`;
      prepared = { ...prepared, envelope: errorEnvelope("invalid_arguments", text, 0) };
    }
  }
  if (!prepared.ok) {
    await report(prepared.info);
    return finish(prepared.envelope, prepared.info);
  }
  const { info } = prepared.call;
  await report(info);
  if (signal.aborted) {
    discardPreparedCall(prepared.call);
    return finish(errorEnvelope("aborted", "The call was cancelled before it started", 0), info);
  }
  let edit: Awaited<ReturnType<EditDiagnostics["beginEdit"]>>;
  let envelope = await runPreparedCall(prepared.call, async (request, signal) => {
    let decision: Decision | undefined;
    try {
      decision = await ctx.authorize(request, signal, verdict ? { layers: hookPolicyLayers(verdict) } : undefined);
    } finally {
      // From here on (execute's events) they go straight through; the preview only for a call that runs.
      const preview = held ?? [];
      held = null;
      if (decision?.outcome === "allow") for (const event of preview) void queue(() => observer.event(call.callId, event));
    }
    if (decision.outcome === "allow") {
      // After the approval, before execute (and its timeout): the workspace as the call finds it.
      if (info.sideEffect !== false && ctx.beforeChange && !signal.aborted) await ctx.beforeChange();
      if (ctx.diagnostics && CHANGING_KINDS.has(info.kind) && request.targets.paths.length && !signal.aborted)
        edit = await ctx.diagnostics.beginEdit(request.targets.paths).catch(() => undefined);
      await queue(() => observer.running(call.callId));
    }
    return decision;
  });
  const { tool, args, targets } = prepared.call;
  let problems: string | undefined;
  if (envelope.type === "output") {
    if (edit) problems = await edit.after().catch(() => undefined);
    else if (!CHANGING_KINDS.has(info.kind) && targets.paths.length) ctx.diagnostics?.touched(targets.paths);
  }
  // The editor's view of the result as the tool shows it, with the problems as a note after it.
  const display = envelope.type === "output" ? displayResult(tool, envelope.data, args) : undefined;
  if (display && problems) display.notes = [...(display.notes ?? []), problems];
  if (problems) envelope = withProblems(envelope, problems);
  const seen = ctx.hooks && !ctx.signal.aborted ? await ctx.hooks.toolResult(hooked(prepared.call), envelope, ctx.signal) : undefined;
  await finish(envelope, info, display);
  return modelEnvelope(envelope, seen, verdict?.addContext ?? []);
}
