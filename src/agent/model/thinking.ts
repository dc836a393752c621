// How hard a model thinks before it answers: the session's `thought_level` option, as each
// provider takes it (Anthropic: an extended-thinking token budget; OpenAI: a reasoning effort).

export const THOUGHT_LEVELS = ["default", "low", "medium", "high"] as const;
export type ThoughtLevel = (typeof THOUGHT_LEVELS)[number];

export function isThoughtLevel(value: string): value is ThoughtLevel {
  return (THOUGHT_LEVELS as readonly string[]).includes(value);
}

/** Anthropic's extended-thinking budgets, in tokens (the minimum is 1,024). */
const ANTHROPIC_BUDGETS: Record<Exclude<ThoughtLevel, "default">, number> = { low: 4_000, medium: 10_000, high: 32_000 };

/** Which way this model is told how hard to think; null when it cannot be (the option is not offered). */
function thinkingStyle(modelId: string): "anthropic" | "openai" | null {
  const [provider, ...rest] = modelId.split("/");
  const model = rest.join("/");
  if (provider === "anthropic" && /^claude-(opus-4|sonnet-4|haiku-4|3-7-sonnet)/.test(model)) return "anthropic";
  if (provider === "openai" && /^(gpt-5|o1|o3|o4)/.test(model)) return "openai";
  return null;
}

export function supportsThinking(modelId: string): boolean {
  return thinkingStyle(modelId) !== null;
}

/** The provider options a request carries for this level; undefined for `default` (the model's own). */
export function thinkingOptions(modelId: string, level: ThoughtLevel): Record<string, Record<string, unknown>> | undefined {
  if (level === "default") return undefined;
  switch (thinkingStyle(modelId)) {
    case "anthropic":
      return { anthropic: { thinking: { type: "enabled", budgetTokens: ANTHROPIC_BUDGETS[level] } } };
    case "openai":
      return { openai: { reasoningEffort: level, reasoningSummary: "auto" } };
    default:
      return undefined;
  }
}
