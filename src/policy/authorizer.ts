import type { Authorize, Decision, ToolCallRequest } from "./call.js";
import { parseBash } from "./bash-parse.js";
import { modeAction, type ModeId } from "./modes.js";
import { describeRule, evaluateRules, type SourcedRule } from "./ruleset.js";

import { alwaysScope, describeScope, type RuleScope, type SessionRules } from "./session-rules.js";
import type { Watchdog, WatchdogManifest, WatchdogVerdict } from "./watchdog.js";

/** Each command line's simple commands, for rules to match one by one; `unparsed` when a line does not parse. */
export async function commandUnits(commands: readonly string[]): Promise<{ units: Map<string, string[]>; unparsed: boolean }> {
  const units = new Map<string, string[]>();
  let unparsed = false;
  for (const line of commands) {
    const parsed = await parseBash(line).catch(() => null);
    if (parsed && parsed.commands.length)
      units.set(
        line,
        parsed.commands.map((c) => c.text.trim()),
      );
    else unparsed = true;
  }
  return { units, unparsed };
}

/** The user's answer to an approval request. Anything but an allow is a reject (fail closed). */
export type ApprovalAnswer = "allow_once" | "allow_always" | "reject_once" | "reject_always" | "cancelled";

export interface ApprovalRequest {
  call: ToolCallRequest;
  /** What an "always" answer would cover, and its label (`git status …` commands). */
  scope: RuleScope;
  scopeLabel: string;
  /** Why the call is asked about: the rule, the watchdog check, the sandbox, or the mode. */
  why: string;
}

/** Asks a human. Absent (headless), every ask is a deny: the agent never invents an answer. */
export type AskUser = (request: ApprovalRequest, signal: AbortSignal) => Promise<ApprovalAnswer>;

export interface PermissionOptions {
  /** The workspace roots: "accept edits" allows edits inside them. */
  roots: readonly string[];
  mode: () => ModeId;
  rules: SessionRules;
  /** The permission rules of the manifest, user and project (policy/ruleset.ts); read on each call. */
  ruleset?: () => readonly SourcedRule[];
  ask?: AskUser;
  /** The watchdog (policy/watchdog.ts): after the rules' deny, before the mode; it can refuse or ask, never allow. */
  watchdog?: Watchdog;
  /** The manifest the watchdog sees (default: none). */
  manifest?: () => WatchdogManifest;
  /** Whether commands run in the OS sandbox, for the watchdog; true when unknown. */
  sandboxed?: () => boolean;
}

const NO_MANIFEST: WatchdogManifest = { profile: "", requires: {}, permissions: [] };

/** The watchdog's verdict on a call (allow without one); one that throws denies (fail closed). */
export async function watch(options: PermissionOptions, call: ToolCallRequest, signal: AbortSignal): Promise<WatchdogVerdict> {
  if (!options.watchdog) return { action: "allow" };
  const { tool, args, targets, sessionId } = call;
  const manifest = options.manifest?.() ?? NO_MANIFEST;
  try {
    const seen = {
      tool: { id: tool.id, kind: tool.kind },
      args,
      targets,
      manifest,
      sessionId,
      roots: options.roots,
      sandboxed: options.sandboxed?.() ?? true,
    };
    return await options.watchdog(seen, signal);
  } catch (err) {
    return { action: "deny", check: "watchdog", reason: `the watchdog failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/**
 * The authorise hook for a session: the permission rules, then the mode's verdict, then
 * remembered "always" answers, then the user. The mode is a preset under the rules: a deny rule
 * holds in `full` mode, an allow rule lets a call run in `ask` or `accept-edits` mode, an ask rule
 * asks in any mode; only `read-only` still refuses changes whatever the rules allow. Errors and
 * cancellations count as rejects.
 */
export function sessionAuthorizer(options: PermissionOptions): Authorize {
  return async (call, signal): Promise<Decision> => {
    const rules = options.ruleset?.() ?? [];
    const { units, unparsed } = rules.length ? await commandUnits(call.targets.commands) : { units: undefined, unparsed: false };
    let verdict = evaluateRules(rules, call, { workspace: options.roots[0] ?? process.cwd(), commandUnits: units });
    // A line the parser cannot read is asked about, whatever a rule for the whole line allows.
    if (unparsed && verdict?.action === "allow") verdict = { ...verdict, action: "ask" };
    if (verdict?.action === "deny") {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} call was refused by a permission rule (${describeRule(verdict.rule)}). Do not work around it; ask the user if it should run.`,
      };
    }
    // The watchdog: it can refuse what the rules allow, and its ask holds in any mode.
    const watched = await watch(options, call, signal);
    if (watched.action === "deny") {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The watchdog refused this ${call.tool.id} call (${watched.check}: ${watched.reason}). Do not work around it; ask the user if it should run.`,
      };
    }
    const modeVerdict = modeAction(options.mode(), call, options.roots);
    const action =
      modeVerdict === "deny"
        ? "deny"
        : watched.action === "ask"
          ? "ask"
          : verdict?.action === "allow"
            ? "allow"
            : verdict?.action === "ask"
              ? "ask"
              : modeVerdict;
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
    const why =
      watched.action === "ask"
        ? `watchdog: ${watched.check}: ${watched.reason}`
        : verdict?.action === "ask"
          ? `rule ${describeRule(verdict.rule)}`
          : `no rule matched and ${options.mode()} mode asks before this call`;
    if (!options.ask) {
      const asked = watched.action === "ask" || verdict?.action === "ask" ? ` (${why})` : "";
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} call needs approval${asked} and nobody can answer here, so it was refused.`,
      };
    }
    const scope = alwaysScope(call);
    let answer: ApprovalAnswer;
    try {
      answer = await options.ask({ call, scope, scopeLabel: describeScope(call.tool.id, scope, options.roots[0] ?? ""), why }, signal);
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
