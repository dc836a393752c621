import type { UserContent } from "ai";
import type { Workspace } from "../../config/workspace.js";
import type { ToolRegistry } from "../../host/registry.js";
import type { SessionBudget } from "./budget.js";
import { parseBash } from "../../policy/bash-parse.js";
import { failed, turnObserver, type PromptInput, type SessionFrontEnd } from "./front-end.js";
import { turnModel } from "../model/model-config.js";
import { modelInfo } from "../model/models.js";
import type { ThoughtLevel } from "../model/thinking.js";
import type { SessionRecorder } from "../record/session-recorder.js";
import { withNote } from "../record/session-restore.js";
import { MAX_STOP_CONTINUES, type SessionHooks } from "./hooks.js";
import type { SessionMcp } from "./mcp.js";
import type { SessionServices } from "./services.js";
import type { SessionTools } from "./tools.js";
import type { History } from "../turn/history.js";
import { DEFAULT_PROMPT } from "../turn/system-prompt.js";
import type { CompactionEvent, CostMeter, TurnObserver, TurnResult, TurnStopReason, UsageReport } from "../turn/turn-types.js";

// One prompt of a session for its model (AgentSession's and its subagents'): the model chosen, the
// request built from the session's history, tools and settings, and the turn run (agent/turn/).

/** What a model turn reads of its session. */
export interface ModelTurnContext {
  modelId: string | undefined;
  workspace: Workspace;
  history: History;
  registry: ToolRegistry;
  mcp: SessionMcp;
  tools: SessionTools;
  services: SessionServices;
  meter: CostMeter;
  /** The session's caps (agent/session/budget.ts). */
  budget: SessionBudget;
  /** Tokens in the context at the last request. */
  contextUsed?: number;
  thoughtLevel: ThoughtLevel;
  /** A subagent's instructions, added to the profile's prompt. */
  instructions?: string;
  /** The note about an interrupted turn, said once with the next prompt (taken only when a model runs). */
  note(): string | undefined;
  nextCallId(): string;
  /** The session's hooks: session_start, prompt and stop run here (tool calls': through the tool context). */
  hooks?: SessionHooks;
  /** Background tasks' answers that arrived since the last request. */
  inbox?: () => string | undefined;
}

/** Runs a prompt on the session's model; a model that is not configured is the turn's error. The AI SDK loads on the first one. */
export async function askModel(
  ctx: ModelTurnContext,
  input: PromptInput,
  signal: AbortSignal,
  observer: TurnObserver,
): Promise<TurnResult> {
  const choice = turnModel(ctx.modelId, (error) => `The configured model is not usable: ${error}`);
  if ("help" in choice) return { stopReason: "end_turn", error: choice.help, needsLogin: true };
  // The policy parses every command line (rules, watchdog): load the parser while the model thinks.
  if (ctx.registry.has("bash")) void parseBash(":").catch(() => {});
  // The first request waits (bounded) for MCP servers still connecting; the offer names any still starting.
  const { services, tools } = ctx;
  // The agent files are read before the declarations: the task tool lists them.
  const [{ runPromptTurn }] = await Promise.all([import("../turn/turn.js"), ctx.mcp.settled(signal), services.readAgents()]);
  const info = modelInfo(choice.spec);
  const declarations = services.declarations();
  const profilePrompt = tools.toolset.profile.prompt;
  const { hooks } = ctx;
  hooks?.takeHalt(); // one left by a slash command's call is not this turn's
  const started = await hooks?.start(ctx.history, signal);
  const gate = (await hooks?.prompt(input.text, signal)) ?? {};
  if ("block" in gate) return { stopReason: "end_turn", notice: gate.block };
  const context = [ctx.note(), started, gate.context].filter(Boolean).join("\n\n");
  const turn = (prompt: UserContent) =>
    runPromptTurn(
      {
        ...choice,
        cwd: ctx.workspace.cwd,
        history: ctx.history,
        prompt,
        tools: services.toolContext(signal),
        declarations,
        offer: async () => ctx.mcp.withStartingNote(await services.offer(info.contextWindow)),
        afterCall: (toolId, envelope, offer) => services.afterCall(toolId, envelope, offer),
        nextCallId: () => ctx.nextCallId(),
        meter: ctx.meter,
        budget: ctx.budget,
        contextUsed: ctx.contextUsed,
        inbox: ctx.inbox,
        thoughtLevel: ctx.thoughtLevel,
        profilePrompt: ctx.instructions ? `${profilePrompt || DEFAULT_PROMPT}\n\n${ctx.instructions}` : profilePrompt || undefined,
        skills: declarations.some((d) => d.id === "skill") ? tools.toolset.skills.skills : undefined,
      },
      observer,
    );
  let result = await turn(withNote(context || undefined, input.content({ images: info.images, modelId: choice.spec.id })));
  // A stop hook may keep the turn going with a message of its own, a few times in a row at most.
  for (let n = 0; hooks && n < MAX_STOP_CONTINUES && result.stopReason === "end_turn" && !result.error && !signal.aborted; n++) {
    const more = await hooks.stop(n > 0, ctx.history, signal);
    if (!more || signal.aborted) break;
    result = await turn(more);
  }
  return result;
}

