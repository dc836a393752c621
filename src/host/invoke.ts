import { randomUUID } from "node:crypto";
import type { ToolContext, ToolEvent, ToolPreview } from "../tool/context.js";
import { DEFAULT_OUTPUT_LIMIT, type AnyTool, type ToolLocation } from "../tool/define.js";
import { errorEnvelope, isSelfTruncated, type Envelope } from "../tool/envelope.js";
import { isToolError, type ErrorCode } from "../tool/errors.js";
import { kindEffects, type ToolKind } from "../tool/kinds.js";
import { unionRequirements, type RequirementSet } from "../tool/requirements.js";
import type { HostServices } from "../tool/services.js";
import { completeTargets, defaultTargets, NO_TARGETS, type CallTargets } from "../tool/targets.js";
import { applyOutputLimit, utf8Head } from "../tool/truncate.js";
import { allowAll, type Authorize, type ToolCallRequest } from "../policy/call.js";
import { createToolContext } from "../runtime/context.js";
import { ScopeError } from "../runtime/scope.js";
import type { RuntimeSession } from "../runtime/session.js";
import type { CallGrant } from "../runtime/shell/scoped.js";
import { notJsonData, thrownText, unknownKeysError, formatValidationError } from "./call-checks.js";
import { CallTimeout, callLimits, untilAborted, type CallLimits } from "./call-limits.js";
import type { ToolRegistry } from "./registry.js";

// One call, whoever makes it (model, slash command, CLI), in two steps:
//   prepare: one lookup, one validation, the title and locations, the call's context;
//   run:     targets + preview → authorise → execute → envelope (duration, truncation → sidecar).
// Neither throws: every failure is an error envelope.

export interface CallOptions {
  session: RuntimeSession;
  callId?: string;
  signal?: AbortSignal;
  /** The agent manifest's requirements, unioned with the tool's (RFC effective scope). */
  manifest?: RequirementSet;
  /** Capability names the host provides (for `requires.capabilities`). */
  hostCapabilities?: ReadonlySet<string>;
  /** The agent's services, reached by tools through `ctx.host`. */
  host?: HostServices;
  emit?: (event: ToolEvent) => void;
  /** How long an execute may keep running after its call was aborted before it is abandoned. */
  abortGraceMs?: number;
}

/** What the editor needs to show a call before it runs. */
export interface ToolCallInfo {
  callId: string;
  toolId: string;
  kind: ToolKind;
  title: string;
  locations: ToolLocation[];
  /** The arguments as given (undefined while a model is still streaming them). */
  args: unknown;
  /** A subagent's call: the call (task) that started the subagent. */
  parentCallId?: string;
  /** The tool's side-effect metadata (its own, or its kind's defaults); unknown for a tool that does not exist. */
  sideEffect?: boolean;
  idempotent?: boolean;
}

/** A looked-up, validated call with its context: what the runner, the editor and the approval all use. */
export interface PreparedCall extends ToolCallRequest {
  readonly info: ToolCallInfo;
  readonly ctx: ToolContext;
  /** The preview's plan, handed to execute as `ctx.preview`. */
  previewResult?: ToolPreview;
  /** Set once targets and preview are known. */
  examined: boolean;
  readonly options: CallOptions;
  readonly limits: CallLimits;
  readonly elapsed: () => number;
  /** What the policy granted (running outside the sandbox), set once the call is approved; the call's shell reads it. */
  readonly grant: CallGrant;
}

export type Prepared = { ok: true; call: PreparedCall } | { ok: false; envelope: Envelope; info: ToolCallInfo };

/** Title and locations from the tool's own hooks; a hook that throws costs only the nicety. */
function describe(tool: AnyTool, callId: string, args: Record<string, unknown>, workspace: string): ToolCallInfo {
  const effects = kindEffects(tool.kind);
  const info: ToolCallInfo = {
    callId,
    toolId: tool.id,
    kind: tool.kind,
    title: tool.id,
    locations: [],
    args,
    sideEffect: tool.sideEffect ?? effects.sideEffect,
    idempotent: tool.idempotent ?? (tool.sideEffect === false ? true : effects.idempotent),
  };
  try {
    info.title = tool.title?.(args) ?? tool.id;
    info.locations = tool.locations?.(args, { workspace }) ?? [];
  } catch {
    // keep the plain title
  }
  return info;
}

