import os from "node:os";
import { peekConfig } from "../config/file.js";
import {
  RequestError,
  type AgentContext,
  type ClientCapabilities,
  type ContentBlock,
  type McpServer,
  type PromptResponse,
  type SessionUpdate,
} from "@agentclientprotocol/sdk";
import { formatContentChanges } from "../host/trust-contents.js";
import { trustChangeReason } from "../host/toolset-report.js";
import type { ApprovalAnswer, ApprovalRequest } from "../policy/authorizer.js";
import type { ModeId } from "../policy/modes.js";
import { isInsideAny } from "../tool/paths.js";
import { modelOptionState } from "../agent/model/model-config.js";
import { AgentSession, type SessionFrontEnd } from "../agent/session/agent-session.js";
import type { SessionRecorder } from "../agent/record/session-recorder.js";
import { INTERRUPTED_RESULT } from "../agent/record/session-restore.js";
import { SessionTree, type TreeEntry } from "../agent/record/session-format.js";
import type { StoredSession } from "../agent/record/session-store.js";
import type { SessionTools, TrustAnswer } from "../agent/session/tools.js";
import type { CompactionEvent, UsageReport } from "../agent/turn/turn-types.js";
import type { UserQuestions } from "../tool/services.js";
import type { McpServerSpec } from "../mcp/servers.js";
import { NodeFs } from "../runtime/fs/node.js";
import { offersTerminalLogin, SAVED_LOGIN_ID, TERMINAL_LOGIN_ID } from "./auth.js";
import { ToolCallViews } from "./calls.js";
import { availableCommands } from "./commands.js";
import { textContent } from "./content.js";
import { EditorFs } from "./editor-fs.js";
import { configOptions } from "./modes.js";
import { approveCall, askClient } from "./permission.js";
import { confirmWithClient } from "./confirm.js";
import { AcpSubagents, wantsSubagents } from "./subagents.js";
import { promptContent } from "./prompt.js";
import { readsUnstableSchema, turnUsage } from "./usage.js";
import { acpQuestions } from "./questions.js";
import { OWN_TURN, wantsOwnTurns, type OwnTurnParams } from "./own-turn.js";
import { TerminalShell } from "./terminal-shell.js";

/** An MCP server of session/new in the session's terms (env and headers as lists of name/value pairs). */
export function editorServerSpec(server: McpServer): McpServerSpec {
  const pairs = (list: { name: string; value: string }[] | undefined) => Object.fromEntries((list ?? []).map((p) => [p.name, p.value]));
  if ("type" in server && (server.type === "http" || server.type === "sse")) {
    return { name: server.name, origin: "editor", transport: server.type, url: server.url, headers: pairs(server.headers) };
  }
  const stdio = server as Extract<McpServer, { command: string }>;
  return { name: stdio.name, origin: "editor", transport: "stdio", command: stdio.command, args: stdio.args ?? [], env: pairs(stdio.env) };
}

/** A recorded prompt block that is an ACP content block (the record keeps them as the editor sent them). */
function isContentBlock(block: unknown): block is ContentBlock {
  return typeof block === "object" && block !== null && typeof (block as { type?: unknown }).type === "string";
}

export interface AcpSessionOptions {
  id: string;
  mode?: ModeId;
  mcpServers: McpServer[];
  client: AgentContext;
  clientCapabilities: ClientCapabilities;
  /** The session's tools (profile, project, config folders), rebuilt on /reload; their workspace is the session's. */
  tools: SessionTools;
  /** Profile names for the `profile` option. */
  profiles?: string[];
  /** The session's model (`provider/model`), over env and config file. */
  model?: string;
  /** Writes the session to disk as it happens (see agent/record/session-recorder.ts). */
  recorder?: SessionRecorder;
  /**
   * Writes JSON-RPC lines to the connection's output after everything the SDK has written so far
   * (acp/server.ts): a load's replay goes out as one batch of lines instead of thousands of SDK
   * writes. Without it, the replay's updates go through the SDK one by one.
   */
  writeLines?: (lines: string) => Promise<void>;
}

/**
 * One ACP session: the editor's view of an AgentSession. It maps the session's turns and tool
 * calls onto session/update, asks approvals and trust through session/request_permission, and
 * hands the runtime the editor's file buffers and terminals.
 */
