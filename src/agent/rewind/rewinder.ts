import { randomUUID } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import type { PathNote, RestoreFile } from "../../runtime/checkpoints/restore.js";
import { openWorkspaceCheckpoints, type WorkspaceCheckpoints } from "../../runtime/checkpoints/roots.js";
import { SessionTree, type EntryOf, type SessionHeader, type TreeEntry } from "../record/session-format.js";
import { loadedSessionRecorder, type SessionRecorder } from "../record/session-recorder.js";
import { restoredState, type RestoredState } from "../record/session-restore.js";
import { readSessionFile, sessionFileText, type SessionStore, type StoredSession } from "../record/session-store.js";
import {
  branchSummary,
  conversationRewindRecord,
  furtherRoots,
  promptPreview,
  rewindFiles,
  rewindPoints,
  undoPoint,
  type FilesRewound,
  type RewindMode,
  type RewindPoint,
} from "./engine.js";

// A recorded session's rewind, fork and labels (issue 23 §3), over its file: AgentSession hands
// its calls here, and `toolhost sessions rewind|fork` use it on a stored session. The tree is read
// from the file (the recorder writes each entry as it happens), so what a rewind sees is what a
// load would. A rewind of the conversation appends a `branch` entry under the point's parent (the
// branch left stays in the file) and the session's history is rebuilt from the path to it; a
// rewind of the files restores them with the session's checkpoints (agent/rewind/engine.ts).

export type { RewindMode, RewindPoint };

export interface RewindOptions {
  /** Only say what would change. */
  dryRun?: boolean;
  /** Overwrite files changed outside toolhost too. */
  force?: boolean;
}

/** What a rewind did (or, dry, would do). */
export interface RewindOutcome {
  /** Something was changed (false for a dry run, and when nothing could be done). */
  applied: boolean;
  /** The files (a further root's by their absolute path, the primary root's relative to it). */
  files: RestoreFile[];
  /** Files changed outside toolhost since the last checkpoint (kept unless `force`), or that cannot be written safely. */
  conflicts: PathNote[];
  /** Files the restore could not write or remove. */
  failed: PathNote[];
  /** With `force`: the folder holding what the overwritten files were just before (at their paths below it). */
  kept?: string;
  /** The state the session was in just before this rewind (a `saved` entry): a point to come back to. */
  savedId?: string;
  /** What happened, for the person. */
  message: string;
}

export type CheckpointsHandle = { checkpoints: WorkspaceCheckpoints } | { checkpoints?: undefined; reason: string };

export interface SessionRewindHost {
  recorder: SessionRecorder;
  /** The session's checkpoints, or why there are none. */
  checkpoints(): Promise<CheckpointsHandle>;
  /** toolhost's home (for a fork's checkpoints; default: `toolhostHome()`). */
  home?: string;
  /** The conversation moved: a live session takes the state at the new position (its history; its settings, which stay as they were). */
  moved?(state: RestoredState): void;
}

const MODES: readonly RewindMode[] = ["files", "conversation", "both"];

export const isRewindMode = (value: string): value is RewindMode => (MODES as readonly string[]).includes(value);

export class SessionRewind {
  constructor(private readonly host: SessionRewindHost) {}

  /** The session's tree as its file holds it now. */
  async tree(): Promise<SessionTree> {
    const { recorder } = this.host;
    recorder.flush();
    const stored = await readSessionFile(recorder.file);
    return new SessionTree(stored?.entries ?? []);
  }

  /** The prompts one can rewind to, oldest first. */
  async points(): Promise<RewindPoint[]> {
    return rewindPoints(await this.tree());
  }

