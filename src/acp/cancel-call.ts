import { RequestError, type AgentApp } from "@agentclientprotocol/sdk";
import type { AcpSession } from "./session.js";

// Cancelling one tool call over ACP v1: `_tool_call/cancel {sessionId, toolCallId}` → `{}`,
// toolhost's extension (advertised in initialize's `agentCapabilities._meta.toolhost.cancelToolCall`),
// in the shape of ACP v2's `tool_call/cancel`, which acp/v2/ maps onto it. The call stops as on a
// session/cancel (its command killed, its approval withdrawn), the model gets its result and the
// turn goes on; its final tool_call_update confirms it. A call that is unknown or already ended
// is -32602, as v2 says.

export const CANCEL_TOOL_CALL = "_tool_call/cancel";

interface CancelParams {
  sessionId: string;
  toolCallId: string;
}

function cancelParams(raw: unknown): CancelParams {
  const params = (typeof raw === "object" && raw !== null && !Array.isArray(raw) ? raw : {}) as Record<string, unknown>;
  for (const key of ["sessionId", "toolCallId"] as const) {
    const value = params[key];
    if (typeof value !== "string" || value === "") throw RequestError.invalidParams({ [key]: value }, `${key} must be a non-empty string`);
  }
  return { sessionId: params.sessionId as string, toolCallId: params.toolCallId as string };
}

/** Registers `_tool_call/cancel` on the agent app; `session` finds a live session (RequestError when there is none). */
export function withCallCancel(app: AgentApp, session: (sessionId: string) => Promise<AcpSession>): AgentApp {
  return app.onRequest(CANCEL_TOOL_CALL, cancelParams, async ({ params }) => {
    const live = await session(params.sessionId);
    if (!live.agent.cancelCall(params.toolCallId))
      throw RequestError.invalidParams(params, `Tool call ${params.toolCallId} is not running (unknown, or already ended)`);
    return {};
  });
}
