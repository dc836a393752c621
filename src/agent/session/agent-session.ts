import type { Envelope } from "../../tool/envelope.js";
import type { HostServices } from "../../tool/services.js";
import type { ModeId } from "../../policy/modes.js";
import { SessionRules } from "../../policy/session-rules.js";
import type { Workspace } from "../../config/workspace.js";
import type { ToolRegistry } from "../../host/registry.js";
import { RuntimeSession } from "../../runtime/session.js";
import type { SessionSandbox } from "../../runtime/sandbox/session-sandbox.js";
import { failed, headlessFrontEnd, recordedFrontEnd, type PromptInput, type SessionFrontEnd } from "./front-end.js";
import { MAX_SUBAGENT_DEPTH, SessionSubagents, type ChildSession, type ChildSpec, type SubagentHost } from "./subagents.js";
import { SlashCommands } from "../commands.js";
import { History } from "../turn/history.js";
import type { ThoughtLevel } from "../model/thinking.js";
import type { SessionRecorder } from "../record/session-recorder.js";
import { recordOf, SessionRecord } from "./record.js";
import type { RewindMode, RewindOptions, RewindOutcome, RewindPoint } from "../rewind/rewinder.js";
import type { RestoredState } from "../record/session-restore.js";
import { SessionModelTurn } from "./model-turn.js";
import { defaultModelId } from "../model/model-config.js";
import { SessionSettings } from "./settings.js";
import { parsePrompt, type ParsedPrompt } from "./parsed-prompt.js";
import { queueOwnTurn, TurnQueue } from "./turn-queue.js";
import type { SessionTools } from "./tools.js";
import type { SessionMcp } from "./mcp.js";
import { projectCodeServices } from "./project-code.js";
import { SessionPolicy } from "./policy.js";
import type { SessionHooks } from "./hooks.js";
import type { AgentSessionOptions } from "./options.js";
import { SessionServices } from "./services.js";
import { sessionLsp } from "./lsp.js";
import type { LspManager } from "../../runtime/lsp/manager.js";
import { runToolCall } from "../turn/tool-runner.js";
import type { CostMeter, ToolDeclaration, TurnStopReason } from "../turn/turn-types.js";
import { METER_KEYS, newMeter } from "../turn/turn-types.js";
import { SessionBudget, sessionLimits } from "./budget.js";

export { headlessFrontEnd, type SessionFrontEnd };

/**
 * One agent session, whatever drives it: its runtime, tools, rules and approvals, history and
 * cost, model and mode; turns run one after another and a cancel stops the running one.
 */
export class AgentSession {
  readonly id: string;
  /** Where the session works (its tools'): resolved once, at its start. */
  readonly workspace: Workspace;
  readonly runtime: RuntimeSession;
  readonly tools: SessionTools;
  readonly rules: SessionRules;
  readonly history = new History();
  readonly meter: CostMeter;
  /** The session's caps (agent/session/budget.ts); a subagent's are its parent's. */
  readonly budget: SessionBudget;
  /** The OS sandbox every command of the session runs in; undefined when an embedder's transform replaces it. */
  readonly sandbox: SessionSandbox | undefined;
  private readonly frontEnd: SessionFrontEnd;
  private readonly parent: AgentSessionOptions["parent"];
  /** Mode, model and thought level (agent/session/settings.ts). */
  private readonly settings: SessionSettings;
  /** Turns one after another; a cancel stops every turn received and not yet ended (agent/session/turn-queue.ts). */
  private readonly turns = new TurnQueue(() => this.record?.settled());
  /** Set by close: no turn starts for a background task's answer after it. */
  private closing = false;
  private callSeq = 0;
  /** Rules in force and those that could not be read, the authorizer, the default sandbox, which tools are visible (agent/session/policy.ts). */
  readonly policy: SessionPolicy;
  /** The task tool's subagents (agent/session/subagents.ts); undefined past the depth limit. */
  private readonly subagents: SessionSubagents | undefined;
  /** The model's turns, the last usage and the note about an interrupted turn (agent/session/model-turn.ts). */
  private readonly modelTurns: SessionModelTurn;
  /** Declarations, the offer, wired deferred tools, `ctx.host` and the turn's tool context (agent/session/services.ts). */
  private readonly sessionServices: SessionServices;
  private readonly recorder: SessionRecorder | undefined;
  /** The session's MCP servers (agent/session/mcp.ts): their tools, prompts and readiness. */
  readonly mcp: SessionMcp;
  /** `/trust`, MCP prompts, built-in commands, skills and tools typed as slash commands (agent/commands.ts). */
  private readonly slash: SlashCommands;
  /** A recorded session's turns, checkpoints, rewind, fork and labels (agent/session/record.ts); not a subagent's. */
  private readonly record: SessionRecord | undefined;
  /** The lifecycle hooks at their sites (agent/session/hooks.ts): a subagent runs its parent's, as its task. */
  readonly hooks: SessionHooks;
  /** The language servers (agent/session/lsp.ts): a subagent uses its parent's; undefined with `lsp: false`. */
  readonly lsp: LspManager | undefined;

