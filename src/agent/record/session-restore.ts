import type { ModelMessage, UserContent } from "ai";
import type { StoredSession, ToolCallStatus } from "./session-store.js";

// What a stored session restores (session/load, session/resume): the history, every call with a
// result, the settings, and a note about a turn a crash cut short.

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
}

interface StartedCall {
  tool: string;
  input: unknown;
  changes: boolean;
  finished?: ToolCallStatus;
}

export function restoredState(stored: StoredSession): RestoredState {
  const state: RestoredState = { messages: [], lastCallNumber: 0 };
  let turn: { prompt: string; calls: Map<string, StartedCall> } | undefined;
  const noteCall = (id: unknown) => {
    const n = typeof id === "string" ? /^call_(\d+)$/.exec(id)?.[1] : undefined;
    if (n) state.lastCallNumber = Math.max(state.lastCallNumber, Number(n));
  };
  for (const entry of stored.entries) {
    switch (entry.type) {
      case "message":
        state.messages.push(entry.message);
        break;
      case "compaction":
        state.messages = [...entry.history];
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
      case "turn":
        turn = entry.phase === "start" ? { prompt: entry.prompt ?? "", calls: new Map() } : undefined;
        break;
      case "tool_start":
        noteCall(entry.callId);
        turn?.calls.set(entry.callId, {
          tool: entry.tool,
          input: entry.input,
          changes: entry.sideEffect !== false && entry.idempotent !== true,
        });
        break;
      case "tool_end": {
        const call = turn?.calls.get(entry.callId);
        if (call) call.finished = entry.status;
        break;
      }
      case "view":
        if (entry.call.method === "pending") noteCall((entry.call.args[0] as { callId?: unknown } | undefined)?.callId);
        break;
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
