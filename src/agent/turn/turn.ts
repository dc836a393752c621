import type { ConfigFile } from "../../config/file.js";
import { parseUserConfig } from "../../config/schema.js";
import { compactTurnHistory, runModelTurn } from "./loop.js";
import type { ModelSpec } from "../model/model-config.js";
import { modelInfo } from "../model/models.js";
import { keyHint } from "../model/provider-errors.js";
import { createLanguageModel, ModelSetupError } from "../model/providers.js";
import { requestLimits } from "../model/request-limits.js";
import { buildSystemPrompt, type SystemPromptOptions } from "./system-prompt.js";
import { thinkingOptions, type ThoughtLevel } from "../model/thinking.js";
import type { CostMeter, TurnObserver, TurnRequest, TurnResult } from "./turn-types.js";

// The entry the ACP session loads with `import()` on the first model turn: everything that
// pulls in the AI SDK hangs off this module.

/** A prompt turn as the session asks for it: its request, the model's spec, what the system prompt is built from. */
export interface PromptTurn extends TurnRequest, Pick<SystemPromptOptions, "cwd" | "profilePrompt" | "skills"> {
  spec: ModelSpec;
  /** The user's config file as this turn read it (model-config.ts's `turnModel`): its provider settings. */
  config: ConfigFile;
  meter: CostMeter;
  /** How hard the model thinks (the session's thought_level). */
  thoughtLevel?: ThoughtLevel;
}

export async function runPromptTurn(turn: PromptTurn, observer: TurnObserver): Promise<TurnResult> {
  const { spec, cwd, profilePrompt, skills, thoughtLevel, config, ...request } = turn;
  const loaded = parseUserConfig(config);
  if (loaded.error) process.stderr.write(`toolhost: ${loaded.error}\n`);
  let model;
  try {
    model = await createLanguageModel(spec, loaded.config, loaded.path);
  } catch (err) {
    if (!(err instanceof ModelSetupError)) throw err;
    return { stopReason: "end_turn", error: loaded.error ? `${err.message}\n(${loaded.error})` : err.message, needsLogin: true };
  }
  const system = await buildSystemPrompt({ cwd, profilePrompt, skills });
  const { limits, problems } = requestLimits(loaded.config);
  for (const problem of problems) process.stderr.write(`toolhost: ${problem}\n`);
  return runModelTurn(
    {
      ...request,
      model,
      modelId: spec.id,
      info: modelInfo(spec),
      system,
      keyHint: keyHint(spec.provider, loaded.path),
      providerOptions: thinkingOptions(spec.id, thoughtLevel ?? "default"),
      limits,
    },
    observer,
  );
}

/** /compact: the session's history compacted now, summary included. A problem for the user, or null. */
export async function runCompaction(
  turn: Pick<PromptTurn, "spec" | "history" | "config"> & { signal: AbortSignal },
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
