import type { ModelMessage, UserContent } from "ai";
import type { Envelope } from "../tool/envelope.js";
import type { HostServices, SkillIndex, ToolIndex } from "../tool/services.js";
import { parseBash } from "../policy/bash-parse.js";
import type { AskUser, PermissionOptions } from "../policy/authorizer.js";
import type { Authorize } from "../policy/call.js";
import { DEFAULT_MODE, isModeId, type ModeId } from "../policy/modes.js";
import type { SourcedRule } from "../policy/ruleset.js";
import { SessionRules } from "../policy/session-rules.js";
import type { ToolRegistry } from "../host/registry.js";
import { loadSkill } from "../host/skills.js";
import type { FsBackend } from "../runtime/fs/backend.js";
import { RuntimeSession } from "../runtime/session.js";
import type { ShellBackend } from "../runtime/shell/backend.js";
import type { SpawnTransform } from "../runtime/shell/scoped.js";
import type { SessionSandbox } from "../runtime/shell/session-sandbox.js";
import { loadAgents, stricterMode, type AgentCatalog } from "./agents.js";
import { headlessFrontEnd, type PromptInput, type SessionFrontEnd } from "./front-end.js";
import { MAX_SUBAGENT_DEPTH, SessionSubagents, type ChildSession, type ChildSpec, type SubagentHost } from "./subagents.js";
import { parseTrust, SlashCommands } from "./commands.js";
import { History } from "./history.js";
import { isThoughtLevel, type ThoughtLevel } from "./thinking.js";
import type { SessionRecorder } from "./session-recorder.js";
import { peekUserConfig } from "../config/file.js";
import { webSearchHosts } from "../config/web-search.js";
import { isModelSpec, NO_MODEL, noModelHelp, parseModelId, resolveModel } from "./model-config.js";
import { modelInfo } from "./models.js";
import type { SessionTools } from "./session-tools.js";
import { SessionMcp } from "./session-mcp.js";
import { SessionPolicy } from "./session-policy.js";
import { DEFAULT_PROMPT } from "./system-prompt.js";
import { deferredCallResult, planOffer } from "./deferral.js";
import { registryIndex } from "./tool-index.js";
import { runToolCall, type ToolRunContext } from "./tool-runner.js";
import type { CompactionEvent, CostMeter, ToolDeclaration, ToolOffer, TurnObserver, TurnStopReason, UsageReport } from "./turn-types.js";

export { headlessFrontEnd, type SessionFrontEnd };

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

export interface AgentSessionOptions {
  id?: string;
  /** The workspace root (absolute), and further roots (ACP's additionalDirectories). */
  cwd: string;
  additionalRoots?: string[];
  tools: SessionTools;
  frontEnd: SessionFrontEnd;
  backends?: RuntimeBackends;
  mode?: ModeId;
  /** The session's model (`provider/model`), over env and config file. */
  model?: string;
  /** For a subagent: the parent's runtime, rules and call ids, and how deep it is. */
  parent?: {
    runtime: RuntimeSession;
    rules: SessionRules;
    sandbox: SessionSandbox | undefined;
    nextCallId: () => string;
    depth: number;
    mode: () => ModeId;
    /** The parent's thought level: a child thinks as hard as its parent. */
    thoughtLevel: () => ThoughtLevel;
    /** The parent's cost meter: a child's cost counts in the parent's. */
    meter: CostMeter;
  };
  /** Instructions added to the system prompt (a subagent's agent file body). */
  instructions?: string;
  /** Tool ids this session may use (a subagent's narrower set); default all. */
  allowedTools?: ReadonlySet<string>;
  /** Deferred tools declared from the start (a subagent: its parent's wired tools and those its task names). */
  wired?: readonly string[];
  /** Writes the session to its file as it happens (a durable session); absent: the session lives in memory only. */
  recorder?: SessionRecorder;
}

/**
 * One agent session, whatever drives it: its runtime, tools, rules and approvals, history and
 * cost, model and mode; turns run one after another and a cancel stops the running one.
 */
