import type { UserContent } from "ai";
import type { Workspace } from "../config/workspace.js";
import type { ToolRegistry } from "../host/registry.js";
import type { SessionBudget } from "./budget.js";
import { parseBash } from "../policy/bash-parse.js";
import type { PromptInput } from "./front-end.js";
import { turnModel } from "./model/model-config.js";
import { modelInfo } from "./model/models.js";
import type { ThoughtLevel } from "./model/thinking.js";
import { withNote } from "./record/session-restore.js";
import { MAX_STOP_CONTINUES, type SessionHooks } from "./session-hooks.js";
import type { SessionMcp } from "./session-mcp.js";
import type { SessionServices } from "./session-services.js";
import type { SessionTools } from "./session-tools.js";
import type { History } from "./turn/history.js";
import { DEFAULT_PROMPT } from "./turn/system-prompt.js";
import type { CostMeter, TurnObserver, TurnResult } from "./turn/turn-types.js";

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
  /** The session's caps (agent/budget.ts). */
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
  const [{ runPromptTurn }] = await Promise.all([import("./turn/turn.js"), ctx.mcp.settled(signal)]);
  const info = modelInfo(choice.spec);
  const { services, tools } = ctx;
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
        offer: () => ctx.mcp.withStartingNote(services.offer(info.contextWindow)),
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
