import type { AgentContext, PermissionOption, ToolCallContent, ToolCallUpdate } from "@agentclientprotocol/sdk";
import type { ApprovalAnswer, ApprovalRequest } from "../agent/permissions.js";

/** How long an approval may stay unanswered before it counts as a reject (a silent client must not hang a turn). */
export function approvalTimeoutMs(): number {
  const fromEnv = Number(process.env.TOOLHOST_APPROVAL_TIMEOUT_MS);
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 10 * 60 * 1000;
}

/** The four options, each label naming what it covers. */
export function permissionOptions(request: ApprovalRequest): PermissionOption[] {
  return [
    { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
    { optionId: "allow_always", name: `Always allow ${request.scopeLabel} in this session`, kind: "allow_always" },
    { optionId: "reject_once", name: "Reject", kind: "reject_once" },
    { optionId: "reject_always", name: `Always reject ${request.scopeLabel} in this session`, kind: "reject_always" },
  ];
}

const ANSWERS = new Set<ApprovalAnswer>(["allow_once", "allow_always", "reject_once", "reject_always"]);

/**
 * Sends session/request_permission with the call (its diff or exact command) and maps the
 * outcome. Errors, an unknown option, a timeout and cancellation all come back as "cancelled".
 */
export async function requestPermission(
  client: AgentContext,
  sessionId: string,
  toolCall: ToolCallUpdate,
  request: ApprovalRequest,
  signal: AbortSignal,
): Promise<ApprovalAnswer> {
  if (signal.aborted) return "cancelled";
  const timeout = AbortSignal.timeout(approvalTimeoutMs());
  const cancellationSignal = AbortSignal.any([signal, timeout]);
  try {
    const response = await client.request(
      "session/request_permission",
      { sessionId, toolCall, options: permissionOptions(request) },
      { cancellationSignal, stopWaitingOnCancel: true },
    );
    const outcome = response.outcome;
    if (outcome.outcome !== "selected") return "cancelled";
    return ANSWERS.has(outcome.optionId as ApprovalAnswer) ? (outcome.optionId as ApprovalAnswer) : "cancelled";
  } catch {
    return "cancelled";
  }
}

export type { ToolCallContent };
