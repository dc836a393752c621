import * as z from "zod";
import { METER_KEYS, type CostMeter } from "../agent/turn/turn-types.js";

// `toolhost run --json`: one event per line on stdout, a published contract (issue 35 §1). Harbor,
// CI and budgets read it; the JSON Schema in `schemas/run-events.v1.json` is made from these
// (`scripts/run-events-schema.mjs`), and a test keeps the two the same and validates the events of
// real runs against the file. The first event, `start`, carries the contract's version `v`: a change
// that drops or retypes a field is a new version; new fields and new event types are not.

export const RUN_EVENTS_VERSION = 1;

const stopReason = z.enum(["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]);

/** What a run used, summed over its model requests (a subagent's included). */
export const RunTotals = z
  .object({
    input_tokens: z.int().nonnegative().describe("Input tokens as the provider reports them, cache reads and writes included"),
    output_tokens: z.int().nonnegative(),
    cache_read_tokens: z.int().nonnegative().describe("Of the input, read from the provider's prompt cache"),
    cache_write_tokens: z.int().nonnegative().describe("Of the input, written to the provider's prompt cache"),
    requests: z.int().nonnegative().describe("Model requests made"),
    tool_calls: z.int().nonnegative().describe("Tool calls run"),
    cost_usd: z
      .number()
      .nonnegative()
      .optional()
      .describe("Cost in USD of the requests whose model has a known price; absent when none had one"),
  })
  .strict();
export type RunTotals = z.infer<typeof RunTotals>;

const event = <K extends string, T extends z.ZodRawShape>(type: K, shape: T, description: string) =>
  z
    .object({ type: z.literal(type), ...shape })
    .strict()
    .describe(description);

export const RunEvent = z.discriminatedUnion("type", [
  event(
    "start",
    {
      v: z.literal(RUN_EVENTS_VERSION).describe("The version of this contract"),
      session_id: z.string(),
      cwd: z.string().describe("The workspace's folder"),
      model: z.string().optional().describe("provider/model, when one is configured"),
      mode: z.string(),
      toolhost: z.string().describe("toolhost's version"),
    },
    "The first event: the run's session, before anything runs",
  ),
  event("text", { delta: z.string() }, "A piece of the model's answer"),
  event("thought", { delta: z.string() }, "A piece of the model's reasoning, where the provider shows it"),
  event(
    "tool_call_start",
    { id: z.string(), tool: z.string(), kind: z.string() },
    "A tool call the model made, before it is decided or run",
  ),
  event(
    "tool_call_end",
    {
      id: z.string(),
      tool: z.string(),
      title: z.string(),
      status: z.enum(["completed", "failed"]),
      error_code: z.string().optional().describe("The tool's error code (e.g. permission_denied for a refused call)"),
      error: z.string().optional(),
      exit_code: z.int().optional().describe("A command that exited non-zero: its exit code"),
    },
    "A tool call ended: completed, or failed (refused, an error, a command that exited non-zero or was killed)",
  ),
  event("tool_result", { id: z.string(), text: z.string() }, "A slash command's call: its result, the run's whole answer"),
  event(
    "usage",
    {
      used: z.int().nonnegative().describe("Tokens in the context after the last request"),
      size: z.int().nonnegative().describe("The model's context window"),
      cost: z.object({ amount: z.number().nonnegative(), currency: z.string() }).strict().optional().describe("The session's running cost"),
      cache: z.object({ read: z.int().nonnegative(), write: z.int().nonnegative() }).strict().optional(),
    },
    "After each model request",
  ),
  event("message", { text: z.string() }, "A note from the session (a slash command's answer, a hook's message, a budget warning)"),
  event("error", { message: z.string() }, "The run failed: no model, a provider error, a crash"),
  event(
    "stop",
    {
      stop_reason: stopReason,
      exit_code: z.int().describe("The process's exit code: 0 done, 1 failed, 2 bad usage, 130 interrupted"),
      session_id: z.string(),
      totals: RunTotals,
    },
    "The last event: why the turn ended, the exit code, and what the run used",
  ),
]);
export type RunEvent = z.infer<typeof RunEvent>;

/** The JSON Schema of one line of `run --json` (what `schemas/run-events.v1.json` holds). */
export function runEventsSchema(): Record<string, unknown> {
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: `urn:toolhost:run-events:v${RUN_EVENTS_VERSION}`,
    title: `toolhost run --json event, version ${RUN_EVENTS_VERSION}`,
    ...z.toJSONSchema(RunEvent, { target: "draft-2020-12" }),
  };
}

/** What the meter counted since `from` (a resumed session's meter starts at its earlier totals), and `ownCalls` run outside the model's loop. */
export function runTotals(now: CostMeter, from: CostMeter, ownCalls = 0): RunTotals {
  const d = Object.fromEntries(METER_KEYS.map((key) => [key, Math.max(0, now[key] - from[key])])) as unknown as CostMeter;
  return {
    input_tokens: d.inputTokens,
    output_tokens: d.outputTokens,
    cache_read_tokens: d.cacheReadTokens,
    cache_write_tokens: d.cacheWriteTokens,
    requests: d.requests,
    tool_calls: d.toolCalls + ownCalls,
    ...(d.pricedRequests > 0 ? { cost_usd: Math.round(d.amount * 1e6) / 1e6 } : {}),
  };
}
