import type { UserContent } from "ai";
import type { ConfigFile } from "../config/file.js";
import { parseUserConfig } from "../config/schema.js";
import type { History } from "./history.js";
import { compactTurnHistory, runModelTurn } from "./loop.js";
import type { ModelSpec } from "./model-config.js";
import { modelInfo } from "./models.js";
import { keyHint } from "./provider-errors.js";
import { createLanguageModel, ModelSetupError } from "./providers.js";
import { buildSystemPrompt } from "./system-prompt.js";
import { thinkingOptions, type ThoughtLevel } from "./thinking.js";
import type { ToolRunContext } from "./tool-runner.js";
import type { Envelope } from "../tool/envelope.js";
import type { CostMeter, ToolDeclaration, ToolOffer, TurnObserver, TurnResult } from "./turn-types.js";

// The entry the ACP session loads with `import()` on the first model turn: everything that
// pulls in the AI SDK hangs off this module.

export interface PromptTurn {
  spec: ModelSpec;
  /** The user's config file as this turn read it (model-config.ts's `turnModel`): its provider settings. */
  config: ConfigFile;
  cwd: string;
  history: History;
  prompt: UserContent;
  tools: ToolRunContext;
  /** The tools the model is offered. */
  declarations?: ToolDeclaration[];
  /** Decides the tools per request (deferral, tool_search); replaces `declarations`. */
  offer?: () => ToolOffer;
  afterCall?: (toolId: string, envelope: Envelope, offer: ToolOffer) => Envelope;
  nextCallId(): string;
  meter: CostMeter;
  /** The active profile's prompt, when a profile brings one. */
  profilePrompt?: string;
  /** The skills the system prompt lists (one line each). */
  skills?: readonly { name: string; description: string }[];
  maxRequests?: number;
  /** Tokens in the context at the session's last request. */
  contextUsed?: number;
  /** How hard the model thinks (the session's thought_level). */
  thoughtLevel?: ThoughtLevel;
}

export async function runPromptTurn(turn: PromptTurn, observer: TurnObserver): Promise<TurnResult> {
  const loaded = parseUserConfig(turn.config);
  if (loaded.error) process.stderr.write(`toolhost: ${loaded.error}\n`);
  let model;
  try {
    model = await createLanguageModel(turn.spec, loaded.config, loaded.path);
  } catch (err) {
    if (!(err instanceof ModelSetupError)) throw err;
    return { stopReason: "end_turn", error: loaded.error ? `${err.message}\n(${loaded.error})` : err.message };
  }
  const system = await buildSystemPrompt({ cwd: turn.cwd, profilePrompt: turn.profilePrompt, skills: turn.skills });
  return runModelTurn(
    {
      model,
      modelId: turn.spec.id,
      info: modelInfo(turn.spec),
      system,
      history: turn.history,
      prompt: turn.prompt,
      tools: turn.tools,
      declarations: turn.declarations,
      offer: turn.offer,
      afterCall: turn.afterCall,
      nextCallId: turn.nextCallId,
      keyHint: keyHint(turn.spec.provider, loaded.path),
      meter: turn.meter,
      maxRequests: turn.maxRequests,
      contextUsed: turn.contextUsed,
      providerOptions: thinkingOptions(turn.spec.id, turn.thoughtLevel ?? "default"),
    },
    observer,
  );
}

/** /compact: the session's history compacted now, summary included. A problem for the user, or null. */
export async function runCompaction(
  turn: { spec: ModelSpec; config: ConfigFile; history: History; signal: AbortSignal },
  observer: Pick<TurnObserver, "compaction">,
): Promise<string | null> {
  const loaded = parseUserConfig(turn.config);
  let model;
  try {
    model = await createLanguageModel(turn.spec, loaded.config, loaded.path);
  } catch (err) {
    if (!(err instanceof ModelSetupError)) throw err;
    return err.message;
  }
  await compactTurnHistory({ model, history: turn.history, info: modelInfo(turn.spec) }, observer, turn.signal, true);
  return null;
}