export class AcpSession implements SessionFrontEnd {
  readonly id: string;
  /** The MCP servers the client asked this session to use (session/new); connected by `startMcp`. */
  readonly mcpServers: McpServer[];
  readonly agent: AgentSession;
  private readonly client: AgentContext;
  private readonly profiles: string[];
  private readonly views: ToolCallViews;
  private trustSeq = 0;
  /** The question tool's questions: an elicitation form, a permission request, or nothing this client can show. */
  readonly questions: UserQuestions;
  /** The subagents as child sessions, when the client advertises `subagents`. */
  private readonly children: AcpSubagents | undefined;
  /** While a load replays: its updates, written together once it ends. */
  private replaying: SessionUpdate[] | null = null;
  private readonly writeLines: AcpSessionOptions["writeLines"];
  /** The client shows compactions (`clientCapabilities.session.compaction`); otherwise they are agent messages. */
  private readonly showsCompaction: boolean;
  /** The client asked to be told of turns the agent starts by itself (acp/own-turn.ts). */
  private readonly ownTurns: boolean;
  /** The client reads ACP's unstable schema, whose PromptResponse has `usage` (acp/usage.ts). */
  private readonly readsUnstable: boolean;
  /** A command update on its way (batched), and the menu last sent. */
  private commandsDue: Promise<void> | null = null;
  private commandsSent = "";
  /** The client was offered the terminal login (acp/auth.ts): a prompt without a model answers `auth_required`. */
  private readonly loginOffered: boolean;
  /** The help of a prompt that found no model, when it becomes the prompt's `auth_required` error. */
  private loginNeeded: string | null = null;

  constructor(options: AcpSessionOptions) {
    this.id = options.id;
    this.mcpServers = options.mcpServers;
    this.client = options.client;
    this.writeLines = options.writeLines;
    this.profiles = options.profiles ?? [options.tools.toolset.profile.name];
    const caps = options.clientCapabilities;
    this.views = new ToolCallViews((update) => this.update(update), caps);
    this.questions = acpQuestions(this.client, this.id, caps, () => this.agent.cancel());
    this.children = wantsSubagents(caps) ? new AcpSubagents(this.client, this.id, this.questions) : undefined;
    this.showsCompaction = caps.session?.compaction != null;
    this.ownTurns = wantsOwnTurns(caps);
    this.readsUnstable = readsUnstableSchema(caps);
    this.loginOffered = offersTerminalLogin(caps).terminal;
    const local = new NodeFs();
    const canRead = caps.fs?.readTextFile === true;
    const canWrite = caps.fs?.writeTextFile === true;
    const editor = canRead || canWrite ? new EditorFs({ client: this.client, sessionId: this.id, local, canRead, canWrite }) : null;
    this.agent = new AgentSession({
      id: this.id,
      tools: options.tools,
      mode: options.mode,
      model: options.model,
      recorder: options.recorder,
      frontEnd: this,
      backends: {
        fs: local,
        // Workspace files go through the editor (unsaved buffers, review); everything else to disk.
        route: editor ? (abs, fallback) => (isInsideAny(abs, this.agent.runtime.roots) ? editor : fallback) : undefined,
        shell: caps.terminal === true ? new TerminalShell(this.client, this.id) : undefined,
      },
    });
  }

  configOptions() {
    return configOptions({
      mode: this.agent.mode,
      // The config file as the session read it (at its start, again on each rebuild of its tools).
      model: modelOptionState(this.agent.model, process.env, peekConfig(this.agent.tools.toolset.configFile)),
      profile: { current: this.agent.tools.toolset.profile.name, names: this.profiles },
      thought: this.agent.thoughtLevel,
    });
  }

  /** `/mode` or `/model`: the editor is told as after session/set_mode or set_config_option. */
  async settingsChanged(): Promise<void> {
    await this.update({ sessionUpdate: "current_mode_update", currentModeId: this.agent.mode });
    await this.update({ sessionUpdate: "config_option_update", configOptions: this.configOptions() });
  }

  /** Switches the profile: rebuilds the tools and tells the user what changed. */
  async setProfile(name: string): Promise<string | null> {
    if (!this.profiles.includes(name)) return `Unknown profile ${name}; profiles: ${this.profiles.join(", ")}`;
    const change = await this.agent.setProfile(name);
    const loaded = this.agent.tools.toolset.profile;
    await this.say(
      `Profile ${loaded.name}${loaded.origin === "fallback" ? " (could not be loaded: read-only tools only)" : ""}. ${change}`,
    );
    await this.update({ sessionUpdate: "config_option_update", configOptions: this.configOptions() });
    return null;
  }

  /**
   * Connects the MCP servers (the editor's, the user's, a trusted project's) in the background,
   * after session/new was answered; failures are said once, the tools arrive as they connect.
   */
  startMcp(): Promise<void> {
    return this.agent.mcp.start(this.mcpServers.map(editorServerSpec));
  }

