import { randomBytes } from "node:crypto";
import type { ModelMessage } from "ai";
import type { ToolEvent } from "../../tool/context.js";
import type { ToolDisplay } from "../../tool/define.js";
import type { Envelope } from "../../tool/envelope.js";
import type { ToolCallInfo } from "../../host/invoke.js";
import type { FileChange } from "../../runtime/checkpoints/checkpoints.js";
import type { SkippedFile } from "../../runtime/checkpoints/workspace-tree.js";
import type { CompactionEvent, CostMeter } from "../turn/turn-types.js";

// The session file, format 2 (issue 23): one JSONL file per session whose entries form a tree.
// The first line is the header; every later line is one entry `{type, id, parentId, at, …}`.
// An entry is appended under the current position (its parentId); a rewind moves the position back
// (a `branch` entry) and the next entries grow a new branch, so nothing is ever lost. What a
// session restores and replays is the path from the root to the current position.
//
// The entries are in toolhost's own vocabulary, each one event of the session: a prompt, the
// model's history, what the editor was shown of a turn (text, each step of a tool call, notices,
// compactions), settings, checkpoints of the workspace, and the moves and names of the tree.
// Format-1 files (a flat list of front-end calls and records) are migrated on read:
// session-migrate.ts.

/** The major version of the AI SDK (`ai`) whose ModelMessage shape `message` and `compaction` entries have. */
export const AI_MAJOR = "6";

/** The first line of a format-2 session file; it has no id or parentId. */
export interface SessionHeader {
  type: "session";
  format: 2;
  id: string;
  cwd: string;
  /** Further workspace roots it was created with (ACP's additionalDirectories), when any. */
  additionalDirectories?: string[];
  /** ISO time the session was created. */
  created: string;
  /** The toolhost version that created it. */
  toolhost: string;
  /** The major version of the AI SDK its messages are shaped for (`AI_MAJOR` when written). */
  ai: string;
  /** A fork: the session and the entry it started from. */
  forkedFrom?: { session: string; entryId: string };
}

/** The outcome of one tool call, as the record keeps it. */
export type ToolCallStatus = "completed" | "failed" | "refused" | "cancelled";

/** A compaction's status event as the editor was shown it (the history it left is the entry's own field). */
export type CompactionShown = Omit<CompactionEvent, "messages" | "summaryDelta">;

/** What every entry after the header has. */
interface EntryBase {
  /** Unique in the file: 8 hex characters (`newEntryId`), or `m<line>` for one migrated from format 1. */
  id: string;
  /** The entry it was appended under; null for the first. */
  parentId: string | null;
  /** ISO time it was written. */
  at: string;
}

/** An entry's own fields, by type (what a writer hands in; the writer adds id, parentId and at). */
export type EntryData =
  /** A prompt starts a turn: its first text, and every block of it as the front end showed it. Its id is the rewind point's messageId. */
  | { type: "user"; text: string; blocks?: unknown[]; messageId?: string }
  /**
   * `usage`: the session's meter after the turn (its totals, every turn so far), so a load goes on
   * from them; `model`: the model the session had (`provider/model`), set or the default of its environment.
   */
  | { type: "turn_end"; stopReason: string; usage?: CostMeter; model?: string }
  /** A message of the model's history (AI SDK ModelMessage, of the header's `ai` major). */
  | { type: "message"; message: ModelMessage }
  /** A run of streamed text deltas, as one entry. */
  | { type: "agent_text"; text: string }
  /** A run of streamed reasoning deltas. */
  | { type: "thought"; text: string }
  /** A message of the agent's own (help, problems, results of commands); `failed`: the turn could not be answered. */
  | { type: "notice"; text: string; failed?: true }
  /** A call is known (a model's call once its arguments are complete, or a slash command's). */
  | { type: "tool_pending"; info: ToolCallInfo }
  /** A call starts: numbered in the session (`seq`), with its validated arguments (capped) and side-effect metadata in `info`. */
  | { type: "tool_call"; seq: number; info: ToolCallInfo }
  /** An event the tool emitted (a diff, a plan); live output is not kept: the result has it. */
  | { type: "tool_event"; callId: string; event: ToolEvent }
  | { type: "tool_running"; callId: string }
  /**
   * A call ended: its status, its envelope (strings capped), the call as it ended, and what the tool
   * said to show of it. `seq` 0: a format-1 call whose number was never written.
   */
  | {
      type: "tool_result";
      seq: number;
      callId: string;
      status: ToolCallStatus;
      errorCode?: string;
      envelope: Envelope;
      info: ToolCallInfo;
      display?: ToolDisplay;
    }
  /**
   * A compaction: each status event the editor was shown; the completed one carries the summary and
   * the history a restore starts from. `event` is absent only for a format-1 compaction whose shown
   * event a crash cut off.
   */
  | { type: "compaction"; event?: CompactionShown; summary?: string; history?: ModelMessage[] }
  | { type: "setting"; name: "mode" | "model" | "profile" | "thought_level"; value: string }
  | { type: "title"; title: string }
  /** Deferred tools tool_search wired (declared from then on). */
  | { type: "wired"; ids: string[] }
  /**
   * A checkpoint of the workspace for the turn of `promptId` (a user entry's id): written when the
   * snapshot before its first change is taken, and again at the turn's end with the snapshot after
   * it and the files it changed. The last one of a promptId wins. A rewind that moves the files
   * writes one too (`rewind`: the point rewound to; `promptId`: the entry it was appended under).
   * `before`, `after`, `files` and `skipped` are the primary root's (`cwd`); `roots`, the further
   * roots' (additionalDirectories), each with its own. An entry without `roots` (a session without
   * further roots, or one written before they were checkpointed) holds the primary root only.
   */
  | {
      type: "checkpoint";
      promptId: string;
      before: string;
      after?: string;
      files?: FileChange[];
      skipped?: SkippedFile[];
      rewind?: string;
      roots?: RootCheckpoint[];
    }
  /**
   * The session just before a rewind moved it (issue 34 §3): its position (this entry's parent) and
   * the workspace then (`before`: the primary root's snapshot, `roots`: the further roots'), so a
   * later rewind can come back to it. It is a rewind point of its own. `rewind`: the point that
   * rewind went to; `mode`: what it moved.
   */
  | { type: "saved"; rewind: string; mode: "files" | "conversation" | "both"; before?: string; roots?: RootCheckpoint[] }
  /**
   * A rewind: its parentId is the position rewound to, and the position is now this entry.
   * `fromId` is the position it left (the tip of the branch left), `summary` a short account of that branch.
   */
  | { type: "branch"; fromId: string; summary: string }
  /** Moves the position to `targetId` without a summary (the entry itself is on no path). */
  | { type: "leaf"; targetId: string }
  /** Names an entry; the empty label removes the name. */
  | { type: "label"; targetId: string; label: string };

