import type { AgentContext, PermissionOption, ToolCallContent, ToolCallUpdate } from "@agentclientprotocol/sdk";
import type { ApprovalAnswer, ApprovalRequest } from "../policy/authorizer.js";
import { boundedJson, diffContent, fenced, textContent } from "./content.js";

/** How long an approval may stay unanswered before it counts as a reject (a silent client must not hang a turn). */
export function approvalTimeoutMs(): number {
  const fromEnv = Number(process.env.TOOLHOST_APPROVAL_TIMEOUT_MS);
  return Number.isFinite(fromEnv) && fromEnv > 0 ? fromEnv : 10 * 60 * 1000;
}

/**
 * The options, each label naming what it covers; "always, for this project" (saved to the
 * project's .toolhost/config.json) only when the project is trusted.
 */
export function permissionOptions(request: ApprovalRequest): PermissionOption[] {
  // Nothing an "always" could cover (running one command outside the sandbox): once or not at all.
  if (request.always.length === 0) {
    return [
      { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
      { optionId: "reject_once", name: "Reject", kind: "reject_once" },
    ];
  }
  return [
    { optionId: "allow_once", name: "Allow once", kind: "allow_once" },
    { optionId: "allow_always", name: `Always allow ${request.scopeLabel} in this session`, kind: "allow_always" },
    ...(request.project
      ? [
          {
            optionId: "allow_always_project",
            name: `Always allow ${request.scopeLabel} in this project (saved to .toolhost/config.json)`,
            kind: "allow_always" as const,
          },
        ]
      : []),
    { optionId: "reject_once", name: "Reject", kind: "reject_once" },
    { optionId: "reject_always", name: `Always reject ${request.scopeLabel} in this session`, kind: "reject_always" },
  ];
}

/**
 * What the request says about itself, for clients that show it (`_meta.permission`, the shape
 * Claude Code's and codex's ACP adapters send): a title, and why it asks and what "always" covers.
 */
export function permissionMeta(request: ApprovalRequest): { permission: { title: string; description: string } } {
  const { call } = request;
  return {
    permission: {
      title: `Allow ${call.title || call.tool.id}?`,
      description: request.always.length ? `Why: ${request.why}. "Always" covers ${request.scopeLabel}.` : `Why: ${request.why}.`,
    },
  };
}

const ANSWERS = new Set<ApprovalAnswer>(["allow_once", "allow_always", "allow_always_project", "reject_once", "reject_always"]);

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
  meta?: Record<string, unknown>,
): Promise<string | null> {
  if (signal.aborted) return null;
  const cancellationSignal = AbortSignal.any([signal, AbortSignal.timeout(approvalTimeoutMs())]);
  try {
    const { outcome } = await client.request(
      "session/request_permission",
      { sessionId, toolCall, options, ...(meta ? { _meta: meta } : {}) },
      { cancellationSignal, stopWaitingOnCancel: true },
    );
    return outcome.outcome === "selected" ? outcome.optionId : null;
  } catch {
    return null;
  }
}

/** Asks about a tool call (its diff or exact command, and why); anything but one of the options is "cancelled". */
async function requestPermission(
  client: AgentContext,
  sessionId: string,
  toolCall: ToolCallUpdate,
  request: ApprovalRequest,
  signal: AbortSignal,
): Promise<ApprovalAnswer> {
  const options = permissionOptions(request);
  const choice = await askClient(client, sessionId, toolCall, options, signal, permissionMeta(request));
  // Only an option that was offered counts (no project rule from a client that invents one).
  const offered = options.some((o) => o.optionId === choice);
  return offered && ANSWERS.has(choice as ApprovalAnswer) ? (choice as ApprovalAnswer) : "cancelled";
}

/**
 * Approval of a call through session/request_permission, with the preview's diff or the exact
 * command, then why it asks. The why goes in `_meta.permission` and also as the last text block
 * of the call's content in the request, which every client shows (Zed shows the call's content
 * above the options and ignores `_meta`).
 */
export function approveCall(
  client: AgentContext,
  sessionId: string,
  request: ApprovalRequest,
  signal: AbortSignal,
): Promise<ApprovalAnswer> {
  const { call } = request;
  const diffs: ToolCallContent[] = call.preview.flatMap((e) => (e.type === "diff" ? [diffContent(e.path, e.oldText, e.newText)] : []));
  const shown = diffs.length ? diffs : call.targets.commands.map((command) => textContent(fenced(command, "sh")));
  const content = [...shown, textContent(`Why it asks: ${request.why}.`)];
  return requestPermission(
    client,
    sessionId,
    {
      toolCallId: call.callId,
      title: call.title,
      kind: call.tool.kind,
      status: "pending",
      content,
      locations: call.locations,
      rawInput: boundedJson(call.args),
    },
    request,
    signal,
  );
}
