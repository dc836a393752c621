import path from "node:path";
import type {
  AgentContext,
  ClientCapabilities,
  ContentBlock,
  McpServer,
  PromptResponse,
  SessionUpdate,
  StopReason,
  ToolCallContent,
} from "@agentclientprotocol/sdk";
import { History } from "../agent/history.js";
import type { CostMeter, TurnObserver } from "../agent/loop.js";
import { isModelSpec, modelOptionState, noModelHelp, NO_MODEL, parseModelId, resolveModel } from "../agent/model-config.js";
import { peekUserConfig } from "../config/file.js";
import { modelInfo } from "../agent/models.js";
import { sessionAuthorizer } from "../agent/permissions.js";
import { runToolCall, type ToolCallInfo, type ToolCallObserver, type ToolRunContext } from "../agent/tool-runner.js";
import type { ToolRegistry } from "../host/registry.js";
import type { SessionTools, TrustAnswer } from "../agent/session-tools.js";
import { DEFAULT_MODE, isModeId, type ModeId } from "../policy/modes.js";
import { SessionRules } from "../policy/session-rules.js";
import { NodeFs } from "../runtime/fs/node.js";
import { RuntimeSession } from "../runtime/session.js";
import type { Envelope } from "../tool/envelope.js";
import type { ToolEvent } from "../tool/context.js";
import { boundedJson, diffContent, fenced, resultContent, textContent } from "./content.js";
import { EditorFs } from "./editor-fs.js";
import { configOptions, modeState } from "./modes.js";
import { askClient, requestPermission } from "./permission.js";
import { promptContent } from "./prompt.js";
import { availableCommands, helpText, parseSlash, toolsText } from "./slash.js";
import { TerminalShell } from "./terminal-shell.js";

const LIVE_OUTPUT_INTERVAL_MS = 250;

interface CallView {
  info: ToolCallInfo;
  diffs: ToolCallContent[];
  terminal: ToolCallContent | null;
  liveTail: string;
  liveTimer: NodeJS.Timeout | null;
}

export interface AcpSessionOptions {
  id: string;
  mode?: ModeId;
  cwd: string;
  mcpServers: McpServer[];
  client: AgentContext;
  clientCapabilities: ClientCapabilities;
  /** The session's tools (profile, project, config folders), rebuilt on /reload. */
  tools: SessionTools;
  /** Profile names for the `profile` option. */
  profiles?: string[];
  /** The session's model (`provider/model`), over env and config file. */
  model?: string;
}

function inside(abs: string, roots: readonly string[]): boolean {
  return roots.some((root) => abs === root || abs.startsWith(root.endsWith(path.sep) ? root : root + path.sep));
}

/** One ACP session: its runtime, mode, remembered answers, and the turn in progress. */
export class AcpSession {
  readonly id: string;
  readonly cwd: string;
  readonly mcpServers: McpServer[];
  readonly runtime: RuntimeSession;
  private readonly client: AgentContext;
  private readonly tools: SessionTools;
  private readonly profiles: string[];
  private trustSeq = 0;
  private readonly rules: SessionRules;
  private mode: ModeId = DEFAULT_MODE;
  private turn: AbortController | null = null;
  private turnDone: Promise<unknown> = Promise.resolve();
  private callSeq = 0;
  private readonly calls = new Map<string, CallView>();
  private readonly history = new History();
  private readonly meter: CostMeter = { amount: 0 };
  private model: string | undefined;

  constructor(options: AcpSessionOptions) {
    this.id = options.id;
    this.mode = options.mode ?? DEFAULT_MODE;
    this.cwd = options.cwd;
    this.mcpServers = options.mcpServers;
    this.client = options.client;
    this.tools = options.tools;
    this.profiles = options.profiles ?? [options.tools.toolset.profile.name];
    this.rules = new SessionRules(options.cwd);
    this.model = options.model;
    const caps = options.clientCapabilities;
    const local = new NodeFs();
    const canRead = caps.fs?.readTextFile === true;
    const canWrite = caps.fs?.writeTextFile === true;
    const editor = canRead || canWrite ? new EditorFs({ client: this.client, sessionId: this.id, local, canRead, canWrite }) : null;
    this.runtime = new RuntimeSession({
      id: this.id,
      workspace: options.cwd,
      fs: local,
      // Workspace files go through the editor (unsaved buffers, review); everything else to disk.
      route: editor ? (abs, fallback) => (inside(abs, this.runtime.roots) ? editor : fallback) : undefined,
      shell: caps.terminal === true ? new TerminalShell(this.client, this.id) : undefined,
    });
  }

