import type { Envelope } from "../tool/envelope.js";
import type { HostServices } from "../tool/services.js";
import type { AskUser, PermissionOptions } from "../policy/authorizer.js";
import { DEFAULT_MODE, isModeId, type ModeId } from "../policy/modes.js";
import type { SourcedRule } from "../policy/ruleset.js";
import { SessionRules } from "../policy/session-rules.js";
import type { Workspace } from "../config/workspace.js";
import type { ToolRegistry } from "../host/registry.js";
import { RuntimeSession } from "../runtime/session.js";
import type { SessionSandbox } from "../runtime/sandbox/session-sandbox.js";
import { stricterMode } from "./agents.js";
import { headlessFrontEnd, recordedFrontEnd, turnObserver, type PromptInput, type SessionFrontEnd } from "./front-end.js";
import { MAX_SUBAGENT_DEPTH, SessionSubagents, type ChildSession, type ChildSpec, type SubagentHost } from "./subagents.js";
import { SlashCommands } from "./commands.js";
import { History } from "./turn/history.js";
import { isThoughtLevel, type ThoughtLevel } from "./model/thinking.js";
import type { SessionRecorder } from "./record/session-recorder.js";
import { recordOf, SessionRecord } from "./session-record.js";
import type { RewindMode, RewindOptions, RewindOutcome, RewindPoint } from "./session-rewind.js";
import type { RestoredState } from "./record/session-restore.js";
import { NO_MODEL, sessionModelId } from "./model/model-config.js";
import { askModel } from "./session-model-turn.js";
import type { SessionTools } from "./session-tools.js";
import type { SessionMcp } from "./session-mcp.js";
import { projectCodeServices } from "./session-project-code.js";
import { SessionPolicy } from "./session-policy.js";
import type { SessionHooks } from "./session-hooks.js";
import type { AgentSessionOptions } from "./session-options.js";
import { SessionServices } from "./session-services.js";
import { sessionLsp } from "./session-lsp.js";
import type { LspManager } from "../runtime/lsp/manager.js";
import { runToolCall } from "./turn/tool-runner.js";
import type { CompactionEvent, CostMeter, ToolDeclaration, TurnObserver, TurnStopReason, UsageReport } from "./turn/turn-types.js";
import { newMeter, type TurnResult } from "./turn/turn-types.js";
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
  /** The session's caps (agent/budget.ts); a subagent's are its parent's. */
  readonly budget: SessionBudget;
  /** The OS sandbox every command of the session runs in; undefined when an embedder's transform replaces it. */
  readonly sandbox: SessionSandbox | undefined;
  private readonly frontEnd: SessionFrontEnd;
  private readonly parent: AgentSessionOptions["parent"];
  private ownMode: ModeId;
  private modelId: string | undefined;
  /**
   * Every turn received and not yet ended, running or waiting its turn: a cancel stops them all,
   * so one that arrives before a turn's first await (its setup, the turn before it) is never lost.
   */
  private readonly turns = new Set<AbortController>();
  private turnDone: Promise<unknown> = Promise.resolve();
  /** Set by close: no turn starts for a background task's answer after it. */
  private closing = false;
  private callSeq = 0;
  /** Rules, the authorizer, the default sandbox, which tools are visible (agent/session-policy.ts). */
  private readonly policy: SessionPolicy;
  /** The task tool's subagents (agent/subagents.ts); undefined past the depth limit. */
  private readonly subagents: SessionSubagents | undefined;
  private readonly instructions: string | undefined;
  private lastUsage: UsageReport | undefined;
  /** Declarations, the offer, wired deferred tools, `ctx.host` and the turn's tool context (agent/session-services.ts). */
  private readonly sessionServices: SessionServices;
  private readonly recorder: SessionRecorder | undefined;
  private readonly unrecordedFrontEnd: SessionFrontEnd;
  /** Said to the model with the next prompt: the loaded session's last turn was cut short. */
  private interruptedNote: string | undefined;
  private ownThoughtLevel: ThoughtLevel = "default";
  /** The session's MCP servers (agent/session-mcp.ts): their tools, prompts and readiness. */
  readonly mcp: SessionMcp;
  /** `/trust`, MCP prompts, built-in commands, skills and tools typed as slash commands (agent/commands.ts). */
  private readonly slash: SlashCommands;
  /** A recorded session's turns, checkpoints, rewind, fork and labels (agent/session-record.ts); not a subagent's. */
  private readonly record: SessionRecord | undefined;
  /** The lifecycle hooks at their sites (agent/session-hooks.ts): a subagent runs its parent's, as its task. */
  readonly hooks: SessionHooks;
  /** The language servers (agent/session-lsp.ts): a subagent uses its parent's; undefined with `lsp: false`. */
  readonly lsp: LspManager | undefined;

  constructor(options: AgentSessionOptions) {
    const parent = options.parent?.session;
    this.tools = options.tools;
    const workspace = (this.workspace = this.tools.workspace);
    this.recorder = options.recorder;
    this.unrecordedFrontEnd = options.frontEnd;
    const frontEnd = (this.frontEnd = this.recorder ? recordedFrontEnd(options.frontEnd, this.recorder) : options.frontEnd);
    if (this.recorder) this.history.onAppend((message) => this.recorder?.message(message));
    this.parent = options.parent;
    this.instructions = options.instructions;
    this.meter = parent?.meter ?? newMeter();
    this.ownMode = options.mode ?? DEFAULT_MODE;
    this.budget =
      parent?.budget ??
      new SessionBudget({ meter: this.meter, limits: sessionLimits(this.tools, options.budget), mode: () => this.mode, frontEnd });
    this.modelId = options.model;
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
    const moved = (state: RestoredState) => ((this.lastUsage = undefined), this.restore(state));
    const recordHost = { id: this.id, workspace, config, frontEnd, unrecorded, moved, meter: this.meter, changes: this.sandbox?.changes };
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
    this.slash = new SlashCommands({
      registry: () => this.registry,
      tools,
      mcp: this.mcp,
      history: this.history,
      frontEnd,
      model: () => this.modelId,
      permissionProblems: () => this.permissionProblems,
      loadSkill: async (name) => this.services().skills?.load(name),
      callTool: (toolId, args, signal) => this.callTool(toolId, args, signal),
      modelTurn: (input, signal) => this.modelTurn(input, signal),
      compacted: (event) => this.compacted(event, "manual"),
      settings: { session: this, frontEnd },
    });
    const depth = options.parent?.depth ?? 0;
    const subagents: SubagentHost = {
      registry: () => this.registry,
      frontEnd,
      allowedTools,
      model: () => this.modelId,
      wired: () => services.wired,
      agentCatalog: () => services.agentCatalog(),
      usage: () => this.lastUsage,
      meter: this.meter,
      createChild: (spec) => this.createChild(spec),
      backgroundFinished: () => this.deliverBackground(),
    };
    this.subagents = depth < MAX_SUBAGENT_DEPTH ? new SessionSubagents(subagents, depth) : undefined;
    policy.loadPermissionRules();
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
   * Puts back a stored session (session/load, session/resume, a rewind): its history, mode, model,
   * call numbering and meter. Not its "always" answers: those were for that run.
   */
  restore(state: RestoredState): void {
    this.history.replace(state.messages);
    for (const id of state.wired ?? []) this.sessionServices.wired.add(id);
    this.interruptedNote = state.interruptedNote;
    if (state.thoughtLevel && isThoughtLevel(state.thoughtLevel)) this.ownThoughtLevel = state.thoughtLevel;
    if (state.mode && isModeId(state.mode)) this.ownMode = state.mode;
    const model = state.model ? sessionModelId(state.model) : undefined;
    if (model) this.modelId = "id" in model ? model.id : undefined;
    this.callSeq = Math.max(this.callSeq, state.lastCallNumber);
    // What was spent stays spent: the meter never goes down (a rewind restores an earlier state).
    if (state.usage && !this.parent)
      for (const key of ["amount", "requests", "toolCalls", "tokens"] as const)
        this.meter[key] = Math.max(this.meter[key], Number(state.usage[key]) || 0);
  }

  /** A subagent follows its parent's mode. */
  get mode(): ModeId {
    return this.parent ? stricterMode(this.parent.session.mode, this.parent.agentMode) : this.ownMode;
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
    const model = sessionModelId(value);
    if ("error" in model) return model.error;
    this.modelId = model.id;
    this.recorder?.setting("model", model.id ?? NO_MODEL);
    return null;
  }

  /** How hard the model thinks (`default`: the model's own setting). */
  get thoughtLevel(): ThoughtLevel {
    return this.parent ? this.parent.session.thoughtLevel : this.ownThoughtLevel;
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

  /** `/clear`: a new conversation in this session (agent/setting-commands.ts); id, settings, meter and rules stay. */
  async clearConversation(signal: AbortSignal): Promise<void> {
    [this.lastUsage, this.interruptedNote] = [undefined, undefined];
    this.recorder?.restart({ mode: this.ownMode, model: this.modelId ?? NO_MODEL, thought_level: this.ownThoughtLevel });
    await this.hooks.cleared(signal, this.history);
  }

  nextCallId(): string {
    if (this.parent) return this.parent.session.nextCallId();
    this.callSeq += 1;
    return `call_${this.callSeq}`;
  }

  /** Runs one prompt: a slash command or a model turn. Turns of one session run one after another. */
  prompt(input: PromptInput): Promise<TurnStopReason> {
    const controller = this.received();
    return this.queued(() => this.recordedTurn(input, controller));
  }

  /** A turn's controller, from the moment it is received: cancel() reaches it before it starts. */
  private received(): AbortController {
    const controller = new AbortController();
    this.turns.add(controller);
    return controller;
  }

  private async recordedTurn(input: PromptInput, controller: AbortController): Promise<TurnStopReason> {
    try {
      return await (this.record
        ? this.record.turn(input, () => this.runTurn(input, controller.signal))
        : this.runTurn(input, controller.signal));
    } finally {
      this.turns.delete(controller);
    }
  }

  /**
   * A background task ended: its answer goes with the next model request of the running turn, or,
   * queued after it, starts a turn of its own when nothing took it (a subagent's waits for its next request).
   */
  private deliverBackground(): void {
    if (this.parent || this.closing) return;
    void this.queued(async () => {
      const finished = this.closing ? undefined : this.subagents?.takeFinished();
      if (!finished) return;
      const answers = finished.message;
      // Registered as it starts (a cancel of the turn before it must not drop the answers), before the front end hears of it.
      const controller = this.received();
      // The person sees why the agent speaks up unasked; the model gets the answers as the turn's prompt.
      let stopReason: TurnStopReason | "error" = "error";
      try {
        await this.frontEnd.ownTurn?.("running");
        await this.frontEnd.say(`${finished.summary}: the answer goes to the model.\n\n`);
        stopReason = await this.recordedTurn({ text: answers, content: () => answers }, controller);
      } finally {
        this.turns.delete(controller);
        await this.frontEnd.ownTurn?.("idle", stopReason);
      }
    });
  }

  /** Resolves when no background task runs and no turn is queued (`toolhost run` waits for it before closing). */
  async settled(): Promise<void> {
    for (;;) {
      await this.subagents?.settled();
      await this.turnDone;
      await this.record?.settled();
      if (!this.subagents?.running) return;
    }
  }

  /** Runs after the turns and rewinds before it. */
  private queued<T>(fn: () => Promise<T>): Promise<T> {
    // A cancelled turn's closing checkpoint is recorded behind its answer: what comes next waits for it.
    const run = this.turnDone.then(() => this.record?.settled()).then(fn);
    this.turnDone = run.catch(() => {});
    return run;
  }

  /** Before a call that may change files: the checkpoint of the turn's workspace (a subagent's is its parent's). */
  beforeChange(): Promise<void> {
    return this.parent ? this.parent.session.beforeChange() : (this.record?.checkpoints.beforeChange() ?? Promise.resolve());
  }

  /** The session's file, written up to now, for hooks' `transcript_path` (a subagent's: its parent's); undefined while none exists. */
  transcriptPath(): string | undefined {
    return this.parent ? this.parent.session.transcriptPath() : this.recorder?.transcript();
  }

  /** The prompts one can rewind to, oldest first (a recorded session's: agent/session-record.ts). */
  rewindPoints(): Promise<RewindPoint[]> {
    return recordOf(this.record).rewinder.points();
  }

  /** Rewinds the files, the conversation or both to just before a prompt, after the running turn. */
  rewind(messageId: string, mode: RewindMode, options: RewindOptions = {}): Promise<RewindOutcome> {
    return this.queued(() => recordOf(this.record).rewind(messageId, mode, options));
  }

  /** A new session that starts from `atEntryId` (default: now); its id. */
  fork(atEntryId?: string): Promise<string> {
    return this.queued(() => recordOf(this.record).rewinder.fork(atEntryId));
  }

  /** Names the current position. */
  label(name: string): string {
    return recordOf(this.record).rewinder.label(name);
  }

  /** Aborts the running turn (tools, pending approvals); it ends `cancelled`. */
  cancel(): void {
    for (const turn of this.turns) turn.abort(new Error("Cancelled by the user"));
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
    await Promise.all([this.subagents?.close(), this.turnDone, this.mcp.close(), this.hooks.end("close").catch(() => {})]);
    await this.record?.close();
    this.recorder?.close();
    if (!this.parent) await Promise.all([this.lsp?.close(), this.runtime.close()]);
  }

  /** One tool call with its whole life reported to the front end. */
  callTool(toolId: string, args: unknown, signal: AbortSignal, callId = this.nextCallId()): Promise<Envelope> {
    return runToolCall(this.sessionServices.toolContext(signal), { callId, toolId, args }, this.frontEnd);
  }

  /** The tools the model is offered (agent/session-services.ts). */
  declarations(): ToolDeclaration[] {
    return this.sessionServices.declarations();
  }

  /** The services tools reach through `ctx.host`. */
  services(): HostServices {
    return this.sessionServices.services();
  }

  private async runTurn(input: PromptInput, signal: AbortSignal): Promise<TurnStopReason> {
    const stop = (reason: TurnStopReason): TurnStopReason => (signal.aborted ? "cancelled" : reason);
    // Cancelled before it started (while its setup or the turn before it ran): it does nothing.
    if (signal.aborted) return "cancelled";
    try {
      const control = this.record?.control(input);
      if (control) return stop((await this.record?.runControl(control, signal), "end_turn"));
      // /trust, the trust question, an MCP prompt or a slash command (agent/commands.ts); else the model.
      const slash = await this.slash.handle(input, signal);
      return stop(slash ?? (await this.modelTurn(input, signal)));
    } catch (err) {
      if (signal.aborted) return "cancelled";
      process.stderr.write(`toolhost: turn failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      await Promise.resolve(this.fail(`The turn failed: ${(err as Error).message}`)).catch(() => {});
      return stop("end_turn");
    }
  }

  private fail(text: string): void | Promise<void> {
    return this.frontEnd.failed ? this.frontEnd.failed(text) : this.frontEnd.say(text);
  }

  /** A compaction as the front end sees it; after it, the last usage no longer says what is in the context. */
  private async compacted(event: CompactionEvent, trigger: "manual" | "auto" = "auto"): Promise<void> {
    await this.hooks.compacting(event, trigger);
    if (event.status === "completed") this.lastUsage = undefined;
    this.recorder?.compaction(event);
    // Past the recorder: a replay shows the compaction itself, not this message too.
    const shown = this.unrecordedFrontEnd;
    if (shown.compaction) await shown.compaction(event);
    else if (event.status === "completed" && event.note) await shown.say(event.note);
    else if (event.status === "failed") await shown.say(`Compacting the conversation failed: ${event.error ?? "unknown error"}.`);
  }

  /** A prompt for the model: streamed answer, tool calls, usage (agent/session-model-turn.ts). */
  private async modelTurn(input: PromptInput, signal: AbortSignal): Promise<TurnStopReason> {
    const observer = turnObserver(this.frontEnd, {
      compaction: (event) => this.compacted(event),
      usage: (report) => {
        this.lastUsage = report;
        return this.frontEnd.usage(report);
      },
    });
    this.budget.turnStarted();
    const result = await this.askModel(input, signal, observer);
    // A front end that can ask for a login (ACP's auth_required) takes a missing model or key as that.
    const asked = result.needsLogin && result.error && !signal.aborted && this.frontEnd.loginRequired?.(result.error);
    if (result.error && !signal.aborted && !asked) await this.fail(result.error);
    if (result.notice && !signal.aborted) await this.frontEnd.say(result.notice);
    return result.stopReason;
  }

  private askModel(input: PromptInput, signal: AbortSignal, observer: TurnObserver): Promise<TurnResult> {
    const { workspace, history, registry, mcp, tools, meter, budget, thoughtLevel, instructions, hooks, sessionServices: services } = this;
    const turn = { workspace, history, registry, mcp, tools, meter, budget, thoughtLevel, instructions, hooks, services };
    return askModel(
      {
        ...turn,
        modelId: this.modelId,
        contextUsed: this.lastUsage?.used,
        // The note about the loaded session's interrupted turn: said once, with the next prompt.
        note: () => [this.interruptedNote, (this.interruptedNote = undefined)][0],
        nextCallId: () => this.nextCallId(),
        inbox: () => this.subagents?.takeFinished()?.message,
      },
      input,
      signal,
      observer,
    );
  }

  /** What the session's policy decides with: `toolhost policy explain` passes it to `decide()`. */
  permissionOptions(ask?: AskUser): PermissionOptions {
    return this.policy.permissionOptions(ask);
  }

  /** A child session (agent/subagents.ts runs it): this session's runtime, rules, sandbox, call ids and meter. */
  private createChild({ depth, agentMode, agentId, ...spec }: ChildSpec): ChildSession {
    const child = new AgentSession({ tools: this.tools, ...spec, parent: { session: this, depth, agentMode, agentId } });
    return { history: child.history, ask: (input, signal, observer) => child.askModel(input, signal, observer) };
  }
}
