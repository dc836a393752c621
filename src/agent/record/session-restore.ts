import type { ModelMessage, UserContent } from "ai";
import { SessionTree, type ToolCallStatus } from "./session-format.js";
import type { StoredSession } from "./session-store.js";
import type { CostMeter } from "../turn/turn-types.js";

// What a stored session restores (session/load, session/resume, a rewind): from the path of its
// tree from the root to a position, the history, the settings, and a note about a turn a crash cut
// short; call numbering and the meter (what budgets count) go on from the whole file, on any branch.

/** What a stored session restores: the model's history, its settings, and where call numbering goes on. */
export interface RestoredState {
  messages: ModelMessage[];
  mode?: string;
  model?: string;
  profile?: string;
  thoughtLevel?: string;
  /** Deferred tools tool_search had wired. */
  wired?: string[];
  title?: string;
  /** The highest `call_N` number used, so new calls do not reuse an id the editor has seen. */
  lastCallNumber: number;
  /**
   * The last turn never ended (the agent was killed or crashed): what the model is told before its
   * next prompt, naming the calls with side effects that had started in it (seed 003's retry warning).
   */
  interruptedNote?: string;
  /** What the session had used by its last recorded turn's end, on any branch (a rewind gives nothing back). */
  usage?: CostMeter;
}

interface StartedCall {
  tool: string;
  input: unknown;
  changes: boolean;
  finished?: ToolCallStatus;
}

/** The state at `leafId` (default: the session's current position): what the entries on the path from the root to it say. */
export function restoredState(stored: StoredSession, leafId?: string): RestoredState {
  const state: RestoredState = { messages: [], lastCallNumber: 0 };
  const tree = new SessionTree(stored.entries);
  // Every call id the editor may have seen, on any branch: a new call never takes one.
  for (const entry of stored.entries) {
    const id =
      entry.type === "tool_pending" || entry.type === "tool_call"
        ? entry.info.callId
        : entry.type === "tool_result"
          ? entry.callId
          : undefined;
    const n = id === undefined ? undefined : /^call_(\d+)$/.exec(id)?.[1];
    if (n) state.lastCallNumber = Math.max(state.lastCallNumber, Number(n));
    if (entry.type === "turn_end" && entry.usage) state.usage = entry.usage;
  }
  let turn: { prompt: string; calls: Map<string, StartedCall> } | undefined;
  for (const entry of tree.pathTo(leafId ?? tree.leafId)) {
    switch (entry.type) {
      case "message":
        state.messages.push(entry.message);
        break;
      case "compaction":
        if (entry.history) state.messages = [...entry.history];
        break;
      case "wired":
        state.wired = [...new Set([...(state.wired ?? []), ...entry.ids])];
        break;
      case "setting":
        if (entry.name === "thought_level") state.thoughtLevel = entry.value;
        else state[entry.name] = entry.value;
        break;
      case "title":
        state.title = entry.title;
        break;
      case "user":
        turn = { prompt: entry.text, calls: new Map() };
        break;
      case "turn_end":
        turn = undefined;
        break;
      case "tool_call": {
        const { callId, toolId, args, sideEffect, idempotent } = entry.info;
        turn?.calls.set(callId, { tool: toolId, input: args, changes: sideEffect !== false && idempotent !== true });
        break;
      }
      case "tool_result": {
        const call = turn?.calls.get(entry.callId);
        if (call) call.finished = entry.status;
        break;
      }
    }
  }
  state.messages = withInterruptedResults(state.messages);
  if (turn) state.interruptedNote = interruptedNote(turn.prompt, [...turn.calls.values()]);
  return state;
}

function interruptedNote(prompt: string, calls: StartedCall[]): string {
  const short = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
  const changing = calls.filter((c) => c.changes);
  const lines = changing.map((c) => {
    const what = `${c.tool} ${short(JSON.stringify(c.input) ?? "", 160)}`;
    if (c.finished === undefined) return `- ${what}: did not finish; it may have run in part or in full`;
    return `- ${what}: ${c.finished === "completed" ? "ran to the end" : c.finished}`;
  });
  return [
    `[Note from toolhost: the previous turn (the request "${short(prompt.trim(), 120)}") was interrupted: the agent stopped before it ended.`,
    changing.length
      ? `These calls that change things had started in it; check their effects before running any of them again:\n${lines.join("\n")}]`
      : "No call that changes anything had started in it.]",
  ].join(" ");
}

/** A prompt after a note (the interrupted turn's, said once), when there is one. */
export function withNote(note: string | undefined, content: UserContent): UserContent {
  if (!note) return content;
  return typeof content === "string" ? `${note}\n\n${content}` : [{ type: "text", text: note }, ...content];
}

/** What the model is told of a call whose result was never written (the agent was killed or crashed mid-call). */
export const INTERRUPTED_RESULT =
  "No result: the agent stopped (closed, killed or crashed) before this call finished. It may have run in part or in full: check its effects before you run it again.";

/**
 * A history whose every tool call has a result, as a provider requires: a turn cut short by a
 * crash left calls without one, and each gets a result saying it may have run.
 */
function withInterruptedResults(messages: ModelMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    out.push(message);
    if (message.role !== "assistant" || typeof message.content === "string") continue;
    const calls = message.content.filter((part) => part.type === "tool-call");
    if (calls.length === 0) continue;
    const next = messages[i + 1];
    const answered = new Set(
      next?.role === "tool" ? next.content.flatMap((part) => (part.type === "tool-result" ? [part.toolCallId] : [])) : [],
    );
    const missing = calls
      .filter((call) => !answered.has(call.toolCallId))
      .map((call) => ({
        type: "tool-result" as const,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: { type: "error-text" as const, value: INTERRUPTED_RESULT },
      }));
    if (missing.length === 0) continue;
    if (next?.role === "tool") {
      out.push({ ...next, content: [...next.content, ...missing] });
      i++;
    } else {
      out.push({ role: "tool", content: missing });
    }
  }
  return out;
}
