import path from "node:path";
import type { Envelope } from "../../tool/envelope.js";
import type { ToolKind } from "../../tool/kinds.js";

// The hook events, what each is told and what it may answer, and the one translation every hook
// command goes through: Claude Code's protocol (JSON on stdin, exit 2 blocks, JSON on stdout),
// spoken either with Claude Code's names (`PreToolUse`, `Bash`, `file_path`) or with toolhost's.

/** toolhost's hook events, in the order a session meets them. */
export const HOOK_EVENTS = [
  "session_start",
  "prompt",
  "tool_call",
  "tool_result",
  "stop",
  "compact",
  "subagent_stop",
  "session_end",
] as const;

export type HookEventName = (typeof HOOK_EVENTS)[number];

/** Claude Code's event names and the toolhost events they are. */
export const CLAUDE_EVENTS: Readonly<Record<string, HookEventName>> = {
  SessionStart: "session_start",
  UserPromptSubmit: "prompt",
  PreToolUse: "tool_call",
  PostToolUse: "tool_result",
  Stop: "stop",
  PreCompact: "compact",
  SubagentStop: "subagent_stop",
  SessionEnd: "session_end",
};

const CLAUDE_EVENT_OF = Object.fromEntries(Object.entries(CLAUDE_EVENTS).map(([claude, ours]) => [ours, claude])) as Record<
  HookEventName,
  string
>;

/** Claude Code's tool names and the locked ids they are. */
export const CLAUDE_TOOLS: Readonly<Record<string, string>> = {
  Bash: "bash",
  Edit: "edit",
  Write: "write",
  Read: "read",
  Glob: "glob",
  Grep: "grep",
  WebFetch: "web_fetch",
  WebSearch: "web_search",
  Task: "task",
};

const CLAUDE_TOOL_OF: Readonly<Record<string, string>> = Object.fromEntries(Object.entries(CLAUDE_TOOLS).map(([c, ours]) => [ours, c]));

/** The name Claude Code gives a tool (`Bash` for bash); other ids are the same in both. */
export function claudeToolName(id: string): string {
  return CLAUDE_TOOL_OF[id] ?? id;
}

/** The names a matcher may use for a tool: its id, and Claude Code's name for a locked one. */
export function toolNames(id: string): string[] {
  const claude = CLAUDE_TOOL_OF[id];
  return claude ? [id, claude] : [id];
}

/** Which names a hook command is spoken to in: Claude Code's (its files, its event names) or toolhost's. */
export type HookDialect = "claude" | "toolhost";

/** What every event carries: the session it happens in. */
export interface HookSession {
  sessionId: string;
  /** The session's working folder: the hook command runs there. */
  cwd: string;
  /** The session's file, when it is recorded. */
  transcriptPath?: string;
  /** The session's mode (read-only, ask, accept-edits, full). */
  mode?: string;
  /** Set when the event happens inside a subagent: its task id. */
  agentId?: string;
}

/** The tool as a hook sees it. */
export interface HookTool {
  id: string;
  kind: ToolKind;
}

/** What each event is told, besides the session. */
export interface HookInputs {
  session_start: { source: "startup" | "resume" | "clear" | "compact" };
  prompt: { prompt: string };
  /** Before a call runs, after its arguments are validated. */
  tool_call: { callId: string; tool: HookTool; args: Record<string, unknown> };
  /** After a call: its envelope, before the model sees it. */
  tool_result: { callId: string; tool: HookTool; args: Record<string, unknown>; result: Envelope };
  /** The end of a turn. `stopHookActive`: the model is already continuing because a stop hook asked it to. */
  stop: { stopHookActive: boolean; lastMessage?: string };
  compact: { trigger: "manual" | "auto"; instructions?: string };
  subagent_stop: { stopHookActive: boolean; lastMessage?: string };
  session_end: { reason: string };
}

/** One event as the engine is handed it. */
export type HookInput<E extends HookEventName> = HookInputs[E] & HookSession;

