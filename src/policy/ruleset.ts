import os from "node:os";
import path from "node:path";
import picomatch from "picomatch";
import * as z from "zod";
import { projectConfigPath } from "../config/project-permissions.js";
import { readConfigTextSync, userRoots } from "../config/safe-read.js";
import { loadUserConfig, type LoadedConfig } from "../config/schema.js";
import { asWorkspace, type Workspace } from "../config/workspace.js";
import type { PolicyCall } from "./call.js";
import { readClaudeRules } from "./claude-rules.js";
import { readsOnly } from "./modes.js";
import { PermissionRuleSchema, type PermissionRule } from "./rules.js";

// The permission ruleset (issue 11 §1). A rule is (permission, pattern, action):
// - permission: a tool id (`bash`), a capability (`fs.read`, `fs.write`, `shell.run`, `net.fetch`),
//   `*`, or `mcp__<server>__*` (every tool of one MCP server);
// - pattern: a glob over what the call touches (its targets): a path (picomatch; relative to the
//   workspace or absolute, `~` expanded), a command line (`git push*`; `\` makes the next character
//   plain: `rm \*.txt`), a host (`*.github.com`); `*` is all;
// - action: allow / deny / ask.
//
// Evaluation, per target the call touches (a call without targets is one empty target):
// 0. Which rules speak about a target: a `*` pattern covers the whole call when its permission is
//    the tool id, `*` or a capability the call exercises (its targets' or its tool's declared
//    `shell`/`net`); any other pattern covers the targets it matches, when its permission is the
//    tool id, `*` or that target's capability (a path is fs.write for edit/delete/move tools,
//    fs.read otherwise; a command is shell.run; a host is net.fetch). Rules naming `bash` also
//    speak for the command lines of `process` (COMMANDS_AS).
// 1. A covering `deny` from the manifest (the profile) decides, whatever else matches: no other
//    source can turn it into an allow.
// 2. Otherwise the most specific covering rule decides that target: a tool id beats a capability,
//    which beats `*`; then the longer literal pattern (its characters other than `* ? [ ] { } !`)
//    beats the shorter; on a tie deny beats ask beats allow, then the later source (session >
//    project > user > manifest) wins.
//    A command line's targets are its simple commands as written and, for deny and ask rules
//    only, each normalised spelling (policy/normalize.ts: wrappers, paths and git's global
//    options off; `find -exec`, `xargs`, wrapped `bash -c`, literal `eval` read out).
// 3. The call: deny if any target is denied; else ask if any target asks; else allow if every
//    primary target was allowed (the commands of a call that runs commands and the files its
//    lines write outside the workspace, every target of other calls: the directory a command
//    runs in, or a file it reads, can be denied, but needs no allow); else null (no rule covers
//    the call: the session mode decides).

const CAPABILITIES = ["fs.read", "fs.write", "shell.run", "net.fetch"] as const;
type Capability = (typeof CAPABILITIES)[number];

/** Where a rule comes from, least to most specific; `session` rules are remembered "always" answers. */
export type RuleSource = "manifest" | "user" | "project" | "session";
const SOURCE_ORDER: readonly RuleSource[] = ["manifest", "user", "project", "session"];

export interface SourcedRule extends PermissionRule {
  source: RuleSource;
  /** The file the rule was read from, for messages. */
  file?: string;
  /** The Claude Code rule it was mapped from (policy/claude-rules.ts). */
  claude?: string;
  /**
   * Why this rule stands in for rules that could not be read (a file that is not JSON, a
   * malformed deny or ask entry): an `ask` that beats every allow but the session's own
   * "always" answers, and loses to any deny. Fail closed: nothing a broken deny meant runs unasked.
   */
  failClosed?: string;
}

/** Which rule decided a call, and what it said. */
interface RuleVerdict {
  action: "allow" | "deny" | "ask";
  rule: SourcedRule;
}

interface RulesetContext {
  /** The workspace: relative path patterns are relative to it. */
  workspace: string;
  /** For `~` in patterns (default: the user's home). */
  home?: string;
  /**
   * Each command line's simple commands in every spelling (policy/command-facts.ts); a line not in
   * it is matched whole. A spelling that is not `primary` (wrappers off, read out of `find -exec`,
   * …) can be denied or asked about, but needs no allow of its own.
   */
  commandUnits?: ReadonlyMap<string, readonly { text: string; primary: boolean }[]>;
  /**
   * Files the command lines name outside the workspace (policy/bash-targets.ts): a write needs an
   * allow of its own, like a command; a read can be denied or asked about but needs no allow.
   */
  lineFiles?: readonly { path: string; access: "read" | "write" }[];
}

