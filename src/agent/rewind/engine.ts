import nodePath from "node:path";
import type { Checkpoints, FileChange, RestoreResult } from "../../runtime/checkpoints/checkpoints.js";
import type { PathNote } from "../../runtime/checkpoints/restore.js";
import type { WorkspaceCheckpoints } from "../../runtime/checkpoints/roots.js";
import type { EntryOf, RootCheckpoint, SessionTree, TreeEntry } from "../record/session-format.js";
import type { CheckpointRecord } from "./checkpoints.js";

// Rewind (issue 23 §3) over a session's tree: the points (the prompts on the current path), and
// the files of a rewind to a point.
//
// The files of a rewind to point k are the paths the checkpointed turns changed between the
// current position and k: on the current path, the turns after the last entry it shares with k
// (k and later, for a point on the current path); for a point on another branch, also that
// branch's turns before k. They are restored to the workspace as it was just before k: the
// `before` snapshot of the first checkpointed turn at or after k (on k's branch), or else the
// `after` of the last one before it. A path that differs from the session's last known state (the
// latest snapshot on the current path) was changed outside toolhost: a conflict, not written
// unless `force`. Only paths inside the workspace root are ever written (the engine's restore).
//
// Each root of the session is rewound so, on its own: the primary root with the entries' own
// fields, a further root with its part of their `roots` (a turn whose entry has no part for a
// root took no snapshot of it). What a rewind reports names a further root's files by their
// absolute path (the primary root's stay relative to it). A root the record names that is not a
// root of the session now is not written: its files are listed as not restored.
//
// A rewind that restores files records what it did as a checkpoint entry of its own (`rewind`:
// the point), so the next rewind knows the workspace's state; so does a rewind of the conversation
// alone, whose new position then carries the files of the turns it left.
//
// Before it moves anything, an applied rewind records the session as it is (a `saved` entry: the
// position and a snapshot of every root), and that state is a point too: a rewind to it puts back
// every file that differs from its snapshot and the conversation as it was then, so no state a
// rewind or /undo left is out of reach (issue 34 §3). Its snapshot is never a known state: a file
// changed outside toolhost before it is still a conflict for the next rewind.

export type RewindMode = "files" | "conversation" | "both";

/** A point one can rewind to: a prompt (its user entry) or the state a rewind left (its `saved` entry). */
export interface RewindPoint {
  messageId: string;
  kind: "prompt" | "saved";
  /** The prompt's first line, at most 80 characters. */
  preview: string;
  /** When it was sent (ISO). */
  createdAt: string;
  /** How many files its turn changed (0: none, no checkpoint, or a saved state). */
  filesChanged: number;
}

type CheckpointEntry = EntryOf<"checkpoint">;
type SavedEntry = EntryOf<"saved">;
/** What a rewind goes back to. */
export type PointEntry = EntryOf<"user"> | SavedEntry;

/** One root's part of a checkpoint entry: the primary root's (`root` undefined) is the entry's own fields. */
type RootPart = Omit<RootCheckpoint, "root">;

const partOf = (entry: CheckpointEntry, root: string | undefined): RootPart | undefined =>
  root === undefined ? entry : entry.roots?.find((r) => r.root === root);

/** One turn's checkpoints of one root on a path: the last entry of its promptId with the root wins; `index` is where its first one stands. */
interface TurnCheckpoint {
  index: number;
  part: RootPart;
}

/** The turns' checkpoints of one root (undefined: the primary) along a path, in order. */
function turnCheckpoints(path: readonly TreeEntry[], root?: string): TurnCheckpoint[] {
  const byPrompt = new Map<string, TurnCheckpoint>();
  for (let index = 0; index < path.length; index++) {
    const entry = path[index]!;
    if (entry.type !== "checkpoint") continue;
    const part = partOf(entry, root);
    if (!part) continue;
    const turn = byPrompt.get(entry.promptId);
    if (turn) turn.part = part;
    else byPrompt.set(entry.promptId, { index, part });
  }
  return [...byPrompt.values()];
}

/** The further roots the checkpoint (and saved) entries of `paths` name, once each. */
export function furtherRoots(...paths: (readonly TreeEntry[])[]): string[] {
  const roots = new Set<string>();
  for (const path of paths)
    for (const entry of path)
      if (entry.type === "checkpoint" || entry.type === "saved") for (const r of entry.roots ?? []) roots.add(r.root);
  return [...roots];
}