  constructor(options: AgentSessionOptions) {
    const parent = options.parent?.session;
    this.tools = options.tools;
    const workspace = (this.workspace = this.tools.workspace);
    this.recorder = options.recorder;
    const frontEnd = (this.frontEnd = this.recorder ? recordedFrontEnd(options.frontEnd, this.recorder) : options.frontEnd);
    if (this.recorder) this.history.onAppend((message) => this.recorder?.message(message));
    this.parent = options.parent;
    this.meter = parent?.meter ?? newMeter();
    this.settings = new SessionSettings(options, this.recorder);
    this.budget =
      parent?.budget ??
      new SessionBudget({ meter: this.meter, limits: sessionLimits(this.tools, options.budget), mode: () => this.mode, frontEnd });
    this.rules = parent?.rules ?? new SessionRules();
    const allowedTools = options.allowedTools;
    const policy = (this.policy = new SessionPolicy({
      tools: this.tools,
      rules: this.rules,
      mode: () => this.mode,
      allowedTools,
      subagent: parent !== undefined,
      roots: () => this.runtime.roots,
      sandbox: () => this.sandbox,
      say: (text) => frontEnd.say(text),
    }));
    const backends = options.backends ?? {};
    // On by default: the probe starts now, in the background; the first command waits for it.
    this.sandbox = parent ? parent.sandbox : backends.spawnTransform ? undefined : (backends.sandbox ?? policy.defaultSandbox()).start();
    // The map of nested repositories makes its first pass now, while the person types (not for a subagent: its parent's did).
    if (!parent) this.sandbox?.prepare(workspace.roots);
    this.runtime =
      parent?.runtime ??
      new RuntimeSession({
        id: options.id,
        workspace,
        // A recorded session's large outputs stay next to its file, as long as it does (an old output_path still reads).
        sidecarDir: options.recorder?.dataDir,
        ...backends,
        spawnTransform: backends.spawnTransform ?? this.sandbox?.transform,
        // The tools' fetch reaches a private address only for a host a net.fetch allow rule names.
        net: { privateHosts: () => policy.privateHosts() },
      });
    this.id = this.runtime.id;
    const { tools, runtime, recorder } = this;
    const [config, unrecorded] = [tools.toolset.configFile, options.frontEnd];
    const moved = (state: RestoredState) => ((this.modelTurns.lastUsage = undefined), this.restore(state));
    const model = () => this.model ?? defaultModelId()?.id;
    const recordHost = {
      id: this.id,
      workspace,
      config,
      frontEnd,
      unrecorded,
      moved,
      model,
      meter: this.meter,
      changes: this.sandbox?.changes,
    };
    if (recorder && !parent) this.record = new SessionRecord({ ...recordHost, recorder });
    const { cwd } = workspace;
    const { hooks, mcp } = projectCodeServices({
      runtime,
      sandbox: this.sandbox,
      hooks: { tools, session: this, cwd, frontEnd, agentId: options.parent?.agentId },
      mcp: { cwd, tools, say: (text) => frontEnd.say(text), commandsChanged: () => frontEnd.commandsChanged?.() },
    });
    [this.hooks, this.mcp] = [hooks, mcp];
    const lsp = (this.lsp = parent ? parent.lsp : sessionLsp(tools, runtime, this.sandbox));
    const services = (this.sessionServices = new SessionServices(
      { tools, runtime, frontEnd, policy, recorder, hooks, lsp, subagents: () => this.subagents, beforeChange: () => this.beforeChange() },
      options.wired,
    ));
    const { instructions } = options;
    this.modelTurns = new SessionModelTurn({
      frontEnd,
      unrecorded,
      hooks,
      recorder,
      budget: this.budget,
      context: () => {
        const { workspace, history, registry, mcp, meter, budget, thoughtLevel, model: modelId } = this;
        const turn = { workspace, history, registry, mcp, tools, meter, budget, thoughtLevel, instructions, hooks, services, modelId };
        return { ...turn, nextCallId: () => this.nextCallId(), inbox: () => this.subagents?.takeFinished()?.message };
      },
    });
    this.slash = new SlashCommands({
      registry: () => this.registry,
      tools,
      mcp: this.mcp,
      history: this.history,
      frontEnd,
      model: () => this.model,
      permissionProblems: () => this.policy.problems,
      loadSkill: async (name) => this.services().skills?.load(name),
      callTool: (toolId, args, signal) => this.callTool(toolId, args, signal),
      modelTurn: (input, signal) => this.modelTurns.run(input, signal),
      compacted: (event) => this.modelTurns.compacted(event, "manual"),
      settings: { session: this, frontEnd },
    });
    const depth = options.parent?.depth ?? 0;
    const subagents: SubagentHost = {
      registry: () => this.registry,
      frontEnd,
      allowedTools,
      model: () => this.model,
      wired: () => services.wired,
      agentCatalog: () => services.agentCatalog(),
      usage: () => this.modelTurns.lastUsage,
      meter: this.meter,
      createChild: (spec) => this.createChild(spec),
      backgroundFinished: () => this.deliverBackground(),
    };
    this.subagents = depth < MAX_SUBAGENT_DEPTH ? new SessionSubagents(subagents, depth) : undefined;
    policy.loadPermissionRules();
  }