  get currentMode(): ModeId {
    return this.mode;
  }

  private get registry(): ToolRegistry {
    return this.tools.registry;
  }

  configOptions() {
    return configOptions(this.mode, modelOptionState(this.model), { current: this.tools.toolset.profile.name, names: this.profiles });
  }

  /** Switches the profile: rebuilds the tools and tells the user what changed. */
  async setProfile(name: string): Promise<string | null> {
    if (!this.profiles.includes(name)) return `Unknown profile ${name}; profiles: ${this.profiles.join(", ")}`;
    const change = await this.tools.reload({ profile: name });
    const loaded = this.tools.toolset.profile;
    await this.say(`Profile ${loaded.name}${loaded.origin === "fallback" ? " (could not be loaded: read-only tools only)" : ""}. ${change}`);
    await this.announceCommands();
    await this.update({ sessionUpdate: "config_option_update", configOptions: this.configOptions() });
    return null;
  }

  /** Session start: the commands, and load problems once. */
  async announceStart(): Promise<void> {
    await this.announceCommands();
    const problems = this.tools.startMessage();
    if (problems) await this.say(problems);
  }

  modeState() {
    return modeState(this.mode);
  }

  /** Changes the mode; returns false for an unknown mode id. */
  setMode(modeId: string): boolean {
    if (!isModeId(modeId)) return false;
    this.mode = modeId;
    return true;
  }

  /** Picks the session's model; an error message for an id that is not `provider/model`. */
  setModel(value: string): string | null {
    if (value === NO_MODEL) {
      this.model = undefined;
      return null;
    }
    const spec = parseModelId(value);
    if (!isModelSpec(spec)) return spec.error;
    this.model = spec.id;
    return null;
  }

  async update(update: SessionUpdate): Promise<void> {
    await this.client.notify("session/update", { sessionId: this.id, update });
  }

  async announceCommands(): Promise<void> {
    await this.update({ sessionUpdate: "available_commands_update", availableCommands: availableCommands(this.registry) });
  }

  async announceMode(): Promise<void> {
    await this.update({ sessionUpdate: "current_mode_update", currentModeId: this.mode });
    await this.update({ sessionUpdate: "config_option_update", configOptions: this.configOptions() });
  }