/** A path of a root's file as a rewind names it: the primary root's relative, a further root's absolute. */
const shown = (root: string | undefined, rel: string): string => (root === undefined ? rel : nodePath.join(root, rel));

/** promptId → how many files its turn changed, over every root. */
function filesChanged(path: readonly TreeEntry[]): Map<string, number> {
  const changed = new Map<string, number>();
  for (const root of [undefined, ...furtherRoots(path)])
    for (const { index, part } of turnCheckpoints(path, root)) {
      const promptId = (path[index] as CheckpointEntry).promptId;
      changed.set(promptId, (changed.get(promptId) ?? 0) + (part.files?.length ?? 0));
    }
  return changed;
}

const PREVIEW_CHARS = 80;

/** A prompt's first line, cut to 80 characters. */
export function promptPreview(text: string): string {
  const line = text.trim().split("\n")[0]?.trim() ?? "";
  const chars = [...line];
  return chars.length > PREVIEW_CHARS ? `${chars.slice(0, PREVIEW_CHARS - 1).join("")}…` : line;
}

/** The prompts on the current path and the states rewinds left (wherever they are), in the file's order. */
export function rewindPoints(tree: SessionTree): RewindPoint[] {
  const path = tree.pathTo();
  const onPath = new Set(path.map((e) => e.id));
  const changed = filesChanged(path);
  const points: RewindPoint[] = [];
  for (const e of tree.entries) {
    if (e.type === "user" && onPath.has(e.id))
      points.push({
        messageId: e.id,
        kind: "prompt",
        preview: promptPreview(e.text),
        createdAt: e.at,
        filesChanged: changed.get(e.id) ?? 0,
      });
    else if (e.type === "saved")
      points.push({ messageId: e.id, kind: "saved", preview: savedPreview(tree, e), createdAt: e.at, filesChanged: 0 });
  }
  return points;
}

const MOVED: Record<RewindMode, string> = { both: "both", files: "the files", conversation: "the conversation" };

/** A saved state as a listing shows it: what the rewind that left it did. */
function savedPreview(tree: SessionTree, saved: SavedEntry): string {
  const target = tree.get(saved.rewind);
  const short = (text: string) => ([...text].length > 40 ? `${[...text].slice(0, 39).join("")}…` : text);
  const to =
    target?.type === "user"
      ? JSON.stringify(short(promptPreview(target.text)))
      : `the state of ${(target?.at ?? "").slice(0, 16).replace("T", " ")}`;
  return `saved: before rewinding ${MOVED[saved.mode] ?? saved.mode} to ${to}`;
}

/** The point a 1-based number (the points' order) or an entry id names; a problem to tell otherwise. */
export function findPoint(tree: SessionTree, to: string): { point: PointEntry } | { problem: string } {
  // An entry id first: one may be all digits.
  if (/^\d+$/.test(to) && !tree.get(to)) {
    const points = rewindPoints(tree);
    const point = points[Number(to) - 1];
    if (!point)
      return {
        problem: points.length
          ? `There is no prompt ${to}: the prompts are 1 to ${points.length}.`
          : "There is no prompt to rewind to yet.",
      };
    return { point: tree.get(point.messageId) as PointEntry };
  }
  const entry = tree.get(to);
  if (!entry) return { problem: `This session has no message ${to}.` };
  if (entry.type !== "user" && entry.type !== "saved")
    return { problem: `${to} is not a prompt: a rewind goes back to a prompt or to a state a rewind left.` };
  return { point: entry };
}

/** The last entry, in file order, whose path goes through `id` (the tip of its latest branch). */
function latestThrough(tree: SessionTree, id: string): string {
  // A parent comes before its children in the file: one pass finds every entry below `id`.
  const below = new Set([id]);
  let last = id;
  for (const entry of tree.entries) {
    if (entry.type === "leaf" || entry.parentId === null || !below.has(entry.parentId)) continue;
    below.add(entry.id);
    last = entry.id;
  }
  return last;
}

/** What a rewind of the files to a point does, before git is asked. */
export interface FilesRewindPlan {
  /** The snapshot the files go back to; undefined when no checkpoint knows the workspace before the point. */
  targetId?: string;
  /** The session's last known state of the workspace (conflicts are measured against it). */
  knownId?: string;
  /** The paths the turns in between recorded as changed. */
  paths: Set<string>;
  /** Turns whose files were not recorded (cut short): their paths are what differs between these snapshots. */
  unlisted: Array<{ from: string; to: string | "workspace" }>;
}

