import { peekConfig, type ConfigFile } from "../config/file.js";
import type { Workspace } from "../config/workspace.js";
import { openCheckpoints, type Checkpoints, type FileChange, type Snapshot } from "../runtime/checkpoints/checkpoints.js";
import type { EntryData } from "./record/session-format.js";

// A session's checkpoints of its workspace (issue 23 §2): the shadow repository is opened when the
// session starts, in the background (and a first snapshot warms its index, so the first turn's
// snapshot lists only what changed). Each prompt takes a snapshot before its first change, once:
// the tool runner awaits `beforeChange()` before a call that is not read-only (a model's call, a
// slash command's, a subagent's: children use their parent's service). At the turn's end a second
// snapshot and the files that differ are recorded. Only the primary root is recorded; further roots
// are not. Checkpoints are off with `"checkpoints": false` in config.json, in the home folder, and
// without git (the person is told once, at the first change; the session goes on).

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
  before?: Promise<Snapshot | undefined>;
}

export class SessionCheckpoints {
  private readonly opened: Promise<{ checkpoints?: Checkpoints; reason?: string; quiet?: boolean }>;
  private turn: TurnState | undefined;
  private told = false;

  constructor(private readonly options: SessionCheckpointsOptions) {
    const off = checkpointsOff(options.config, options.workspace);
    this.opened = off
      ? Promise.resolve(off)
      : openCheckpoints({
          root: options.workspace.cwd,
          project: options.workspace.projectFolder,
          session: options.session,
          home: options.home,
          maxFileBytes: options.maxFileBytes,
        }).then(
          (opened) => {
            if (!opened.available) return { reason: opened.reason };
            // Warms the session's index in the background: the first turn's snapshot then lists only what changed.
            void opened.checkpoints.warm().catch(() => {});
            return { checkpoints: opened.checkpoints };
          },
          (error: unknown) => ({ reason: `checkpoints: ${String(error)}` }),
        );
  }

  /** The session's checkpoints, or why there are none. */
  async handle(): Promise<{ checkpoints: Checkpoints } | { checkpoints?: undefined; reason: string }> {
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

  private async takeBefore(promptId: string): Promise<Snapshot | undefined> {
    const opened = await this.opened;
    if (!opened.checkpoints) {
      if (!opened.quiet) await this.tell(`No checkpoint of the workspace is taken, so this session cannot rewind files: ${opened.reason}.`);
      return undefined;
    }
    const before = await this.snap(opened.checkpoints, `before ${promptId}`);
    if (before) this.options.record({ promptId, before: before.id, ...(before.skipped.length ? { skipped: before.skipped } : {}) });
    return before;
  }

  /** The turn ended: the snapshot after it and the files it changed are recorded (when it took one before). */
  async turnEnded(): Promise<CheckpointRecord | undefined> {
    const turn = this.turn;
    this.turn = undefined;
    const before = await turn?.before;
    const { checkpoints } = await this.opened;
    if (!turn || !before || !checkpoints) return undefined;
    const after = await this.snap(checkpoints, `after ${turn.promptId}`);
    if (!after) return undefined;
    let files: FileChange[] = [];
    try {
      files = after.id === before.id ? [] : await checkpoints.changes(before.id, after.id);
    } catch (error) {
      await this.tell(`The files this turn changed could not be listed: ${message(error)}.`);
    }
    const entry: CheckpointRecord = {
      promptId: turn.promptId,
      before: before.id,
      after: after.id,
      files,
      ...(after.skipped.length ? { skipped: after.skipped } : {}),
    };
    this.options.record(entry);
    return entry;
  }

  private async snap(checkpoints: Checkpoints, label: string): Promise<Snapshot | undefined> {
    try {
      return await checkpoints.snapshot(label);
    } catch (error) {
      await this.tell(`A checkpoint of the workspace could not be taken: ${message(error)}. The turn goes on without it.`);
      return undefined;
    }
  }

  private async tell(text: string): Promise<void> {
    if (this.told) return;
    this.told = true;
    await Promise.resolve(this.options.say(text)).catch(() => {});
  }

  /** Waits for the snapshots under way; later ones are refused. */
  async close(): Promise<void> {
    const { checkpoints } = await this.opened;
    await checkpoints?.close();
  }
}

const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));
