import type { ClientCapabilities } from "@agentclientprotocol/sdk";

// A turn the agent starts by itself (a background task's answer, agent/session/agent-session.ts) is no answer to
// a prompt, so a v1 client sees only its updates. A client that asks for it
// (`clientCapabilities._meta.toolhost.ownTurns: true`; acp/v2/ does, to send v2's state_update)
// is told `_toolhost/turn {sessionId, state: "running"}` before such a turn and
// `{sessionId, state: "idle", stopReason}` after it.

export const OWN_TURN = "_toolhost/turn";

export interface OwnTurnParams {
  sessionId: string;
  state: "running" | "idle";
  stopReason?: string;
}

/** Whether the client asked to be told of the agent's own turns. */
export function wantsOwnTurns(caps: ClientCapabilities): boolean {
  const toolhost = (caps._meta as { toolhost?: { ownTurns?: unknown } } | undefined)?.toolhost;
  return toolhost?.ownTurns === true;
}
