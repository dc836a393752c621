import { DEFAULT_MODE, isModeId, type ModeId } from "../../policy/modes.js";
import { stricterMode } from "../agents.js";
import { NO_MODEL, sessionModelId } from "../model/model-config.js";
import { isThoughtLevel, type ThoughtLevel } from "../model/thinking.js";
import type { SessionRecorder } from "../record/session-recorder.js";
import type { RestoredState } from "../record/session-restore.js";
import type { AgentSessionOptions } from "./options.js";

// A session's mode, model and thought level: set by the front end (config options, /mode, /model),
// put back by a load or a rewind, each change recorded. A subagent follows its parent's mode (made
// stricter by its agent file) and thinks as hard as its parent.

export class SessionSettings {
  private ownMode: ModeId;
  private modelId: string | undefined;
  private ownThoughtLevel: ThoughtLevel = "default";

  constructor(
    options: Pick<AgentSessionOptions, "mode" | "model" | "parent">,
    private readonly recorder: SessionRecorder | undefined,
  ) {
    this.ownMode = options.mode ?? DEFAULT_MODE;
    this.modelId = options.model;
    this.parent = options.parent;
  }

  private readonly parent: AgentSessionOptions["parent"];

  get mode(): ModeId {
    return this.parent ? stricterMode(this.parent.session.mode, this.parent.agentMode) : this.ownMode;
  }

  get model(): string | undefined {
    return this.modelId;
  }

  /** How hard the model thinks (`default`: the model's own setting). */
  get thoughtLevel(): ThoughtLevel {
    return this.parent ? this.parent.session.thoughtLevel : this.ownThoughtLevel;
  }

  /** Changes the mode; false for an unknown mode id. */
  setMode(modeId: string): boolean {
    if (!isModeId(modeId)) return false;
    this.ownMode = modeId;
    this.recorder?.setting("mode", modeId);
    return true;
  }

  /** Picks the model; an error message for an id that is not `provider/model`. */
  setModel(value: string): string | null {
    const model = sessionModelId(value);
    if ("error" in model) return model.error;
    this.modelId = model.id;
    this.recorder?.setting("model", model.id ?? NO_MODEL);
    return null;
  }

  /** Sets the thought level; false for an unknown level. */
  setThoughtLevel(value: string): boolean {
    if (!isThoughtLevel(value)) return false;
    this.ownThoughtLevel = value;
    this.recorder?.setting("thought_level", value);
    return true;
  }

  /** A stored session's settings put back (a load, a rewind); what it does not name stays. */
  restore(state: RestoredState): void {
    if (state.thoughtLevel && isThoughtLevel(state.thoughtLevel)) this.ownThoughtLevel = state.thoughtLevel;
    if (state.mode && isModeId(state.mode)) this.ownMode = state.mode;
    const model = state.model ? sessionModelId(state.model) : undefined;
    if (model) this.modelId = "id" in model ? model.id : undefined;
  }

  /** The settings a restarted record begins with (`/clear`). */
  recorded(): { mode: string; model: string; thought_level: string } {
    return { mode: this.ownMode, model: this.modelId ?? NO_MODEL, thought_level: this.ownThoughtLevel };
  }
}
