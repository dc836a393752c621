import type { AgentContext, PermissionOption, ToolCallUpdate } from "@agentclientprotocol/sdk";
import type { ApprovalAnswer, ApprovalRequest } from "../policy/authorizer.js";

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
 * One session/request_permission round trip: the id of the option the user picked, or null for
 * anything else (an error, a cancelled outcome, cancellation, or no answer within the timeout,
 * so a client without a permission UI cannot hang a turn).
 */
export async function askClient(
  client: AgentContext,
  sessionId: string,
  toolCall: ToolCallUpdate,
  options: PermissionOption[],
  signal: AbortSignal,
): Promise<string | null> {
  if (signal.aborted) return null;
  const cancellationSignal = AbortSignal.any([signal, AbortSignal.timeout(approvalTimeoutMs())]);
  try {
    const { outcome } = await client.request(
      "session/request_permission",
      { sessionId, toolCall, options },
      { cancellationSignal, stopWaitingOnCancel: true },
    );
    return outcome.outcome === "selected" ? outcome.optionId : null;
  } catch {
    return null;
  }
}

/** Asks about a tool call (its diff or exact command); anything but one of the four answers is "cancelled". */
export async function requestPermission(
  client: AgentContext,
  sessionId: string,
  toolCall: ToolCallUpdate,
  request: ApprovalRequest,
  signal: AbortSignal,
): Promise<ApprovalAnswer> {
  const choice = await askClient(client, sessionId, toolCall, permissionOptions(request), signal);
  return choice !== null && ANSWERS.has(choice as ApprovalAnswer) ? (choice as ApprovalAnswer) : "cancelled";
}
