import { isInsideAny, displayPath } from "../tool/paths.js";
import type { Authorize, Decision, PolicyCall, ToolCallRequest } from "./call.js";
import { commandFacts, type CommandFacts } from "./command-facts.js";
import { modeAction, type ModeId } from "./modes.js";
import type { PermissionRule } from "./rules.js";
import { describeRule, explainRules, type SourcedRule } from "./ruleset.js";
import { alwaysScope, type SessionRules } from "./session-rules.js";
import type { Watchdog, WatchdogManifest, WatchdogVerdict } from "./watchdog.js";

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

export interface PermissionOptions {
  /** The workspace roots: "accept edits" allows edits inside them. */
  roots: readonly string[];
  mode: () => ModeId;
  /** The session's remembered "always" answers, evaluated with the other rules. */
  rules: SessionRules;
  /** The permission rules of the manifest, user and project (policy/ruleset.ts); read on each call. */
  ruleset?: () => readonly SourcedRule[];
  ask?: AskUser;
  /**
   * "Always, for this project": present when the project is trusted (asked on each call). `save`
   * appends the rules to the project's config and says whether they were saved (when not, the
   * caller has told the user why, and the answer holds for the session).
   */
  project?: { trusted: () => boolean; save: (rules: PermissionRule[]) => Promise<boolean> };
  /** For `~` in command lines (default: the user's home). */
  home?: string;
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

/** The first deny or ask rule that speaks about the call's command lines, if it runs any. */
function commandGuard(rules: readonly SourcedRule[], call: PolicyCall): SourcedRule | undefined {
  if (call.targets.commands.length === 0) return undefined;
  const speaks = (r: SourcedRule) => r.permission === call.tool.id || r.permission === "shell.run" || r.permission === "*";
  return rules.find((r) => r.action === "deny" && speaks(r)) ?? rules.find((r) => r.action === "ask" && speaks(r));
}

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

const CHANGES_FILES = new Set(["edit", "delete", "move"]);

/** What a mode asks before, in words. */
function asksBefore(call: PolicyCall): string {
  if (call.tool.kind === "execute") return "running commands";
  if (CHANGES_FILES.has(call.tool.kind)) return "changing files";
  if (call.targets.hosts.length > 0) return `fetching from a host (${call.targets.hosts.join(", ")})`;
  return `${call.tool.kind} calls such as ${call.tool.id}`;
}

/** Why the mode asks, when no rule did. */
function modeWhy(mode: ModeId, call: PolicyCall, roots: readonly string[], facts: CommandFacts, ruled: boolean): string {
  const workspace = roots[0] ?? "";
  const lead = ruled ? "no rule covers every part of the call" : "no rule matched";
  const writes = facts.outside.filter((f) => f.access === "write").map((f) => displayPath(f.path, workspace));
  if (writes.length) return `${lead} (it writes ${writes.join(", ")}, outside the workspace); ${mode} mode asks before ${asksBefore(call)}`;
  if (mode === "accept-edits" && CHANGES_FILES.has(call.tool.kind)) {
    const outside = call.targets.paths.filter((p) => !isInsideAny(p, roots)).map((p) => displayPath(p, workspace));
    if (outside.length) return `${lead}; accept-edits mode asks before changing files outside the workspace (${outside.join(", ")})`;
  }
  return `${lead}; ${mode} mode asks before ${asksBefore(call)}`;
}

/**
 * The authorise hook for a session, in layers: the permission rules (the manifest's, the user's,
 * the project's and the session's remembered "always" answers, judged together), the watchdog,
 * the sandbox, then the mode's verdict, then the user. The mode is a preset under the rules: a
 * deny rule holds in `full` mode, an allow rule lets a call run in `ask` or `accept-edits` mode,
 * an ask rule asks in any mode; only `read-only` still refuses changes whatever the rules allow.
 * The watchdog and the sandbox can make a call ask in any mode; a remembered "always" answer
 * covers their ask, except leaving the sandbox, which is asked about every time. Errors and
 * cancellations count as rejects.
 */
export function sessionAuthorizer(options: PermissionOptions): Authorize {
  return async (call, signal): Promise<Decision> => {
    const workspace = options.roots[0] ?? process.cwd();
    const rules = [...(options.ruleset?.() ?? []), ...options.rules.list()];
    // The parser loads (wasm) only when a rule needs the lines' parts, or when the user is asked.
    let facts = rules.length ? await commandFacts(call, options.roots, options.home) : null;
    const explained = facts
      ? explainRules(rules, call, { workspace, home: options.home, commandUnits: facts.units, lineFiles: facts.outside })
      : null;
    let verdict = explained?.verdict ?? null;
    let why: string | null = null;
    if (facts && verdict?.action === "allow" && (facts.unparsed || facts.unknown.length > 0)) {
      // A line the parser cannot read, or one that names a file only the shell can resolve, is asked about, whatever a rule allows.
      why = facts.unparsed
        ? "the command line does not parse, so no rule can allow it without asking"
        : `the line names ${facts.unknown.map((u) => `\`${u}\``).join(", ")}, known only when it runs, so no rule can allow it without asking`;
      verdict = { ...verdict, action: "ask" };
    }
    // A line whose effect cannot be read (eval, `… | sh`, `python3 -c`, `$CMD`) could be any
    // spelling of what a deny or ask rule names: where such a rule is in force, it is asked about.
    const guard = facts && verdict?.action !== "deny" && verdict?.action !== "ask" ? commandGuard(rules, call) : undefined;
    if (facts && guard && (facts.unknownCode.length > 0 || facts.unparsed)) {
      const what = facts.unparsed ? ["the line does not parse"] : facts.unknownCode;
      why = `unknown spelling: ${what.join("; ")}, so the ${describeRule(guard)} cannot be checked against it`;
      verdict = { action: "ask", rule: guard };
    }
    if (verdict?.action === "deny") {
      if (verdict.rule.source === "session") {
        return { outcome: "deny", code: "rejected", reason: `The user rejected ${call.tool.id} calls like this one for this session.` };
      }
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} call was refused by a permission rule (${describeRule(verdict.rule)}). Do not work around it; ask the user if it should run.`,
      };
    }
    const sandbox = options.sandbox ? await options.sandbox() : undefined;
    // The watchdog: it can refuse what the rules allow, and its ask holds in any mode. It knows
    // whether the commands will be contained (its network check applies only when not).
    const watched = await watch(options, call, signal, !sandbox || (sandbox.active && !call.targets.unsandboxed));
    if (watched.action === "deny") {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The watchdog refused this ${call.tool.id} call (${watched.check}: ${watched.reason}). Do not work around it; ask the user if it should run.`,
      };
    }
    // The sandbox: no sandbox here, or a call that asks to leave it, asks in every mode.
    const sandboxAsks = sandboxWhy(call, sandbox);
    const layerWhy = sandboxAsks ?? (watched.action === "ask" ? `watchdog: ${watched.check}: ${watched.reason}` : null);
    // An "always" answer the user gave covers what the watchdog or a missing sandbox asks about.
    const remembered = verdict?.action === "allow" && verdict.rule.source === "session";
    const layerAsks = layerWhy !== null && (sandboxAsks === OUTSIDE_SANDBOX || !remembered);
    const mode = options.mode();
    const modeVerdict = modeAction(mode, call, options.roots);
    const action =
      modeVerdict === "deny"
        ? "deny"
        : layerAsks
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
        reason: `The ${call.tool.id} tool is not available in ${mode} mode (it changes files or runs commands). Switch the session mode to use it.`,
      };
    }
    // Where no sandbox can run, an approved command runs unsandboxed: the grant says so.
    const allow: Decision = sandboxAsks ? { outcome: "allow", unsandboxed: true } : { outcome: "allow" };
    if (action === "allow") return allow;
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
    facts ??= await commandFacts(call, options.roots, options.home);
    why =
      (layerAsks ? layerWhy : null) ??
      why ??
      (verdict?.action === "ask"
        ? describeRule(verdict.rule)
        : modeWhy(
            mode,
            call,
            options.roots,
            facts,
            (explained?.targets ?? []).some((t) => t.winner),
          ));
    if (!options.ask) {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} call needs approval and nobody can answer here, so it was refused (${why}).`,
      };
    }
    // Leaving the sandbox is one call's approval: no "always" is offered for it.
    const once = sandboxAsks === OUTSIDE_SANDBOX;
    const scope = once ? { label: "", rules: [] } : alwaysScope(call, facts, workspace);
    const project = !once && options.project?.trusted() ? options.project : undefined;
    let answer: ApprovalAnswer;
    try {
      answer = await options.ask({ call, why, scopeLabel: scope.label, always: scope.rules, project: project !== undefined }, signal);
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
