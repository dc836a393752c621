import { headlessFrontEnd, type AgentSession } from "../agent/session/agent-session.js";
import type { Workspace } from "../config/workspace.js";
import { discardPreparedCall, examine, prepareCall } from "../host/invoke.js";
import type { HookOutcome } from "../host/hooks/events.js";
import { hookPolicyLayers } from "../host/hooks/policy-layer.js";
import { decide, type PolicyVerdict, type SandboxReading } from "../policy/decide.js";
import { isModeId, type ModeId } from "../policy/modes.js";
import { describeRule, type SourcedRule } from "../policy/ruleset.js";
import { describeSandbox } from "../runtime/sandbox/session-sandbox.js";
import { headlessSession } from "./headless.js";

type Out = (chunk: string) => Promise<void>;

export interface PolicyOptions {
  /** Where the explained session works, resolved once (cli.ts's checkWorkspace). */
  workspace: Workspace;
  profile?: string;
  mode?: string;
  json: boolean;
  out: Out;
}

function openSession(options: PolicyOptions): Promise<AgentSession> {
  return headlessSession({
    workspace: options.workspace,
    profile: options.profile,
    mode: options.mode ?? "full",
    frontEnd: headlessFrontEnd(),
  });
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
  const rules = session.policy.rulesInForce;
  const problems = session.policy.problems;
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
  const callOptions = { session: session.runtime, manifest: session.tools.manifest, callId: "explain" };
  let prepared = prepareCall(session.registry, toolId, args, callOptions);
  // The session's tool_call hooks are asked too (nothing runs but them): their verdict is a layer of the decision.
  const hook = prepared.ok
    ? await session.hooks.toolCall(
        { callId: "explain", tool: { id: prepared.call.tool.id, kind: prepared.call.tool.kind }, args: prepared.call.args },
        new AbortController().signal,
      )
    : undefined;
  if (prepared.ok && hook?.updatedArgs && hook.decision !== "deny") {
    discardPreparedCall(prepared.call);
    prepared = prepareCall(session.registry, toolId, hook.updatedArgs, callOptions);
  }
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
  // The session's own policy as a value: nothing is asked, remembered or run.
  const verdict = await decide(call, { ...session.policy.permissionOptions(), layers: hookPolicyLayers(hook) }, { explain: true });
  const hookLine = hookText(hook);
  const facts = verdict.facts;
  const decision = verdict.action;
  const why = decision === "ask" ? verdict.why : undefined;
  const reason = decision === "deny" ? verdict.why : undefined;
  const sandbox = sandboxLine(verdict.sandbox, session.runtime.roots);
  if (options.json) {
    const targets = verdict.targets.map((t) => ({ ...t, matching: t.matching.map(ruleJson), winner: t.winner && ruleJson(t.winner) }));
    const json = {
      tool: toolId,
      mode,
      decision,
      why,
      reason,
      rule: verdict.rule ? describeRule(verdict.rule) : null,
      watchdog: verdict.watchdog,
      unparsed: facts?.unparsed ?? false,
      unknown: facts?.unknown ?? [],
      unknownCode: facts?.unknownCode ?? [],
      sandbox: sandbox.json,
      hook: hook && { decision: hook.decision ?? null, reason: hook.reason, source: hook.source, updatedArgs: hook.updatedArgs },
      targets,
      verdict: verdictJson(verdict),
    };
    await options.out(`${JSON.stringify(json, null, 2)}\n`);
    return 0;
  }
  const watchdog = verdict.watchdog;
  const lines = [
    `${toolId} in ${mode} mode: ${decision === "ask" ? "asks the user (headless: refused)" : decision}`,
    decidedBy(verdict),
    ...(why ? [`why it asks: ${why}`] : []),
    ...(reason ? [`reason: ${reason}`] : []),
    !watchdog || watchdog.action === "allow" ? "watchdog: allow" : `watchdog: ${watchdog.action} (${watchdog.check}): ${watchdog.reason}`,
    ...(facts?.unparsed ? ["the command line does not parse: a rule's allow becomes an ask"] : []),
    ...(facts?.unknownCode.length
      ? [`unknown spelling (asked about where a deny or ask rule is in force): ${facts.unknownCode.join("; ")}`]
      : []),
    `sandbox: ${sandbox.text}`,
    ...(hookLine ? [hookLine] : []),
    "what the call touches:",
  ];
  for (const t of verdict.targets) {
    const what = t.kind === "none" ? "(nothing named)" : `${t.kind} ${JSON.stringify(t.value)}${t.capability ? ` (${t.capability})` : ""}`;
    lines.push(`  ${what}:${t.matching.length ? "" : " no rule"}`);
    for (const r of t.matching) lines.push(`    ${r === t.winner ? "→" : " "} ${describeRule(r)}`);
  }
  await options.out(`${lines.join("\n")}\n`);
  return 0;
}