/**
 * Step one: look the tool up, validate the arguments, describe the call and build its context.
 * Synchronous, so the editor can show the call's title before anything slow happens.
 */
export function prepareCall(registry: ToolRegistry, id: string, rawArgs: unknown, options: CallOptions): Prepared {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const callId = options.callId ?? randomUUID();
  const tool = registry.get(id);
  const plain: ToolCallInfo = { callId, toolId: id, kind: tool?.kind ?? "other", title: id, locations: [], args: rawArgs };
  const fail = (code: ErrorCode, text: string): Prepared => ({ ok: false, envelope: errorEnvelope(code, text, elapsed()), info: plain });
  if (!tool) {
    const why = registry.whyAbsent(id) ?? `There is no tool "${id}".`;
    return fail("unknown_tool", `${why} Available tools: ${registry.ids().join(", ")}`);
  }

  const unknownKeys = unknownKeysError(tool, rawArgs);
  if (unknownKeys) return fail("invalid_arguments", unknownKeys);
  const parsed = tool.parameters.safeParse(rawArgs ?? {});
  if (!parsed.success) return fail("invalid_arguments", formatValidationError(id, parsed.error));
  const args = parsed.data as Record<string, unknown>;
  const info = describe(tool, callId, args, options.session.workspace);
  const failDescribed = (code: ErrorCode, text: string): Prepared => ({ ...(fail(code, text) as { ok: false; envelope: Envelope }), info });

  // Capability check: the tool's requirements must compile and be providable by this host.
  const missing = (tool.requires.capabilities ?? []).filter((c) => !options.hostCapabilities?.has(c));
  if (missing.length) {
    return failDescribed("capability_denied", `The ${id} tool requires capabilities this host does not provide: ${missing.join(", ")}`);
  }
  const limits = callLimits(id, options.signal ?? new AbortController().signal, tool.timeoutMs);
  const grant: CallGrant = { unsandboxed: false };
  let ctx: ToolContext;
  try {
    ctx = createToolContext({
      session: options.session,
      toolId: id,
      callId,
      requires: unionRequirements(options.manifest, tool.requires),
      signal: limits.signal,
      emit: options.emit,
      host: options.host,
      grant,
    });
  } catch (err) {
    limits.dispose();
    if (err instanceof ScopeError) return failDescribed("capability_denied", `The ${id} tool's requirements are invalid: ${err.message}`);
    return failDescribed("execution_failed", `The ${id} tool could not be set up: ${err instanceof Error ? err.message : String(err)}`);
  }
  const call: PreparedCall = {
    callId,
    sessionId: options.session.id,
    tool,
    args,
    title: info.title,
    locations: info.locations,
    targets: NO_TARGETS,
    preview: [],
    examined: false,
    info,
    ctx,
    options,
    limits,
    elapsed,
    grant,
  };
  return { ok: true, call };
}

/** Any failure of a call as an envelope: the tool's own errors keep their codes. */
function failureEnvelope(call: PreparedCall, err: unknown, signal: AbortSignal): Envelope {
  const id = call.tool.id;
  const fail = (code: ErrorCode, text: string) => errorEnvelope(code, text, call.elapsed());
  if (err instanceof CallTimeout) return fail("timeout", err.message);
  if (isToolError(err)) return fail(err.code, err.message);
  if (err instanceof ScopeError) return fail("capability_denied", `The ${id} tool's requirements are invalid: ${err.message}`);
  if (signal.aborted) return fail("aborted", "The call was cancelled");
  const message = thrownText(err);
  process.stderr.write(`toolhost: ${id} failed: ${err instanceof Error ? err.stack : message}\n`);
  return fail("execution_failed", `The ${id} tool failed: ${message}`);
}