/** What the user is told, and problems, whatever the event. */
export interface OutcomeBase {
  /** Hooks that failed, hung or printed what cannot be read: each hook's first failure of a kind only. */
  problems: string[];
  /** What hooks asked to show the user (`systemMessage`, or exit 2's stderr where the event cannot block). */
  messages: string[];
  /** A hook said `"continue": false`: the turn ends, with this reason (a tool call or prompt it was about is refused too). */
  halt?: { reason: string; source: string };
}

/** What the hooks of each event decided together. */
export interface HookOutcomes {
  session_start: OutcomeBase & { addContext?: string[] };
  prompt: OutcomeBase & { block?: true; reason?: string; source?: string; addContext?: string[] };
  tool_call: OutcomeBase & {
    decision?: "allow" | "deny" | "ask";
    reason?: string;
    /** The hook whose decision this is. */
    source?: string;
    /** The arguments rewritten (whole, in toolhost's names): validate and judge the call again with them. */
    updatedArgs?: Record<string, unknown>;
    /** The hook that rewrote them. */
    updatedBy?: string;
    addContext?: string[];
  };
  tool_result: OutcomeBase & {
    /** Said to the model after the result (the editor still shows the real result). */
    annotation?: string;
    /** What the model sees instead of the result (the editor still shows the real one): a string, or JSON data. */
    replaceModelResult?: unknown;
    source?: string;
  };
  /** `continue`: the model goes on with this message instead of ending the turn (the caller bounds how often). */
  stop: OutcomeBase & { continue?: string; source?: string };
  compact: OutcomeBase;
  subagent_stop: OutcomeBase & { continue?: string; source?: string };
  session_end: OutcomeBase;
}

export type HookOutcome<E extends HookEventName> = HookOutcomes[E];

// ── Claude Code's argument names ──────────────────────────────────────────────────────────────

interface FieldMap {
  ours: string;
  theirs: string;
  /** A value as Claude Code spells it (default: the same). */
  out?: (value: unknown, cwd: string) => unknown;
  /** And back. */
  in?: (value: unknown) => unknown;
}

/** Claude Code's file paths are absolute; toolhost's may be relative to the workspace. */
const FILE_PATH: FieldMap = {
  ours: "path",
  theirs: "file_path",
  out: (v, cwd) => (typeof v === "string" && !v.startsWith("~") ? path.resolve(cwd, v) : v),
};

/** Where toolhost's locked tools name an argument differently from Claude Code's. */
const ARG_NAMES: Readonly<Record<string, readonly FieldMap[]>> = {
  bash: [
    { ours: "timeout_ms", theirs: "timeout" },
    {
      ours: "sandbox",
      theirs: "dangerouslyDisableSandbox",
      out: (v) => (v === "off" ? true : v === "on" ? false : v),
      in: (v) => (v === true ? "off" : v === false ? "on" : v),
    },
  ],
  read: [FILE_PATH],
  write: [FILE_PATH],
  edit: [FILE_PATH],
  grep: [
    { ours: "ignore_case", theirs: "-i" },
    { ours: "context", theirs: "-C" },
    { ours: "limit", theirs: "head_limit" },
    {
      ours: "output_mode",
      theirs: "output_mode",
      out: (v) => (v === "files" ? "files_with_matches" : v),
      in: (v) => (v === "files_with_matches" ? "files" : v),
    },
  ],
  task: [{ ours: "agent", theirs: "subagent_type" }],
};

/** A call's arguments as Claude Code would have written them (`read`'s `path` → `file_path`, absolute). */
export function toClaudeInput(toolId: string, args: Record<string, unknown>, cwd: string): Record<string, unknown> {
  const maps = ARG_NAMES[toolId];
  if (!maps) return { ...args };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(args)) {
    const map = maps.find((m) => m.ours === key);
    out[map ? map.theirs : key] = map?.out ? map.out(value, cwd) : value;
  }
  return out;
}

const same = (a: unknown, b: unknown) => a === b || JSON.stringify(a) === JSON.stringify(b);

/**
 * A hook's `updatedInput` in toolhost's names: only the keys whose values differ from what the hook
 * was sent (so a hook that echoes the whole input back changes nothing it did not mean to), each
 * renamed back (`file_path` → `path`). A key set to null is kept as null: it removes the argument.
 */
