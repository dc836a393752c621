import { randomUUID } from "node:crypto";
import * as z from "zod";
import type { ToolEvent } from "../tool/context.js";
import { DEFAULT_OUTPUT_LIMIT, type AnyTool } from "../tool/define.js";
import { errorEnvelope, isSelfTruncated, type Envelope } from "../tool/envelope.js";
import { isToolError, type ErrorCode } from "../tool/errors.js";
import { unionRequirements, type RequirementSet } from "../tool/requirements.js";
import { applyOutputLimit } from "../tool/truncate.js";
import { createToolContext } from "../runtime/context.js";
import { ScopeError } from "../runtime/scope.js";
import type { RuntimeSession } from "../runtime/session.js";
import type { ToolRegistry } from "./registry.js";

/** A validated call, as the permission ruleset, the watchdog and an approval UI see it. */
export interface ToolCallRequest {
  callId: string;
  tool: AnyTool;
  args: Record<string, unknown>;
  sessionId: string;
}

/** What the policy hook decides. `deny` fails the call with the reason; nothing runs. */
export type Decision =
  | { outcome: "allow" }
  | { outcome: "deny"; reason: string; code?: Extract<ErrorCode, "rejected" | "permission_denied" | "aborted"> };

/**
 * Runs before execute: permission rules, watchdog and approvals (ask → editor) plug in here.
 * The default allows everything.
 */
export type Authorize = (call: ToolCallRequest, signal: AbortSignal) => Promise<Decision>;

export interface InvokeOptions {
  session: RuntimeSession;
  callId?: string;
  signal?: AbortSignal;
  /** The agent manifest's requirements, unioned with the tool's (RFC effective scope). */
  manifest?: RequirementSet;
  /** Capability names the host provides (for `requires.capabilities`). */
  hostCapabilities?: ReadonlySet<string>;
  authorize?: Authorize;
  /** Called once the arguments are valid, before authorisation (the editor shows the pending call). */
  onValidated?: (call: ToolCallRequest) => void;
  emit?: (event: ToolEvent) => void;
  /** How long an execute may keep running after its call was aborted before it is abandoned. */
  abortGraceMs?: number;
}

const allowAll: Authorize = async () => ({ outcome: "allow" });

export function formatValidationError(toolId: string, error: z.ZodError): string {
  return `The ${toolId} tool was called with invalid arguments:\n${z.prettifyError(error)}\nRewrite the arguments so they satisfy the tool's schema.`;
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

/**
 * A signal for one call: aborted when the caller's is, or when the tool's timeout runs out.
 * `expired` rejects at the timeout, so a tool that ignores its signal is abandoned at once.
 */
function callLimits(toolId: string, outer: AbortSignal, timeoutMs: number | undefined) {
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

/**
 * The one pipeline every call goes through, whoever makes it (model, slash command, CLI):
 * validate → capability check → authorise → execute → envelope (duration, truncation → sidecar).
 * It never throws: every failure is an error envelope.
 */
export async function invoke(
  registry: ToolRegistry,
  id: string,
  rawArgs: unknown,
  options: InvokeOptions,
): Promise<Envelope> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  const fail = (code: ErrorCode, text: string) => errorEnvelope(code, text, elapsed());
  const signal = options.signal ?? new AbortController().signal;

  const tool = registry.get(id);
  if (!tool) {
    return fail("unknown_tool", `There is no tool "${id}". Available tools: ${registry.ids().join(", ")}`);
  }

  const parsed = tool.parameters.safeParse(rawArgs ?? {});
  if (!parsed.success) return fail("invalid_arguments", formatValidationError(id, parsed.error));
  const args = parsed.data as Record<string, unknown>;
  const call: ToolCallRequest = { callId: options.callId ?? randomUUID(), tool, args, sessionId: options.session.id };
  const limits = callLimits(id, signal, tool.timeoutMs);

  try {
    // Capability check: the tool's requirements must compile and be providable by this host.
    const missing = (tool.requires.capabilities ?? []).filter((c) => !options.hostCapabilities?.has(c));
    if (missing.length) {
      return fail("capability_denied", `The ${id} tool requires capabilities this host does not provide: ${missing.join(", ")}`);
    }
    const requires = unionRequirements(options.manifest, tool.requires);
    const ctx = createToolContext({
      session: options.session,
      toolId: id,
      callId: call.callId,
      requires,
      signal: limits.signal,
      emit: options.emit,
    });

    options.onValidated?.(call);
    if (tool.preview) for (const event of await tool.preview(args, ctx)) options.emit?.(event);
    const decision = await (options.authorize ?? allowAll)(call, signal);
    if (decision.outcome === "deny") return fail(decision.code ?? "rejected", decision.reason);
    if (signal.aborted) return fail("aborted", "The call was cancelled before it started");

    limits.start();
    const result = await limits.race(untilAborted(Promise.resolve(tool.execute(args, ctx)), signal, options.abortGraceMs ?? 2000));
    if (isSelfTruncated(result)) {
      const metadata = { duration_ms: elapsed(), ...(result.truncated ? { truncated: true, output_path: result.output_path } : {}) };
      return { type: "output", data: result.data, metadata };
    }
    const capped = await applyOutputLimit(result, tool.output ?? DEFAULT_OUTPUT_LIMIT, (text) =>
      options.session.sidecars.writeText(id, text),
    );
    const metadata = { duration_ms: elapsed(), ...(capped.truncated ? { truncated: true, output_path: capped.output_path } : {}) };
    return { type: "output", data: capped.data, metadata };
  } catch (err) {
    if (err instanceof CallTimeout) return fail("timeout", err.message);
    if (isToolError(err)) return fail(err.code, err.message);
    if (err instanceof ScopeError) return fail("capability_denied", `The ${id} tool's requirements are invalid: ${err.message}`);
    if (signal.aborted) return fail("aborted", "The call was cancelled");
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`toolhost: ${id} failed: ${err instanceof Error ? err.stack : message}\n`);
    return fail("execution_failed", `The ${id} tool failed: ${message}`);
  } finally {
    limits.dispose();
  }
}