/** An error text over the tool's output cap keeps its head; the whole text goes to a sidecar. */
async function capErrorText(call: PreparedCall, envelope: Envelope): Promise<Envelope> {
  if (envelope.type !== "error") return envelope;
  const maxBytes = call.tool.output?.maxBytes ?? DEFAULT_OUTPUT_LIMIT.maxBytes ?? 50 * 1024;
  const total = Buffer.byteLength(envelope.error_text, "utf8");
  if (total <= maxBytes) return envelope;
  const head = utf8Head(envelope.error_text, maxBytes);
  const kept = Buffer.byteLength(head, "utf8");
  let path: string | undefined;
  try {
    path = await call.options.session.sidecars.writeText(call.tool.id, envelope.error_text);
  } catch {
    // the head alone still says what went wrong
  }
  const where = path ? `the full text is in ${path}; read it with the read tool (offset/limit)` : "the rest was dropped";
  return {
    ...envelope,
    error_text: `${head}\n… [error text truncated at ${kept} of ${total} bytes; ${where}]`,
    metadata: { ...envelope.metadata, truncated: true, ...(path ? { output_path: path } : {}) },
  };
}

/** What the call touches and what it would do: the tool's targets and preview hooks (read-only). */
export async function examine(call: PreparedCall): Promise<void> {
  if (call.examined) return;
  const { tool, args, ctx } = call;
  const targets: CallTargets = tool.targets ? completeTargets(await tool.targets(args, ctx)) : await defaultTargets(tool, args, ctx);
  call.targets = targets;
  if (tool.preview) {
    const returned = await tool.preview(args, ctx);
    const preview: ToolPreview = Array.isArray(returned) ? { events: returned } : returned;
    call.previewResult = preview;
    call.preview = preview.events;
    for (const event of preview.events) call.options.emit?.(event);
  }
  call.examined = true;
}

/**
 * Step two: targets and preview (the diff reaches the editor before anyone is asked), then the
 * policy, then execute, bounded by the tool's timeout. Always ends the call's limits.
 */
export async function runPreparedCall(call: PreparedCall, authorize: Authorize = allowAll): Promise<Envelope> {
  return capErrorText(call, await runSteps(call, authorize));
}

async function runSteps(call: PreparedCall, authorize: Authorize): Promise<Envelope> {
  const signal = call.options.signal ?? new AbortController().signal;
  const fail = (code: ErrorCode, text: string) => errorEnvelope(code, text, call.elapsed());
  try {
    await examine(call);
    const decision = await authorize(call, signal);
    if (decision.outcome === "deny") return fail(decision.code ?? "rejected", decision.reason);
    call.grant.unsandboxed = decision.unsandboxed === true;
    if (signal.aborted) return fail("aborted", "The call was cancelled before it started");

    const { tool, args } = call;
    const ctx: ToolContext = call.previewResult ? { ...call.ctx, preview: call.previewResult } : call.ctx;
    call.limits.start();
    const result = await call.limits.race(
      untilAborted(Promise.resolve(tool.execute(args, ctx)), signal, call.options.abortGraceMs ?? 2000),
    );
    const problem = notJsonData(isSelfTruncated(result) ? result.data : result);
    if (problem) {
      return fail(
        "execution_failed",
        `The ${tool.id} tool returned ${problem}, which is not JSON data: a tool must return plain objects, arrays, strings, numbers, booleans or null. This is a defect in the tool, so retrying will not help; tell the user.`,
      );
    }
    if (isSelfTruncated(result)) {
      const metadata = { duration_ms: call.elapsed(), ...(result.truncated ? { truncated: true, output_path: result.output_path } : {}) };
      return { type: "output", data: result.data, metadata };
    }
    const capped = await applyOutputLimit(result, tool.output ?? DEFAULT_OUTPUT_LIMIT, (text) =>
      call.options.session.sidecars.writeText(tool.id, text),
    );
    const metadata = { duration_ms: call.elapsed(), ...(capped.truncated ? { truncated: true, output_path: capped.output_path } : {}) };
    return { type: "output", data: capped.data, metadata };
  } catch (err) {
    return failureEnvelope(call, err, signal);
  } finally {
    call.limits.dispose();
  }
}

/** Ends a prepared call that will not run (its turn was cancelled before it started). */
export function discardPreparedCall(call: PreparedCall): void {
  call.limits.dispose();
}

export type InvokeOptions = CallOptions & { authorize?: Authorize };

/** prepare + run in one: for callers that need no announcement between the two (tests, embedders). */
export async function invoke(registry: ToolRegistry, id: string, rawArgs: unknown, options: InvokeOptions): Promise<Envelope> {
  const prepared = prepareCall(registry, id, rawArgs, options);
  if (!prepared.ok) return prepared.envelope;
  return runPreparedCall(prepared.call, options.authorize);
}
