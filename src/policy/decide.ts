import { isInsideAny, displayPath } from "../tool/paths.js";
import type { Decision, PolicyCall, ToolCallRequest } from "./call.js";
import { commandFacts, type CommandFacts } from "./command-facts.js";
import { modeAction, readsOnly, type ModeId, type PolicyAction } from "./modes.js";
import { describeRule, explainRules, type SourcedRule, type TargetExplanation } from "./ruleset.js";
import { alwaysScope, type AlwaysScope, type SessionRules } from "./session-rules.js";
import type { Watchdog, WatchdogManifest, WatchdogVerdict } from "./watchdog.js";

// The policy as a value: `decide` reads a call through ordered layers and returns the verdict;
// it asks nobody and remembers nothing (policy/authorizer.ts acts on the verdict).

/** What `decide` reads: the session's rules, mode, watchdog and sandbox. */
export interface DecideOptions {
  /** The workspace roots: "accept edits" allows edits inside them. */
  roots: readonly string[];
  mode: () => ModeId;
  /** The session's remembered "always" answers, evaluated with the other rules. */
  rules: SessionRules;
  /** The permission rules of the manifest, user and project (policy/ruleset.ts); read on each call. */
  ruleset?: () => readonly SourcedRule[];
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
  /** The layers, in order (default `POLICY_LAYERS`). Hooks plug in here as one more layer. */
  layers?: readonly PolicyLayer[];
}

/** Whether commands run inside the OS sandbox here. */
export interface SandboxState {
  active: boolean;
  /** The user switched the sandbox off: commands run unsandboxed, without extra prompts. */
  off: boolean;
  /** Why it is not active. */
  reason?: string;
  /** When it is unavailable: what would make it run, or how to do without it (the runtime's, from the probe). */
  advice?: string;
}

/** Which layer decided. */
export type PolicyLayerId = "rule" | "watchdog" | "sandbox" | "mode" | "guard" | "hook";

/** What one layer says when it speaks: the first layer that speaks decides. */
export interface LayerVerdict {
  action: PolicyAction;
  layer: PolicyLayerId;
  /** Deny: the reason the model reads. Ask: why the user is asked. Allow: what allowed it. */
  why: string;
  code?: Extract<Decision, { outcome: "deny" }>["code"];
}

/** The sandbox as the policy read it for a call. */
export interface SandboxReading {
  /** What the session's sandbox said (absent: the session has none). */
  state?: SandboxState;
  /** The call runs commands, or asks to leave the sandbox: the sandbox concerns it. */
  applies: boolean;
  /** The sandbox is active. */
  active: boolean;
  /** The call asks to run outside an active sandbox: asked about every time, never remembered. */
  outside: boolean;
  /** Why the sandbox makes the call ask in every mode (null: it does not). */
  why: string | null;
}

/** What the rules (and the guard over lines they cannot read) say about a call. */
export interface RuleReading {
  /** The rules judged: the manifest's, the user's, the project's and the session's. */
  inForce: readonly SourcedRule[];
  /** The verdict they add up to, after the guard (null: no rule covers every part). */
  verdict: { action: PolicyAction; rule: SourcedRule } | null;
  /** Why the guard turned it into an ask (a line it cannot read), or null. */
  guard: string | null;
  /** The rule verdict is a remembered "always" allow: it covers the watchdog's and a missing sandbox's ask. */
  remembered: boolean;
  targets: TargetExplanation[];
}

/** What the layers see. The watchdog, the sandbox and the parsed lines are read on first use. */
export interface PolicyInput {
  call: ToolCallRequest;
  roots: readonly string[];
  mode: ModeId;
  rules: RuleReading;
  facts(): Promise<CommandFacts>;
  sandbox(): Promise<SandboxReading>;
  watchdog(): Promise<WatchdogVerdict>;
}

/** One layer: a verdict, or undefined to pass the call on. */
export type PolicyLayer = (input: PolicyInput) => LayerVerdict | undefined | Promise<LayerVerdict | undefined>;