/** The session's last known state of a root's files: the latest snapshot a checkpoint on the current path names. */
function knownState(current: readonly TreeEntry[], root: string | undefined): string | undefined {
  const latest = turnCheckpoints(current, root).at(-1)?.part;
  return latest?.after ?? latest?.before;
}

/** The files of a rewind to `pointId` in one root (undefined: the primary root; see the top of this file). */
export function planFilesRewind(tree: SessionTree, pointId: string, root?: string): FilesRewindPlan {
  const saved = tree.get(pointId);
  if (saved?.type === "saved") {
    // Back to a saved state: every file that differs from its snapshot now.
    const targetId = root === undefined ? saved.before : saved.roots?.find((r) => r.root === root)?.before;
    const knownId = knownState(tree.pathTo(), root);
    return { targetId, knownId, paths: new Set(), unlisted: targetId ? [{ from: targetId, to: "workspace" }] : [] };
  }
  const current = tree.pathTo();
  const toPoint = tree.pathTo(pointId);
  const depth = toPoint.length - 1;
  let common = 0;
  while (common < current.length && common < toPoint.length && current[common]!.id === toPoint[common]!.id) common++;
  const onCurrent = common === toPoint.length;
  const targetTurns = turnCheckpoints(onCurrent ? current : tree.pathTo(latestThrough(tree, pointId)), root);
  const first = targetTurns.find((t) => t.index > depth);
  const lastBefore = targetTurns.filter((t) => t.index < depth && t.part.after).at(-1);
  const targetId = first?.part.before ?? lastBefore?.part.after;
  const currentTurns = turnCheckpoints(current, root);
  const plan: FilesRewindPlan = { targetId, knownId: knownState(current, root), paths: new Set(), unlisted: [] };
  const add = (turns: TurnCheckpoint[], from: number, to: number, end: string | "workspace" | undefined) => {
    const chosen = turns.filter((t) => t.index >= from && t.index < to);
    chosen.forEach(({ part }, i) => {
      if (part.files) for (const file of part.files) plan.paths.add(file.path);
      else {
        const next = chosen[i + 1]?.part.before ?? end;
        if (next) plan.unlisted.push({ from: part.before, to: next });
      }
    });
  };
  add(currentTurns, common, Infinity, "workspace");
  if (!onCurrent) add(turnCheckpoints(toPoint, root), common, depth, targetId);
  return plan;
}

/** The further roots a rewind to `pointId` may concern: those the entries of the paths it plans over name. */
function rewindRoots(tree: SessionTree, pointId: string): string[] {
  return furtherRoots(tree.pathTo(), tree.pathTo(latestThrough(tree, pointId)));
}

type CheckpointData = Omit<CheckpointRecord, "promptId">;

/** The outcome of a rewind of the files (a further root's paths absolute, the primary root's relative to it). */
export interface FilesRewound extends RestoreResult {
  /** Why no file could be rewound (no checkpoint before the point, checkpoints off), when so. */
  problem?: string;
  /**
   * For an applied restore, the checkpoint entry to record: where the conversation stays, what the
   * restore changed (`before`: the workspace before it); under a rewind of the conversation too
   * (`moving`), what the files are at the new position against the point's state (`before`: that
   * state). Its `after` is what toolhost now knows of the workspace: as restored, but the files left
   * alone (conflicts, failures) as it knew them, so the next rewind still finds them changed outside.
   * Each root has its part (the primary root's the entry's own fields, a further root's in `roots`).
   */
  record?: CheckpointData;
}

/** `keep`: with `force`, the folder the overwritten conflicts are copied to first (a further root's below it, at its absolute path). */
type RewindFilesOptions = { dryRun?: boolean; force?: boolean; moving?: boolean; keep?: string };

/** One root's rewind: the engine's outcome (paths relative to the root) and the root's part of the record. */
interface RootRewound extends RestoreResult {
  problem?: string;
  record?: RootPart;
}

const noFiles = (): RootRewound => ({ applied: false, files: [], conflicts: [], skipped: [], failed: [] });