/** A further root's part of a `checkpoint` entry: its snapshots (ids in its own repository) and files, as the entry's own fields are the primary root's. */
export interface RootCheckpoint {
  /** The root, absolute, as the session spelled it. */
  root: string;
  before: string;
  after?: string;
  /** Paths relative to the root, with `/`. */
  files?: FileChange[];
  skipped?: SkippedFile[];
}

/** One entry of a format-2 session file after the header. */
export type TreeEntry = EntryData & EntryBase;

/** The entry of one type. */
export type EntryOf<T extends TreeEntry["type"]> = Extract<TreeEntry, { type: T }>;

/** A new entry id: 8 hex characters that no entry in `existing` has. */
export function newEntryId(existing: { has(id: string): boolean }): string {
  for (;;) {
    const id = randomBytes(4).toString("hex");
    if (!existing.has(id)) return id;
  }
}

/** A call's status from its envelope (the record's vocabulary), with the error code of a failed one. */
export function resultStatus(envelope: Envelope): { status: ToolCallStatus; errorCode?: string } {
  if (envelope.type !== "error") return { status: "completed" };
  const errorCode = envelope.metadata.error_code ?? "execution_failed";
  if (errorCode === "aborted") return { status: "cancelled", errorCode };
  if (errorCode === "permission_denied" || errorCode === "capability_denied" || errorCode === "rejected")
    return { status: "refused", errorCode };
  return { status: "failed", errorCode };
}

/** A branch of the tree, for a tree view and for moving to it: each entry nothing continues is a tip. */
export interface Branch {
  /** Its last entry (one with no children, `leaf` entries aside: they move the position, they continue nothing). */
  tipId: string;
  /** Its last entry on the path to the current position (the tip itself for the current branch); null when it shares none (a damaged file). */
  forkId: string | null;
  /** Entries after the fork up to the tip: 0 when the tip is on the current path. */
  length: number;
  /** The summary of the `branch` entry that left this tip, if a rewind did. */
  summary?: string;
}

/**
 * A session's entries with an index by id: the current position, the path to any entry, the
 * children, the branches and the labels. Built in one pass; a path costs its own length. A parentId
 * must name an earlier entry (an appending writer can name no other): one that names a later or a
 * missing entry (a damaged or hand-edited file) makes its entry a root, so no walk can loop.
 */
export class SessionTree {
  /** Each entry's place in `entries`, by id. */
  private readonly index = new Map<string, number>();
  /** Each entry's parent's place (-1: none), made on first use. */
  private parentIndex: Int32Array | undefined;
  private children: Map<string | null, TreeEntry[]> | undefined;
  /** The current position: where the next entry goes, and what a restore and a replay read the path to. */
  readonly leafId: string | null = null;