type TargetKind = "path" | "command" | "host" | "none";
interface Target {
  kind: TargetKind;
  value: string;
  capability: Capability | null;
  /**
   * Whether the call is allowed only when this target is: the command lines of a call that runs
   * commands, every target of any other call. Other targets (the directory a command runs in)
   * can be denied or asked about by a rule that names them, but need no allow of their own.
   */
  primary: boolean;
}

/** What the call touches, each with the capability it exercises. */
function targetsOf(call: PolicyCall, ctx: RulesetContext): Target[] {
  const writes = !readsOnly(call) && call.tool.kind !== "execute";
  const runs = call.targets.commands.length > 0;
  const out: Target[] = [];
  for (const p of call.targets.paths) {
    out.push({ kind: "path", value: p, capability: writes ? "fs.write" : "fs.read", primary: !runs });
  }
  for (const c of call.targets.commands) {
    // Each simple command on its own: a line runs without asking only when every part is allowed.
    for (const unit of ctx.commandUnits?.get(c) ?? [{ text: c.trim(), primary: true }])
      out.push({ kind: "command", value: unit.text, capability: "shell.run", primary: unit.primary });
  }
  for (const f of ctx.lineFiles ?? []) {
    out.push({ kind: "path", value: f.path, capability: f.access === "write" ? "fs.write" : "fs.read", primary: f.access === "write" });
  }
  for (const h of call.targets.hosts) out.push({ kind: "host", value: h.toLowerCase(), capability: "net.fetch", primary: true });
  if (out.length === 0) out.push({ kind: "none", value: "", capability: null, primary: true });
  return out;
}

/** The capabilities a call exercises: those of its targets and those its tool declares. */
function callCapabilities(call: PolicyCall, targets: readonly Target[]): Set<string> {
  const caps = new Set<string>();
  for (const t of targets) if (t.capability) caps.add(t.capability);
  const requires = (call.tool as { requires?: { shell?: unknown[]; net?: unknown } }).requires;
  if (requires?.shell?.length) caps.add("shell.run");
  if (requires?.net) caps.add("net.fetch");
  return caps;
}

const GLOB_CHARS = /[*?[\]{}!]/g;

function literalLength(pattern: string): number {
  return pattern === "*" ? 0 : pattern.replace(GLOB_CHARS, "").length;
}

function permissionRank(permission: string): number {
  if (permission === "*") return 0;
  return (CAPABILITIES as readonly string[]).includes(permission) ? 1 : 2;
}

const ACTION_RANK = { allow: 0, ask: 1, deny: 2 } as const;

/** A simple glob over a whole string: `*` any run of characters, `?` one, `\` makes the next character plain. */
function lineGlob(pattern: string, flags = ""): RegExp {
  const plain = (ch: string) => ch.replace(/[.*?+^${}()|[\]\\]/g, "\\$&");
  const body = Array.from(pattern.matchAll(/\\(.)|(.)/gs), ([, escaped, ch]) =>
    escaped !== undefined ? plain(escaped) : ch === "*" ? ".*" : ch === "?" ? "." : plain(ch as string),
  ).join("");
  return new RegExp(`^${body}$`, `s${flags}`);
}

/** The absolute glob a path pattern stands for. */
function resolvePathPattern(pattern: string, ctx: RulesetContext): string {
  const home = ctx.home ?? os.homedir();
  let p = pattern;
  if (p === "~" || p.startsWith("~/")) p = path.join(home, p.slice(1));
  return path.isAbsolute(p) ? p : path.join(ctx.workspace, p);
}

function patternMatches(rule: SourcedRule, target: Target, ctx: RulesetContext): boolean {
  switch (target.kind) {
    case "none":
      return false;
    case "path":
      return picomatch.isMatch(target.value, resolvePathPattern(rule.pattern, ctx), { dot: true });
    case "command":
      return lineGlob(rule.pattern.trim()).test(target.value);
    case "host":
      return lineGlob(rule.pattern, "i").test(target.value);
  }
}