export class AgentSession {
  readonly id: string;
  readonly cwd: string;
  readonly runtime: RuntimeSession;
  readonly tools: SessionTools;
  readonly rules: SessionRules;
  readonly history = new History();
  readonly meter: CostMeter;
  /** The OS sandbox every command of the session runs in; undefined when an embedder's transform replaces it. */
  readonly sandbox: SessionSandbox | undefined;
  private readonly frontEnd: SessionFrontEnd;
  private readonly parent: AgentSessionOptions["parent"];
  private readonly allowedTools: ReadonlySet<string> | undefined;
  private ownMode: ModeId;
  private modelId: string | undefined;
  private turn: AbortController | null = null;
  private turnDone: Promise<unknown> = Promise.resolve();
  private callSeq = 0;
  /** Rules, the authorizer, the default sandbox, which tools are visible (agent/session-policy.ts). */
  private readonly policy: SessionPolicy;
  /** The task tool's subagents (agent/subagents.ts); undefined past the depth limit. */
  private readonly subagents: SessionSubagents | undefined;
  private readonly instructions: string | undefined;
  private lastUsage: UsageReport | undefined;
  /** Deferred tools that tool_search (or a direct call) wired: declared for the rest of the session. */
  private readonly wired: Set<string>;
  private readonly recorder: SessionRecorder | undefined;
  private readonly unrecordedFrontEnd: SessionFrontEnd;
  /** Said to the model with the next prompt: the loaded session's last turn was cut short. */
  private interruptedNote: string | undefined;
  private ownThoughtLevel: ThoughtLevel = "default";
  /** The session's MCP servers (agent/session-mcp.ts): their tools, prompts and readiness. */
  readonly mcp: SessionMcp;
  /** `/trust`, MCP prompts, built-in commands, skills and tools typed as slash commands (agent/commands.ts). */
  private readonly slash: SlashCommands;

  constructor(options: AgentSessionOptions) {
    this.cwd = options.cwd;
    this.tools = options.tools;
    this.recorder = options.recorder;
    this.unrecordedFrontEnd = options.frontEnd;
    this.frontEnd = this.recorder ? this.recorder.wrap(options.frontEnd) : options.frontEnd;
    if (this.recorder) this.history.onAppend((message) => this.recorder?.message(message));
    this.parent = options.parent;
    this.allowedTools = options.allowedTools;
    this.instructions = options.instructions;
    this.wired = new Set(options.wired);
    this.meter = options.parent?.meter ?? { amount: 0 };
    this.ownMode = options.mode ?? DEFAULT_MODE;
    this.modelId = options.model;
    this.rules = options.parent?.rules ?? new SessionRules();
    this.policy = new SessionPolicy({
      tools: this.tools,
      rules: this.rules,
      mode: () => this.mode,
      allowedTools: this.allowedTools,
      subagent: this.parent !== undefined,
      roots: () => this.runtime.roots,
      sandbox: () => this.sandbox,
      say: (text) => this.frontEnd.say(text),
    });
    const backends = options.backends ?? {};
    // On by default: the probe starts now, in the background; the first command waits for it.
    this.sandbox = options.parent
      ? options.parent.sandbox
      : backends.spawnTransform
        ? undefined
        : (backends.sandbox ?? this.policy.defaultSandbox()).start();
    this.runtime =
      options.parent?.runtime ??
      new RuntimeSession({
        id: options.id,
        workspace: options.cwd,
        additionalRoots: options.additionalRoots,
        // A recorded session's large outputs stay next to its file, as long as it does (an old output_path still reads).
        sidecarDir: options.recorder?.dataDir,
        ...backends,
        spawnTransform: backends.spawnTransform ?? this.sandbox?.transform,
        // The tools' fetch reaches a private address only for a host a net.fetch allow rule names.
        net: { privateHosts: () => this.policy.privateHosts() },
      });
    this.id = this.runtime.id;
    this.mcp = new SessionMcp({
      cwd: this.cwd,
      tools: this.tools,
      say: (text) => this.frontEnd.say(text),
      commandsChanged: () => this.frontEnd.commandsChanged?.(),
    });
    this.slash = new SlashCommands({
      registry: () => this.registry,
      tools: this.tools,
      mcp: this.mcp,
      history: this.history,
      frontEnd: this.frontEnd,
      model: () => this.modelId,
      permissionProblems: () => this.permissionProblems,
      loadSkill: async (name) => this.services().skills?.load(name),
      callTool: (toolId, args, signal) => this.callTool(toolId, args, signal),
      modelTurn: (input, signal) => this.modelTurn(input, signal),
      compacted: (event) => this.compacted(event),
    });
    const depth = options.parent?.depth ?? 0;
    this.subagents = depth < MAX_SUBAGENT_DEPTH ? new SessionSubagents(this.subagentHost(), depth) : undefined;
    this.policy.loadPermissionRules();
  }

