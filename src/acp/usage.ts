import type { ClientCapabilities } from "@agentclientprotocol/sdk";
import type { Usage } from "@agentclientprotocol/sdk/unstable";
import type { CostMeter } from "../agent/turn/turn-types.js";

// A turn's tokens as ACP's prompt response carries them: `usage` exists only in the unstable
// schema, so it goes only to a client that reads that schema.

/**
 * The client advertises a capability only ACP's unstable schema has (`plan`, `subagents`,
 * `session.compaction`): it reads that schema, whose PromptResponse has `usage`. Any other client
 * gets the stable answer only, with no key its schema lacks.
 */
export function readsUnstableSchema(caps: ClientCapabilities): boolean {
  const unstable = caps as { plan?: unknown; subagents?: unknown; session?: { compaction?: unknown } | null };
  return unstable.plan != null || unstable.subagents != null || unstable.session?.compaction != null;
}

/** What a turn used, as ACP's (unstable) `Usage` of a prompt response: the meter's counts since `before`. */
export function turnUsage(now: CostMeter, before: CostMeter): Usage {
  const input = now.inputTokens - before.inputTokens;
  const output = now.outputTokens - before.outputTokens;
  return {
    inputTokens: input,
    outputTokens: output,
    totalTokens: input + output,
    cachedReadTokens: now.cacheReadTokens - before.cacheReadTokens,
    cachedWriteTokens: now.cacheWriteTokens - before.cacheWriteTokens,
  };
}