  /**
   * Rewinds the files, the conversation or both to just before the prompt `messageId`, or to the
   * state a rewind left (a `saved` entry). An applied rewind first saves the state it leaves.
   */
  async rewind(messageId: string, mode: RewindMode, options: RewindOptions = {}): Promise<RewindOutcome> {
    const tree = await this.tree();
    const point = tree.get(messageId);
    if (point?.type !== "user" && point?.type !== "saved")
      throw new RewindError(`${messageId} is not a prompt of this session: a rewind goes back to a prompt or to a state a rewind left.`);
    const withFiles = mode !== "conversation";
    const withConversation = mode !== "files";
    let files: FilesRewound = { applied: false, files: [], conflicts: [], skipped: [], failed: [] };
    let filesNote = "";
    const handle = withFiles || !options.dryRun ? await this.host.checkpoints() : undefined;
    const savedId = options.dryRun ? undefined : await this.saveNow(messageId, mode, handle);
    if (withFiles && handle) {
      if (handle.checkpoints) {
        const keep = options.force && !options.dryRun ? this.keepFolder() : undefined;
        files = await rewindFiles(tree, messageId, handle.checkpoints, { ...options, moving: withConversation, keep });
        if (files.problem) filesNote = `The files were not rewound: ${files.problem}.`;
      } else filesNote = `The files were not rewound: ${handle.reason}.`;
    }
    const which = describePoint(tree, point);
    const back = point.type === "user" ? `before ${which}` : which;
    if (options.dryRun) {
      return {
        ...outcome(files, false),
        message: [
          [`A rewind to ${which} would:`, describeFiles(files, true, withFiles), filesNote].filter(Boolean).join(" "),
          fileList(files),
        ]
          .filter(Boolean)
          .join("\n"),
      };
    }
    const { recorder } = this.host;
    let leftNote = "";
    if (withConversation) {
      // Back to before a prompt: under its parent; back to a saved state: under that entry, the position it saved.
      const at = point.type === "user" ? point.parentId : point.id;
      const summary = branchSummary(tree, at);
      // A conversation-only rewind leaves the files as they are: the new position carries what they are.
      let carried = files.record;
      if (!withFiles && handle?.checkpoints)
        carried = await conversationRewindRecord(tree, messageId, handle.checkpoints).catch(() => undefined);
      const branchId = recorder.append({ type: "branch", fromId: savedId ?? tree.leafId ?? messageId, summary }, at);
      if (carried) recorder.append({ type: "checkpoint", promptId: branchId, ...carried });
      await this.moved(tree.leafId);
      leftNote = `The conversation is back to ${back}; what came after stays in the session file as a branch (${summary}).`;
    } else if (files.record) recorder.append({ type: "checkpoint", promptId: recorder.leafId ?? messageId, ...files.record });
    const filesText = withFiles ? describeFiles(files, false, true) : "";
    const saved = savedId
      ? `The state before this rewind is saved as point ${pointNumber(await this.tree(), savedId)}: a rewind to it comes back.`
      : "";
    const message = [leftNote || `Rewound to ${back}.`, filesText, filesNote, saved].filter(Boolean).join(" ");
    return { ...outcome(files, withConversation || (files.applied && !files.problem)), ...(savedId ? { savedId } : {}), message };
  }

  /**
   * Records the session as it is, before a rewind moves it: a `saved` entry under the current
   * position with a snapshot of every root (none when there are no checkpoints: the position alone).
   */
  private async saveNow(pointId: string, mode: RewindMode, handle: CheckpointsHandle | undefined): Promise<string> {
    const snapshots = handle?.checkpoints ? await handle.checkpoints.snapshot(`now, before a rewind to ${pointId}`) : [];
    const [primary, ...further] = snapshots;
    const roots = further.flatMap(({ root, snapshot }) => (snapshot ? [{ root, before: snapshot.id }] : []));
    return this.host.recorder.append({
      type: "saved",
      rewind: pointId,
      mode,
      ...(primary?.snapshot ? { before: primary.snapshot.id } : {}),
      ...(roots.length ? { roots } : {}),
    });
  }

  /** A new folder, in the session's data folder, for the files a forced rewind overwrites. */
  private keepFolder(): string {
    const stamp = new Date().toISOString().replace(/[:.]/g, "-");
    return path.join(this.host.recorder.dataDir, "overwritten", `${stamp}-${randomUUID().slice(0, 8)}`);
  }

  /** `/undo`: the files of the last prompt whose changes no rewind undid yet. */
  async undo(options: RewindOptions = {}): Promise<RewindOutcome> {
    const point = undoPoint(await this.tree());
    if (!point)
      return { applied: false, files: [], conflicts: [], failed: [], message: "No prompt of this session changed files: nothing to undo." };
    return this.rewind(point.id, "files", options);
  }

  /** Names the current position (an empty name removes the name); returns the entry named. */
  label(name: string, targetId?: string): string {
    const { recorder } = this.host;
    recorder.flush();
    const target = targetId ?? recorder.leafId;
    if (!target) throw new RewindError("There is nothing to name yet: send a prompt first.");
    recorder.append({ type: "label", targetId: target, label: name.trim() });
    return target;
  }