  get registry(): ToolRegistry {
    return this.tools.registry;
  }

  /**
   * Puts back a stored session (session/load, session/resume, a rewind): its history, mode, model,
   * call numbering and meter. Not its "always" answers: those were for that run.
   */
  restore(state: RestoredState): void {
    this.history.replace(state.messages);
    for (const id of state.wired ?? []) this.sessionServices.wired.add(id);
    this.modelTurns.interruptedNote = state.interruptedNote;
    this.settings.restore(state);
    this.callSeq = Math.max(this.callSeq, state.lastCallNumber);
    // What was spent stays spent: the meter never goes down (a rewind restores an earlier state).
    if (state.usage && !this.parent)
      for (const key of METER_KEYS) this.meter[key] = Math.max(this.meter[key], Number(state.usage[key]) || 0);
  }

  /** A subagent follows its parent's mode (agent/session/settings.ts). */
  get mode(): ModeId {
    return this.settings.mode;
  }

  get model(): string | undefined {
    return this.settings.model;
  }

  get thoughtLevel(): ThoughtLevel {
    return this.settings.thoughtLevel;
  }

  /** Changes the mode; false for an unknown mode id. */
  setMode = (modeId: string): boolean => this.settings.setMode(modeId);
  /** Picks the model; an error message for an id that is not `provider/model`. */
  setModel = (value: string): string | null => this.settings.setModel(value);
  /** Sets the thought level; false for an unknown level. */
  setThoughtLevel = (value: string): boolean => this.settings.setThoughtLevel(value);

  /** Switches the profile: the tools are rebuilt; returns what changed. */
  async setProfile(name: string): Promise<string> {
    const change = await this.tools.reload({ profile: name });
    this.recorder?.setting("profile", this.tools.toolset.profile.name);
    await this.frontEnd.commandsChanged?.();
    return change;
  }

  /** `/clear`: a new conversation in this session (agent/setting-commands.ts); id, settings, meter and rules stay. */
  async clearConversation(signal: AbortSignal): Promise<void> {
    [this.modelTurns.lastUsage, this.modelTurns.interruptedNote] = [undefined, undefined];
    this.recorder?.restart(this.settings.recorded());
    await this.hooks.cleared(signal, this.history);
  }

  nextCallId(): string {
    if (this.parent) return this.parent.session.nextCallId();
    this.callSeq += 1;
    return `call_${this.callSeq}`;
  }

  /**
   * Runs one prompt: a control command, a slash command or a model turn. Its text is read here,
   * once (agent/session/parsed-prompt.ts). Turns of one session run one after another.
   */
  prompt(input: PromptInput): Promise<TurnStopReason> {
    const prompt = parsePrompt(input);
    const controller = this.turns.received();
    return this.turns.queued(() => this.recordedTurn(prompt, controller));
  }

  /** A turn in the record (its start, checkpoints and end); a control command is not a turn there. */
  private async recordedTurn(prompt: ParsedPrompt, controller: AbortController): Promise<TurnStopReason> {
    const run = () => this.runTurn(prompt, controller.signal);
    try {
      return await (this.record && prompt.kind !== "control" ? this.record.turn(prompt.input, run) : run());
    } finally {
      this.turns.ended(controller);
    }
  }

  /** A background task ended: its answer goes with the running turn's next request, or in a turn of its own (agent/session/turn-queue.ts). */
  private deliverBackground(): void {
    if (this.parent || this.closing) return;
    const { turns, frontEnd } = this;
    // The answers are the model's prompt as they are: never read as a command.
    const run = (text: string, controller: AbortController) =>
      this.recordedTurn({ kind: "prompt", input: { text, content: () => text } }, controller);
    queueOwnTurn({ turns, frontEnd, run, take: () => (this.closing ? undefined : this.subagents?.takeFinished()) });
  }

  /** Resolves when no background task runs and no turn is queued (`toolhost run` waits for it before closing). */
  async settled(): Promise<void> {
    for (;;) {
      await this.subagents?.settled();
      await this.turns.idle();
      await this.record?.settled();
      if (!this.subagents?.running) return;
    }
  }