/** The policy's verdict on a call, before anyone is asked. */
export interface PolicyVerdict extends LayerVerdict {
  mode: ModeId;
  /** The rule the rules settled on (a guard's ask names the rule it guards), if any. */
  rule?: SourcedRule;
  /** The watchdog's verdict (absent: not consulted, a rule refused first). */
  watchdog?: WatchdogVerdict;
  /** The sandbox as read (absent: not consulted, a rule refused first). */
  sandbox?: SandboxReading;
  /** An allow (or an approved ask) runs the call's commands outside the sandbox. */
  unsandboxed?: true;
  /** For an ask: what an "always" answer would remember (null: none is offered, leaving the sandbox). */
  alwaysScope?: AlwaysScope | null;
  /** Each thing the call touches, with the rules that cover it (empty: no rule was in force, unless explaining). */
  targets: TargetExplanation[];
  /** The rules in force when the call was judged. */
  rulesInForce: number;
  /** What the call's command lines say, when they were read. */
  facts?: CommandFacts;
}

const NO_MANIFEST: WatchdogManifest = { profile: "", requires: {}, permissions: [] };

/** The watchdog's verdict on a call (allow without one); one that throws denies (fail closed). */
export async function watch(
  options: Pick<DecideOptions, "watchdog" | "manifest" | "roots">,
  call: ToolCallRequest,
  signal: AbortSignal,
  sandboxed = true,
): Promise<WatchdogVerdict> {
  if (!options.watchdog) return { action: "allow" };
  const { tool, args, targets, sessionId } = call;
  const manifest = options.manifest?.() ?? NO_MANIFEST;
  try {
    const seen = { tool: { id: tool.id, kind: tool.kind }, args, targets, manifest, sessionId, roots: options.roots, sandboxed };
    return await options.watchdog(seen, signal);
  } catch (err) {
    return { action: "deny", check: "watchdog", reason: `the watchdog failed: ${err instanceof Error ? err.message : String(err)}` };
  }
}

export const OUTSIDE_SANDBOX = "runs outside the sandbox";

/** The first deny or ask rule that speaks about the call's command lines, if it runs any. */
function commandGuard(rules: readonly SourcedRule[], call: PolicyCall): SourcedRule | undefined {
  if (call.targets.commands.length === 0) return undefined;
  const speaks = (r: SourcedRule) => r.permission === call.tool.id || r.permission === "shell.run" || r.permission === "*";
  return rules.find((r) => r.action === "deny" && speaks(r)) ?? rules.find((r) => r.action === "ask" && speaks(r));
}

/** Whether the call runs commands: it names command lines, or its tool declares shell access (and the call does more than read). */
export function runsCommands(call: ToolCallRequest): boolean {
  if (call.targets.commands.length > 0) return true;
  return (call.tool.requires?.shell?.length ?? 0) > 0 && !(call.targets.readOnly === true && readsOnly(call));
}

