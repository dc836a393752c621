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
  /** Why the call is asked about: the rule, the watchdog check, the sandbox, or the mode. */
  why: string;
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
  /** The permission rules of the manifest, user and project (policy/ruleset.ts); read on each call. */
  ruleset?: () => readonly SourcedRule[];
  ask?: AskUser;
  /** The watchdog (policy/watchdog.ts): after the rules' deny, before the mode; it can refuse or ask, never allow. */
  watchdog?: Watchdog;
  /** The manifest the watchdog sees (default: none). */
  manifest?: () => WatchdogManifest;
  /**
   * The OS sandbox (absent: the policy ignores it). Where none can run and it is not switched
   * off, every call that runs commands is asked about, in every mode; a call that asks to leave
   * an active sandbox (`targets.unsandboxed`) is asked about every time.
   */
  sandbox?: () => SandboxState | Promise<SandboxState>;
}

const NO_MANIFEST: WatchdogManifest = { profile: "", requires: {}, permissions: [] };

/** The watchdog's verdict on a call (allow without one); one that throws denies (fail closed). */
export async function watch(
  options: PermissionOptions,
  call: ToolCallRequest,
  signal: AbortSignal,
  sandboxed = true,
): Promise<WatchdogVerdict> {
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
      sandboxed,
    };
    return await options.watchdog(seen, signal);
  } catch (err) {
    return { action: "deny", check: "watchdog", reason: `the watchdog failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

/** Whether commands run inside the OS sandbox here. */
export interface SandboxState {
  active: boolean;
  /** The user switched the sandbox off: commands run unsandboxed, without extra prompts. */
  off: boolean;
  /** Why it is not active. */
  reason?: string;
}

const OUTSIDE_SANDBOX = "runs outside the sandbox";

/** Whether the call runs commands: it names command lines, or its tool declares shell access. */
export function runsCommands(call: ToolCallRequest): boolean {
  return call.targets.commands.length > 0 || (call.tool.requires?.shell?.length ?? 0) > 0;
}

/** Why the sandbox makes this call ask in every mode, or null when it does not. */
function sandboxWhy(call: ToolCallRequest, state: SandboxState | undefined): string | null {
  if (!state || !(runsCommands(call) || call.targets.unsandboxed)) return null;
  if (state.off) return null;
  if (!state.active) return `no sandbox can run here: ${state.reason ?? "the sandbox is unavailable"}`;
  return call.targets.unsandboxed ? OUTSIDE_SANDBOX : null;
}

/**
 * The authorise hook for a session: the permission rules, the watchdog, the sandbox, then the
 * mode's verdict, then remembered "always" answers, then the user. The mode is a preset under the rules: a deny rule
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
    const sandbox = options.sandbox ? await options.sandbox() : undefined;
    // The watchdog: it can refuse what the rules allow, and its ask holds in any mode. It knows
    // whether the commands will be contained (its network check applies only when not).
    const sandboxed = !sandbox || (sandbox.active && !call.targets.unsandboxed);
    const watched = await watch(options, call, signal, sandboxed);
    if (watched.action === "deny") {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The watchdog refused this ${call.tool.id} call (${watched.check}: ${watched.reason}). Do not work around it; ask the user if it should run.`,
      };
    }
    // The sandbox: no sandbox here, or a call that asks to leave it, asks in every mode.
    const sandboxAsks = sandboxWhy(call, sandbox);
    const modeVerdict = modeAction(options.mode(), call, options.roots);
    const action =
      modeVerdict === "deny"
        ? "deny"
        : sandboxAsks || watched.action === "ask"
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
    const allow: Decision = sandboxAsks ? { outcome: "allow", unsandboxed: true } : { outcome: "allow" };
    const remembered = options.rules.lookup(call);
    // Leaving the sandbox is asked about every time; an "always" answer never covers it.
    if (remembered === "allow" && sandboxAsks !== OUTSIDE_SANDBOX) return allow;
    if (remembered === "deny") {
      return { outcome: "deny", code: "rejected", reason: `The user rejected ${call.tool.id} calls like this one for this session.` };
    }
    if (!options.ask && sandboxAsks) {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason:
          sandboxAsks === OUTSIDE_SANDBOX
            ? `The ${call.tool.id} call asked to run outside the sandbox, which only the user can approve, and nobody can answer here, so it was refused. Run it inside the sandbox instead.`
            : `The ${call.tool.id} call runs commands and ${sandboxAsks}. Running them unsandboxed needs the user's approval and nobody can answer here, so it was refused. Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) to sandbox commands, or set "sandbox": "off" in ~/.toolhost/config.json to run them unsandboxed.`,
      };
    }
    const why =
      sandboxAsks ??
      (watched.action === "ask"
        ? `watchdog: ${watched.check}: ${watched.reason}`
        : verdict?.action === "ask"
          ? `rule ${describeRule(verdict.rule)}`
          : `no rule matched and ${options.mode()} mode asks before this kind of call`);
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
      answer = await options.ask({ call, why, scope, scopeLabel: describeScope(call.tool.id, scope, options.roots[0] ?? "") }, signal);
    } catch {
      answer = "cancelled";
    }
    switch (answer) {
      case "allow_always":
        options.rules.remember(call, "allow");
        return allow;
      case "allow_once":
        return allow;
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