export function fromHookInput(
  dialect: HookDialect,
  toolId: string,
  updated: Record<string, unknown>,
  sent: Record<string, unknown>,
): Record<string, unknown> {
  const maps = dialect === "claude" ? (ARG_NAMES[toolId] ?? []) : [];
  const changes: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(updated)) {
    if (Object.hasOwn(sent, key) && same(sent[key], value)) continue;
    const map = maps.find((m) => m.theirs === key);
    changes[map ? map.ours : key] = map?.in && value !== null ? map.in(value) : value;
  }
  return changes;
}

/** Claude Code's permission modes for toolhost's. */
const CLAUDE_MODES: Readonly<Record<string, string>> = {
  "read-only": "plan",
  ask: "default",
  "accept-edits": "acceptEdits",
  full: "bypassPermissions",
};

/** What a hook's result looks like to Claude Code's hooks: the data (bash's with `interrupted`), or the error. */
function claudeResponse(result: Envelope): unknown {
  if (result.type === "error")
    return { error: result.error_text, ...(result.metadata.error_code ? { code: result.metadata.error_code } : {}) };
  const data = result.data;
  if (typeof data === "object" && data !== null && "timed_out" in data && "stdout" in data) {
    return { ...data, interrupted: (data as { timed_out: unknown }).timed_out === true };
  }
  return data;
}

/**
 * The JSON a hook command reads on stdin: Claude Code's fields (`session_id`, `transcript_path`,
 * `cwd`, `permission_mode`, `hook_event_name`, `tool_name`, `tool_input`, `tool_use_id`,
 * `tool_response`, `prompt`, `stop_hook_active`, `source`, `trigger`, `reason`…), in the hook's
 * dialect. toolhost's dialect adds `tool_kind` and gives `tool_response` as the whole envelope.
 */
export function commandPayload<E extends HookEventName>(event: E, input: HookInput<E>, dialect: HookDialect): Record<string, unknown> {
  const claude = dialect === "claude";
  const payload: Record<string, unknown> = {
    session_id: input.sessionId,
    transcript_path: input.transcriptPath ?? "",
    cwd: input.cwd,
    ...(input.mode ? { permission_mode: claude ? (CLAUDE_MODES[input.mode] ?? input.mode) : input.mode } : {}),
    hook_event_name: claude ? CLAUDE_EVENT_OF[event] : event,
    ...(input.agentId ? { agent_id: input.agentId } : {}),
  };
  const i = input as HookInput<HookEventName> & Partial<Record<string, unknown>>;
  switch (event) {
    case "tool_call":
    case "tool_result": {
      const call = input as HookInput<"tool_call"> | HookInput<"tool_result">;
      payload.tool_name = claude ? claudeToolName(call.tool.id) : call.tool.id;
      if (!claude) payload.tool_kind = call.tool.kind;
      payload.tool_input = claude ? toClaudeInput(call.tool.id, call.args, input.cwd) : call.args;
      payload.tool_use_id = call.callId;
      if (event === "tool_result") {
        const result = (input as HookInput<"tool_result">).result;
        payload.tool_response = claude ? claudeResponse(result) : result;
      }
      break;
    }
    case "prompt":
      payload.prompt = i.prompt;
      break;
    case "stop":
    case "subagent_stop":
      payload.stop_hook_active = i.stopHookActive;
      if (i.lastMessage !== undefined) payload.last_assistant_message = i.lastMessage;
      break;
    case "session_start":
      payload.source = i.source;
      break;
    case "compact":
      payload.trigger = i.trigger;
      payload.custom_instructions = i.instructions ?? "";
      break;
    case "session_end":
      payload.reason = i.reason;
      break;
  }
  return payload;
}

/** What a matcher of this event is matched against: the tool (its names and kind), or the event's one word (start source, compact trigger). */
export function matchSubject<E extends HookEventName>(event: E, input: HookInput<E>): { names: string[]; kind?: string } | null {
  if (event === "tool_call" || event === "tool_result") {
    const tool = (input as HookInput<"tool_call">).tool;
    return { names: toolNames(tool.id), kind: tool.kind };
  }
  if (event === "session_start") return { names: [(input as HookInput<"session_start">).source] };
  if (event === "compact") return { names: [(input as HookInput<"compact">).trigger] };
  return null;
}
