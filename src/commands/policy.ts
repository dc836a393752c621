import { headlessFrontEnd, type AgentSession } from "../agent/session.js";
import { discardPreparedCall, examine, prepareCall } from "../host/invoke.js";
import { runsCommands } from "../policy/authorizer.js";
import { commandFacts } from "../policy/command-facts.js";
import { isModeId, type ModeId } from "../policy/modes.js";
import { describeRule, explainRules, type SourcedRule } from "../policy/ruleset.js";
import { describeSandbox } from "../runtime/shell/session-sandbox.js";
import { headlessSession } from "./headless.js";

type Out = (chunk: string) => Promise<void>;

export interface PolicyOptions {
  cwd?: string;
  profile?: string;
  mode?: string;
  json: boolean;
  out: Out;
}

function openSession(options: PolicyOptions): Promise<AgentSession> {
  return headlessSession({ cwd: options.cwd, profile: options.profile, mode: options.mode ?? "full", frontEnd: headlessFrontEnd() });
}

const ruleJson = (rule: SourcedRule) => ({
  source: rule.source,
  file: rule.file,
  permission: rule.permission,
  pattern: rule.pattern,
  action: rule.action,
});

/** `toolhost policy list`: the rules in force with their sources, and the rules left out. */
export async function runPolicyList(options: PolicyOptions): Promise<number> {
  const session = await openSession(options);
  const rules = session.rulesInForce;
  const problems = session.permissionProblems;
  if (options.json) {
    await options.out(`${JSON.stringify({ rules: rules.map(ruleJson), problems }, null, 2)}\n`);
  } else {
    const lines = rules.length ? rules.map((r) => `- ${describeRule(r)}`) : ["(no permission rules: the session mode decides every call)"];
    if (problems.length) lines.push("", "Left out:", ...problems.map((p) => `- ${p}`));
    await options.out(`${lines.join("\n")}\n`);
  }
  return problems.length ? 1 : 0;
}

/**
 * `toolhost policy explain <tool> '<json>'`: what the policy would decide about one call, every
 * rule that covers each thing the call touches, and the one that wins. Nothing runs.
 */
export async function runPolicyExplain(toolId: string, args: unknown, options: PolicyOptions): Promise<number> {
  if (options.mode !== undefined && !isModeId(options.mode)) throw new Error(`Unknown mode ${options.mode}`);
  const session = await openSession(options);
  const mode = session.mode as ModeId;
  const prepared = prepareCall(session.registry, toolId, args, { session: session.runtime, manifest: session.tools.manifest });
  if (!prepared.ok) {
    const text = prepared.envelope.type === "error" ? prepared.envelope.error_text : "";
    await options.out(options.json ? `${JSON.stringify({ tool: toolId, error: text }, null, 2)}\n` : `${text}\n`);
    return 1;
  }
  const call = prepared.call;
  try {
    await examine(call);
  } catch (err) {
    const text = err instanceof Error ? err.message : String(err);
    await options.out(options.json ? `${JSON.stringify({ tool: toolId, error: text }, null, 2)}\n` : `${text}\n`);
    return 1;
  } finally {
    discardPreparedCall(call);
  }
  const rules = session.rulesInForce;
  const facts = await commandFacts(call, session.runtime.roots);
  const unparsed = facts.unparsed;
  const explained = explainRules(rules, call, {
    workspace: session.runtime.workspace,
    commandUnits: facts.units,
    lineFiles: facts.outside,
  });
  let wouldAsk = false;
  // The session's own policy, with an ask that only records: nothing is asked and nothing runs.
  let why: string | undefined;
  const authorize = session.authorizer(async (request) => {
    wouldAsk = true;
    why = request.why;
    return "reject_once";
  });
  const decision = await authorize(call, new AbortController().signal);
  const watchdog = await session.watchdogVerdict(call, new AbortController().signal);
  const verdict = wouldAsk ? "ask" : decision.outcome;
  const reason = decision.outcome === "deny" && !wouldAsk ? decision.reason : undefined;
  const winner = explained.verdict ? describeRule(explained.verdict.rule) : null;
  const sandbox = await sandboxApplies(session, call);
  if (options.json) {
    const targets = explained.targets.map((t) => ({ ...t, matching: t.matching.map(ruleJson), winner: t.winner && ruleJson(t.winner) }));
    const json = {
      tool: toolId,
      mode,
      decision: verdict,
      why,
      reason,
      rule: winner,
      watchdog,
      unparsed,
      unknown: facts.unknown,
      unknownCode: facts.unknownCode,
      sandbox: sandbox.json,
      targets,
    };
    await options.out(`${JSON.stringify(json, null, 2)}\n`);
    return 0;
  }
  const lines = [
    `${toolId} in ${mode} mode: ${verdict === "ask" ? "asks the user (headless: refused)" : verdict}`,
    winner
      ? `decided by the ${winner}`
      : rules.length
        ? "no rule covers every part: the mode decides"
        : "no permission rules: the mode decides",
    ...(why ? [`why it asks: ${why}`] : []),
    ...(reason ? [`reason: ${reason}`] : []),
    watchdog.action === "allow" ? "watchdog: allow" : `watchdog: ${watchdog.action} (${watchdog.check}): ${watchdog.reason}`,
    ...(unparsed ? ["the command line does not parse: a rule's allow becomes an ask"] : []),
    ...(facts.unknownCode.length
      ? [`unknown spelling (asked about where a deny or ask rule is in force): ${facts.unknownCode.join("; ")}`]
      : []),
    `sandbox: ${sandbox.text}`,
    "what the call touches:",
  ];
  for (const t of explained.targets) {
    const what = t.kind === "none" ? "(nothing named)" : `${t.kind} ${JSON.stringify(t.value)}${t.capability ? ` (${t.capability})` : ""}`;
    lines.push(`  ${what}:${t.matching.length ? "" : " no rule"}`);
    for (const r of t.matching) lines.push(`    ${r === t.winner ? "→" : " "} ${describeRule(r)}`);
  }
  await options.out(`${lines.join("\n")}\n`);
  return 0;
}

/** Whether the OS sandbox applies to the call, for explain's line and its JSON. */
async function sandboxApplies(
  session: AgentSession,
  call: Parameters<typeof runsCommands>[0],
): Promise<{
  text: string;
  json: { applies: boolean; state: "active" | "off" | "unavailable" | "none"; outside?: true; reason?: string };
}> {
  const state = session.sandbox ? await session.sandbox.state() : undefined;
  const kind = !state ? "none" : state.off ? "off" : state.active ? "active" : "unavailable";
  const reason = state?.reason;
  if (!runsCommands(call) && !call.targets.unsandboxed) {
    return { text: "does not apply (the call runs no command)", json: { applies: false, state: kind, ...(reason ? { reason } : {}) } };
  }
  if (!state) return { text: "none in this session", json: { applies: false, state: kind } };
  if (state.active && call.targets.unsandboxed) {
    return {
      text: "the call asks to run outside it: the user is asked every time (headless: refused); approved, it runs unsandboxed",
      json: { applies: false, state: kind, outside: true },
    };
  }
  return {
    text: describeSandbox(state, undefined, session.runtime.roots),
    json: { applies: state.active, state: kind, ...(reason ? { reason } : {}) },
  };
}
