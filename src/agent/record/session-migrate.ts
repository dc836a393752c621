import type { ModelMessage } from "ai";
import type { ToolEvent } from "../../tool/context.js";
import type { ToolDisplay } from "../../tool/define.js";
import type { Envelope } from "../../tool/envelope.js";
import type { ErrorCode } from "../../tool/errors.js";
import type { ToolCallInfo } from "../../host/invoke.js";
import {
  resultStatus,
  type CompactionShown,
  type EntryData,
  type SessionHeader,
  type ToolCallStatus,
  type TreeEntry,
} from "./session-format.js";

// The one-way migration of a format-1 session file (toolhost up to issue 23) to format 2.
//
// Format 1 is a flat list: the front end's calls (`view {method, args}`) for a replay, next to
// records of the same events (`tool_start`, `tool_end`, `compaction`) for a restore. Format 2 has
// one entry per event, so each pair the format-1 recorder wrote back to back (in one synchronous
// call) becomes one entry, where the view line stood, with its id and time:
//   tool_start + view describe (same callId)  → tool_call {seq, info: describe's}
//   tool_end + view done (same callId)        → tool_result {seq, status, errorCode, envelope, info, display: done's}
//   compaction + view compaction (completed)  → compaction {event, summary, history}
// What is dropped is only what the kept line holds too: the record line's time (the same instant),
// tool_start's tool and input (describe's info has them), tool_end's envelope (a copy capped more).
// A line without its pair stands alone: a tool_start without describe (a slash command's call:
// it is never described) is a tool_call built from it and the call's pending info; a tool_end
// whose done line a crash cut is a tool_result of its own envelope.
// The file is linear: each entry's parent is the one before it. Ids are `m<n>`, n the line the
// entry stood on (its index + 2: the header is line 1), so a migration is deterministic.

/** The first line of a format-1 session file (frozen: format 1 is only read). */
export interface V1Header {
  type: "session";
  format: 1;
  id: string;
  cwd: string;
  additionalDirectories?: string[];
  created: string;
  toolhost: string;
}

/** A front-end call a format-1 file recorded for its replay. */
export interface V1ViewCall {
  method: "say" | "failed" | "text" | "thought" | "pending" | "describe" | "event" | "running" | "done" | "compaction";
  args: unknown[];
}

/** One line of a format-1 session file after the header (frozen: format 1 is only read). */
export type V1Entry =
  | { type: "message"; at: string; message: ModelMessage }
  | { type: "title"; at: string; title: string }
  | { type: "setting"; at: string; name: "mode" | "model" | "profile" | "thought_level"; value: string }
  | { type: "turn"; at: string; phase: "start" | "end"; prompt?: string; blocks?: unknown[]; stopReason?: string }
  | { type: "view"; at: string; call: V1ViewCall }
  | {
      type: "tool_start";
      at: string;
      seq: number;
      callId: string;
      tool: string;
      input: unknown;
      sideEffect?: boolean;
      idempotent?: boolean;
    }
  | { type: "tool_end"; at: string; seq: number; callId: string; status: ToolCallStatus; errorCode?: string; envelope?: unknown }
  | { type: "wired"; at: string; ids: string[] }
  | { type: "compaction"; at: string; summary?: string; history: ModelMessage[] };

/** The format-1 AI SDK major: format 1 was only ever written with AI SDK 6. */
const V1_AI_MAJOR = "6";

export interface MigratedSession {
  header: SessionHeader;
  entries: TreeEntry[];
  /** Format-1 lines of a type or view method no format-1 writer wrote (damage): left out. */
  skipped: number;
}

/** A format-1 session as format 2: the same events, one entry each, in one linear branch. */
export function migrateV1(header: V1Header, entries: readonly V1Entry[]): MigratedSession {
  const out: TreeEntry[] = [];
  /** The latest info of each call (pending, describe), for a line that has none of its own. */
  const infos = new Map<string, ToolCallInfo>();
  const seqs = new Map<string, number>();
  let skipped = 0;
  const emit = (index: number, at: string, data: EntryData) => {
    // type, id, parentId and at first: a line reads as what it is and where it hangs.
    const { type, ...fields } = data;
    out.push({ type, id: `m${index + 2}`, parentId: out.at(-1)?.id ?? null, at, ...fields } as TreeEntry);
  };
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const next = entries[i + 1];
    switch (entry.type) {
      case "message":
        emit(i, entry.at, { type: "message", message: entry.message });
        break;
      case "title":
        emit(i, entry.at, { type: "title", title: entry.title });
        break;
      case "setting":
        emit(i, entry.at, { type: "setting", name: entry.name, value: entry.value });
        break;
      case "wired":
        emit(i, entry.at, { type: "wired", ids: entry.ids });
        break;
      case "turn":
        if (entry.phase === "start")
          emit(i, entry.at, { type: "user", text: entry.prompt ?? "", ...(entry.blocks ? { blocks: entry.blocks } : {}) });
        // Every format-1 writer wrote the stop reason.
        else emit(i, entry.at, { type: "turn_end", stopReason: entry.stopReason ?? "end_turn" });
        break;
      case "tool_start": {
        seqs.set(entry.callId, entry.seq);
        const described = viewOf(next, "describe");
        const info = described?.args[0] as ToolCallInfo | undefined;
        if (next && info?.callId === entry.callId) {
          infos.set(info.callId, info);
          emit(++i, next.at, { type: "tool_call", seq: entry.seq, info });
        } else {
          const info = startedInfo(entry, infos.get(entry.callId));
          infos.set(info.callId, info);
          emit(i, entry.at, { type: "tool_call", seq: entry.seq, info });
        }
        break;
      }
      case "tool_end": {
        seqs.set(entry.callId, entry.seq);
        const done = viewOf(next, "done");
        const { seq, callId, status } = entry;
        const errorCode = entry.errorCode === undefined ? {} : { errorCode: entry.errorCode };
        if (next && done?.args[0] === callId) {
          const [, envelope, info, display] = done.args as [string, Envelope, ToolCallInfo, ToolDisplay | undefined];
          emit(++i, next.at, { type: "tool_result", seq, callId, status, ...errorCode, envelope, info, ...(display ? { display } : {}) });
        } else {
          const info = infos.get(callId) ?? { callId, toolId: "", kind: "other", title: callId, locations: [], args: null };
          emit(i, entry.at, { type: "tool_result", seq, callId, status, ...errorCode, envelope: endEnvelope(entry), info });
        }
        break;
      }
      case "compaction": {
        const shown = viewOf(next, "compaction")?.args[0] as CompactionShown | undefined;
        const recorded = { ...(entry.summary !== undefined ? { summary: entry.summary } : {}), history: entry.history };
        if (next && shown?.status === "completed") emit(++i, next.at, { type: "compaction", event: shown, ...recorded });
        else emit(i, entry.at, { type: "compaction", ...recorded });
        break;
      }
      case "view": {
        const data = viewData(entry.call, infos, seqs);
        if (data) emit(i, entry.at, data);
        else skipped++;
        break;
      }
      default:
        skipped++;
    }
  }
  const { id, cwd, additionalDirectories, created, toolhost } = header;
  return {
    header: {
      type: "session",
      format: 2,
      id,
      cwd,
      ...(additionalDirectories ? { additionalDirectories } : {}),
      created,
      toolhost,
      ai: V1_AI_MAJOR,
    },
    entries: out,
    skipped,
  };
}