  /** The permission rules in force (manifest, user, trusted project), then the session's remembered answers. */
  get rulesInForce(): readonly SourcedRule[] {
    return this.policy.rulesInForce;
  }

  /** Rules that could not be read (each names its file and rule); the others hold. */
  get permissionProblems(): readonly string[] {
    return this.policy.problems;
  }

  get registry(): ToolRegistry {
    return this.tools.registry;
  }

  /**
   * Puts back a stored session (session/load, session/resume): its history, mode, model and call
   * numbering. Not its "always" answers: those were for that run.
   */
  restore(state: {
    messages: readonly ModelMessage[];
    mode?: string;
    model?: string;
    lastCallNumber: number;
    interruptedNote?: string;
    thoughtLevel?: string;
    wired?: readonly string[];
  }): void {
    this.history.restore(state.messages);
    for (const id of state.wired ?? []) this.wired.add(id);
    this.interruptedNote = state.interruptedNote;
    if (state.thoughtLevel && isThoughtLevel(state.thoughtLevel)) this.ownThoughtLevel = state.thoughtLevel;
    if (state.mode && isModeId(state.mode)) this.ownMode = state.mode;
    if (state.model) {
      const spec = state.model === NO_MODEL ? undefined : parseModelId(state.model);
      this.modelId = spec && isModelSpec(spec) ? spec.id : undefined;
    }
    this.callSeq = Math.max(this.callSeq, state.lastCallNumber);
  }

  /** A subagent follows its parent's mode. */
  get mode(): ModeId {
    return this.parent ? this.parent.mode() : this.ownMode;
  }

  get model(): string | undefined {
    return this.modelId;
  }

  /** Changes the mode; false for an unknown mode id. */
  setMode(modeId: string): boolean {
    if (!isModeId(modeId)) return false;
    this.ownMode = modeId;
    this.recorder?.setting("mode", modeId);
    return true;
  }

  /** Picks the session's model; an error message for an id that is not `provider/model`. */
  setModel(value: string): string | null {
    if (value === NO_MODEL) {
      this.modelId = undefined;
      this.recorder?.setting("model", NO_MODEL);
      return null;
    }
    const spec = parseModelId(value);
    if (!isModelSpec(spec)) return spec.error;
    this.modelId = spec.id;
    this.recorder?.setting("model", spec.id);
    return null;
  }

  /** How hard the model thinks (`default`: the model's own setting). */
  get thoughtLevel(): ThoughtLevel {
    return this.parent ? this.parent.thoughtLevel() : this.ownThoughtLevel;
  }

  /** Sets the thought level; false for an unknown level. */
  setThoughtLevel(value: string): boolean {
    if (!isThoughtLevel(value)) return false;
    this.ownThoughtLevel = value;
    this.recorder?.setting("thought_level", value);
    return true;
  }

  /** Switches the profile: the tools are rebuilt; returns what changed. */
  async setProfile(name: string): Promise<string> {
    const change = await this.tools.reload({ profile: name });
    this.recorder?.setting("profile", this.tools.toolset.profile.name);
    await this.frontEnd.commandsChanged?.();
    return change;
  }

  nextCallId(): string {
    if (this.parent) return this.parent.nextCallId();
    this.callSeq += 1;
    return `call_${this.callSeq}`;
  }

