import { randomUUID } from "node:crypto";
import * as z from "zod";
import type { ToolContext, ToolEvent, ToolPreview } from "../tool/context.js";
import { DEFAULT_OUTPUT_LIMIT, type AnyTool, type ToolLocation } from "../tool/define.js";
import { errorEnvelope, isSelfTruncated, type Envelope } from "../tool/envelope.js";
import { isToolError, type ErrorCode } from "../tool/errors.js";
import type { ToolKind } from "../tool/kinds.js";
import { unionRequirements, type RequirementSet } from "../tool/requirements.js";
import type { HostServices } from "../tool/services.js";
import { completeTargets, defaultTargets, NO_TARGETS, type CallTargets } from "../tool/targets.js";
import { applyOutputLimit, utf8Head } from "../tool/truncate.js";
import { allowAll, type Authorize, type ToolCallRequest } from "../policy/call.js";
import { createToolContext } from "../runtime/context.js";
import { ScopeError } from "../runtime/scope.js";
import type { RuntimeSession } from "../runtime/session.js";
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
}

export type Prepared = { ok: true; call: PreparedCall } | { ok: false; envelope: Envelope; info: ToolCallInfo };

export function formatValidationError(toolId: string, error: z.ZodError): string {
  return `The ${toolId} tool was called with invalid arguments:\n${z.prettifyError(error)}\nRewrite the arguments so they satisfy the tool's schema.`;
}

/** Edit distance, for "did you mean": small strings only (argument names). */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

/**
 * Keys the tool's published schema does not name. A schema that allows more (`additionalProperties`
 * true or a schema, `patternProperties`) or has no `properties` accepts anything; zod's default
 * objects publish neither and would drop the key without a word.
 */
function unknownKeysError(tool: AnyTool, rawArgs: unknown): string | undefined {
  const schema = tool.inputSchema;
  const properties = schema.properties;
  if (typeof properties !== "object" || properties === null || Array.isArray(properties)) return undefined;
  if ((schema.additionalProperties !== undefined && schema.additionalProperties !== false) || schema.patternProperties !== undefined) {
    return undefined;
  }
  if (typeof rawArgs !== "object" || rawArgs === null || Array.isArray(rawArgs)) return undefined;
  const valid = Object.keys(properties);
  const unknown = Object.keys(rawArgs).filter((key) => !Object.hasOwn(properties, key));
  if (!unknown.length) return undefined;
  const named = unknown.map((key) => {
    const near = valid
      .map((name) => ({ name, d: distance(key.toLowerCase(), name.toLowerCase()) }))
      .filter(({ name, d }) => d <= Math.max(1, Math.floor(Math.max(key.length, name.length) / 3)))
      .sort((x, y) => x.d - y.d)[0];
    return near ? `${JSON.stringify(key)} (did you mean ${JSON.stringify(near.name)}?)` : JSON.stringify(key);
  });
  const list = valid.length
    ? `Its arguments are: ${valid.join(", ")}. Call it again with only those keys.`
    : "It takes no arguments: call it with {}.";
  return `The ${tool.id} tool has no argument${unknown.length > 1 ? "s" : ""} ${named.join(", ")}. ${list}`;
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("The call was cancelled");
}

/** Resolves with `work`, or rejects once `signal` aborts and `work` has not settled within `graceMs`. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal, graceMs: number): Promise<T> {
  if (signal.aborted && graceMs === 0) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      timer = setTimeout(() => reject(abortError(signal)), graceMs);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    if (signal.aborted) onAbort();
    work.then(resolve, reject).finally(() => {
      signal.removeEventListener("abort", onAbort);
      if (timer) clearTimeout(timer);
    });
  });
}

/** The tool's own time limit ran out: the call is abandoned (its signal is aborted). */
class CallTimeout extends Error {
  constructor(toolId: string, ms: number) {
    super(`The ${toolId} tool did not finish within ${ms >= 1000 ? `${ms / 1000} s` : `${ms} ms`} and was abandoned`);
    this.name = "CallTimeout";
  }
}

