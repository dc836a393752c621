import * as z from "zod";
import type { ToolContext, ToolEvent, ToolPreview } from "./context.js";
import type { SelfTruncated } from "./envelope.js";
import type { ToolKind } from "./kinds.js";
import type { RequirementSet } from "./requirements.js";
import type { DescribeContext, WebSearchSettings } from "./services.js";
import type { CallTargets } from "./targets.js";

/**
 * How the host caps a tool's output. `field` names the part of `data` that is capped
 * (a string or an array); without it the whole data is measured. Past the cap the host
 * keeps the head (or head + tail), writes everything to a sidecar and says how to read on.
 */
export interface OutputLimit {
  field?: string;
  /** For text: bytes kept. */
  maxBytes?: number;
  /** For lists: entries kept. */
  maxItems?: number;
  /** Which part of a text survives: the head (default) or head + tail. */
  keep?: "head" | "head_tail";
  /** One sidecar line per list entry (default: JSON). */
  formatItem?: (item: unknown) => string;
}

/** Default cap for tools that declare none (RFC: implementation-defined). */
export const DEFAULT_OUTPUT_LIMIT: OutputLimit = { maxBytes: 50 * 1024 };

export interface ToolLocation {
  path: string;
  line?: number;
}

export type ToolResultValue<T> = T | SelfTruncated<T>;

/** A file change shown as a diff. `oldText` is null for a new file. */
export interface DisplayDiff {
  /** Absolute path. */
  path: string;
  oldText: string | null;
  newText: string;
}

/** An image shown with a result (an MCP tool's screenshot): base64 data and its MIME type. */
export interface DisplayImage {
  data: string;
  mimeType: string;
}

/**
 * What the editor shows of a successful result. Every field is optional: `{}` shows nothing
 * beyond what the call's events already showed (its diff, its terminal). The model never sees
 * this; it gets the data.
 */
export interface ToolDisplay {
  /** The result as text. Shown as code in a fence unless `markdown` is set. */
  text?: string;
  /** The fence language of `text`: `"console"` for command output, `"diff"` for a patch. */
  language?: string;
  /** `text` is markdown to render as it is (a fetched page, a subagent's answer), not code. */
  markdown?: boolean;
  /** Changes to show as diffs, for a tool that did not emit them as `diff` events while it ran. */
  diffs?: DisplayDiff[];
  /** Images shown after the text. */
  images?: DisplayImage[];
  /** Files the result points at (absolute paths), for the editor to follow. */
  locations?: ToolLocation[];
  /**
   * The call did not do what was asked although the tool returned data (a command that exited
   * non-zero, was killed, timed out or was cancelled): the editor marks it failed. The model still
   * gets the data as a normal result.
   */
  failed?: boolean;
  /** With `failed`: how, in a few words (`exit code 1`, `killed by SIGINT`, `timed out`); `toolhost run` prints it. */
  failure?: string;
  /** With `failed`: the exit code of the command the call ran, when it exited (`toolhost run --json` reports it). */
  exitCode?: number;
  /** Plain text shown after the result, each its own block: what the host adds (the new problems after an edit). */
  notes?: string[];
}

/** What `isAvailable` sees when a session's tools are assembled. */
export interface AvailabilityContext {
  /** The session's workspace root. */
  workspace: string;
  /** The active profile's name. */
  profile: string;
  /** Whether a path (relative to the workspace, or absolute) exists: "is this a git repository? an npm package?" */
  exists(path: string): Promise<boolean>;
  /** The user's web search providers, when at least one is usable (web_search is offered only then). */
  webSearch?: WebSearchSettings;
}