/**
 * Tools whose command lines are judged as another tool's too: a `process` start runs its line as
 * bash does, so rules naming `bash` speak for it (a deny for `bash "git push*"` is not walked
 * around by starting the push in the background); rules naming `process` speak for it alone.
 */
const COMMANDS_AS: Readonly<Record<string, string>> = { process: "bash" };

/**
 * Whether a rule speaks about a target. A `*` pattern covers the whole call (every primary
 * target) when its permission is the tool, `*` or one of the call's capabilities; any other
 * pattern covers a target it matches, when its permission is the tool, `*` or that target's capability.
 */
function covers(rule: SourcedRule, call: PolicyCall, capabilities: Set<string>, target: Target, ctx: RulesetContext): boolean {
  const forTool =
    rule.permission === "*" ||
    rule.permission === call.tool.id ||
    // `mcp__server__*`: every tool of one MCP server (a Claude Code rule's `mcp__server`).
    (rule.permission.endsWith("__*") && rule.permission.startsWith("mcp__") && call.tool.id.startsWith(rule.permission.slice(0, -1))) ||
    (target.kind === "command" && COMMANDS_AS[call.tool.id] === rule.permission);
  if (rule.pattern === "*") return target.primary && (forTool || capabilities.has(rule.permission));
  return (forTool || rule.permission === target.capability) && patternMatches(rule, target, ctx);
}

/** A fail-closed rule beats every allow but a session's; a deny beats it. */
function failClosedRank(rule: SourcedRule): number {
  if (rule.action === "deny") return 2;
  if (rule.failClosed) return 1;
  return rule.source === "session" ? 1 : 0;
}

function moreSpecific(a: SourcedRule, b: SourcedRule): boolean {
  if (a.failClosed || b.failClosed) {
    const d = failClosedRank(a) - failClosedRank(b);
    if (d !== 0) return d > 0;
  }
  const order = [
    permissionRank(a.permission) - permissionRank(b.permission),
    literalLength(a.pattern) - literalLength(b.pattern),
    ACTION_RANK[a.action] - ACTION_RANK[b.action],
    SOURCE_ORDER.indexOf(a.source) - SOURCE_ORDER.indexOf(b.source),
  ];
  return (order.find((d) => d !== 0) ?? 0) > 0;
}

/** One target of a call as the ruleset saw it: the rules that cover it, and the one that decides it. */
export interface TargetExplanation {
  kind: TargetKind;
  value: string;
  capability: string | null;
  matching: SourcedRule[];
  winner: SourcedRule | null;
}

/** Every target of the call with its covering rules and winner, and the verdict they add up to. */
export function explainRules(
  rules: readonly SourcedRule[],
  call: PolicyCall,
  ctx: RulesetContext,
): { targets: TargetExplanation[]; verdict: RuleVerdict | null } {
  const targets = targetsOf(call, ctx);
  const capabilities = callCapabilities(call, targets);
  const explained: TargetExplanation[] = [];
  const decided: RuleVerdict[] = [];
  let manifestDeny: SourcedRule | undefined;
  let uncovered = false;
  for (const target of targets) {
    const matching = rules.filter((r) => covers(r, call, capabilities, target, ctx));
    const deny = matching.find((r) => r.source === "manifest" && r.action === "deny");
    let best: SourcedRule | undefined = deny;
    if (!best) for (const r of matching) if (!best || moreSpecific(r, best)) best = r;
    manifestDeny ??= deny;
    explained.push({ kind: target.kind, value: target.value, capability: target.capability, matching, winner: best ?? null });
    if (best) decided.push({ action: best.action, rule: best });
    else if (target.primary) uncovered = true;
  }
  const verdict: RuleVerdict | null = manifestDeny
    ? { action: "deny", rule: manifestDeny }
    : (decided.find((v) => v.action === "deny") ?? decided.find((v) => v.action === "ask") ?? (uncovered ? null : (decided[0] ?? null)));
  return { targets: explained, verdict };
}

/** The ruleset's verdict on a call, or null when no rule covers it (the session mode decides). */
export function evaluateRules(rules: readonly SourcedRule[], call: PolicyCall, ctx: RulesetContext): RuleVerdict | null {
  if (rules.length === 0) return null;
  return explainRules(rules, call, ctx).verdict;
}

