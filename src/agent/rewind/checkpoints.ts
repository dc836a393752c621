import { peekConfig, type ConfigFile } from "../../config/file.js";
import type { Workspace } from "../../config/workspace.js";
import type { ChangeFeed } from "../../runtime/checkpoints/change-feed.js";
import type { FileChange, Snapshot } from "../../runtime/checkpoints/checkpoints.js";
import { openWorkspaceCheckpoints, type RootSnapshot, type WorkspaceCheckpoints } from "../../runtime/checkpoints/roots.js";
import type { EntryData, RootCheckpoint } from "../record/session-format.js";

// A session's checkpoints of its workspace (issue 23 §2): the shadow repository is opened when the
// session starts, in the background (and a first snapshot warms its index, so the first turn's
// snapshot lists only what changed). Each prompt takes a snapshot before its first change, once:
// the tool runner awaits `beforeChange()` before a call that is not read-only (a model's call, a
// slash command's, a subagent's: children use their parent's service). At the turn's end a second
// snapshot and the files that differ are recorded. Every root of the session is recorded: the
// primary one in the entry's own fields, each further root (additionalDirectories) in its `roots`,
// snapshotted side by side (runtime/checkpoints/roots.ts); a further root that cannot be
// checkpointed is said once and left out. Checkpoints are off with `"checkpoints": false` in
// config.json, in the home folder, and without git (the person is told once, at the first change;
// the session goes on).

/** A checkpoint entry's own fields (session-format.ts `checkpoint`). */
export type CheckpointRecord = Omit<Extract<EntryData, { type: "checkpoint" }>, "type">;

export interface SessionCheckpointsOptions {
  workspace: Workspace;
  /** The session's id: its refs in the shadow repository. */
  session: string;
  /** The session's config file as read at its start (`checkpoints: false` turns them off). */
  config: ConfigFile;
  /** toolhost's home (default: `toolhostHome()`). */
  home?: string;
  maxFileBytes?: number;
  /** What changed below a root since the last snapshot (the sandbox's watch of the workspace's folders). */
  changes?: ChangeFeed;
  /** Writes a checkpoint entry to the session's record. */
  record(entry: CheckpointRecord): void;
  /** Tells the person (once: checkpoints are off, or a snapshot failed). */
  say(text: string): void | Promise<void>;
}

/** Why a session takes no checkpoints (`quiet`: the user said so, nothing to tell), or null when it takes them. */
export function checkpointsOff(config: ConfigFile, workspace: Workspace): { quiet: boolean; reason: string } | null {
  if (peekConfig(config).checkpoints === false) return { quiet: true, reason: 'checkpoints are off ("checkpoints": false in config.json)' };
  if (workspace.isHome) return { quiet: false, reason: "checkpoints are off in the home folder: open a project folder to have them" };
  return null;
}

interface TurnState {
  promptId: string;
  /** The snapshots before the turn's first change, one per root (the primary's first), when taken. */
  before?: Promise<RootSnapshot[] | undefined>;
}

export class SessionCheckpoints {
  private readonly opened: Promise<{ checkpoints?: WorkspaceCheckpoints; reason?: string; quiet?: boolean }>;
  private turn: TurnState | undefined;
  /** What the person was told, by kind: each kind once a session (a lesser one must not use up a later failure's). */
  private readonly told = new Set<string>();

  constructor(private readonly options: SessionCheckpointsOptions) {
    const off = checkpointsOff(options.config, options.workspace);
    this.opened = off
      ? Promise.resolve(off)
      : openWorkspaceCheckpoints({
          roots: options.workspace.roots,
          project: options.workspace.projectFolder,
          session: options.session,
          home: options.home,
          maxFileBytes: options.maxFileBytes,
          changes: options.changes,
        }).then(
          (opened) => {
            if (!opened.available) return { reason: opened.reason };
            // Warms the session's indexes in the background: the first turn's snapshot then lists only what changed.
            void opened.checkpoints.warm().catch(() => {});
            return { checkpoints: opened.checkpoints };
          },
          (error: unknown) => ({ reason: `checkpoints: ${String(error)}` }),
        );
  }

  /** The session's checkpoints, or why there are none. */
  async handle(): Promise<{ checkpoints: WorkspaceCheckpoints } | { checkpoints?: undefined; reason: string }> {
    const opened = await this.opened;
    return opened.checkpoints ? { checkpoints: opened.checkpoints } : { reason: opened.reason ?? "checkpoints are off" };
  }

