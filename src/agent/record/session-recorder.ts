import type { ModelMessage } from "ai";
import type { Envelope } from "../../tool/envelope.js";
import { capStrings, recordedMessage } from "./record-cap.js";
import type { Workspace } from "../../config/workspace.js";
import type { SessionHold } from "./session-hold.js";
import {
  recordingEnabled,
  sessionDataDir,
  SessionStore,
  titleFromPrompt,
  type SessionEntry,
  type SessionWriter,
  type StoredSession,
  type ToolCallStatus,
  type ViewCall,
} from "./session-store.js";
import type { ToolCallInfo } from "../../host/invoke.js";
import type { CompactionEvent, TurnObserver } from "../turn/turn-types.js";

/** What the recorder sees of a front end (the session's SessionFrontEnd, without importing it). */
interface RecordableView extends TurnObserver {
  say(text: string): void | Promise<void>;
  failed?(text: string): void | Promise<void>;
}

/** What the record keeps of a call's result: enough to read back what happened, not the whole output. */
const ENVELOPE_RECORD_BYTES = 16 * 1024;

/**
 * Writes a session's life to its file as it happens: the model's history (to restore it), what
 * the front end was shown (to replay it), the tool-call record, settings and the title.
 * Streamed text is kept as one entry per run of deltas, not one per token.
 */
export class SessionRecorder {
  private text: { kind: "text" | "thought"; value: string } | null = null;
  private seq = 0;
  private readonly started = new Map<string, { seq: number; at: number }>();
  private titled: boolean;

  /** Tells the person at the front end (set by `wrap`). */
  private tell: ((text: string) => void | Promise<void>) | undefined;

  constructor(
    private readonly writer: SessionWriter,
    options: { titled?: boolean } = {},
  ) {
    this.titled = options.titled ?? false;
    writer.onFailure = (message) => this.stopped(message);
  }

  /** Recording stopped (a full disk): the editor is told once, after the write that failed; the session goes on. */
  private stopped(message: string): void {
    const tell = this.tell;
    if (!tell) return;
    const text = `Saving this session stopped: ${message}. The session goes on, but from here on nothing is added to its file (${this.writer.file}), so a later load shows it only up to here. Free some space and start a new session to keep a record.`;
    void Promise.resolve()
      .then(() => tell(text))
      .catch(() => {});
  }

  /** The folder next to the session's file: its sidecar files live there, as long as the session is kept. */
  get dataDir(): string {
    return sessionDataDir(this.writer.file);
  }

  private write(entry: SessionEntry): void {
    if (entry.type !== "view" || (entry.call.method !== "text" && entry.call.method !== "thought")) this.flushText();
    this.writer.append(entry);
  }

  /** A view call; a tool call's arguments, diffs and results kept to the record's size (not text runs or messages). */
  private view(call: ViewCall): void {
    this.write({
      type: "view",
      at: now(),
      call: call.method === "say" || call.method === "failed" ? call : { ...call, args: capStrings(call.args) },
    });
  }

  private flushText(): void {
    const pending = this.text;
    if (!pending) return;
    this.text = null;
    this.writer.append({ type: "view", at: now(), call: { method: pending.kind, args: [pending.value] } });
  }

  private streamed(kind: "text" | "thought", delta: string): void {
    if (this.text?.kind !== kind) this.flushText();
    this.text = { kind, value: (this.text?.value ?? "") + delta };
  }

  message(message: ModelMessage): void {
    this.write({ type: "message", at: now(), message: recordedMessage(message) });
  }

  setting(name: "mode" | "model" | "profile" | "thought_level", value: string): void {
    this.write({ type: "setting", at: now(), name, value });
  }

  /** A prompt starts a turn; the first one with text names the session. Returns the new title, if any. */
  turnStarted(text: string, blocks?: readonly unknown[]): string | undefined {
    this.write({ type: "turn", at: now(), phase: "start", prompt: text, ...(blocks?.length ? { blocks: [...blocks] } : {}) });
    if (this.titled) return undefined;
    const title = titleFromPrompt(text);
    if (title) {
      this.titled = true;
      this.write({ type: "title", at: now(), title });
    }
    return title;
  }

  turnEnded(stopReason: string): void {
    this.write({ type: "turn", at: now(), phase: "end", stopReason });
  }