  /** Session start: the commands (once the MCP servers started with it settle), and load problems once. */
  async announceStart(): Promise<void> {
    void this.commandsChanged().catch(() => {});
    const rules = this.agent.policy.problems;
    const problems = [
      this.agent.workspace.isHome
        ? `This session's workspace includes your whole home folder (${os.homedir()}): tools and sandboxed commands can change any file in it, so every file change and every command asks first, whatever the mode. Open a project folder instead to work without that.`
        : null,
      this.agent.tools.startMessage(),
      rules.length ? `Permission rules left out (the others hold):\n${rules.map((p) => `- ${p}`).join("\n")}` : null,
    ].filter(Boolean);
    if (problems.length) await this.say(problems.join("\n\n"));
  }

  async ownTurn(state: "running" | "idle", stopReason?: string): Promise<void> {
    if (!this.ownTurns) return;
    const params: OwnTurnParams = { sessionId: this.id, state, ...(stopReason ? { stopReason } : {}) };
    await this.client.notify(OWN_TURN, params);
  }

  async titleChanged(title: string): Promise<void> {
    await this.update({ sessionUpdate: "session_info_update", title, updatedAt: new Date().toISOString() });
  }

  async update(update: SessionUpdate): Promise<void> {
    // A replay collects its updates and writes them in one go when it ends.
    if (this.replaying) this.replaying.push(update);
    else await this.client.notify("session/update", { sessionId: this.id, update });
  }

  /**
   * Runs one prompt turn (turns of one session run one after another). A slash command is the
   * first text block alone: with more text blocks after it, the session refuses to guess.
   */
  async prompt(blocks: ContentBlock[], meta?: Record<string, unknown> | null): Promise<PromptResponse> {
    if (blocks.some((b) => b.type === "audio")) {
      throw RequestError.invalidParams(
        { prompt: "audio" },
        "This agent does not take audio (promptCapabilities.audio is false): send the request as text instead",
      );
    }
    const texts = blocks
      .filter((b): b is Extract<ContentBlock, { type: "text" }> => b.type === "text")
      .map((b) => b.text.trim())
      .filter((t) => t !== "");
    const [text = "", ...more] = texts;
    const before = { ...this.agent.meter };
    const stopReason = await this.agent.prompt({
      text,
      moreText: more.length > 0,
      blocks,
      // A v2 client's messageId (acp/v2/ passes it here), replayed with the message.
      ...(typeof meta?.messageId === "string" ? { messageId: meta.messageId } : {}),
      content: (model) => promptContent(blocks, model),
    });
    const login = this.loginNeeded;
    this.loginNeeded = null;
    // The spec's answer to a request that needs a login: the client shows its login methods.
    if (login !== null && stopReason === "end_turn") {
      const problem = login.split("\n")[0] ?? "";
      throw RequestError.authRequired(
        { authMethods: [TERMINAL_LOGIN_ID, SAVED_LOGIN_ID], help: login },
        `${problem} Log in to choose a provider and model.`,
      );
    }
    // The turn's tokens, as ACP's unstable PromptResponse.usage, to a client whose schema has it.
    return (this.readsUnstable ? { stopReason, usage: turnUsage(this.agent.meter, before) } : { stopReason }) as PromptResponse;
  }

  /** A prompt found no model (or key): with the terminal login offered, the prompt's error says so. */
  loginRequired(text: string): boolean {
    if (!this.loginOffered) return false;
    this.loginNeeded = text;
    return true;
  }

  /** session/cancel: aborts the running turn (tools, pending approvals); the turn answers `cancelled`. */
  cancel(): void {
    this.agent.cancel();
  }

  async close(): Promise<void> {
    await this.agent.close();
  }

  /**
   * session/load: the stored conversation sent again as the editor first saw it: each prompt as a
   * user message, then what the session showed (text, tool calls with their results, messages), along
   * the path of its tree from the root to its current position (not the branches a rewind left).
   */
  async replay(stored: StoredSession): Promise<void> {
    const updates: SessionUpdate[] = [];
    this.replaying = updates;
    try {
      await this.replayEntries(new SessionTree(stored.entries).pathTo());
    } finally {
      this.replaying = null;
    }
    const notification = (update: SessionUpdate) => ({ sessionId: this.id, update });
    if (!this.writeLines) {
      // Queued together (the SDK writes them in order), awaited once.
      await Promise.all(updates.map((update) => this.client.notify("session/update", notification(update))));
      return;
    }
    // The first goes through the SDK: once it is written, so is everything the SDK had queued before
    // it. The rest are the same messages the SDK would write (it does not validate what it sends),
    // as one batch: thousands of SDK writes were most of a long load's time.
    const [first, ...rest] = updates;
    if (!first) return;
    await this.client.notify("session/update", notification(first));
    let lines = "";
    for (const update of rest) lines += `${JSON.stringify({ jsonrpc: "2.0", method: "session/update", params: notification(update) })}\n`;
    if (lines) await this.writeLines(lines);
  }