/** The call of a view line of this method, if `entry` is one. */
function viewOf(entry: V1Entry | undefined, method: V1ViewCall["method"]): V1ViewCall | undefined {
  return entry?.type === "view" && entry.call.method === method ? entry.call : undefined;
}

/** A view line that stands alone, as its entry; undefined for a method no format-1 writer wrote. */
function viewData({ method, args }: V1ViewCall, infos: Map<string, ToolCallInfo>, seqs: Map<string, number>): EntryData | undefined {
  const [a, b, c, d] = args;
  switch (method) {
    case "say":
      return { type: "notice", text: a as string };
    case "failed":
      return { type: "notice", text: a as string, failed: true };
    case "text":
      return { type: "agent_text", text: a as string };
    case "thought":
      return { type: "thought", text: a as string };
    case "pending": {
      const info = a as ToolCallInfo;
      infos.set(info.callId, info);
      return { type: "tool_pending", info };
    }
    case "describe": {
      const info = a as ToolCallInfo;
      infos.set(info.callId, info);
      return { type: "tool_call", seq: seqs.get(info.callId) ?? 0, info };
    }
    case "event":
      return { type: "tool_event", callId: a as string, event: b as ToolEvent };
    case "running":
      return { type: "tool_running", callId: a as string };
    case "done": {
      const envelope = b as Envelope;
      const display = d as ToolDisplay | undefined;
      const callId = a as string;
      return {
        type: "tool_result",
        seq: seqs.get(callId) ?? 0,
        callId,
        ...resultStatus(envelope),
        envelope,
        info: c as ToolCallInfo,
        ...(display ? { display } : {}),
      };
    }
    case "compaction":
      return { type: "compaction", event: a as CompactionShown };
    default:
      return undefined;
  }
}

/** The info of a call that was never described: its pending info (title, kind, locations) with tool_start's tool, input and metadata. */
function startedInfo(entry: EntryOfV1<"tool_start">, pending: ToolCallInfo | undefined): ToolCallInfo {
  const { sideEffect, idempotent } = entry;
  return {
    ...(pending ?? { kind: "other", title: entry.tool, locations: [] }),
    callId: entry.callId,
    toolId: entry.tool,
    args: entry.input,
    ...(sideEffect !== undefined ? { sideEffect } : {}),
    ...(idempotent !== undefined ? { idempotent } : {}),
  };
}

/**
 * The envelope of a tool_end whose done line is missing. One over 16 KB was kept as the head of its
 * JSON (`{type, cut, head}`): it becomes an envelope of that type holding the head and the note.
 */
function endEnvelope(entry: EntryOfV1<"tool_end">): Envelope {
  const kept = entry.envelope as { type?: unknown; cut?: unknown; head?: unknown } | undefined;
  const metadata = { duration_ms: 0, truncated: true, ...(entry.errorCode ? { error_code: entry.errorCode as ErrorCode } : {}) };
  if (kept && typeof kept.cut === "string" && typeof kept.head === "string") {
    if (kept.type === "error") return { type: "error", error_text: `${kept.head}\n… [${kept.cut}]`, metadata };
    return { type: "output", data: { cut: kept.cut, head: kept.head }, metadata };
  }
  if (kept && (kept.type === "output" || kept.type === "error")) return kept as Envelope;
  // Every format-1 writer wrote an envelope; a line without one says what it can.
  if (entry.status === "completed") return { type: "output", data: null, metadata };
  return { type: "error", error_text: `No result was recorded (${entry.errorCode ?? entry.status})`, metadata };
}

type EntryOfV1<T extends V1Entry["type"]> = Extract<V1Entry, { type: T }>;