  private async say(text: string): Promise<void> {
    await this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } });
  }

  /** Runs one prompt turn. Turns of one session run one after another. */
  prompt(blocks: ContentBlock[]): Promise<PromptResponse> {
    const run = this.turnDone.then(() => this.runTurn(blocks));
    this.turnDone = run.catch(() => {});
    return run;
  }

  /** session/cancel: aborts the running turn (tools, pending approvals); the turn answers `cancelled`. */
  cancel(): void {
    this.turn?.abort(new Error("Cancelled by the user"));
  }

  async close(): Promise<void> {
    this.cancel();
    await this.turnDone;
    await this.runtime.close();
  }

  private async runTurn(blocks: ContentBlock[]): Promise<PromptResponse> {
    const controller = new AbortController();
    this.turn = controller;
    const stop = (reason: StopReason): PromptResponse => ({ stopReason: controller.signal.aborted ? "cancelled" : reason });
    try {
      const text = blocks
        .filter((b): b is Extract<ContentBlock, { type: "text" }> => b.type === "text")
        .map((b) => b.text)
        .join("\n")
        .trim();
      const pending = this.tools.pendingTrust();
      if (pending.length) await this.askProjectTrust(pending, controller.signal);
      const slash = parseSlash(text, this.registry);
      if (!slash) return stop(await this.modelTurn(blocks, controller.signal));
      switch (slash.type) {
        case "help":
          await this.say(helpText(this.registry));
          return stop("end_turn");
        case "tools":
          await this.say(toolsText(this.registry));
          return stop("end_turn");
        case "reload":
          await this.say(`Tools reloaded. ${await this.tools.reload()}`);
          await this.announceCommands();
          return stop("end_turn");
        case "invalid":
          await this.say(slash.message);
          return stop("end_turn");
        case "tool":
          await this.callTool(slash.toolId, slash.args, controller.signal);
          return stop("end_turn");
      }
      return stop("end_turn");
    } catch (err) {
      if (controller.signal.aborted) return { stopReason: "cancelled" };
      process.stderr.write(`toolhost: turn failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      await this.say(`The turn failed: ${(err as Error).message}`).catch(() => {});
      return stop("end_turn");
    } finally {
      if (this.turn === controller) this.turn = null;
    }
  }

  /**
   * The first prompt in an untrusted project that has its own tools asks once whether to load
   * them (importing a file runs its code). Shown as a tool call of kind `other` listing the files.
   */
  private async askProjectTrust(files: string[], signal: AbortSignal): Promise<void> {
    const toolCallId = `trust_${++this.trustSeq}`;
    const title = `Load this project's own tools (${files.length} file${files.length === 1 ? "" : "s"})?`;
    const content = [textContent(`Importing these files runs their code:\n${files.map((f) => `- ${f}`).join("\n")}`)];
    await this.update({ sessionUpdate: "tool_call", toolCallId, title, kind: "other", status: "pending", content });
    const choice = await askClient(
      this.client,
      this.id,
      { toolCallId, title, kind: "other", status: "pending", content },
      [
        { optionId: "session", name: "Load them for this session", kind: "allow_once" },
        { optionId: "always", name: "Trust this project (always load its tools)", kind: "allow_always" },
        { optionId: "reject", name: "Don't load them", kind: "reject_once" },
      ],
      signal,
    );
    const answer: TrustAnswer = choice === "session" || choice === "always" ? choice : "reject";
    const change = await this.tools.decideTrust(answer);
    await this.update({
      sessionUpdate: "tool_call_update",
      toolCallId,
      status: answer === "reject" ? "failed" : "completed",
      content: [textContent(answer === "reject" ? "The project's tools were not loaded." : `The project's tools were loaded. ${change ?? ""}`)],
    });
    if (answer !== "reject") await this.announceCommands();
  }

  /** A prompt for the model: streamed answer, tool calls, usage. The AI SDK loads on the first one. */
  private async modelTurn(blocks: ContentBlock[], signal: AbortSignal): Promise<StopReason> {
    const peek = peekUserConfig();
    const choice = resolveModel(this.model, process.env, peek);
    if (!choice || "error" in choice) {
      await this.say(noModelHelp(peek, choice ? `The configured model is not usable: ${choice.error}` : undefined));
      return "end_turn";
    }
    const { runPromptTurn } = await import("../agent/turn.js");
    const info = modelInfo(choice.spec);
    const result = await runPromptTurn(
      {
        spec: choice.spec,
        cwd: this.cwd,
        history: this.history,
        prompt: promptContent(blocks, { images: info.images, modelId: choice.spec.id }),
        tools: this.toolContext(signal),
        nextCallId: () => this.nextCallId(),
        meter: this.meter,
        profilePrompt: this.tools.toolset.profile.prompt || undefined,
      },
      this.turnObserver(),
    );
    if (result.error && !signal.aborted) await this.say(result.error);
    return result.stopReason;
  }

  nextCallId(): string {
    this.callSeq += 1;
    return `call_${this.callSeq}`;
  }

  /** One tool call with its full ACP life: tool_call → approval → in_progress → completed / failed. */
  callTool(toolId: string, args: unknown, signal: AbortSignal, callId = this.nextCallId()): Promise<Envelope> {
    return runToolCall(this.toolContext(signal), { callId, toolId, args }, this.observer());
  }

  /** Tools, runtime and approvals (asked through session/request_permission) for one turn. */
  private toolContext(signal: AbortSignal): ToolRunContext {
    const authorize = sessionAuthorizer({
      workspace: this.cwd,
      mode: () => this.mode,
      rules: this.rules,
      ask: (request, askSignal) => {
        const view = this.calls.get(request.call.callId);
        const content: ToolCallContent[] = view?.diffs.length
          ? view.diffs
          : typeof request.call.args.command === "string"
            ? [textContent(fenced(request.call.args.command, "sh"))]
            : [];
        return requestPermission(
          this.client,
          this.id,
          {
            toolCallId: request.call.callId,
            title: view?.info.title ?? request.call.tool.id,
            kind: request.call.tool.kind,
            status: "pending",
            content,
            locations: view?.info.locations ?? [],
            rawInput: boundedJson(request.call.args),
          },
          request,
          askSignal,
        );
      },
    });
    return { registry: this.registry, manifest: this.tools.manifest, session: this.runtime, authorize, signal };
  }

  private turnObserver(): TurnObserver {
    return {
      ...this.observer(),
      text: (text) => this.update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text } }),
      thought: (text) => this.update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text } }),
      usage: (report) => this.update({ sessionUpdate: "usage_update", ...report }),
    };
  }

  private observer(): ToolCallObserver {
    return {
      pending: async (info) => {
        this.calls.set(info.callId, { info, diffs: [], terminal: null, liveTail: "", liveTimer: null });
        await this.update({
          sessionUpdate: "tool_call",
          toolCallId: info.callId,
          name: info.toolId,
          title: info.title,
          kind: info.kind,
          status: "pending",
          locations: info.locations,
          ...(info.args === undefined ? {} : { rawInput: boundedJson(info.args) }),
        });
      },
      describe: async (info) => {
        const view = this.calls.get(info.callId);
        if (view) view.info = info;
        await this.update({
          sessionUpdate: "tool_call_update",
          toolCallId: info.callId,
          title: info.title,
          locations: info.locations,
          rawInput: boundedJson(info.args),
        });
      },
      event: (callId, event) => this.onToolEvent(callId, event),
      running: async (callId) => {
        await this.update({ sessionUpdate: "tool_call_update", toolCallId: callId, status: "in_progress" });
      },
      done: async (callId, envelope) => {
        const view = this.calls.get(callId);
        this.calls.delete(callId);
        if (view?.liveTimer) clearTimeout(view.liveTimer);
        const content = [...(view?.diffs ?? []), ...(view?.terminal ? [view.terminal] : [])];
        // A terminal already shows the output; a diff already shows the change.
        if (!view?.terminal && !(view?.diffs.length && envelope.type === "output")) content.push(...resultContent(envelope));
        await this.update({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          status: envelope.type === "output" ? "completed" : "failed",
          content,
          ...(resultLocations(envelope) ?? {}),
          rawOutput: boundedJson(envelope),
        });
      },
    };
  }

  private async onToolEvent(callId: string, event: ToolEvent): Promise<void> {
    const view = this.calls.get(callId);
    switch (event.type) {
      case "plan":
        await this.update({
          sessionUpdate: "plan",
          entries: event.entries.map((e) => ({ content: e.content, status: e.status, priority: e.priority })),
        });
        return;
      case "diff": {
        if (!view) return;
        view.diffs.push(diffContent(event.path, event.oldText, event.newText));
        await this.update({ sessionUpdate: "tool_call_update", toolCallId: callId, content: view.diffs });
        return;
      }
      case "terminal": {
        if (!view) return;
        view.terminal = { type: "terminal", terminalId: event.terminalId };
        await this.update({ sessionUpdate: "tool_call_update", toolCallId: callId, content: [view.terminal] });
        return;
      }
      case "location":
        await this.update({ sessionUpdate: "tool_call_update", toolCallId: callId, locations: [{ path: event.path, line: event.line ?? null }] });
        return;
      case "output": {
        if (!view) return;
        // Live output without an editor terminal: a throttled, bounded tail.
        view.liveTail = capTail(view.liveTail + event.chunk);
        view.liveTimer ??= setTimeout(() => {
          view.liveTimer = null;
          if (!this.calls.has(callId)) return;
          void this.update({
            sessionUpdate: "tool_call_update",
            toolCallId: callId,
            content: [textContent(fenced(view.liveTail, "console"))],
          }).catch(() => {});
        }, LIVE_OUTPUT_INTERVAL_MS);
        return;
      }
    }
  }
}

function capTail(text: string): string {
  const max = 8 * 1024;
  return text.length > max ? text.slice(text.length - max) : text;
}

/** Where a finished call points the editor: the first changed line of an edit, the matches of a search. */
function resultLocations(envelope: Envelope): { locations: { path: string; line?: number | null }[] } | null {
  if (envelope.type !== "output" || typeof envelope.data !== "object" || envelope.data === null) return null;
  const data = envelope.data as { path?: unknown; first_changed_line?: unknown; start_line?: unknown };
  if (typeof data.path === "string" && path.isAbsolute(data.path)) {
    const line = typeof data.first_changed_line === "number" ? data.first_changed_line : typeof data.start_line === "number" ? data.start_line : null;
    return { locations: [{ path: data.path, line }] };
  }
  return null;
}