  private async replayEntries(path: readonly TreeEntry[]): Promise<void> {
    /** Calls shown as pending with no result yet; calls seen running. */
    const unfinished = new Set<string>();
    const ran = new Set<string>();
    for (const entry of path) await this.replayEntry(entry, unfinished, ran);
    // Calls the agent never finished (it was killed mid-call) end as failed, saying what that means.
    for (const toolCallId of unfinished) {
      await this.update({ sessionUpdate: "tool_call_update", toolCallId, status: "failed", content: [textContent(INTERRUPTED_RESULT)] });
    }
  }

  /** One entry as the front-end call (or the update) that showed it; entries the editor was never shown show nothing. */
  private async replayEntry(entry: TreeEntry, unfinished: Set<string>, ran: Set<string>): Promise<void> {
    switch (entry.type) {
      case "user": {
        // Every block the user sent (a second text, a resource link, an image); format-1 files before blocks kept the first text only.
        const blocks = entry.blocks?.filter(isContentBlock) ?? (entry.text ? [{ type: "text" as const, text: entry.text }] : []);
        const meta = entry.messageId === undefined ? {} : { _meta: { messageId: entry.messageId } };
        for (const content of blocks) await this.update({ sessionUpdate: "user_message_chunk", content, ...meta });
        return;
      }
      case "title":
        return this.update({ sessionUpdate: "session_info_update", title: entry.title, updatedAt: entry.at });
      case "notice":
        return this.say(entry.text);
      case "agent_text":
        return this.text(entry.text);
      case "thought":
        return this.thought(entry.text);
      case "tool_pending":
        unfinished.add(entry.info.callId);
        return this.pending(entry.info);
      case "tool_call":
        // A call that was never described live (a slash command's) has its tool_call written at its end, after it ran.
        if (ran.has(entry.info.callId)) return;
        return this.describe?.(entry.info);
      case "tool_event":
        return this.event(entry.callId, entry.event);
      case "tool_running":
        ran.add(entry.callId);
        return this.running(entry.callId);
      case "tool_result":
        unfinished.delete(entry.callId);
        return this.done(entry.callId, entry.envelope, entry.info, entry.display);
      case "compaction":
        if (entry.event) return this.compaction(entry.event);
        return;
      case "turn_end":
      case "message":
      case "setting":
      case "wired":
      case "checkpoint":
      case "saved":
      case "branch":
      case "leaf":
      case "label":
        return;
    }
  }

  // The SessionFrontEnd: what the agent session reports, as ACP updates.

  async say(text: string): Promise<void> {
    await this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  }

  /**
   * The command menu changed: one update per settle. Changes coalesce until the next microtask, or
   * while MCP servers start until they settle (bounded), and an unchanged menu is not sent again.
   */
  commandsChanged(): Promise<void> {
    this.commandsDue ??= this.agent.mcp.settled().then(() => {
      this.commandsDue = null;
      return this.sendCommands(false);
    });
    return this.commandsDue;
  }

  /** The command menu now; `always`: even when unchanged (a load or resume of a live session). */
  async sendCommands(always: boolean): Promise<void> {
    const list = availableCommands(this.agent.registry, this.agent.tools.toolset.skills.skills, this.agent.mcp.commands());
    const json = JSON.stringify(list);
    if (!always && json === this.commandsSent) return;
    this.commandsSent = json;
    await this.update({ sessionUpdate: "available_commands_update", availableCommands: list });
  }