/** What a session's model turns need of it (AgentSession's). */
export interface SessionModelTurnHost {
  /** The front end as the record sees it. */
  frontEnd: SessionFrontEnd;
  /** The front end itself: a compaction is shown past the recorder (a replay shows the compaction, not its note too). */
  unrecorded: SessionFrontEnd;
  hooks: SessionHooks;
  recorder: SessionRecorder | undefined;
  budget: SessionBudget;
  /** The session as a model turn reads it now: its model, history, tools and settings. */
  context(): Omit<ModelTurnContext, "contextUsed" | "note">;
}

/** A session's model turns: the prompt's turn with its errors and notices said, compactions shown, the last usage kept. */
export class SessionModelTurn {
  /** The last request's usage (what is in the context); none after a compaction, a rewind or `/clear`. */
  lastUsage: UsageReport | undefined;
  /** Said to the model with the next prompt: the loaded session's last turn was cut short. */
  interruptedNote: string | undefined;

  constructor(private readonly host: SessionModelTurnHost) {}

  /** A prompt for the model: streamed answer, tool calls, usage. */
  async run(input: PromptInput, signal: AbortSignal): Promise<TurnStopReason> {
    const { frontEnd } = this.host;
    const observer = turnObserver(frontEnd, {
      compaction: (event) => this.compacted(event),
      usage: (report) => {
        this.lastUsage = report;
        return frontEnd.usage(report);
      },
    });
    this.host.budget.turnStarted();
    const result = await this.ask(input, signal, observer);
    // A front end that can ask for a login (ACP's auth_required) takes a missing model or key as that.
    const asked = result.needsLogin && result.error && !signal.aborted && frontEnd.loginRequired?.(result.error);
    if (result.error && !signal.aborted && !asked) await failed(frontEnd, result.error);
    if (result.notice && !signal.aborted) await frontEnd.say(result.notice);
    return result.stopReason;
  }

  /** The turn itself, observed as the caller wants (a subagent's: by its parent's front end). */
  ask(input: PromptInput, signal: AbortSignal, observer: TurnObserver): Promise<TurnResult> {
    const context = {
      ...this.host.context(),
      contextUsed: this.lastUsage?.used,
      // The note about the loaded session's interrupted turn: said once, with the next prompt.
      note: () => [this.interruptedNote, (this.interruptedNote = undefined)][0],
    };
    return askModel(context, input, signal, observer);
  }

  /** A compaction as the front end sees it; after it, the last usage no longer says what is in the context. */
  async compacted(event: CompactionEvent, trigger: "manual" | "auto" = "auto"): Promise<void> {
    const { hooks, recorder, unrecorded: shown } = this.host;
    await hooks.compacting(event, trigger);
    if (event.status === "completed") this.lastUsage = undefined;
    recorder?.compaction(event);
    if (shown.compaction) await shown.compaction(event);
    else if (event.status === "completed" && event.note) await shown.say(event.note);
    else if (event.status === "failed") await shown.say(`Compacting the conversation failed: ${event.error ?? "unknown error"}.`);
  }
}