/** How a rule is named in messages: its source (and file), its permission and pattern. */
export function describeRule(rule: SourcedRule): string {
  const where = rule.file ? `${rule.source} rule in ${rule.file}` : `${rule.source} rule`;
  const closed = rule.failClosed ? ` (fail closed: ${rule.failClosed})` : "";
  const claude = rule.claude ? ` (Claude Code: ${rule.claude})` : "";
  return `${where}: ${rule.action} ${rule.permission} "${rule.pattern}"${claude}${closed}`;
}

/** The rule that stands in for rules that could not be read: `permission` (default all) asks. */
function failClosedRule(source: RuleSource, file: string, why: string, permission = "*"): SourcedRule {
  return { permission, pattern: "*", action: "ask", source, file, failClosed: why };
}

/**
 * The permission a malformed entry meant to deny or ask about, when it says (`"*"` otherwise),
 * or null for an entry that only meant to allow: leaving that out takes nothing away.
 */
function meantToRestrict(item: unknown): string | null {
  if (typeof item !== "object" || item === null || Array.isArray(item)) return "*";
  const { action, permission } = item as { action?: unknown; permission?: unknown };
  if (typeof action === "string" && /^allow(ed)?$/i.test(action.trim())) return null;
  return typeof permission === "string" && /^(\*|[a-z][a-z0-9_]*|fs\.read|fs\.write|shell\.run|net\.fetch)$/.test(permission)
    ? permission
    : "*";
}

/**
 * A list of rules as read from one file; each problem names the file and the rule. Each entry is
 * read on its own: the valid ones hold. A malformed entry that is not plainly an allow (a deny or
 * ask with a bad field, an unknown action) makes its permission ask (everything, when it names none
 * it could mean); `permissions` that is not a list makes every call ask.
 */
function parseRules(raw: unknown, source: RuleSource, file: string): { rules: SourcedRule[]; problems: string[] } {
  if (raw === undefined) return { rules: [], problems: [] };
  if (!Array.isArray(raw))
    return {
      rules: [failClosedRule(source, file, "its permissions are not a list of rules")],
      problems: [`${file}: permissions must be an array of rules; until it is fixed every call asks (fail closed)`],
    };
  const rules: SourcedRule[] = [];
  const problems: string[] = [];
  raw.forEach((item: unknown, i) => {
    const parsed = PermissionRuleSchema.safeParse(item);
    if (parsed.success) {
      rules.push({ ...parsed.data, source, file });
      return;
    }
    const detail = z.prettifyError(parsed.error).replace(/\s*\n\s*/g, " ");
    const restricts = meantToRestrict(item);
    if (restricts === null) {
      problems.push(`${file}: permissions[${i}] ${JSON.stringify(item)}: ${detail} (left out)`);
      return;
    }
    const what = restricts === "*" ? "every call" : `every ${restricts} call`;
    rules.push(failClosedRule(source, file, `permissions[${i}] could not be read`, restricts));
    problems.push(`${file}: permissions[${i}] ${JSON.stringify(item)}: ${detail} (until it is fixed ${what} asks: fail closed)`);
  });
  return { rules, problems };
}

