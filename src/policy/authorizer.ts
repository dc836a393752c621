import { realpathSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { displayPath, isInsideAny } from "../tool/paths.js";
import type { Authorize, Decision, PolicyCall, ToolCallRequest } from "./call.js";
import { parseBash, type ParsedLine } from "./bash-parse.js";
import { bashFileTargets } from "./bash-targets.js";
import { modeAction, type ModeId } from "./modes.js";
import type { PermissionRule } from "./rules.js";
import { describeRule, explainRules, type SourcedRule } from "./ruleset.js";
import { alwaysScope, type SessionRules } from "./session-rules.js";

/** What the policy reads from a call's command lines before the ruleset judges it. */
export interface CommandFacts {
  /** Each line, parsed (null: it does not parse). */
  lines: Map<string, ParsedLine | null>;
  /** Each parsed line's simple commands, for rules to match one by one. */
  units: Map<string, string[]>;
  /** Some line does not parse: a rule's allow becomes an ask. */
  unparsed: boolean;
  /** Files the lines name outside the workspace roots (policy/bash-targets.ts). */
  outside: { path: string; access: "read" | "write" }[];
  /** Files the lines name that are known only when they run (`> $F`): a rule's allow becomes an ask. */
  unknown: string[];
}

/** The real path of `p`: its nearest existing parent resolved through symlinks, the rest as written. */
function realPath(p: string): string {
  const rest: string[] = [];
  for (let dir = p; ; dir = path.dirname(dir)) {
    try {
      return path.join(realpathSync(dir), ...rest.reverse());
    } catch {
      if (path.dirname(dir) === dir) return p;
      rest.push(path.basename(dir));
    }
  }
}

/**
 * Where a path a command line names lands when it is outside the roots (its real path when a
 * symlink inside the workspace leads out), or null when it stays inside.
 */
function outsideRoots(p: string, roots: readonly string[]): string | null {
  if (!isInsideAny(p, roots)) return p;
  const real = realPath(p);
  return isInsideAny(real, roots) || isInsideAny(real, roots.map(realPath)) ? null : real;
}

/**
 * Parses a call's command lines: their simple commands, and the files they name outside the
 * roots (resolved against the call's working directory: its one path target, else the first root).
 */
export async function commandFacts(call: PolicyCall, roots: readonly string[], home = os.homedir()): Promise<CommandFacts> {
  const facts: CommandFacts = { lines: new Map(), units: new Map(), unparsed: false, outside: [], unknown: [] };
  const cwd = call.targets.paths.length === 1 ? (call.targets.paths[0] as string) : (roots[0] ?? process.cwd());
  for (const line of call.targets.commands) {
    const parsed = await parseBash(line).catch(() => null);
    facts.lines.set(line, parsed);
    if (!parsed || parsed.commands.length === 0) {
      facts.unparsed = true;
      continue;
    }
    facts.units.set(
      line,
      parsed.commands.map((c) => c.text.trim()),
    );
    const files = bashFileTargets(parsed, cwd, home);
    for (const f of files.targets) {
      const where = outsideRoots(f.path, roots);
      if (where && !facts.outside.some((o) => o.path === where && o.access === f.access)) facts.outside.push({ ...f, path: where });
    }
    facts.unknown.push(...files.unknown);
  }
  return facts;
}

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
}

const CHANGES_FILES = new Set(["edit", "delete", "move"]);

/** What a mode asks before, in words. */
function asksBefore(call: PolicyCall): string {
  if (call.tool.kind === "execute") return "running commands";
  if (CHANGES_FILES.has(call.tool.kind)) return "changing files";
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
 * The authorise hook for a session: the permission rules (the manifest's, the user's, the
 * project's and the session's remembered "always" answers, judged together), then the mode's
 * verdict, then the user. The mode is a preset under the rules: a deny rule holds in `full`
 * mode, an allow rule lets a call run in `ask` or `accept-edits` mode, an ask rule asks in any
 * mode; only `read-only` still refuses changes whatever the rules allow. Errors and
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
    const mode = options.mode();
    const modeVerdict = modeAction(mode, call, options.roots);
    const action =
      modeVerdict === "deny" ? "deny" : verdict?.action === "allow" ? "allow" : verdict?.action === "ask" ? "ask" : modeVerdict;
    if (action === "deny") {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} tool is not available in ${mode} mode (it changes files or runs commands). Switch the session mode to use it.`,
      };
    }
    if (action === "allow") return { outcome: "allow" };
    facts ??= await commandFacts(call, options.roots, options.home);
    why ??=
      verdict?.action === "ask"
        ? describeRule(verdict.rule)
        : modeWhy(
            mode,
            call,
            options.roots,
            facts,
            (explained?.targets ?? []).some((t) => t.winner),
          );
    if (!options.ask) {
      return {
        outcome: "deny",
        code: "permission_denied",
        reason: `The ${call.tool.id} call needs approval and nobody can answer here, so it was refused (${why}).`,
      };
    }
    const scope = alwaysScope(call, facts, workspace);
    const project = options.project?.trusted() ? options.project : undefined;
    let answer: ApprovalAnswer;
    try {
      answer = await options.ask({ call, why, scopeLabel: scope.label, always: scope.rules, project: project !== undefined }, signal);
    } catch {
      answer = "cancelled";
    }
    switch (answer) {
      case "allow_always_project":
        if (!project || !(await project.save(scope.rules.map((r) => ({ ...r, action: "allow" }))))) options.rules.remember(scope, "allow");
        return { outcome: "allow" };
      case "allow_always":
        options.rules.remember(scope, "allow");
        return { outcome: "allow" };
      case "allow_once":
        return { outcome: "allow" };
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
