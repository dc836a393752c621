import type { Decision, ToolCallRequest } from "./call.js";
import { decide, type DecideOptions, type PolicyLayer, type PolicyVerdict } from "./decide.js";
import type { PermissionRule } from "./rules.js";

export type { SandboxState } from "./decide.js";

/** The user's answer to an approval request. Anything but an allow is a reject (fail closed). */
export type ApprovalAnswer = "allow_once" | "allow_always" | "allow_always_project" | "reject_once" | "reject_always" | "cancelled";

export interface ApprovalRequest {
  call: ToolCallRequest;
  /** Why the call is asked about: the rule, the watchdog check, the sandbox, or the mode. */
  why: string;
  /** What an "always" answer would cover (`\`git status …\` commands`), for the option labels. */
  scopeLabel: string;
  /** The rules an "always" answer adds (action aside). */
  always: readonly Omit<PermissionRule, "action">[];
  /** "Always, for this project" can be offered: the project is trusted and its config can be written. */
  project: boolean;
}

/** Asks a human. Absent (headless), every ask is a deny: the agent never invents an answer. */
export type AskUser = (request: ApprovalRequest, signal: AbortSignal) => Promise<ApprovalAnswer>;

/** What `decide` reads (policy/decide.ts), and who answers its asks. */
export interface PermissionOptions extends DecideOptions {
  ask?: AskUser;
  /**
   * "Always, for this project": present when the project is trusted (asked on each call). `save`
   * appends the rules to the project's config and says whether they were saved (when not, the
   * caller has told the user why, and the answer holds for the session).
   */
  project?: { trusted: () => boolean; save: (rules: PermissionRule[]) => Promise<boolean> };
}

/**
 * An authorise hook that takes, per call, the layers to decide with: a tool_call hook's verdict in
 * its place (host/hooks/policy-layer.ts `hookPolicyLayers`). Without them, the policy's own.
 */
export type SessionAuthorize = (
  call: ToolCallRequest,
  signal: AbortSignal,
  extra?: { layers?: readonly PolicyLayer[] },
) => Promise<Decision>;

/** The refusal of an ask nobody can answer (headless). */
function unanswerable(verdict: PolicyVerdict, call: ToolCallRequest): Decision {
  const id = call.tool.id;
  let reason = `The ${id} call needs approval and nobody can answer here, so it was refused (${verdict.why}).`;
  if (verdict.layer === "sandbox") {
    reason = verdict.sandbox?.outside
      ? `The ${id} call asked to run outside the sandbox, which only the user can approve, and nobody can answer here, so it was refused. Run it inside the sandbox instead.`
      : `The ${id} call runs commands and ${verdict.why}. Running them unsandboxed needs the user's approval and nobody can answer here, so it was refused. ${verdict.sandbox?.state?.advice ?? 'Set TOOLHOST_SANDBOX=off (or "sandbox": "off" in ~/.toolhost/config.json) to run commands unsandboxed without asking.'}`;
  }
  return { outcome: "deny", code: "permission_denied", reason };
}

/**
 * The authorise hook for a session: `decide` (policy/decide.ts: the permission rules — the
 * manifest's, the user's, the project's and the session's remembered "always" answers — the
 * watchdog, the sandbox and the mode), then, when the verdict is an ask, the user; an "always"
 * answer is remembered as session (or project) rules. Errors and cancellations count as rejects.
 */
export function sessionAuthorizer(options: PermissionOptions): SessionAuthorize {
  return async (call, signal, extra): Promise<Decision> => {
    const verdict = await decide(call, extra?.layers ? { ...options, layers: extra.layers } : options, { signal });
    if (verdict.action === "deny") return { outcome: "deny", code: verdict.code, reason: verdict.why };
    // Where no sandbox can run, an approved command runs unsandboxed: the grant says so.
    const allow: Decision = verdict.unsandboxed ? { outcome: "allow", unsandboxed: true } : { outcome: "allow" };
    if (verdict.action === "allow") return allow;
    if (!options.ask) return unanswerable(verdict, call);
    const scope = verdict.alwaysScope ?? { label: "", rules: [] };
    const project = verdict.alwaysScope && options.project?.trusted() ? options.project : undefined;
    let answer: ApprovalAnswer;
    try {
      answer = await options.ask(
        { call, why: verdict.why, scopeLabel: scope.label, always: scope.rules, project: project !== undefined },
        signal,
      );
    } catch {
      answer = "cancelled";
    }
    switch (answer) {
      case "allow_always_project":
        if (!project || !(await project.save(scope.rules.map((r) => ({ ...r, action: "allow" }))))) options.rules.remember(scope, "allow");
        return allow;
      case "allow_always":
        options.rules.remember(scope, "allow");
        return allow;
      case "allow_once":
        return allow;
      case "reject_always":
        options.rules.remember(scope, "deny");
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