  /**
   * A new session that starts where this one is at `atEntryId` (default: now): a file whose header
   * names this session and entry, holding the entries on the path to it (their ids kept), and the
   * checkpoints they name kept for it too. Returns its id.
   */
  async fork(atEntryId?: string): Promise<string> {
    const { recorder } = this.host;
    recorder.flush();
    const stored = await readSessionFile(recorder.file);
    if (!stored) throw new RewindError("This session has nothing to fork yet: send a prompt first.");
    const tree = new SessionTree(stored.entries);
    const at = atEntryId ?? tree.leafId;
    if (!at || !tree.get(at)) throw new RewindError(`This session has no entry ${atEntryId ?? ""} to fork at.`.replace("  ", " "));
    const entries = tree.pathTo(at);
    const id = randomUUID();
    const header: SessionHeader = {
      ...stored.header,
      id,
      created: new Date().toISOString(),
      forkedFrom: { session: stored.header.id, entryId: at },
    };
    // Beside this session's file: the same project.
    const file = path.join(path.dirname(recorder.file), `${id}.jsonl`);
    await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
    await fsp.writeFile(file, sessionFileText(header, entries), { mode: 0o600, flag: "wx" });
    await adoptCheckpoints(header, path.basename(path.dirname(file)), entries, this.host.home);
    return id;
  }

  /**
   * After a rewind of the conversation: a setting the branch left had changed (mode, model, thought
   * level, profile) is written again, so the session keeps it; then the history at the new position.
   */
  private async moved(leftLeaf: string | null): Promise<void> {
    const { recorder } = this.host;
    recorder.flush();
    const stored = await readSessionFile(recorder.file);
    if (!stored) return;
    const values = (state: RestoredState): Record<SettingName, string | undefined> => ({
      mode: state.mode,
      model: state.model,
      thought_level: state.thoughtLevel,
      profile: state.profile,
    });
    const now = values(restoredState(stored));
    const left = leftLeaf ? values(restoredState(stored, leftLeaf)) : now;
    const kept = (Object.keys(left) as SettingName[]).filter((name) => left[name] !== undefined && left[name] !== now[name]);
    for (const name of kept) recorder.append({ type: "setting", name, value: left[name]! });
    const state = kept.length ? restoredState((await readSessionFile(recorder.file)) ?? stored) : restoredState(stored);
    this.host.moved?.(state);
  }
}

type SettingName = "mode" | "model" | "thought_level" | "profile";

/** The snapshots a fork's entries name, made its own in each root's repository (a root that cannot be opened is left). */
async function adoptCheckpoints(header: SessionHeader, project: string, entries: readonly TreeEntry[], home?: string): Promise<void> {
  // The turns' snapshots, and those of the states rewinds saved.
  const checkpoints = entries.filter((e): e is EntryOf<"checkpoint"> | EntryOf<"saved"> => e.type === "checkpoint" || e.type === "saved");
  if (!checkpoints.length) return;
  const roots = sessionRoots(header, entries);
  const opened = await openWorkspaceCheckpoints({ roots, project, session: header.id, home });
  if (!opened.available) return;
  const ids = (part: { before?: string; after?: string }) => [part.before, part.after].filter((id): id is string => !!id);
  try {
    await opened.checkpoints.primary.adopt(checkpoints.flatMap(ids)).catch(() => []);
    for (const root of roots.slice(1)) {
      const one = await opened.checkpoints.find(root);
      const named = checkpoints.flatMap((e) => (e.roots ?? []).filter((r) => r.root === root).flatMap(ids));
      if (one && named.length) await one.adopt(named).catch(() => []);
    }
  } finally {
    await opened.checkpoints.close();
  }
}

/** A stored session's roots: its folder, its further roots (the header's, then any its checkpoints name). */
export function sessionRoots(header: SessionHeader, entries: readonly TreeEntry[]): string[] {
  return [...new Set([header.cwd, ...(header.additionalDirectories ?? []), ...furtherRoots(entries)])];
}

/** A problem a rewind, fork or label reports to the person (not a crash). */
export class RewindError extends Error {}