/** What the tool_call hooks said, in words (none listening: nothing). */
function hookText(hook: HookOutcome<"tool_call"> | undefined): string | undefined {
  if (!hook) return undefined;
  const rewritten = hook.updatedArgs ? `; arguments rewritten by ${hook.updatedBy ?? "a hook"}: ${JSON.stringify(hook.updatedArgs)}` : "";
  if (!hook.decision) return `hooks: no opinion${rewritten}`;
  return `hooks: ${hook.decision} (${hook.source ?? "a hook"})${hook.reason ? `: ${hook.reason}` : ""}${rewritten}`;
}

/** Which layer decided, in words. */
function decidedBy(verdict: PolicyVerdict): string {
  const rule = verdict.rule && describeRule(verdict.rule);
  switch (verdict.layer) {
    case "rule":
      return `decided by the ${rule}`;
    case "guard":
      return `decided by the guard on lines no rule can read (over the ${rule})`;
    case "watchdog":
    case "sandbox":
    case "hook":
      return `decided by the ${verdict.layer}${rule ? ` (over the ${rule})` : ""}`;
    case "mode":
      if (rule) return `decided by ${verdict.mode} mode (over the ${rule})`;
      return verdict.rulesInForce ? "no rule covers every part: the mode decides" : "no permission rules: the mode decides";
  }
}

/** The verdict in JSON: the layer that decided, why, and what "always" would cover. */
function verdictJson(verdict: PolicyVerdict) {
  const { action, layer, why, code, unsandboxed, alwaysScope, sandbox } = verdict;
  return {
    action,
    layer,
    why,
    code,
    rule: verdict.rule ? ruleJson(verdict.rule) : null,
    sandbox: sandbox && { active: sandbox.active, outside: sandbox.outside },
    unsandboxed: unsandboxed ?? false,
    alwaysScope,
  };
}

/** The sandbox as the verdict read it, for explain's line and its JSON. */
function sandboxLine(
  reading: SandboxReading | undefined,
  roots: readonly string[],
): {
  text: string;
  json: { applies: boolean; state: "active" | "off" | "unavailable" | "none"; outside?: true; reason?: string };
} {
  const state = reading?.state;
  const kind = !state ? "none" : state.off ? "off" : state.active ? "active" : "unavailable";
  const reason = state?.reason;
  if (!reading?.applies) {
    return { text: "does not apply (the call runs no command)", json: { applies: false, state: kind, ...(reason ? { reason } : {}) } };
  }
  if (!state) return { text: "none in this session", json: { applies: false, state: kind } };
  if (reading.outside) {
    return {
      text: "the call asks to run outside it: the user is asked every time (headless: refused); approved, it runs unsandboxed",
      json: { applies: false, state: kind, outside: true },
    };
  }
  return {
    text: describeSandbox(state, undefined, roots),
    json: { applies: state.active, state: kind, ...(reason ? { reason } : {}) },
  };
}
