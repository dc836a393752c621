import fs from "node:fs";
import type { ModelMessage } from "ai";
import path from "node:path";
import type { Envelope } from "../../tool/envelope.js";
import type { ToolEvent } from "../../tool/context.js";
import type { ToolDisplay } from "../../tool/define.js";
import { capStrings, recordedMessage } from "./record-cap.js";
import type { Workspace } from "../../config/workspace.js";
import type { SessionHold } from "./session-hold.js";
import { newEntryId, resultStatus, SessionTree, type EntryData, type TreeEntry } from "./session-format.js";
import {
  recordingEnabled,
  sessionDataDir,
  SessionStore,
  titleFromPrompt,
  type SessionWriter,
  type StoredSession,
} from "./session-store.js";
import type { ToolCallInfo } from "../../host/invoke.js";
import type { CompactionEvent, CostMeter } from "../turn/turn-types.js";

/**
 * Writes a session's life to its file as it happens, as entries of its tree (session-format.ts):
 * each under the current position (the leaf), which it then becomes. The model's history (to
 * restore it), what the front end was shown (to replay it: text, each step of a tool call, notices,
 * compactions), settings and the title. Streamed text is kept as one entry per run of deltas, not
 * one per token. The front end's observer calls reach it through `recordedFrontEnd` (agent/session/front-end.ts).
 */
export class SessionRecorder {
  private text: { type: "agent_text" | "thought"; value: string } | null = null;
  /** The last call number written (`seq` of tool_call and tool_result). */
  private seq: number;
  /** Each described or ended call's number, by callId; a call that ends undescribed gets its number then. */
  private readonly seqs = new Map<string, number>();
  private titled: boolean;
  private readonly ids: Set<string>;
  private leaf: string | undefined;
  private prompt: string | undefined;

  /** Tells the person at the front end (set by `recordedFrontEnd`). */
  tell: ((text: string) => void | Promise<void>) | undefined;

  constructor(
    private readonly writer: SessionWriter,
    /** A loaded session's entries: where it goes on (its leaf, its last prompt, its call numbers) and the ids taken. */
    stored: readonly TreeEntry[] = [],
    options: { titled?: boolean } = {},
  ) {
    this.titled = options.titled ?? false;
    writer.onFailure = (error) => this.stopped(error);
    this.ids = new Set(stored.map((e) => e.id));
    const tree = new SessionTree(stored);
    this.leaf = tree.leafId ?? undefined;
    this.prompt = tree.pathTo().findLast((e) => e.type === "user")?.id;
    this.seq = Math.max(0, ...stored.map((e) => (e.type === "tool_call" || e.type === "tool_result" ? e.seq : 0)));
  }

  /** Writes the file now, its header only, so another process can load the session before its first entry (an editor's session/new). */
  start(): void {
    this.writer.start();
  }

  /** The current position: the entry the next one is appended under. */
  get leafId(): string | undefined {
    return this.leaf;
  }

  /** The `user` entry of the running turn, or of the last one on the path. */
  get promptId(): string | undefined {
    return this.prompt;
  }

  /** The session's file. */
  get file(): string {
    return this.writer.file;
  }

  /** The folder next to the session's file: its sidecar files live there, as long as the session is kept. */
  get dataDir(): string {
    return sessionDataDir(this.writer.file);
  }

  /** Recording stopped (a full disk, a file-size limit, no permission): the editor is told once, after the write that failed; the session goes on. */
  private stopped(error: NodeJS.ErrnoException): void {
    const tell = this.tell;
    if (!tell) return;
    const file = this.writer.file;
    const text = `Saving this session stopped: ${error.message}. The session goes on, but from here on nothing is added to its file (${file}), so a later load shows it only up to here. ${recordingAdvice(error.code, file)}`;
    void Promise.resolve()
      .then(() => tell(text))
      .catch(() => {});
  }

  /**
   * Writes one entry with a new id under `parentId` (default: the current position; null: a root),
   * after any streamed text; it becomes the position (a `leaf` entry moves it to its target). Returns its id.
   */
  append(data: EntryData, parentId?: string | null): string {
    this.flush();
    return this.put(data, parentId);
  }

  private put(data: EntryData, parentId: string | null = this.leaf ?? null): string {
    const id = newEntryId(this.ids);
    this.ids.add(id);
    // type, id, parentId and at first: a line reads as what it is and where it hangs (and `list` finds a title by its start).
    const { type, ...fields } = data;
    this.writer.append({ type, id, parentId, at: new Date().toISOString(), ...fields } as TreeEntry);
    this.leaf = data.type === "leaf" ? data.targetId : id;
    return id;
  }

  /**
   * `/clear`: the path starts again at a root `branch` entry (the conversation before it stays in
   * the file, off the path), with the session's settings again so a load keeps them.
   */
  restart(settings: Record<"mode" | "model" | "thought_level", string>): void {
    if (!this.leaf) return;
    this.append({ type: "branch", fromId: this.leaf, summary: "cleared by /clear" }, null);
    for (const [name, value] of Object.entries(settings)) this.setting(name as keyof typeof settings, value);
  }

  /** The session's file with everything so far written (a hook's `transcript_path`); undefined while nothing is (no prompt yet). */
  transcript(): string | undefined {
    this.flush();
    return fs.existsSync(this.writer.file) ? this.writer.file : undefined;
  }

  /** Writes the streamed text not written yet. */
  flush(): void {
    const pending = this.text;
    if (!pending) return;
    this.text = null;
    this.put({ type: pending.type, text: pending.value });
  }