/** The `permissions` of `<project>/.toolhost/config.json` (a missing file has none). */
function readProjectRules(project: string): { rules: SourcedRule[]; problems: string[] } {
  const file = projectConfigPath(project);
  // Confined to the project and non-blocking: a symlink out or a FIFO there is a problem, not a hang.
  const { text, error } = readConfigTextSync(file, [project]);
  const unreadable = (why: string) => ({
    rules: [failClosedRule("project", file, `the file ${why}`)],
    problems: [`${file}: ${why}; until it is fixed every call asks (fail closed)`],
  });
  if (error) return unreadable(`could not be read (${error})`);
  if (text === null) return { rules: [], problems: [] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return unreadable(`is not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) return unreadable("is not a JSON object");
  return parseRules((json as { permissions?: unknown }).permissions, "project", file);
}

/** A stale project's rules: its deny and ask rules (a fail-closed stand-in too), never an allow. */
function restrictionsOnly(read: { rules: SourcedRule[]; problems: string[] }): { rules: SourcedRule[]; problems: string[] } {
  return { rules: read.rules.filter((r) => r.action !== "allow"), problems: read.problems };
}

/** The reason a session in the home folder asks before every change and command. */
export const HOME_WORKSPACE = "the workspace is your whole home folder";

/**
 * A session whose workspace is the home folder itself: every file change and every command asks,
 * whatever an allow rule or the mode says (an "always" answer still holds); deny rules still deny.
 */
function homeWorkspaceRules(workspace: Workspace): SourcedRule[] {
  if (!workspace.isHome) return [];
  return ["fs.write", "shell.run"].map((permission) => ({
    permission,
    pattern: "*",
    action: "ask" as const,
    source: "manifest" as const,
    failClosed: HOME_WORKSPACE,
  }));
}

/** Claude Code's settings files as rules of `source` (their notes: what toolhost does not use of them). */
function claudeFiles(files: readonly string[], source: RuleSource, roots: readonly string[], root: string) {
  const out = { rules: [] as SourcedRule[], problems: [] as string[], notes: [] as string[] };
  for (const file of files) {
    const read = readClaudeRules(file, roots, root);
    out.rules.push(...read.rules.map((r): SourcedRule => ({ ...r, source, file })));
    out.problems.push(...read.problems);
    out.notes.push(...read.notes);
  }
  return out;
}

interface RuleSources {
  /** The active profile's `permissions` and its profile.json. */
  manifest: { rules: readonly PermissionRule[]; file?: string };
  /** `~/.toolhost` (default: TOOLHOST_HOME or the real one). */
  home?: string;
  /** The user's config as the session read it (its toolset's); default: read from `home`. */
  user?: LoadedConfig;
  /**
   * The project (a session's Workspace, resolved at its start; or a folder, resolved here), and
   * whether it is trusted: an untrusted project's rules are never read. `stale`: trusted once and
   * changed since: its deny and ask rules still hold, read as they are now (they only restrict),
   * and never its allow rules.
   */
  project: { dir: string | Workspace; trusted: boolean; stale?: boolean };
  /** The user's home folder, for `~/.claude/settings.json` (default: HOME). */
  userHome?: string;
}

/**
 * The rules of every durable source (manifest, user, project), in source order, with the
 * problems found reading them. A broken rule is left out and reported; the others hold.
 */
export function loadRules(sources: RuleSources): { rules: SourcedRule[]; problems: string[]; notes: string[] } {
  const manifest = sources.manifest.rules.map((r): SourcedRule => ({
    ...r,
    source: "manifest",
    ...(sources.manifest.file ? { file: sources.manifest.file } : {}),
  }));
  const userConfig = sources.user ?? loadUserConfig(sources.home);
  // A file that cannot be read may hold deny rules: every call asks until it is fixed. Its other
  // problems (a bad `model`) are the config's, reported with it, not here.
  const user = userConfig.unreadable
    ? {
        rules: [failClosedRule("user", userConfig.path, "the file could not be read")],
        problems: [
          `${userConfig.error?.startsWith(userConfig.path) ? userConfig.error : `${userConfig.path}: ${userConfig.error ?? "could not be read"}`}: the permission rules could not be read; until the file is fixed every call asks (fail closed)`,
        ],
      }
    : parseRules(userConfig.config.permissions, "user", userConfig.path);
  const workspace = asWorkspace(sources.project.dir);
  const userHome = sources.userHome ?? (process.env.HOME || os.homedir());
  const claudeUser = claudeFiles([path.join(userHome, ".claude", "settings.json")], "user", userRoots(), userHome);
  // A project's Claude Code settings are its files as its own config is: read when trusted, a stale one's restrictions only.
  const projectFiles = () => {
    const own = readProjectRules(workspace.cwd);
    const dir = path.join(workspace.cwd, ".claude");
    const claude = claudeFiles(
      [path.join(dir, "settings.json"), path.join(dir, "settings.local.json")],
      "project",
      [workspace.cwd],
      workspace.cwd,
    );
    return { rules: [...own.rules, ...claude.rules], problems: [...own.problems, ...claude.problems], notes: claude.notes };
  };
  const project = sources.project.trusted
    ? projectFiles()
    : sources.project.stale
      ? { ...restrictionsOnly(projectFiles()), notes: [] }
      : { rules: [], problems: [], notes: [] };
  return {
    rules: [...manifest, ...user.rules, ...claudeUser.rules, ...project.rules, ...homeWorkspaceRules(workspace)],
    problems: [...user.problems, ...claudeUser.problems, ...project.problems],
    notes: [...claudeUser.notes, ...project.notes],
  };
}