  text = (text: string) => this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  thought = (text: string) => this.update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text } });
  /** The request waits or is retried: a line of thought, which every client shows and none takes for the answer. */
  notice = (text: string) => this.thought(`[toolhost: ${text}]\n`);
  usage = ({ cache, ...report }: UsageReport) =>
    this.update({
      sessionUpdate: "usage_update",
      ...report,
      // ACP's usage has no place for the prompt cache: in _meta, for clients that show it.
      ...(cache ? { _meta: { toolhost: { cachedInputTokens: cache.read, cacheWriteTokens: cache.write } } } : {}),
    });

  /** A compaction: `compaction_update` for a client that shows them, else one agent message when it ends. */
  compaction = async (event: CompactionEvent): Promise<void> => {
    if (event.summaryDelta !== undefined) {
      // The summary as it streams; a client that does not show compactions gets one message at the end.
      if (this.showsCompaction) {
        await this.update({
          sessionUpdate: "compaction_summary_chunk",
          compactionId: event.id,
          content: { type: "text", text: event.summaryDelta },
        });
      }
    } else if (this.showsCompaction) {
      await this.update({
        sessionUpdate: "compaction_update",
        compactionId: event.id,
        status: event.status,
        ...(event.summary ? { summary: [{ type: "text", text: event.summary }] } : {}),
        ...(event.error ? { error: event.error } : {}),
      });
    } else if (event.status === "completed" && event.note) {
      await this.say(event.note);
    } else if (event.status === "failed") {
      await this.say(`Compacting the conversation failed: ${event.error ?? "unknown error"}.`);
    }
  };
  pending: SessionFrontEnd["pending"] = (info) => this.views.pending(info);
  describe: SessionFrontEnd["describe"] = (info) => this.views.describe(info);
  event: SessionFrontEnd["event"] = (callId, event) => this.views.event(callId, event);
  running: SessionFrontEnd["running"] = (callId) => this.views.running(callId);
  done: SessionFrontEnd["done"] = (callId, envelope, _info, display) => this.views.done(callId, envelope, display);

  /**
   * Approval of a call through session/request_permission, with the preview's diff or the exact
   * command, then why it asks (acp/permission.ts).
   */
  approve = (request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalAnswer> => approveCall(this.client, this.id, request, signal);

  /** A yes/no question of the agent's own (a budget's cap), through session/request_permission (acp/confirm.ts). */
  confirm: SessionFrontEnd["confirm"] = (question, signal) =>
    confirmWithClient(this.client, this.id, (u) => this.update(u), question, signal);

  /** With the client's subagent sessions: each subagent is a child session of its own (acp/subagents.ts). */
  subagent: SessionFrontEnd["subagent"] = (child) => this.children?.open(child);

  /** session/cancel on one of this session's subagents: aborts that child only; false when the id is not one. */
  cancelChild(sessionId: string): boolean {
    return this.children?.cancel(sessionId) ?? false;
  }

  /**
   * The first prompt in an untrusted project that has its own tools asks once whether to load
   * them (importing a file runs its code). Shown as a tool call of kind `other` listing the files.
   */
  askTrust = async (files: string[], signal: AbortSignal, decide: (answer: TrustAnswer) => Promise<string | null>): Promise<void> => {
    const toolCallId = `trust_${++this.trustSeq}`;
    // A project trusted once whose files changed since: the question names what changed.
    const { report } = this.agent.tools.toolset;
    const changed = report.trustChanges ?? [];
    const title = changed.length
      ? `This project changed since you trusted it (${changed.length} file${changed.length === 1 ? "" : "s"}): load its tools again?`
      : `Load this project's own tools (${files.length} file${files.length === 1 ? "" : "s"})?`;
    const content = [
      textContent(
        changed.length
          ? `Nothing of the project (tools, agents, skills, MCP servers, rules) loads until you answer: ${trustChangeReason(report)}\n${formatContentChanges(changed)}`
          : `Importing these files runs their code:\n${files.map((f) => `- ${f}`).join("\n")}`,
      ),
    ];
    await this.update({ sessionUpdate: "tool_call", toolCallId, title, kind: "other", status: "pending", content });
    const choice = await askClient(
      this.client,
      this.id,
      { toolCallId, title, kind: "other", status: "pending", content },
      [
        { optionId: "session", name: "Load them for this session", kind: "allow_once" },
        {
          optionId: "always",
          name: changed.length ? "Trust this project as it is now (always load its tools)" : "Trust this project (always load its tools)",
          kind: "allow_always",
        },
        { optionId: "reject", name: "Don't load them", kind: "reject_once" },
      ],
      signal,
    );
    const answer: TrustAnswer = choice === "session" || choice === "always" ? choice : "reject";
    const change = await decide(answer);
    await this.update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: answer === "reject" ? "failed" : "completed",
      content: [
        textContent(
          answer === "reject"
            ? "The project's tools were not loaded. Type /trust to load them for this session, or /trust always to trust this project."
            : `The project's tools were loaded. ${change ?? ""}`,
        ),
      ],
    });
  };
}