/** The sandbox as it concerns the call: whether it makes the call ask in every mode, and why. */
function readSandbox(call: ToolCallRequest, state: SandboxState | undefined): SandboxReading {
  const applies = runsCommands(call) || call.targets.unsandboxed === true;
  const active = state?.active ?? false;
  let why: string | null = null;
  if (state && applies && !state.off) {
    if (!state.active) why = `no sandbox can run here: ${state.reason ?? "the sandbox is unavailable"}`;
    else if (call.targets.unsandboxed) why = OUTSIDE_SANDBOX;
  }
  return { ...(state ? { state } : {}), applies, active, outside: why === OUTSIDE_SANDBOX, why };
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

const refused = (layer: PolicyLayerId, why: string): LayerVerdict => ({ action: "deny", layer, why, code: "permission_denied" });

/** A deny rule refuses (a remembered "always reject" as the user's reject), before the watchdog is asked. */
const ruleDenies: PolicyLayer = ({ rules, call }) => {
  const v = rules.verdict;
  if (v?.action !== "deny") return undefined;
  if (v.rule.source === "session") {
    return {
      action: "deny",
      layer: "rule",
      code: "rejected",
      why: `The user rejected ${call.tool.id} calls like this one for this session.`,
    };
  }
  return refused(
    "rule",
    `The ${call.tool.id} call was refused by a permission rule (${describeRule(v.rule)}). Do not work around it; ask the user if it should run.`,
  );
};

/** The watchdog refuses what the rules and the mode allow. */
const watchdogDenies: PolicyLayer = async ({ watchdog, call }) => {
  const w = await watchdog();
  if (w.action !== "deny") return undefined;
  const why = `The watchdog refused this ${call.tool.id} call (${w.check}: ${w.reason}). Do not work around it; ask the user if it should run.`;
  return refused("watchdog", why);
};

const modeRefusal = (mode: ModeId, call: PolicyCall): LayerVerdict =>
  refused(
    "mode",
    `The ${call.tool.id} tool is not available in ${mode} mode (it changes files or runs commands). Switch the session mode to use it.`,
  );

/** A mode refuses a kind of call (read-only: changes), whatever the rules allow. */
const modeDenies: PolicyLayer = ({ mode, call, roots }) => (modeAction(mode, call, roots) === "deny" ? modeRefusal(mode, call) : undefined);

/** No sandbox here, or a call that asks to leave it: asked in every mode (a remembered "always" covers the first only). */
const sandboxAsks: PolicyLayer = async ({ sandbox, rules }) => {
  const s = await sandbox();
  if (s.why === null || (rules.remembered && !s.outside)) return undefined;
  return { action: "ask", layer: "sandbox", why: s.why };
};

/** The watchdog's ask holds in every mode, unless a remembered "always" covers the call. */
const watchdogAsks: PolicyLayer = async ({ watchdog, rules }) => {
  const w = await watchdog();
  if (w.action !== "ask" || rules.remembered) return undefined;
  return { action: "ask", layer: "watchdog", why: `watchdog: ${w.check}: ${w.reason}` };
};

/** A line the rules cannot read is asked about where a rule would otherwise decide it. */
const guardAsks: PolicyLayer = ({ rules }) => (rules.guard === null ? undefined : { action: "ask", layer: "guard", why: rules.guard });

/** The rules' allow or ask. */
const ruleDecides: PolicyLayer = ({ rules }) => {
  const v = rules.verdict;
  if (!v || v.action === "deny") return undefined;
  return { action: v.action, layer: "rule", why: describeRule(v.rule) };
};

/** The mode decides what no rule covers. */
const modeDecides: PolicyLayer = async ({ mode, call, roots, rules, facts }) => {
  const action = modeAction(mode, call, roots);
  const ruled = rules.targets.some((t) => t.winner);
  if (action === "ask") return { action, layer: "mode", why: modeWhy(mode, call, roots, await facts(), ruled) };
  if (action === "allow") return { action, layer: "mode", why: `no rule decided; ${mode} mode allows it` };
  return modeRefusal(mode, call);
};

/** A hook's verdict on a call as layers, each put in its place by `layersWithHook`. */
export interface HookLayers {
  deny?: PolicyLayer;
  ask?: PolicyLayer;
  allow?: PolicyLayer;
}

/**
 * The layers in order; the first that speaks decides. Refusals first (rules, watchdog, mode),
 * then what asks in every mode (sandbox, watchdog, the guard), then the rules' allow or ask, then
 * the mode. A hook's verdict sits where it cannot loosen anything but the mode: its deny right
 * after the rules' (a deny rule keeps its own reason); its ask after the sandbox's and the
 * watchdog's (it holds in every mode, a remembered "always" included); its allow after the rules'
 * allow or ask, so it skips only the mode's question (an ask rule still asks, as in Claude Code).
 */
export function layersWithHook(hook: HookLayers = {}): readonly PolicyLayer[] {
  const some = (layer: PolicyLayer | undefined) => (layer ? [layer] : []);
  return [
    ruleDenies,
    ...some(hook.deny),
    watchdogDenies,
    modeDenies,
    sandboxAsks,
    watchdogAsks,
    ...some(hook.ask),
    guardAsks,
    ruleDecides,
    ...some(hook.allow),
    modeDecides,
  ];
}

/** The layers without a hook. */
export const POLICY_LAYERS: readonly PolicyLayer[] = layersWithHook();

/** What the rules say, with the guard: the parser loads (wasm) only when there are rules. */
async function readRules(call: ToolCallRequest, options: DecideOptions, facts: () => Promise<CommandFacts>, parsed: boolean) {
  const workspace = options.roots[0] ?? process.cwd();
  const inForce = [...(options.ruleset?.() ?? []), ...options.rules.list()];
  const f = inForce.length || parsed ? await facts() : null;
  const explained = f ? explainRules(inForce, call, { workspace, home: options.home, commandUnits: f.units, lineFiles: f.outside }) : null;
  let verdict = explained?.verdict ?? null;
  let guard: string | null = null;
  if (f && verdict?.action === "allow" && (f.unparsed || f.unknown.length > 0)) {
    // A line the parser cannot read, or one that names a file only the shell can resolve, is asked about, whatever a rule allows.
    guard = f.unparsed
      ? "the command line does not parse, so no rule can allow it without asking"
      : `the line names ${f.unknown.map((u) => `\`${u}\``).join(", ")}, known only when it runs, so no rule can allow it without asking`;
    verdict = { ...verdict, action: "ask" };
  }
  // A line whose effect cannot be read (eval, `… | sh`, `python3 -c`, `$CMD`, `sh ./x.sh`, `make`) could be any
  // spelling of what a deny or ask rule names: where such a rule is in force, it is asked about.
  const guarding = f && verdict?.action !== "deny" && verdict?.action !== "ask" ? commandGuard(inForce, call) : undefined;
  if (f && guarding && (f.unknownCode.length > 0 || f.unparsed)) {
    const what = f.unparsed ? ["the line does not parse"] : f.unknownCode;
    const rule = `${guarding.action === "deny" ? "a deny" : "an ask"} rule for \`${guarding.pattern}\``;
    guard = `unknown spelling: ${what.join("; ")}; its effect cannot be read from its text, and ${rule} is in force (${describeRule(guarding)})`;
    verdict = { action: "ask", rule: guarding };
  }
  const remembered = verdict?.action === "allow" && verdict.rule.source === "session";
  return { inForce, verdict, guard, remembered, targets: explained?.targets ?? [] } satisfies RuleReading;
}

