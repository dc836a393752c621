import type { ConfigFile } from "../../config/file.js";
import type { Workspace } from "../../config/workspace.js";
import type { ChangeFeed } from "../../runtime/checkpoints/change-feed.js";
import type { PromptInput, SessionFrontEnd } from "./front-end.js";
import type { SessionRecorder } from "../record/session-recorder.js";
import type { RestoredState } from "../record/session-restore.js";
import { runControl, type ControlCommand } from "../rewind/commands.js";
import { SessionCheckpoints } from "../rewind/checkpoints.js";
import { RewindError, SessionRewind, type RewindMode, type RewindOptions, type RewindOutcome } from "../rewind/rewinder.js";
import type { CostMeter, TurnStopReason } from "../turn/turn-types.js";

// A recorded session's record beyond the recorder (issue 23): each turn's start and end with the
// checkpoints of the workspace taken around it, and the session's rewind, fork and labels, reached
// through AgentSession and the control commands (/rewind, /undo, /fork, /label), which are not
// recorded as prompts.

export interface SessionRecordHost {
  id: string;
  workspace: Workspace;
  recorder: SessionRecorder;
  /** The session's config file as read at its start (`checkpoints: false`). */
  config: ConfigFile;
  /** The front end as the record sees it (what is said through it is recorded). */
  frontEnd: SessionFrontEnd;
  /** The front end itself (what a control command says is not recorded). */
  unrecorded: SessionFrontEnd;
  /** What the session has used: recorded at each turn's end, so a load goes on from it (budgets). */
  meter: CostMeter;
  /** What changed in a root since the last snapshot (the sandbox's watch): checkpoints cost what changed. */
  changes?: ChangeFeed;
  /** The model the session has now, set or its environment's default (recorded at each turn's end). */
  model(): string | undefined;
  /** The conversation moved (a rewind): the history at the new position. */
  moved(state: RestoredState): void;
}

export class SessionRecord {
  readonly checkpoints: SessionCheckpoints;
  readonly rewinder: SessionRewind;
  /** The closing checkpoint of a cancelled turn, recorded after its answer. */
  private closing: Promise<void> = Promise.resolve();

  constructor(private readonly host: SessionRecordHost) {
    const { recorder, frontEnd } = host;
    this.checkpoints = new SessionCheckpoints({
      workspace: host.workspace,
      session: host.id,
      config: host.config,
      changes: host.changes,
      record: (entry) => recorder.append({ type: "checkpoint", ...entry }),
      say: (text) => frontEnd.say(text),
    });
    this.rewinder = new SessionRewind({ recorder, checkpoints: () => this.checkpoints.handle(), moved: (state) => host.moved(state) });
  }

  /** A turn with its start (and the session's title), its checkpoints and its end in the record (a control command is none). */
  async turn(input: PromptInput, run: () => Promise<TurnStopReason>): Promise<TurnStopReason> {
    const { recorder, frontEnd } = this.host;
    const { title, promptId } = recorder.turnStarted(input.text, input.blocks, input.messageId);
    this.checkpoints.turnStarted(promptId);
    if (title) await frontEnd.titleChanged?.(title);
    let stopReason: TurnStopReason | "failed" = "failed";
    try {
      stopReason = await run();
      return stopReason;
    } finally {
      // The snapshot after the turn, and the files it changed, before its end. A cancelled turn is
      // answered first (the person waits on it) and closes behind: `settled()` holds what comes next.
      const closing = this.checkpoints
        .turnEnded()
        .catch(() => undefined)
        .then(() => recorder.turnEnded(stopReason, this.host.meter, this.host.model()));
      if (stopReason === "cancelled") this.closing = closing;
      else await closing;
    }
  }

  /** Resolves when the last turn's closing checkpoint is recorded (a cancelled turn's runs after its answer). */
  settled(): Promise<void> {
    return this.closing;
  }

  /** Runs a control command in a turn's place. */
  runControl(command: ControlCommand, signal: AbortSignal): Promise<void> {
    const { unrecorded, frontEnd } = this.host;
    return runControl(command, {
      rewind: this.rewinder,
      say: (text) => unrecorded.say(text),
      sayRecorded: (text) => frontEnd.say(text),
      frontEnd: unrecorded,
      questions: unrecorded.questions,
      signal,
    });
  }

  /** A rewind asked for from outside a turn (ACP, an embedder): an applied rewind of the conversation is said (and recorded). */
  async rewind(messageId: string, mode: RewindMode, options: RewindOptions): Promise<RewindOutcome> {
    const outcome = await this.rewinder.rewind(messageId, mode, options);
    if (outcome.applied && !options.dryRun && mode !== "files") await this.host.frontEnd.say(outcome.message);
    return outcome;
  }

  async close(): Promise<void> {
    await this.closing;
    await this.checkpoints.close();
  }
}

/** A session's record, or the error that says it has none (rewind, fork and labels need its file). */
export function recordOf(record: SessionRecord | undefined): SessionRecord {
  if (!record) throw new RewindError("This session is not recorded (TOOLHOST_SESSIONS=off): rewind, fork and labels need its file.");
  return record;
}