interface CallLimits {
  signal: AbortSignal;
  start(): void;
  race<T>(work: Promise<T>): Promise<T>;
  dispose(): void;
}

/**
 * A signal for one call: aborted when the caller's is, or when the tool's timeout runs out.
 * `expired` rejects at the timeout, so a tool that ignores its signal is abandoned at once.
 */
function callLimits(toolId: string, outer: AbortSignal, timeoutMs: number | undefined): CallLimits {
  const controller = new AbortController();
  const forward = () => controller.abort(outer.reason);
  if (outer.aborted) forward();
  else outer.addEventListener("abort", forward, { once: true });
  let timer: NodeJS.Timeout | undefined;
  let expired: Promise<never> | null = null;
  const start = () => {
    if (timeoutMs === undefined) return;
    expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const error = new CallTimeout(toolId, timeoutMs);
        // Reject first, so the envelope says timeout even if the tool throws on its abort.
        reject(error);
        controller.abort(error);
      }, timeoutMs);
    });
  };
  const race = <T>(work: Promise<T>): Promise<T> => (expired ? Promise.race([work, expired]) : work);
  const dispose = () => {
    outer.removeEventListener("abort", forward);
    if (timer) clearTimeout(timer);
  };
  return { signal: controller.signal, start, race, dispose };
}

/** Title and locations from the tool's own hooks; a hook that throws costs only the nicety. */
function describe(tool: AnyTool, callId: string, args: Record<string, unknown>, workspace: string): ToolCallInfo {
  const info: ToolCallInfo = { callId, toolId: tool.id, kind: tool.kind, title: tool.id, locations: [], args };
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
  };
  return { ok: true, call };
}

/** A thrown value as text: an Error's message (or its name), a string as is, anything else as JSON. */
function thrownText(err: unknown): string {
  if (err instanceof Error) return err.message || `${err.name} (no message)`;
  if (typeof err === "string") return err;
  let json: string | undefined;
  try {
    json = JSON.stringify(err);
  } catch {
    // circular or a bigint: fall back to String()
  }
  return `it threw a non-Error value: ${json ?? String(err)}`;
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

/** What a value is, for a message: `a Map`, `a function`, `undefined`. */
function kindOf(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "object" && value !== null) {
    const name = Object.getPrototypeOf(value)?.constructor?.name;
    return name ? `a ${name}` : "an object with a custom prototype";
  }
  return typeof value === "number" ? `the number ${value}` : `a ${typeof value}`;
}

function isPlainObjectValue(value: object): boolean {
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/**
 * Why a result is not JSON data, or undefined when it is: null, booleans, finite numbers,
 * strings, arrays and plain objects of those. An object's field may be undefined (JSON leaves it
 * out); anything else (functions, Maps, class instances, bigints, cycles) would reach the model
 * changed or not at all.
 */
function notJsonData(value: unknown): string | undefined {
  const seen = new Set<object>();
  const walk = (item: unknown, at: string): string | undefined => {
    const where = at ? ` at ${at}` : "";
    if (item === null || typeof item === "string" || typeof item === "boolean") return undefined;
    if (typeof item === "number") return Number.isFinite(item) ? undefined : `${kindOf(item)}${where}`;
    if (typeof item !== "object") return `${kindOf(item)}${where}`;
    if (seen.has(item)) return `a circular reference${where}`;
    const array = Array.isArray(item);
    if (!array && !isPlainObjectValue(item)) return `${kindOf(item)}${where}`;
    seen.add(item);
    if (array) {
      for (let i = 0; i < item.length; i++) {
        const problem = walk(item[i], `${at}[${i}]`);
        if (problem) return problem;
      }
    } else {
      for (const [key, field] of Object.entries(item)) {
        if (field === undefined) continue;
        const problem = walk(field, /^[A-Za-z_$][\w$]*$/.test(key) ? (at ? `${at}.${key}` : key) : `${at}[${JSON.stringify(key)}]`);
        if (problem) return problem;
      }
    }
    seen.delete(item);
    return undefined;
  };
  return walk(value, "");
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
async function examine(call: PreparedCall): Promise<void> {
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