  private streamed(type: "agent_text" | "thought", delta: string): void {
    if (this.text?.type !== type) this.flush();
    this.text = { type, value: (this.text?.value ?? "") + delta };
  }

  message(message: ModelMessage): void {
    this.append({ type: "message", message: recordedMessage(message) });
  }

  setting(name: "mode" | "model" | "profile" | "thought_level", value: string): void {
    this.append({ type: "setting", name, value });
  }

  /** A prompt starts a turn (its `user` entry, the rewind point); the first one with text names the session. */
  turnStarted(text: string, blocks?: readonly unknown[], messageId?: string): { title?: string; promptId: string } {
    const promptId = this.append({
      type: "user",
      text,
      ...(blocks?.length ? { blocks: [...blocks] } : {}),
      ...(messageId === undefined ? {} : { messageId }),
    });
    this.prompt = promptId;
    if (this.titled) return { promptId };
    const title = titleFromPrompt(text);
    if (!title) return { promptId };
    this.titled = true;
    this.append({ type: "title", title });
    return { title, promptId };
  }

  turnEnded(stopReason: string, usage?: CostMeter, model?: string): void {
    this.append({ type: "turn_end", stopReason, ...(usage ? { usage: { ...usage } } : {}), ...(model ? { model } : {}) });
  }

  // What the front end is shown (recordedFrontEnd calls these): tool calls' arguments, diffs and
  // results are kept to the record's size (capStrings), text runs and notices whole.

  say(text: string): void {
    this.append({ type: "notice", text });
  }

  failed(text: string): void {
    this.append({ type: "notice", text, failed: true });
  }

  textDelta(delta: string): void {
    this.streamed("agent_text", delta);
  }

  thoughtDelta(delta: string): void {
    this.streamed("thought", delta);
  }

  pending(info: ToolCallInfo): void {
    this.append({ type: "tool_pending", info: capStrings(info) });
  }

  /** A call starts with its validated arguments: numbered in the session. */
  describe(info: ToolCallInfo): void {
    this.append({ type: "tool_call", seq: this.seqOf(info.callId), info: capStrings(info) });
  }

  event(callId: string, event: ToolEvent): void {
    // Live output is in the result; a replay shows the result.
    if (event.type === "output" || event.type === "progress" || event.type === "terminal") return;
    this.append({ type: "tool_event", callId, event: capStrings(event) });
  }

  running(callId: string): void {
    this.append({ type: "tool_running", callId });
  }

  done(callId: string, envelope: Envelope, info: ToolCallInfo, display?: ToolDisplay): void {
    const capped = capStrings(info);
    // A call that was never described (a slash command's: pending, then running) gets its tool_call here.
    if (!this.seqs.has(callId)) this.append({ type: "tool_call", seq: this.seqOf(callId), info: capped });
    const seq = this.seqOf(callId);
    this.seqs.delete(callId);
    this.append({
      type: "tool_result",
      seq,
      callId,
      ...resultStatus(envelope),
      envelope: capStrings(envelope),
      info: capped,
      ...(display ? { display: capStrings(display) } : {}),
    });
  }

  private seqOf(callId: string): number {
    let seq = this.seqs.get(callId);
    if (seq === undefined) this.seqs.set(callId, (seq = ++this.seq));
    return seq;
  }

  /** Tools tool_search wired: declared to the model for the rest of the session, a loaded one too. */
  wired(ids: readonly string[]): void {
    this.append({ type: "wired", ids: [...ids] });
  }

  /** A compaction's status event as shown; the completed one with the summary and the history a restore starts from. */
  compaction(event: CompactionEvent): void {
    // The summary's pieces are not kept: the completed event holds all of it.
    if (event.summaryDelta !== undefined) return;
    const { messages, ...shown } = event;
    const completed = event.status === "completed" && messages;
    this.append({
      type: "compaction",
      event: capStrings(shown),
      ...(completed && event.summary ? { summary: event.summary } : {}),
      ...(completed ? { history: messages.map(recordedMessage) } : {}),
    });
  }

  close(): void {
    this.flush();
    this.writer.close();
  }
}

/** The recorder of a new session in `store`, or undefined when sessions stay in memory (TOOLHOST_SESSIONS=off). */
export function newSessionRecorder(store: SessionStore, id: string, workspace: Workspace): SessionRecorder | undefined {
  return recordingEnabled() ? new SessionRecorder(store.writer({ id, cwd: workspace })) : undefined;
}

/** The recorder of a loaded session: it appends to the session's own file, under its current position, and keeps its title. */
export function loadedSessionRecorder(store: SessionStore, stored: StoredSession, hold?: SessionHold): SessionRecorder {
  return new SessionRecorder(store.writerFor(stored, hold), stored.entries, { titled: stored.entries.some((e) => e.type === "title") });
}

/** What to do when the session file cannot be written, by the error's code: the knob that fixes it. */
function recordingAdvice(code: string | undefined, file: string): string {
  if (code === "EACCES" || code === "EPERM" || code === "EROFS")
    return `toolhost is not allowed to write ${file} (${code}): check the permissions of the file and of ${path.dirname(file)} (it should be yours), then start a new session to keep a record.`;
  if (code === "EFBIG")
    return `The file reached the size limit of this process (ulimit -f): raise it (ulimit -f unlimited) and start a new session to keep a record.`;
  return "Free some space and start a new session to keep a record.";
}