  /** Before a call that may change files: the checkpoint of the turn's workspace (a subagent's is its parent's). */
  beforeChange(): Promise<void> {
    return this.parent ? this.parent.session.beforeChange() : (this.record?.checkpoints.beforeChange() ?? Promise.resolve());
  }

  /** The session's file, written up to now, for hooks' `transcript_path` (a subagent's: its parent's); undefined while none exists. */
  transcriptPath(): string | undefined {
    return this.parent ? this.parent.session.transcriptPath() : this.recorder?.transcript();
  }

  /** The prompts one can rewind to, oldest first (a recorded session's: agent/session/record.ts). */
  rewindPoints(): Promise<RewindPoint[]> {
    return recordOf(this.record).rewinder.points();
  }

  /** Rewinds the files, the conversation or both to just before a prompt, after the running turn. */
  rewind(messageId: string, mode: RewindMode, options: RewindOptions = {}): Promise<RewindOutcome> {
    return this.turns.queued(() => recordOf(this.record).rewind(messageId, mode, options));
  }

  /** A new session that starts from `atEntryId` (default: now); its id. */
  fork(atEntryId?: string): Promise<string> {
    return this.turns.queued(() => recordOf(this.record).rewinder.fork(atEntryId));
  }

  /** Names the current position. */
  label(name: string): string {
    return recordOf(this.record).rewinder.label(name);
  }

  /** Aborts the running turn (tools, pending approvals); it ends `cancelled`. */
  cancel(): void {
    this.turns.cancel();
  }

  /**
   * Aborts one call of this session that has not ended (its tool stops as on a cancel; the model
   * gets its result and the turn goes on); false when no such call runs.
   */
  cancelCall(callId: string): boolean {
    const call = this.sessionServices.running.get(callId);
    call?.abort(new Error("Cancelled by the user"));
    return call !== undefined;
  }

  /**
   * Cancels the turn, stops the MCP servers and removes the session's temporary files (a recorded
   * session's sidecar folder stays with its file; a subagent leaves its parent's runtime alone).
   */
  async close(): Promise<void> {
    this.closing = true;
    this.cancel();
    await Promise.all([this.subagents?.close(), this.turns.idle(), this.mcp.close(), this.hooks.end("close").catch(() => {})]);
    await this.record?.close();
    this.recorder?.close();
    if (!this.parent) await Promise.all([this.lsp?.close(), this.runtime.close()]);
  }

  /** One tool call with its whole life reported to the front end. */
  async callTool(toolId: string, args: unknown, signal: AbortSignal, callId = this.nextCallId()): Promise<Envelope> {
    // A task call names agents from their files as they are now.
    await this.sessionServices.readAgents();
    return runToolCall(this.sessionServices.toolContext(signal), { callId, toolId, args }, this.frontEnd);
  }

  /** The tools the model is offered (agent/session/services.ts). */
  async declarations(): Promise<ToolDeclaration[]> {
    await this.sessionServices.readAgents();
    return this.sessionServices.declarations();
  }

  /** The services tools reach through `ctx.host`. */
  services(): HostServices {
    return this.sessionServices.services();
  }

  private async runTurn(prompt: ParsedPrompt, signal: AbortSignal): Promise<TurnStopReason> {
    const stop = (reason: TurnStopReason): TurnStopReason => (signal.aborted ? "cancelled" : reason);
    // Cancelled before it started (while its setup or the turn before it ran): it does nothing.
    if (signal.aborted) return "cancelled";
    try {
      if (prompt.kind === "control")
        await (this.record?.runControl(prompt.command, signal) ??
          this.frontEnd.say(`/${prompt.command.name} needs a recorded session, and this one is not recorded (TOOLHOST_SESSIONS=off).`));
      else if (prompt.kind === "trust") await this.slash.trust(prompt.arg);
      // The trust question, an MCP prompt or a slash command (agent/commands.ts); else the model.
      else return stop((await this.slash.handle(prompt.input, signal)) ?? (await this.modelTurns.run(prompt.input, signal)));
      return stop("end_turn");
    } catch (err) {
      if (signal.aborted) return "cancelled";
      process.stderr.write(`toolhost: turn failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      await Promise.resolve(failed(this.frontEnd, `The turn failed: ${(err as Error).message}`)).catch(() => {});
      return stop("end_turn");
    }
  }

  /** A child session (agent/session/subagents.ts runs it): this session's runtime, rules, sandbox, call ids and meter. */
  private createChild({ depth, agentMode, agentId, ...spec }: ChildSpec): ChildSession {
    const child = new AgentSession({ tools: this.tools, ...spec, parent: { session: this, depth, agentMode, agentId } });
    return { history: child.history, ask: (input, signal, observer) => child.modelTurns.ask(input, signal, observer) };
  }
}