  constructor(readonly entries: readonly TreeEntry[]) {
    let leaf: string | null = null;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      this.index.set(entry.id, i);
      // A leaf entry moves the position (to an entry that exists); every other entry, a branch too, is the new position.
      if (entry.type !== "leaf") leaf = entry.id;
      else if (this.index.has(entry.targetId)) leaf = entry.targetId;
    }
    this.leafId = leaf;
  }

  get(id: string): TreeEntry | undefined {
    const i = this.index.get(id);
    return i === undefined ? undefined : this.entries[i];
  }

  private parents(): Int32Array {
    if (!this.parentIndex) {
      this.parentIndex = new Int32Array(this.entries.length);
      for (let i = 0; i < this.entries.length; i++) {
        const { parentId } = this.entries[i]!;
        const p = parentId === null ? undefined : this.index.get(parentId);
        this.parentIndex[i] = p !== undefined && p < i ? p : -1;
      }
    }
    return this.parentIndex;
  }

  /** The places from `leafId` up to its root. */
  private upFrom(leafId: string): number[] {
    const start = this.index.get(leafId);
    if (start === undefined) throw new Error(`No entry ${leafId} in this session`);
    const parents = this.parents();
    const places: number[] = [];
    for (let i = start; i >= 0; i = parents[i]!) places.push(i);
    return places;
  }

  /** The entries from the root to `leafId` (default: the current position), in order; [] for no position. */
  pathTo(leafId: string | null = this.leafId): TreeEntry[] {
    if (leafId === null) return [];
    const places = this.upFrom(leafId);
    const path: TreeEntry[] = new Array<TreeEntry>(places.length);
    for (let k = 0; k < places.length; k++) path[places.length - 1 - k] = this.entries[places[k]!]!;
    return path;
  }

  /** The entries appended under `id` (null: the roots), in file order. */
  childrenOf(id: string | null): readonly TreeEntry[] {
    if (!this.children) {
      this.children = new Map();
      for (const entry of this.entries) {
        const list = this.children.get(entry.parentId);
        if (list) list.push(entry);
        else this.children.set(entry.parentId, [entry]);
      }
    }
    return this.children.get(id) ?? [];
  }

  /** Every branch's tip, in file order, with where it leaves the current path and its summary. */
  branches(): Branch[] {
    const { entries } = this;
    const parents = this.parents();
    // Each entry's fork (-2: not known yet, -1: none) and its distance from it; the path's are themselves.
    const fork = new Int32Array(entries.length).fill(-2);
    const length = new Int32Array(entries.length);
    if (this.leafId !== null) for (const i of this.upFrom(this.leafId)) fork[i] = i;
    const continued = new Uint8Array(entries.length);
    const summaries = new Map<string, string>();
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      if (entry.type !== "leaf" && parents[i]! >= 0) continued[parents[i]!] = 1;
      if (entry.type === "branch") summaries.set(entry.fromId, entry.summary);
    }
    const out: Branch[] = [];
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i]!;
      if (entry.type === "leaf" || continued[i]) continue;
      // Up to the path, or to an entry an earlier tip's walk passed: no entry is walked twice.
      const walked: number[] = [];
      let j = i;
      while (j >= 0 && fork[j] === -2) {
        walked.push(j);
        j = parents[j]!;
      }
      const base = j < 0 ? { fork: -1, length: 0 } : { fork: fork[j]!, length: length[j]! };
      for (let k = walked.length - 1; k >= 0; k--) {
        fork[walked[k]!] = base.fork;
        length[walked[k]!] = base.length + walked.length - k;
      }
      const summary = summaries.get(entry.id);
      const forkId = fork[i]! >= 0 ? entries[fork[i]!]!.id : null;
      out.push({ tipId: entry.id, forkId, length: length[i]!, ...(summary !== undefined ? { summary } : {}) });
    }
    return out;
  }

  /** The name of each named entry (the last label entry for it wins; an empty one removes it). */
  labels(): Map<string, string> {
    const names = new Map<string, string>();
    for (const entry of this.entries) {
      if (entry.type !== "label") continue;
      if (entry.label === "") names.delete(entry.targetId);
      else names.set(entry.targetId, entry.label);
    }
    return names;
  }
}

/** The current position of a session's entries (null for none): walking in order, `leaf` moves it to its target, any other entry to itself. */
export function currentLeaf(entries: readonly TreeEntry[]): string | null {
  return new SessionTree(entries).leafId;
}

/** The entries from the root to `leafId`, in order. */
export function pathTo(entries: readonly TreeEntry[], leafId: string | null): TreeEntry[] {
  return new SessionTree(entries).pathTo(leafId);
}

/** The entries appended under `id` (null: the roots), in file order. */
export function childrenOf(entries: readonly TreeEntry[], id: string | null): TreeEntry[] {
  return entries.filter((entry) => entry.parentId === id);
}

/** Every branch's tip, with where it leaves the current path (see `SessionTree.branches`). */
export function branchesOf(entries: readonly TreeEntry[]): Branch[] {
  return new SessionTree(entries).branches();
}