/** Memoises an async read: each input is read at most once per call, and only when a layer needs it. */
function once<T>(read: () => Promise<T>): { get: () => Promise<T>; value: () => T | undefined } {
  let promise: Promise<T> | undefined;
  let value: T | undefined;
  return {
    get: () =>
      (promise ??= read().then((v) => {
        value = v;
        return v;
      })),
    value: () => value,
  };
}

/**
 * The policy's verdict on a call: the layers in order, the first that speaks decides. Pure: it
 * asks nobody and remembers nothing; it reads the watchdog, the sandbox and the parsed lines only
 * when a layer needs them (`explain`: all of them, and every target, for `toolhost policy explain`;
 * the verdict is the same).
 */
export async function decide(
  call: ToolCallRequest,
  options: DecideOptions,
  how: { signal?: AbortSignal; explain?: boolean } = {},
): Promise<PolicyVerdict> {
  const signal = how.signal ?? new AbortController().signal;
  const facts = once(() => commandFacts(call, options.roots, options.home));
  const sandbox = once(async () => readSandbox(call, options.sandbox ? await options.sandbox() : undefined));
  // It knows whether the commands will be contained (its network check applies only when not).
  const watchdog = once(async () => {
    const s = await sandbox.get();
    return watch(options, call, signal, !s.state || (s.active && !call.targets.unsandboxed));
  });
  const rules = await readRules(call, options, facts.get, how.explain === true);
  const mode = options.mode();
  const input: PolicyInput = { call, roots: options.roots, mode, rules, facts: facts.get, sandbox: sandbox.get, watchdog: watchdog.get };
  let layer: LayerVerdict | undefined;
  for (const judge of options.layers ?? POLICY_LAYERS) {
    layer = await judge(input);
    if (layer) break;
  }
  // Fail closed: a layer list where none speaks asks.
  const verdict: LayerVerdict = layer ?? { action: "ask", layer: "mode", why: "no layer decided" };
  if (how.explain) await Promise.all([watchdog.get(), facts.get()]);
  const read = verdict.action === "deny" ? sandbox.value() : await sandbox.get();
  let scope: AlwaysScope | null | undefined;
  if (verdict.action === "ask") {
    // Leaving the sandbox is one call's approval: no "always" is offered for it.
    scope = read?.outside ? null : alwaysScope(call, await facts.get(), options.roots[0] ?? process.cwd());
  }
  const w = watchdog.value();
  return {
    ...verdict,
    mode,
    ...(rules.verdict ? { rule: rules.verdict.rule } : {}),
    ...(w ? { watchdog: w } : {}),
    ...(read ? { sandbox: read } : {}),
    ...(verdict.action !== "deny" && read?.why ? { unsandboxed: true as const } : {}),
    ...(scope !== undefined ? { alwaysScope: scope } : {}),
    targets: rules.targets,
    rulesInForce: rules.inForce.length,
    ...(facts.value() ? { facts: facts.value() } : {}),
  };
}