/** Rewinds (or, `dryRun`, plans) the files to a point with the session's checkpoints, root by root. */
export async function rewindFiles(
  tree: SessionTree,
  pointId: string,
  checkpoints: WorkspaceCheckpoints,
  options: RewindFilesOptions = {},
): Promise<FilesRewound> {
  const primary = await rewindRoot(tree, pointId, undefined, checkpoints.primary, options);
  if (primary.problem) return { ...noFiles(), problem: primary.problem };
  const { record: primaryPart, ...out } = primary;
  const result: FilesRewound = out;
  const roots: RootCheckpoint[] = [];
  for (const root of rewindRoots(tree, pointId)) {
    const one = await checkpoints.find(root);
    if (!one) {
      result.failed.push(...notARoot(tree, pointId, root, checkpoints));
      continue;
    }
    // A further root's failure (its checkpoints gone) is that root's: the others' restores stand, and are recorded.
    const keep = options.keep && nodePath.join(options.keep, root);
    const rewound = await rewindRoot(tree, pointId, root, one, { ...options, keep }).catch((error: unknown) => ({
      ...noFiles(),
      problem: error instanceof Error ? error.message : String(error),
    }));
    if (rewound.problem) result.failed.push({ path: root, reason: `its files were not rewound: ${rewound.problem}` });
    const named = (notes: readonly PathNote[]) => notes.map((n) => ({ ...n, path: shown(root, n.path) }));
    result.applied ||= rewound.applied;
    result.files.push(...rewound.files.map((f) => ({ ...f, path: shown(root, f.path) })));
    result.conflicts.push(...named(rewound.conflicts));
    result.skipped.push(...named(rewound.skipped));
    result.failed.push(...named(rewound.failed));
    result.kept ??= rewound.kept && options.keep;
    if (rewound.record) roots.push({ root, ...rewound.record });
  }
  if (!options.dryRun) result.record = joinRecord(pointId, primaryPart, roots, planFilesRewind(tree, pointId), options.moving);
  return result;
}

/** A further root the record names that has no checkpoints here: the files a rewind would restore there, as not restored. */
function notARoot(tree: SessionTree, pointId: string, root: string, checkpoints: WorkspaceCheckpoints): PathNote[] {
  const plan = planFilesRewind(tree, pointId, root);
  if (!plan.paths.size && !plan.unlisted.length) return [];
  const unavailable = checkpoints.unavailable.find((u) => u.root === root);
  const reason = unavailable
    ? `not restored: its root's checkpoints cannot be opened (${unavailable.reason})`
    : `not restored: ${root} is not a root of this session now`;
  const paths = plan.paths.size ? [...plan.paths].sort().map((p) => shown(root, p)) : [root];
  return paths.map((path) => ({ path, reason }));
}

/**
 * The record of a rewind from each root's part. A primary root the rewind did not touch while a
 * further root's files moved keeps what toolhost knew of it (`after`; `before` the point's state
 * when the conversation moves too, else the same), so the entry still says it.
 */
function joinRecord(
  pointId: string,
  primary: RootPart | undefined,
  roots: RootCheckpoint[],
  primaryPlan: FilesRewindPlan,
  moving: boolean | undefined,
): CheckpointData | undefined {
  const known = primaryPlan.knownId;
  const own =
    primary ?? (roots.length && known ? { before: moving ? (primaryPlan.targetId ?? known) : known, after: known, files: [] } : undefined);
  return own && { rewind: pointId, ...own, ...(roots.length ? { roots } : {}) };
}

/** One root's rewind of its files (see the top of this file); paths relative to the root. */
async function rewindRoot(
  tree: SessionTree,
  pointId: string,
  root: string | undefined,
  checkpoints: Checkpoints,
  options: RewindFilesOptions,
): Promise<RootRewound> {
  const plan = planFilesRewind(tree, pointId, root);
  const { targetId, knownId } = plan;
  if (!targetId) {
    // Nothing was checkpointed from the point on: there is no file to put back.
    if (root === undefined && tree.get(pointId)?.type === "saved")
      return { ...noFiles(), problem: "no checkpoint of the files was taken then" };
    return plan.paths.size || plan.unlisted.length
      ? { ...noFiles(), problem: "no checkpoint knows the files before that prompt" }
      : noFiles();
  }
  const paths = await changedPaths(plan, checkpoints);
  if (!paths.length) return { ...noFiles(), applied: !options.dryRun };
  const restore = { knownId, force: options.force, paths, keep: options.keep };
  if (options.dryRun) return checkpoints.restore(targetId, { ...restore, dryRun: true });
  // Where the conversation stays, the record says what the restore changed: the workspace before it is needed.
  const pre = options.moving ? undefined : await checkpoints.snapshot(`before rewind to ${pointId}`);
  const result: RootRewound = await checkpoints.restore(targetId, restore);
  const post = await checkpoints.snapshot(`after rewind to ${pointId}`);
  const left = [...result.conflicts, ...result.failed].map((c) => c.path);
  const after = knownId && left.length ? await checkpoints.overlay(post.id, knownId, left, `known after rewind to ${pointId}`) : post.id;
  const before = pre?.id ?? targetId;
  const changed = before === after ? [] : await checkpoints.changes(before, after);
  const inPaths = new Set(paths);
  result.record = { before, after, files: pre ? changed : changed.filter((f) => inPaths.has(f.path)) };
  return result;
}