  /** Runs one prompt: a slash command or a model turn. Turns of one session run one after another. */
  prompt(input: PromptInput): Promise<TurnStopReason> {
    const run = this.turnDone.then(() => this.recordedTurn(input));
    this.turnDone = run.catch(() => {});
    return run;
  }

  /** Aborts the running turn (tools, pending approvals); it ends `cancelled`. */
  cancel(): void {
    this.turn?.abort(new Error("Cancelled by the user"));
  }

  /**
   * Cancels the turn, stops the MCP servers and removes the session's temporary files (a recorded
   * session's sidecar folder stays with its file; a subagent leaves its parent's runtime alone).
   */
  async close(): Promise<void> {
    this.cancel();
    await Promise.all([this.turnDone, this.mcp.close()]);
    this.recorder?.close();
    if (!this.parent) await this.runtime.close();
  }

  /** One tool call with its whole life reported to the front end. */
  callTool(toolId: string, args: unknown, signal: AbortSignal, callId = this.nextCallId()): Promise<Envelope> {
    return runToolCall(this.toolContext(signal), { callId, toolId, args }, this.frontEnd);
  }

  /** The tools the model is offered: the mode's visible kinds, this session's allowed ids, each tool's own description. */
  declarations(): ToolDeclaration[] {
    const host = this.services();
    return (
      this.registry
        .list()
        .filter(({ tool }) => this.policy.isVisible(tool))
        // No task where no subagent can start (the depth limit).
        .filter(({ tool }) => tool.id !== "task" || host.subagents !== undefined)
        .map(({ tool }) => {
          let description = tool.description;
          try {
            description = tool.describe?.({ host }) ?? tool.description;
          } catch (err) {
            process.stderr.write(`toolhost: ${tool.id}'s describe failed: ${String(err)}\n`);
          }
          return { id: tool.id, description, inputSchema: tool.inputSchema };
        })
    );
  }

  /** What the model is offered for one request: the declarations, the non-locked tools deferred when too many (agent/deferral.ts). */
  offer(contextWindow: number): ToolOffer {
    const sources = new Map(this.registry.list().map(({ tool, source }) => [tool.id, source]));
    const tools = this.declarations().map((declaration) => ({ declaration, source: sources.get(declaration.id) ?? "builtin" }));
    return planOffer(tools, this.wired, contextWindow);
  }

  private wire(ids: readonly string[]): void {
    const added = ids.filter((id) => !this.wired.has(id));
    for (const id of added) this.wired.add(id);
    // A loaded session declares them again from its first request.
    if (added.length) this.recorder?.wired(added);
  }

  /** A turn, with its start (and the session's title) and its end in the session's record. */
  private async recordedTurn(input: PromptInput): Promise<TurnStopReason> {
    const recorder = this.recorder;
    if (!recorder) return this.runTurn(input);
    const title = recorder.turnStarted(input.text, input.blocks);
    if (title) await this.frontEnd.titleChanged?.(title);
    let stopReason: TurnStopReason | "failed" = "failed";
    try {
      stopReason = await this.runTurn(input);
      return stopReason;
    } finally {
      recorder.turnEnded(stopReason);
    }
  }