  /** A prompt starts (`promptId`: its user entry): its snapshot is taken before its first change. */
  turnStarted(promptId: string): void {
    this.turn = { promptId };
  }

  /** Before a call that may change files: the turn's snapshot, taken once (every later call finds it taken). Never throws. */
  async beforeChange(): Promise<void> {
    const turn = this.turn;
    if (!turn) return;
    turn.before ??= this.takeBefore(turn.promptId);
    await turn.before;
  }

  private async takeBefore(promptId: string): Promise<RootSnapshot[] | undefined> {
    const opened = await this.opened;
    if (!opened.checkpoints) {
      if (!opened.quiet)
        await this.tell("none", `No checkpoint of the workspace is taken, so this session cannot rewind files: ${opened.reason}.`);
      return undefined;
    }
    const { unavailable } = opened.checkpoints;
    if (unavailable.length)
      await this.tell(
        "unavailable",
        `No checkpoint of ${unavailable.map((u) => u.root).join(", ")} is taken, so a rewind leaves the files there as they are: ${unavailable.map((u) => u.reason).join("; ")}.`,
      );
    const before = await this.snap(opened.checkpoints, `before ${promptId}`);
    const primary = before[0]?.snapshot;
    if (!primary) return undefined;
    const roots = before.slice(1).flatMap(({ root, snapshot }): RootCheckpoint[] => (snapshot ? [{ root, ...taken(snapshot) }] : []));
    this.options.record({ promptId, ...taken(primary), ...(roots.length ? { roots } : {}) });
    return before;
  }

  /** The turn ended: the snapshot after it and the files it changed are recorded (when it took one before), for each root. */
  async turnEnded(): Promise<CheckpointRecord | undefined> {
    const turn = this.turn;
    this.turn = undefined;
    const before = await turn?.before;
    const { checkpoints } = await this.opened;
    if (!turn || !before || !checkpoints) return undefined;
    const after = await this.snap(checkpoints, `after ${turn.promptId}`);
    const parts: (Omit<RootCheckpoint, "root"> | undefined)[] = [];
    for (const [i, { checkpoints: one }] of checkpoints.roots.entries()) {
      const from = before[i]?.snapshot;
      const to = after[i]?.snapshot;
      if (!from || !to) {
        // No snapshot after the turn: the root stands as the turn's first entry recorded it (cut short).
        parts.push(from && taken(from));
        continue;
      }
      let files: FileChange[] = [];
      try {
        files = to.id === from.id ? [] : await one.changes(from.id, to.id);
      } catch (error) {
        await this.tell("changes", `The files this turn changed could not be listed: ${message(error)}.`);
      }
      parts.push({ before: from.id, after: to.id, files, ...(to.skipped.length ? { skipped: to.skipped } : {}) });
    }
    const [primary, ...further] = parts;
    if (!primary?.after) return undefined;
    const roots = further.flatMap((part, i): RootCheckpoint[] => (part ? [{ root: checkpoints.further[i]!.root, ...part }] : []));
    const entry: CheckpointRecord = { promptId: turn.promptId, ...primary, ...(roots.length ? { roots } : {}) };
    this.options.record(entry);
    return entry;
  }

  /** A snapshot of every root; a root whose snapshot failed is said (once) and has none. */
  private async snap(checkpoints: WorkspaceCheckpoints, label: string): Promise<RootSnapshot[]> {
    const snapshots = await checkpoints.snapshot(label);
    for (const [i, { root, error }] of snapshots.entries()) {
      if (error === undefined) continue;
      const what = i === 0 ? "the workspace" : root;
      await this.tell("failed", `A checkpoint of ${what} could not be taken: ${message(error)}. The turn goes on without it.`);
    }
    return snapshots;
  }

  private async tell(kind: string, text: string): Promise<void> {
    if (this.told.has(kind)) return;
    this.told.add(kind);
    await Promise.resolve(this.options.say(text)).catch(() => {});
  }

  /** Waits for the snapshots under way; later ones are refused. */
  async close(): Promise<void> {
    const { checkpoints } = await this.opened;
    await checkpoints?.close();
  }
}

/** A snapshot's fields in a checkpoint entry. */
const taken = (snapshot: Snapshot): { before: string; skipped?: Snapshot["skipped"] } => ({
  before: snapshot.id,
  ...(snapshot.skipped.length ? { skipped: snapshot.skipped } : {}),
});

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));
