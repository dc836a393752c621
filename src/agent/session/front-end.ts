import type { UserContent } from "ai";
import type { UserQuestions } from "../../tool/services.js";
import type { AskUser } from "../../policy/authorizer.js";
import type { TrustAnswer } from "./tools.js";
import type { SessionRecorder } from "../record/session-recorder.js";
import type { TurnObserver, TurnStopReason } from "../turn/turn-types.js";

// What drives a session, as the session sees it: its front end (the ACP adapter, the CLI, a parent
// session) and the prompts it hands in.

/**
 * What a front end (the ACP adapter, the CLI, a parent session) does for its session: it sees
 * the turn (text, tool calls, usage) and answers what only a person can answer.
 */
export interface SessionFrontEnd extends TurnObserver {
  /** A message of the agent's own (help, problems, results of commands): not model text. */
  say(text: string): void | Promise<void>;
  /** The turn could not be answered (no model, a provider error, a crash); default: said like any message. */
  failed?(text: string): void | Promise<void>;
  /**
   * A prompt for the model found no model, or no key or URL for it: true when the front end takes
   * it as a login to ask for (ACP: the prompt's `auth_required` error) instead of saying `text`.
   */
  loginRequired?(text: string): boolean;
  /** The mode or the model changed by a slash command (`/mode`, `/model`). */
  settingsChanged?(): void | Promise<void>;
  /** The slash commands changed (a reload, a profile, trusted project tools). */
  commandsChanged?(): void | Promise<void>;
  /**
   * A turn the agent starts by itself, not for a prompt (a background task's answer): "running"
   * before it, "idle" with its stop reason after it. Absent: its updates are all the front end sees.
   */
  ownTurn?(state: "running" | "idle", stopReason?: TurnStopReason | "error"): void | Promise<void>;
  /** The session got its title (from its first prompt). */
  titleChanged?(title: string): void | Promise<void>;
  /** Asks whether to approve a call. Absent (headless): every ask is a deny. */
  approve?: AskUser;
  /** Asks the user a question with choices. Absent: the question tool is unavailable. */
  questions?: UserQuestions;
  /** A yes/no question of the agent's own, about no tool call (go on past a budget's cap?). Absent (headless): no. */
  confirm?(question: Confirmation, signal: AbortSignal): Promise<boolean>;
  /**
   * The first prompt in an untrusted project with its own tools asks whether to load them
   * (importing runs their code). `decide` applies the answer and says what changed.
   */
  askTrust?(files: string[], signal: AbortSignal, decide: (answer: TrustAnswer) => Promise<string | null>): Promise<void>;
  /**
   * A subagent is created: a view that shows it as a session of its own (ACP subagent sessions).
   * Absent, or undefined: its calls show nested under the task call that started it.
   */
  subagent?(child: { description: string; agent: string }): SubagentView | undefined;
}

/** A yes/no question of the agent's own (`SessionFrontEnd.confirm`). */
export interface Confirmation {
  /** What is asked, in a line. */
  title: string;
  /** The details: what was reached, what each answer does. */
  text: string;
  /** The answers' labels. */
  yes: string;
  no: string;
}

/** A subagent shown as its own session: its front end, and each run's start and end. */
export interface SubagentView {
  frontEnd: SessionFrontEnd;
  /** A run starts (the first or a continued task); the signal aborts this child alone (the user cancelled it). */
  started(description: string): Promise<AbortSignal>;
  /** The run ended: how, and the failure if one. */
  finished(stopReason: TurnStopReason, error?: string): Promise<void>;
}

/**
 * A front end with no one behind it: it shows nothing, and with no `approve` every call that needs
 * approval is refused. `say` gets the session's own messages (default: dropped).
 */
export function headlessFrontEnd(say: (text: string) => void = () => {}): SessionFrontEnd {
  const ignore = () => {};
  return { pending: ignore, event: ignore, running: ignore, done: ignore, text: ignore, thought: ignore, usage: ignore, say };
}