  private async runTurn(input: PromptInput): Promise<TurnStopReason> {
    const controller = new AbortController();
    this.turn = controller;
    const { signal } = controller;
    const stop = (reason: TurnStopReason): TurnStopReason => (signal.aborted ? "cancelled" : reason);
    try {
      // Typing /trust is the consent the trust question asks for, so it goes first.
      const trust = input.moreText ? null : parseTrust(input.text);
      if (trust !== null) {
        await this.slash.trust(trust);
        return stop("end_turn");
      }
      await this.slash.askTrust(signal);
      const slash = await this.slash.run(input, signal);
      return stop(slash ?? (await this.modelTurn(input, signal)));
    } catch (err) {
      if (signal.aborted) return "cancelled";
      process.stderr.write(`toolhost: turn failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      await Promise.resolve(this.fail(`The turn failed: ${(err as Error).message}`)).catch(() => {});
      return stop("end_turn");
    } finally {
      if (this.turn === controller) this.turn = null;
    }
  }

  private fail(text: string): void | Promise<void> {
    return this.frontEnd.failed ? this.frontEnd.failed(text) : this.frontEnd.say(text);
  }

  /** A compaction as the front end sees it; after it, the last usage no longer says what is in the context. */
  private async compacted(event: CompactionEvent): Promise<void> {
    if (event.status === "completed") this.lastUsage = undefined;
    this.recorder?.compaction(event);
    // Past the recorder: a replay shows the compaction itself, not this message too.
    const shown = this.unrecordedFrontEnd;
    if (shown.compaction) await shown.compaction(event);
    else if (event.status === "completed" && event.note) await shown.say(event.note);
    else if (event.status === "failed") await shown.say(`Compacting the conversation failed: ${event.error ?? "unknown error"}.`);
  }

  /** A prompt for the model: streamed answer, tool calls, usage. The AI SDK loads on the first one. */
  private async modelTurn(input: PromptInput, signal: AbortSignal): Promise<TurnStopReason> {
    const frontEnd = this.frontEnd;
    // The front end may be a class: delegate, do not spread.
    const observer: TurnObserver = {
      pending: (info) => frontEnd.pending(info),
      describe: (info) => frontEnd.describe?.(info),
      event: (callId, event) => frontEnd.event(callId, event),
      running: (callId) => frontEnd.running(callId),
      done: (callId, envelope, info, display) => frontEnd.done(callId, envelope, info, display),
      compaction: (event) => this.compacted(event),
      text: (delta) => frontEnd.text(delta),
      thought: (delta) => frontEnd.thought(delta),
      usage: (report) => {
        this.lastUsage = report;
        return frontEnd.usage(report);
      },
    };
    const result = await this.askModel(input, signal, observer);
    if (result.error && !signal.aborted) await this.fail(result.error);
    return result.stopReason;
  }

  private async askModel(
    input: PromptInput,
    signal: AbortSignal,
    observer: TurnObserver,
  ): Promise<{ stopReason: TurnStopReason; error?: string }> {
    const peek = peekUserConfig();
    const choice = resolveModel(this.modelId, process.env, peek);
    if (!choice || "error" in choice) {
      return {
        stopReason: "end_turn",
        error: noModelHelp(peek, choice ? `The configured model is not usable: ${choice.error}` : undefined),
      };
    }
    // The policy parses every command line (rules, watchdog): load the parser while the model thinks.
    if (this.registry.has("bash")) void parseBash(":").catch(() => {});
    // The first request waits (bounded) for MCP servers still connecting; the offer names any still starting.
    const [{ runPromptTurn }] = await Promise.all([import("./turn.js"), this.mcp.settled(signal)]);
    const info = modelInfo(choice.spec);
    const declarations = this.declarations();
    return runPromptTurn(
      {
        spec: choice.spec,
        cwd: this.cwd,
        history: this.history,
        prompt: this.withInterruptedNote(input.content({ images: info.images, modelId: choice.spec.id })),
        tools: this.toolContext(signal),
        declarations,
        offer: () => this.mcp.withStartingNote(this.offer(info.contextWindow)),
        afterCall: (toolId, envelope, offer) =>
          offer.deferred.includes(toolId) ? deferredCallResult(toolId, envelope, (ids) => this.wire(ids)) : envelope,
        nextCallId: () => this.nextCallId(),
        meter: this.meter,
        contextUsed: this.lastUsage?.used,
        thoughtLevel: this.thoughtLevel,
        profilePrompt: this.instructions
          ? `${this.tools.toolset.profile.prompt || DEFAULT_PROMPT}\n\n${this.instructions}`
          : this.tools.toolset.profile.prompt || undefined,
        skills: declarations.some((d) => d.id === "skill") ? this.tools.toolset.skills.skills : undefined,
      },
      observer,
    );
  }

  /** The prompt, after the note about an interrupted turn when the loaded session has one (said once). */
  private withInterruptedNote(content: UserContent): UserContent {
    const note = this.interruptedNote;
    if (!note) return content;
    this.interruptedNote = undefined;
    return typeof content === "string" ? `${note}\n\n${content}` : [{ type: "text", text: note }, ...content];
  }

  /** Tools, runtime, services and approvals for one turn. */
  private toolContext(signal: AbortSignal): ToolRunContext {
    // web_search's `{web-search}` hosts follow the toolset (a reload reads the config again).
    this.runtime.setVariable("web-search", webSearchHosts(this.tools.toolset.webSearch));
    return {
      registry: this.registry,
      manifest: this.tools.manifest,
      session: this.runtime,
      host: this.services(),
      signal,
      authorize: this.authorizer(),
    };
  }

  /**
   * The session's policy for one call (agent/session-policy.ts): rules, mode, remembered answers,
   * then `ask` (default: the front end's approval). `toolhost policy explain` passes an ask that only records.
   */
  authorizer(ask: AskUser | undefined = this.frontEnd.approve): Authorize {
    return this.policy.authorizer(ask);
  }

  /** What the session's policy decides with: `toolhost policy explain` passes it to `decide()`. */
  permissionOptions(ask?: AskUser): PermissionOptions {
    return this.policy.permissionOptions(ask);
  }

  /** The services tools reach through `ctx.host`. */
  services(): HostServices {
    return {
      questions: this.frontEnd.questions,
      tools: this.toolIndex(),
      subagents: this.subagents,
      skills: this.skillIndex(),
      webSearch: this.tools.toolset.webSearch,
    };
  }

  /** The toolset's skills; loading one makes its folder readable for the whole session (subagents share the runtime). */
  private skillIndex(): SkillIndex {
    const skills = () => this.tools.toolset.skills.skills;
    return {
      list: () => skills().map(({ name, description, path }) => ({ name, description, path })),
      load: async (name) => {
        const skill = skills().find((s) => s.name === name);
        if (!skill) return undefined;
        const loaded = await loadSkill(skill);
        this.runtime.allowRead(skill.dir);
        return loaded;
      },
    };
  }

  private toolIndex(): ToolIndex {
    return registryIndex(
      this.registry,
      (tool) => this.policy.isVisible(tool),
      (ids) => this.wire(ids),
    );
  }

  /** The agents a task may run (agent files of a trusted project only). */
  agentCatalog(): AgentCatalog {
    return loadAgents(this.cwd, this.tools.toolset.report.trusted);
  }

  /** What this session's subagents need of it. */
  private subagentHost(): SubagentHost {
    return {
      registry: () => this.registry,
      frontEnd: this.frontEnd,
      allowedTools: this.allowedTools,
      model: () => this.modelId,
      wired: () => this.wired,
      agentCatalog: () => this.agentCatalog(),
      reportUsage: () => this.reportUsage(),
      createChild: (spec) => this.createChild(spec),
    };
  }

  /** A child session: this session's runtime, rules, sandbox, call ids and meter; the parent's mode narrowed by the agent's. */
  private createChild(spec: ChildSpec): ChildSession {
    const child = new AgentSession({
      cwd: this.cwd,
      tools: this.tools,
      frontEnd: spec.frontEnd,
      model: spec.model,
      allowedTools: spec.allowedTools,
      wired: spec.wired,
      instructions: spec.instructions,
      parent: {
        runtime: this.runtime,
        rules: this.rules,
        sandbox: this.sandbox,
        nextCallId: () => this.nextCallId(),
        depth: spec.depth,
        // The parent's mode, narrowed by the agent's: never wider.
        mode: () => stricterMode(this.mode, spec.agentMode),
        thoughtLevel: () => this.thoughtLevel,
        meter: this.meter,
      },
    });
    return { history: child.history, ask: (input, signal, observer) => child.askModel(input, signal, observer) };
  }

  /** The parent's last usage, with the cost its children added since. */
  private reportUsage(): void | Promise<void> {
    const last = this.lastUsage;
    // Without a price there is no cost to add (the context size is the parent's own).
    if (!last || this.meter.amount === 0) return;
    return this.frontEnd.usage({ ...last, cost: { amount: Math.round(this.meter.amount * 1e6) / 1e6, currency: "USD" } });
  }
}