/** The paths of a plan, those of turns cut short included. */
async function changedPaths(plan: FilesRewindPlan, checkpoints: Checkpoints): Promise<string[]> {
  const paths = new Set(plan.paths);
  for (const range of plan.unlisted) for (const change of await checkpoints.changes(range.from, range.to)) paths.add(change.path);
  return [...paths].sort();
}

/**
 * What the files are at a new position that a rewind of the conversation alone moves to: the point's
 * state (`before`), the state they are really in (`after`), and the paths that differ, so the next
 * rewind of the files knows them; each root its part. Undefined when no checkpoint is involved.
 */
export async function conversationRewindRecord(
  tree: SessionTree,
  pointId: string,
  checkpoints: WorkspaceCheckpoints,
): Promise<CheckpointData | undefined> {
  const primaryPlan = planFilesRewind(tree, pointId);
  const primary = await carriedPart(primaryPlan, checkpoints.primary);
  const roots: RootCheckpoint[] = [];
  for (const root of rewindRoots(tree, pointId)) {
    const one = await checkpoints.find(root);
    const part = one && (await carriedPart(planFilesRewind(tree, pointId, root), one).catch(() => undefined));
    if (part) roots.push({ root, ...part });
  }
  return joinRecord(pointId, primary, roots, primaryPlan, true);
}

/** One root's part of a conversation rewind's record, when its files differ from the point's state. */
async function carriedPart(plan: FilesRewindPlan, checkpoints: Checkpoints): Promise<RootPart | undefined> {
  if (!plan.targetId || !plan.knownId) return undefined;
  const paths = new Set(await changedPaths(plan, checkpoints));
  const files: FileChange[] = (await checkpoints.changes(plan.targetId, plan.knownId)).filter((f) => paths.has(f.path));
  return files.length ? { before: plan.targetId, after: plan.knownId, files } : undefined;
}

/** The point /undo rewinds the files to: the last prompt on the current path whose changes no rewind undid yet. */
export function undoPoint(tree: SessionTree): EntryOf<"user"> | undefined {
  const path = tree.pathTo();
  const changed = filesChanged(path);
  // Walking back: a rewind's record hides the prompts from its point on, the point too (a saved
  // state: what came after it). A record a later rewind hid is itself no longer in force.
  let hiddenTo: number | undefined;
  const place = new Map(path.map((e, i) => [e.id, i]));
  for (let i = path.length - 1; i >= 0; i--) {
    const entry = path[i]!;
    if (hiddenTo !== undefined && i >= hiddenTo) continue;
    if (entry.type === "checkpoint" && entry.rewind !== undefined) {
      const to = place.get(entry.rewind);
      if (to !== undefined) hiddenTo = to;
      continue;
    }
    if (entry.type === "user" && (changed.get(entry.id) ?? 0) > 0) return entry;
  }
  return undefined;
}

/** A short account of the branch a rewind leaves (from the new position's parent to the old leaf): its prompts and the files they changed. */
export function branchSummary(tree: SessionTree, newParentId: string | null): string {
  const current = tree.pathTo();
  // What the current path shares with the new position's (for a point on another branch, less than all of it).
  const target = newParentId === null ? [] : tree.pathTo(newParentId);
  let start = 0;
  while (start < current.length && start < target.length && current[start]!.id === target[start]!.id) start++;
  const left = current.slice(start);
  const prompts = left.filter((e): e is EntryOf<"user"> => e.type === "user").map((e) => JSON.stringify(promptPreview(e.text)));
  const files = new Set<string>();
  for (const root of [undefined, ...furtherRoots(left)])
    for (const { part } of turnCheckpoints(left, root)) for (const file of part.files ?? []) files.add(shown(root, file.path));
  const listed = [...files].sort();
  const fileText = listed.length
    ? `; files changed: ${listed.slice(0, 10).join(", ")}${listed.length > 10 ? ` and ${listed.length - 10} more` : ""}`
    : "";
  return `${prompts.length} prompt${prompts.length === 1 ? "" : "s"} left${prompts.length ? `: ${prompts.join(", ")}` : ""}${fileText}`;
}
