import type { Authorize, Decision, ToolCallRequest } from "./call.js";
import { modeAction, type ModeId } from "./modes.js";
import { alwaysScope, describeScope, type RuleScope, type SessionRules } from "./session-rules.js";

/** The user's answer to an approval request. Anything but an allow is a reject (fail closed). */
export type ApprovalAnswer = "allow_once" | "allow_always" | "reject_once" | "reject_always" | "cancelled";

export interface ApprovalRequest {
  call: ToolCallRequest;
  /** What an "always" answer would cover, and its label (`git status …` commands). */
  scope: RuleScope;
  scopeLabel: string;
}

/** Asks a human. Absent (headless), every ask is a deny: the agent never invents an answer. */
export type AskUser = (request: ApprovalRequest, signal: AbortSignal) => Promise<ApprovalAnswer>;

export interface PermissionOptions {
  /** The workspace roots: "accept edits" allows edits inside them. */
  roots: readonly string[];
  mode: () => ModeId;
  rules: SessionRules;
  ask?: AskUser;
}

/**
 * The authorise hook for a session: the mode's verdict, then remembered "always" answers,
 * then the user. Errors and cancellations count as rejects.
 */
export function sessionAuthorizer(options: PermissionOptions): Authorize {
  return async (call, signal): Promise<Decision> => {
    const action = modeAction(options.mode(), call, options.roots);
    if (action === "deny") {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} tool is not available in ${options.mode()} mode (it changes files or runs commands). Switch the session mode to use it.`,
      };
    }
    if (action === "allow") return { outcome: "allow" };
    const remembered = options.rules.lookup(call);
    if (remembered === "allow") return { outcome: "allow" };
    if (remembered === "deny") {
      return { outcome: "deny", code: "rejected", reason: `The user rejected ${call.tool.id} calls like this one for this session.` };
    }
    if (!options.ask) {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} call needs approval and nobody can answer here, so it was refused.`,
      };
    }
    const scope = alwaysScope(call);
    let answer: ApprovalAnswer;
    try {
      answer = await options.ask({ call, scope, scopeLabel: describeScope(call.tool.id, scope, options.roots[0] ?? "") }, signal);
    } catch {
      answer = "cancelled";
    }
    switch (answer) {
      case "allow_always":
        options.rules.remember(call, "allow");
        return { outcome: "allow" };
      case "allow_once":
        return { outcome: "allow" };
      case "reject_always":
        options.rules.remember(call, "deny");
        return {
          outcome: "deny",
          code: "rejected",
          reason: `The user rejected this ${call.tool.id} call (and calls like it for this session).`,
        };
      case "reject_once":
        return { outcome: "deny", code: "rejected", reason: `The user rejected this ${call.tool.id} call.` };
      case "cancelled":
        return signal.aborted
          ? { outcome: "deny", code: "aborted", reason: "The turn was cancelled before the call was approved." }
          : {
              outcome: "deny",
              code: "rejected",
              reason: `The approval request for ${call.tool.id} was not answered, so the call was refused.`,
            };
    }
  };
}