  /** Everything the front end is shown is recorded, then passed on; what it is asked passes through. */
  wrap<F extends RecordableView>(frontEnd: F): F {
    this.tell = (text) => frontEnd.say(text);
    const overrides: Partial<RecordableView> = {
      say: (text) => {
        this.view({ method: "say", args: [text] });
        return frontEnd.say(text);
      },
      failed: (text) => {
        this.view({ method: "failed", args: [text] });
        return frontEnd.failed ? frontEnd.failed(text) : frontEnd.say(text);
      },
      text: (delta) => {
        this.streamed("text", delta);
        return frontEnd.text(delta);
      },
      thought: (delta) => {
        this.streamed("thought", delta);
        return frontEnd.thought(delta);
      },
      usage: (report) => frontEnd.usage(report),
      pending: (info) => {
        this.view({ method: "pending", args: [info] });
        return frontEnd.pending(info);
      },
      describe: (info) => {
        this.callStarted(info);
        this.view({ method: "describe", args: [info] });
        return frontEnd.describe?.(info);
      },
      event: (callId, event) => {
        // Live output is in the result; a replay shows the result.
        if (event.type !== "output" && event.type !== "progress" && event.type !== "terminal")
          this.view({ method: "event", args: [callId, event] });
        return frontEnd.event(callId, event);
      },
      running: (callId) => {
        this.view({ method: "running", args: [callId] });
        return frontEnd.running(callId);
      },
      done: (callId, envelope, info, display) => {
        this.callEnded(info, envelope);
        this.view({ method: "done", args: [callId, envelope, info, ...(display ? [display] : [])] });
        return frontEnd.done(callId, envelope, info, display);
      },
    };
    // A proxy, not a spread: a front end may be a class instance whose methods live on its prototype.
    return new Proxy(frontEnd, {
      get(target, property) {
        if (Object.hasOwn(overrides, property)) return overrides[property as keyof RecordableView];
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  /** Tools tool_search wired: declared to the model for the rest of the session, a loaded one too. */
  wired(ids: readonly string[]): void {
    this.write({ type: "wired", at: now(), ids: [...ids] });
  }

  /** A compaction: the history it left (what a restore starts from), and the event for a replay. */
  compaction(event: CompactionEvent): void {
    // The summary's pieces are not kept: the completed event holds all of it.
    if (event.summaryDelta !== undefined) return;
    const { messages, ...shown } = event;
    if (event.status === "completed" && messages) {
      this.write({
        type: "compaction",
        at: now(),
        ...(event.summary ? { summary: event.summary } : {}),
        history: messages.map(recordedMessage),
      });
    }
    this.view({ method: "compaction", args: [shown] });
  }

  private callStarted(info: ToolCallInfo): void {
    if (this.started.has(info.callId)) return;
    const seq = ++this.seq;
    this.started.set(info.callId, { seq, at: Date.now() });
    this.write({
      type: "tool_start",
      at: now(),
      seq,
      callId: info.callId,
      tool: info.toolId,
      input: capStrings(info.args),
      ...(info.sideEffect !== undefined ? { sideEffect: info.sideEffect } : {}),
      ...(info.idempotent !== undefined ? { idempotent: info.idempotent } : {}),
    });
  }

  private callEnded(info: ToolCallInfo, envelope: Envelope): void {
    // A call that never got complete arguments starts here.
    this.callStarted(info);
    const { seq } = this.started.get(info.callId)!;
    this.started.delete(info.callId);
    const code = envelope.type === "error" ? (envelope.metadata.error_code ?? "execution_failed") : undefined;
    const status: ToolCallStatus = code === undefined ? "completed" : statusOf(code);
    this.write({
      type: "tool_end",
      at: now(),
      seq,
      callId: info.callId,
      status,
      ...(code === undefined ? {} : { errorCode: code }),
      envelope: capped(envelope),
    });
  }

  close(): void {
    this.flushText();
    this.writer.close();
  }
}

function now(): string {
  return new Date().toISOString();
}

function statusOf(code: string): ToolCallStatus {
  if (code === "aborted") return "cancelled";
  if (code === "permission_denied" || code === "capability_denied" || code === "rejected") return "refused";
  return "failed";
}

/** The envelope as JSON, cut to the record's size with a note saying so. */
function capped(envelope: Envelope): unknown {
  const json = JSON.stringify(envelope);
  if (json.length <= ENVELOPE_RECORD_BYTES) return envelope;
  return {
    type: envelope.type,
    cut: `${json.length} characters, cut to ${ENVELOPE_RECORD_BYTES}`,
    head: json.slice(0, ENVELOPE_RECORD_BYTES),
  };
}

/** The recorder of a new session in `store`, or undefined when sessions stay in memory (TOOLHOST_SESSIONS=off). */
export function newSessionRecorder(store: SessionStore, id: string, workspace: Workspace): SessionRecorder | undefined {
  return recordingEnabled() ? new SessionRecorder(store.writer({ id, cwd: workspace })) : undefined;
}

/** The recorder of a loaded session: it appends to the session's own file and keeps its title. */
export function loadedSessionRecorder(store: SessionStore, stored: StoredSession, hold?: SessionHold): SessionRecorder {
  return new SessionRecorder(store.writerFor(stored, hold), { titled: stored.entries.some((e) => e.type === "title") });
}