export interface ToolDefinition<S extends z.ZodType = z.ZodType, T = unknown> {
  /** Stable id, `^[a-z][a-z0-9_]{0,63}$`. */
  id: string;
  /** What the model reads to decide whether to call. */
  description: string;
  /** ACP kind: drives the editor's icon, diff renderer and terminal pane. */
  kind: ToolKind;
  /** zod schema of the arguments; the tool publishes its JSON Schema. */
  parameters: S;
  /** The capability surface this tool needs (RFC RequirementSet). */
  requires: RequirementSet;
  execute(args: z.output<S>, ctx: ToolContext): Promise<ToolResultValue<T>>;
  /** Host-enforced output cap. */
  output?: OutputLimit;
  /** A human title for the editor (`Read src/a.ts:1-200`). */
  title?(args: z.output<S>): string;
  /** Follow-along locations for the editor, known before the call runs. */
  locations?(args: z.output<S>, ctx: { workspace: string }): ToolLocation[];
  /**
   * What the editor shows of a successful result (text, locations, diffs). Without it the
   * editor shows a string result as it is and anything else as JSON. Runs after the host's
   * output cap, so `data` may be shortened; a hook that throws falls back the same way.
   * Declare it after `execute`: TypeScript types `data` from execute's result in source order.
   */
  display?(data: T, args: z.output<S>): ToolDisplay;
  /**
   * A read-only look at what the call would do, run after validation and before approval:
   * edit and write return the diff so the editor can show it in the permission request.
   * Throwing a ToolError fails the call before anyone is asked. Must not change anything.
   * It may return a `plan` with its events: `execute` finds the whole preview in `ctx.preview`,
   * so work done here (and the diff the editor already has) need not be repeated.
   */
  preview?(args: z.output<S>, ctx: ToolContext): Promise<ToolEvent[] | ToolPreview>;
  /**
   * What the call touches — resolved paths (through `ctx.fs.resolve`), command lines, hosts —
   * asked after validation and before the policy decides. Without it the host derives the
   * targets from a `path` argument (see `defaultTargets`).
   */
  targets?(args: z.output<S>, ctx: ToolContext): Partial<CallTargets> | Promise<Partial<CallTargets>>;
  /**
   * The description for this session, when it lists what only the session knows (the agents of
   * `task`, the skills of `skill`, the tools of `tool_search`). Falls back to `description`.
   */
  describe?(context: DescribeContext): string;
  /** The plain-text shorthand of a slash command (`/grep TODO`) → arguments. */
  shorthand?(text: string): Record<string, unknown>;
  /** What the shorthand takes, for the editor's command hint: `"a pattern"`, `"a command line"`. */
  shorthandHint?: string;
  /** Asked once when a session's tools are assembled; false leaves the tool out of that session. */
  isAvailable?(context: AvailabilityContext): boolean | Promise<boolean>;
  /**
   * The call changes something outside the conversation (files, processes, remote state). Default
   * from the kind: read, search, think and fetch do not; the others do. Kept in the session's
   * tool-call record, and said after a crash ("this call may have run").
   */
  sideEffect?: boolean;
  /**
   * Running the call twice with the same input does what running it once does. Default: true for
   * kinds without side effects, false otherwise. Pass `ctx.idempotencyKey` to an API that takes one.
   */
  idempotent?: boolean;
  /**
   * Milliseconds an execute may run before the host abandons it with a `timeout` error (its
   * signal is aborted too). Extension tools default to 120 s; built-ins manage their own.
   */
  timeoutMs?: number;
}

/** A plain JSON Schema for a tool's arguments: an object schema. */
export interface JsonSchemaObject {
  type: "object";
  properties?: Record<string, unknown>;
  required?: string[];
  [keyword: string]: unknown;
}

/** Arguments of a tool whose parameters are a plain JSON Schema (validated, but not typed further). */
export type JsonArgs = Record<string, unknown>;
export type JsonArgsSchema = z.ZodType<JsonArgs>;

/** A tool defined with a plain JSON Schema instead of zod (the host validates with the same rules). */
export interface JsonSchemaToolDefinition<T = unknown> extends Omit<ToolDefinition<JsonArgsSchema, T>, "parameters"> {
  parameters: JsonSchemaObject;
}

export interface Tool<S extends z.ZodType = z.ZodType, T = unknown> extends ToolDefinition<S, T> {
  /** The JSON Schema of `parameters` (input side), computed once. */
  readonly inputSchema: Record<string, unknown>;
}

export const TOOL_ID_PATTERN = /^[a-z][a-z0-9_]{0,63}$/;

/** A zod 4 schema, of this or another copy of zod (checked by shape, not instanceof). */
export function isZodSchema(value: unknown): value is z.ZodType {
  return (
    typeof value === "object" && value !== null && "_zod" in value && typeof (value as { safeParse?: unknown }).safeParse === "function"
  );
}

/**
 * zod's `.int()` publishes ±Number.MAX_SAFE_INTEGER as bounds: noise that costs the model tokens on
 * every request and says nothing (zod still enforces them).
 */
function withoutSafeIntegerBounds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutSafeIntegerBounds);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    if (key === "maximum" && inner === Number.MAX_SAFE_INTEGER) continue;
    if (key === "minimum" && inner === Number.MIN_SAFE_INTEGER) continue;
    out[key] = withoutSafeIntegerBounds(inner);
  }
  return out;
}

/** The zod schema and published JSON Schema of a tool's parameters, zod or plain JSON Schema. */
export function compileParameters(parameters: z.ZodType | JsonSchemaObject): { schema: z.ZodType; inputSchema: Record<string, unknown> } {
  if (isZodSchema(parameters)) {
    const inputSchema = withoutSafeIntegerBounds(z.toJSONSchema(parameters, { io: "input", unrepresentable: "any" })) as Record<
      string,
      unknown
    >;
    delete inputSchema.$schema;
    return { schema: parameters, inputSchema };
  }
  // zod validates a JSON Schema by converting it; the author's schema is what gets published.
  const schema = z.fromJSONSchema(parameters as Parameters<typeof z.fromJSONSchema>[0]);
  const inputSchema = { ...parameters } as Record<string, unknown>;
  delete inputSchema.$schema;
  return { schema, inputSchema };
}

/** Declares a tool. Checks the id and computes the published JSON Schema once. */
export function defineTool<S extends z.ZodType, T>(definition: ToolDefinition<S, T>): Tool<S, T>;
export function defineTool<T>(definition: JsonSchemaToolDefinition<T>): Tool<JsonArgsSchema, T>;
export function defineTool(definition: ToolDefinition | JsonSchemaToolDefinition): AnyTool {
  if (!TOOL_ID_PATTERN.test(definition.id)) {
    throw new Error(`Invalid tool id ${JSON.stringify(definition.id)}: ids match ${TOOL_ID_PATTERN}`);
  }
  const { schema, inputSchema } = compileParameters(definition.parameters);
  return Object.freeze({ ...definition, parameters: schema, inputSchema });
}

// Tools of any parameter type, held together in a registry.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any, any>;
