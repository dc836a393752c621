import type { ToolKind } from "./kinds.js";

// Services of the agent that tools reach through `ctx.host`: interfaces here, implemented above
// (the agent session, the front end). A service a host cannot offer is absent, and a tool that
// needs it says so (`unavailable`) instead of guessing.

/** One choice of a question to the user. */
export interface QuestionOption {
  label: string;
  description?: string;
}

/** One question of the question tool (the RFC's shape). */
export interface Question {
  /** The question itself. */
  question: string;
  /** A short label for it (a heading, a field's title). */
  header?: string;
  /** The choices; none: the answer is free text. The user may always write their own answer. */
  options?: QuestionOption[];
  /** Several choices may be picked. */
  multiSelect?: boolean;
}

export interface QuestionsRequest {
  /** The tool call asking (so the editor can show the question on it). */
  callId: string;
  /** The call's title. */
  title: string;
  questions: Question[];
}

/**
 * What became of the questions:
 * - `answered`: one array of answers per question (chosen labels, or the user's own text);
 * - `declined`: the user saw them and chose not to answer;
 * - `cancelled`: the user cancelled (the front end has cancelled the turn);
 * - `unsupported`: this front end cannot ask these questions (the headless refusal applies).
 */
export type QuestionsOutcome =
  { outcome: "answered"; answers: string[][] } | { outcome: "declined" } | { outcome: "cancelled" } | { outcome: "unsupported" };

/** Asks the user questions; the turn waits for the answer. Absent headless: nobody can answer. */
export interface UserQuestions {
  ask(request: QuestionsRequest, signal: AbortSignal): Promise<QuestionsOutcome>;
}

/** A subagent run: a child session with its own history, the parent's rules and fewer tools. */
export interface SubagentRequest {
  /** What the subagent is asked to do (its first prompt). */
  prompt: string;
  /** A few words for the editor's title. */
  description: string;
  /** Tool ids the subagent may use (default: the parent's read-only tools; with `agent`, the agent's). */
  tools?: string[];
  /** The agent to run (its tools, model, mode and instructions); unknown: an `invalid_arguments` error listing the valid ones. */
  agent?: string;
  /** Continues the conversation of the child this id names (from an earlier result). */
  taskId?: string;
  /** The calling tool call, so the child's calls show nested under it. */
  parentCallId?: string;
  /** The child's progress (each of its tool calls, one line with its title and status), as it changes. */
  progress?: (lines: string[]) => void;
}

export interface SubagentResult {
  /** The subagent's final answer. */
  text: string;
  stopReason: "end_turn" | "max_tokens" | "max_turn_requests" | "refusal" | "cancelled";
  /** A failure stated for the user (no model, a provider error). */
  error?: string;
  /** The child's id: a later request with it continues the child's conversation. */
  taskId: string;
}

/** An agent a subagent can run, as its tool's description lists it. */
export interface AgentInfo {
  name: string;
  description: string;
}

export interface Subagents {
  run(request: SubagentRequest, signal: AbortSignal): Promise<SubagentResult>;
  /**
   * Starts (or continues) a task in the background and returns its id at once; it runs on past the
   * calling turn, and its answer reaches the model as a message at the session's next model request
   * (or a new turn when the session is idle). Closing the session ends it.
   */
  start(request: SubagentRequest): { taskId: string };
  /** What a task is doing, or its answer when it has one (which is then not delivered again). */
  status(taskId: string): string;
  /** Ends a running background task; what became of it. */
  cancel(taskId: string): Promise<string>;
  /** The agents `run` knows, the default first. */
  agents(): AgentInfo[];
}

/** A tool as the tool index lists it. */
export interface IndexedTool {
  id: string;
  kind: ToolKind;
  description: string;
  /** `builtin` or the file (or server, `mcp:<server>`) that defined it. */
  source: string;
  /** Its parameters as JSON Schema (what the model needs to call it). */
  inputSchema: Record<string, unknown>;
}

/**
 * The session's visible tools, for tool_search: list them, rank them, and wire the ones the
 * model picked (declared to the model from its next request on, for the rest of the session).
 */
export interface ToolIndex {
  list(): IndexedTool[];
  /** The non-locked tools ranked by BM25 over id, description and parameter names, best first. */
  search(query: string, limit?: number): Promise<IndexedTool[]>;
  /** Declares these tools to the model from its next request on (a deferred tool is otherwise only listed). */
  wire(ids: readonly string[]): void;
}

/** A skill as the skill index lists it. */
export interface SkillInfo {
  name: string;
  description: string;
  /** The skill's SKILL.md. */
  path: string;
}

/** A skill loaded for the model: its instructions and what else its folder holds. */
export interface LoadedSkill {
  name: string;
  description: string;
  /** The skill's folder: its files are readable for the rest of the session. */
  dir: string;
  /** SKILL.md without its front matter. */
  body: string;
  /** The folder's other files, relative to `dir`, `/`-separated (capped). */
  files: string[];
  /** Whether the folder holds more files than `files` lists. */
  moreFiles: boolean;
}

export interface SkillIndex {
  list(): SkillInfo[];
  /** Loads a skill by name and makes its folder readable; undefined for an unknown name. */
  load(name: string): Promise<LoadedSkill | undefined>;
}

/** The web search APIs web_search speaks. */
export type WebSearchProviderType = "searxng" | "brave" | "tavily" | "exa";

/** One configured search provider, its key resolved (from the environment or the config file). */
export interface WebSearchProvider {
  type: WebSearchProviderType;
  /** The API's origin and base path (`https://api.search.brave.com`, a SearXNG instance's URL). */
  baseURL: string;
  apiKey?: string;
}

/** The user's web search setup (`webSearch` in ~/.toolhost/config.json): the usable providers and the RFC's bounds. */
export interface WebSearchSettings {
  /** In the config file's order; a session uses one, picked by hashing its id. */
  providers: readonly WebSearchProvider[];
  maxCallsPerSession: number;
  timeoutMs: number;
}

/** What the lsp tool asks a language server. */
export type LspAction = "diagnostics" | "definition" | "references" | "hover" | "symbols";

export interface LspQuery {
  action: LspAction;
  /** The file, absolute. */
  path: string;
  /** 1-based; definition, references and hover need it. */
  line?: number;
  /** 1-based column (UTF-16 units, as LSP counts). */
  character?: number;
  /** symbols: a name to look up across the project (without it: the file's symbols). */
  query?: string;
}

/** One place an answer points at: 1-based line and column, with a short text (the message, the line, the symbol). */
export interface LspItem {
  path: string;
  line: number;
  column: number;
  text: string;
}

export interface LspAnswer {
  /** The server that answered. */
  server: string;
  items: LspItem[];
  /** hover's text. */
  text?: string;
  /** A problem of the session's language servers not said before (one crashed). */
  note?: string;
}

/**
 * The session's language servers (runtime/lsp/): absent when none may run (`lsp: false`). `query`
 * throws a ToolError saying why when no server serves the file or it failed.
 */
export interface LanguageServers {
  query(query: LspQuery, signal: AbortSignal): Promise<LspAnswer>;
}

export interface HostServices {
  readonly questions?: UserQuestions;
  readonly subagents?: Subagents;
  readonly tools?: ToolIndex;
  readonly skills?: SkillIndex;
  /** The configured search providers; absent when none is usable. */
  readonly webSearch?: WebSearchSettings;
  /** The session's language servers, for the lsp tool. */
  readonly lsp?: LanguageServers;
}

/** What a tool's `describe` hook sees: the session's services, to list agents, skills or tools. */
export interface DescribeContext {
  readonly host: HostServices;
}