function pointNumber(tree: SessionTree, id: string): string {
  const n = rewindPoints(tree).findIndex((p) => p.messageId === id);
  return n >= 0 ? String(n + 1) : id;
}

/** A point as a rewind's message names it: `prompt 2 ("…")`, or "the state saved at … (point 3, before a rewind)". */
function describePoint(tree: SessionTree, point: EntryOf<"user"> | EntryOf<"saved">): string {
  const n = pointNumber(tree, point.id);
  if (point.type === "user") return `prompt ${n} (${JSON.stringify(promptPreview(point.text))})`;
  return `the state saved at ${point.at.slice(0, 19).replace("T", " ")} (point ${n}, before a rewind)`;
}

function outcome(files: FilesRewound, applied: boolean): Omit<RewindOutcome, "message"> {
  return { applied, files: files.files, conflicts: files.conflicts, failed: files.failed, ...(files.kept ? { kept: files.kept } : {}) };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

/** The files part of a rewind's message. */
function describeFiles(files: FilesRewound, dry: boolean, withFiles: boolean): string {
  if (!withFiles || files.problem) return "";
  const count = (action: RestoreFile["action"]) => files.files.filter((f) => f.action === action).length;
  const parts = [
    [count("restore"), "file", "restored"],
    [count("create"), "deleted file", "brought back"],
    [count("delete"), "created file", "removed"],
  ]
    .filter(([n]) => (n as number) > 0)
    .map(([n, what, done]) => `${plural(n as number, what as string)} ${dry ? `to be ${done}` : done}`);
  const text = parts.length ? `Files: ${parts.join(", ")}.` : "No file needs to change.";
  // With force, a conflict is carried out too (it is among the files); the others are left as they are.
  const carried = new Set(files.files.map((f) => f.path));
  const kept = files.conflicts.filter((c) => !carried.has(c.path));
  const forced = files.conflicts.filter((c) => carried.has(c.path));
  const list = (notes: readonly PathNote[]) => notes.map((c) => `${c.path} (${c.reason})`).join(", ");
  const keptIn = files.kept ? `; what they were just before is kept in ${files.kept}` : "";
  const conflicts =
    (kept.length
      ? ` ${plural(kept.length, "file")} changed outside toolhost ${dry ? "would be" : "were"} left as ${kept.length === 1 ? "it is" : "they are"}: ${list(kept)}; force overwrites them.`
      : "") + (forced.length ? ` Overwritten although changed outside toolhost (force): ${list(forced)}${keptIn}.` : "");
  const failed = files.failed.length ? ` Could not restore: ${files.failed.map((f) => `${f.path} (${f.reason})`).join(", ")}.` : "";
  return `${text}${conflicts}${failed}`;
}

/** A dry run's files one a line, each with what would happen to it (a conflict left alone says so). */
function fileList(files: FilesRewound): string {
  const verb: Record<RestoreFile["action"], string> = { restore: "restore", create: "bring back", delete: "remove" };
  const carried = new Set(files.files.map((f) => f.path));
  return [
    ...files.files.map((f) => `  ${verb[f.action]} ${f.path}`),
    ...files.conflicts.filter((c) => !carried.has(c.path)).map((c) => `  leave ${c.path} (${c.reason})`),
  ].join("\n");
}

/** The points of `path` (default: the current one) with their labels (a label on the prompt or on any entry of its turn), for a listing; a branch a rewind left keeps its own. */
export function pointLabels(tree: SessionTree, path: readonly TreeEntry[] = tree.pathTo()): Map<string, string[]> {
  const labels = tree.labels();
  const out = new Map<string, string[]>();
  let current: string | undefined;
  for (const entry of path) {
    if (entry.type === "user") current = entry.id;
    const name = labels.get(entry.id);
    if (name && current) out.set(current, [...(out.get(current) ?? []), name]);
  }
  return out;
}

/** Forks a stored session (not open in this process) at `atEntryId` (default: its current position); returns the new id. */
export async function forkStoredSession(store: SessionStore, stored: StoredSession, atEntryId?: string): Promise<string> {
  // Nothing is written to the stored session: its recorder only names its file.
  const recorder = loadedSessionRecorder(store, stored);
  try {
    return await new SessionRewind({ recorder, checkpoints: async () => ({ reason: "not needed" }) }).fork(atEntryId);
  } finally {
    recorder.close();
  }
}