/** A prompt as the session needs it: its text (for slash commands) and its content for a model. */
export interface PromptInput {
  /** The first text of the prompt: a slash command is this text alone. */
  text: string;
  /** More text follows the first (another block): a slash command then is refused, since which text it takes is a guess. */
  moreText?: boolean;
  /** The client's id of this user message (a v2 client's `messageId`), kept in the record for a replay. */
  messageId?: string;
  /** The prompt as the front end shows it (every block), kept in the record for a replay; opaque here. */
  blocks?: readonly unknown[];
  /** The user message for a model that takes images or not. */
  content(model: { images: boolean; modelId: string }): UserContent;
}

/**
 * The turn as the front end sees it, with the session's own handling of compactions and usage.
 * The front end may be a class: its methods are delegated to, not spread.
 */
export function turnObserver(frontEnd: SessionFrontEnd, own: Required<Pick<TurnObserver, "compaction" | "usage">>): TurnObserver {
  return {
    pending: (info) => frontEnd.pending(info),
    describe: (info) => frontEnd.describe?.(info),
    event: (callId, event) => frontEnd.event(callId, event),
    running: (callId) => frontEnd.running(callId),
    done: (callId, envelope, info, display) => frontEnd.done(callId, envelope, info, display),
    text: (delta) => frontEnd.text(delta),
    thought: (delta) => frontEnd.thought(delta),
    compaction: (event) => own.compaction(event),
    usage: (report) => own.usage(report),
    notice: (text) => frontEnd.notice?.(text),
  };
}

/**
 * The front end with its recorder in front of it: each observer call is written to the session's
 * file, then passed on; what asks the person (approve, questions, trust, subagents) and what the
 * record keeps elsewhere (usage; compactions, which the session records itself; the title and the
 * command menu) passes through. Every member is listed, so a member added to SessionFrontEnd must
 * be placed here. The front end may be a class: its methods are called on it, not copied.
 */
export function recordedFrontEnd(frontEnd: SessionFrontEnd, recorder: SessionRecorder): SessionFrontEnd {
  recorder.tell = (text) => frontEnd.say(text);
  const tee: { [K in keyof Required<SessionFrontEnd>]: SessionFrontEnd[K] } = {
    say: (text) => {
      recorder.say(text);
      return frontEnd.say(text);
    },
    failed: (text) => {
      recorder.failed(text);
      return frontEnd.failed ? frontEnd.failed(text) : frontEnd.say(text);
    },
    text: (delta) => {
      recorder.textDelta(delta);
      return frontEnd.text(delta);
    },
    thought: (delta) => {
      recorder.thoughtDelta(delta);
      return frontEnd.thought(delta);
    },
    pending: (info) => {
      recorder.pending(info);
      return frontEnd.pending(info);
    },
    describe: (info) => {
      recorder.describe(info);
      return frontEnd.describe?.(info);
    },
    event: (callId, event) => {
      recorder.event(callId, event);
      return frontEnd.event(callId, event);
    },
    running: (callId) => {
      recorder.running(callId);
      return frontEnd.running(callId);
    },
    done: (callId, envelope, info, display) => {
      recorder.done(callId, envelope, info, display);
      return frontEnd.done(callId, envelope, info, display);
    },
    usage: (report) => frontEnd.usage(report),
    compaction: frontEnd.compaction?.bind(frontEnd),
    notice: frontEnd.notice?.bind(frontEnd),
    loginRequired: frontEnd.loginRequired?.bind(frontEnd),
    commandsChanged: frontEnd.commandsChanged?.bind(frontEnd),
    settingsChanged: frontEnd.settingsChanged?.bind(frontEnd),
    titleChanged: frontEnd.titleChanged?.bind(frontEnd),
    ownTurn: frontEnd.ownTurn?.bind(frontEnd),
    approve: frontEnd.approve?.bind(frontEnd),
    questions: frontEnd.questions,
    confirm: frontEnd.confirm?.bind(frontEnd),
    askTrust: frontEnd.askTrust?.bind(frontEnd),
    subagent: frontEnd.subagent?.bind(frontEnd),
  };
  return tee;
}

/** A failure said to the person: as a failure where the front end can show one. */
export function failed(frontEnd: SessionFrontEnd, text: string): void | Promise<void> {
  return frontEnd.failed ? frontEnd.failed(text) : frontEnd.say(text);
}
