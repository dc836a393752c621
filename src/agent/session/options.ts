import type { LspManager } from "../../runtime/lsp/manager.js";
import type { ModeId } from "../../policy/modes.js";
import type { SessionRules } from "../../policy/session-rules.js";
import type { FsBackend } from "../../runtime/fs/backend.js";
import type { RuntimeSession } from "../../runtime/session.js";
import type { ShellBackend } from "../../runtime/shell/backend.js";
import type { SpawnTransform } from "../../runtime/shell/scoped.js";
import type { SessionSandbox } from "../../runtime/sandbox/session-sandbox.js";
import type { SessionFrontEnd } from "./front-end.js";
import type { SessionRecorder } from "../record/session-recorder.js";
import type { SessionTools } from "./tools.js";
import type { ThoughtLevel } from "../model/thinking.js";
import type { BudgetLimits } from "../../config/budget.js";
import type { SessionBudget } from "./budget.js";
import type { CostMeter } from "../turn/turn-types.js";

// What an AgentSession (agent/session/agent-session.ts) is made of.

export interface RuntimeBackends {
  fs?: FsBackend;
  /** Picks the backend per path (the editor's buffers inside the workspace, the disk elsewhere). */
  route?: (abs: string, fallback: FsBackend) => FsBackend;
  shell?: ShellBackend;
  /**
   * Rewrites what a command runs, before either shell backend. Given, it replaces the session's
   * sandbox (the embedder owns what commands run in).
   */
  spawnTransform?: SpawnTransform;
  /** The session's OS sandbox (default: bubblewrap where it can run, per the user's `sandbox` setting). */
  sandbox?: SessionSandbox;
}

/** What a subagent's session shares with its parent session (an AgentSession). */
export interface ParentSession {
  readonly runtime: RuntimeSession;
  /** Its remembered answers: an "always" given to a child holds for the parent, and the other way round. */
  readonly rules: SessionRules;
  readonly sandbox: SessionSandbox | undefined;
  /** Its language servers: a child's edits and lsp calls use them. */
  readonly lsp: LspManager | undefined;
  /** A child's cost, requests, calls and tokens count in the parent's. */
  readonly meter: CostMeter;
  /** The parent's caps hold for the child (agent/session/budget.ts). */
  readonly budget: SessionBudget;
  readonly mode: ModeId;
  /** A child thinks as hard as its parent. */
  readonly thoughtLevel: ThoughtLevel;
  nextCallId(): string;
  /** The parent's checkpoint before a change: a child's calls take the parent's turn's. */
  beforeChange(): Promise<void>;
  /** The session's file for hooks' `transcript_path`: a child's hooks get the parent's. */
  transcriptPath(): string | undefined;
}

export interface AgentSessionOptions {
  id?: string;
  /** The session's tools; their workspace (resolved at the session's start, with its further roots) is the session's. */
  tools: SessionTools;
  frontEnd: SessionFrontEnd;
  backends?: RuntimeBackends;
  mode?: ModeId;
  /** The session's model (`provider/model`), over env and config file. */
  model?: string;
  /** For a subagent: its parent, how deep it is, and its agent's mode, which narrows the parent's (never wider). */
  parent?: { session: ParentSession; depth: number; agentMode?: ModeId; agentId?: string };
  /** Instructions added to the system prompt (a subagent's agent file body). */
  instructions?: string;
  /** Tool ids this session may use (a subagent's narrower set); default all. */
  allowedTools?: ReadonlySet<string>;
  /** Deferred tools declared from the start (a subagent: its parent's wired tools and those its task names). */
  wired?: readonly string[];
  /** The session's own budget limits (`toolhost run`'s flags), over the config's and the profile's; a trusted project's lower ones still hold. */
  budget?: BudgetLimits;
  /** Writes the session to its file as it happens (a durable session); absent: the session lives in memory only. */
  recorder?: SessionRecorder;
}
