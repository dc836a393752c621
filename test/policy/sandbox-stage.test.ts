import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/host/builtins.js";
import { invoke } from "../../src/host/invoke.js";
import { sessionAuthorizer, type ApprovalAnswer, type ApprovalRequest, type SandboxState } from "../../src/policy/authorizer.js";
import type { Decision } from "../../src/policy/call.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import { diskWorkspace, type Workspace } from "../helpers.js";

// The authorizer's sandbox stage: what it asks, in which modes, what rules still do, and the
// grant an approval carries. The decision is read straight from the authorizer.

const ACTIVE: SandboxState = { active: true, off: false };
const MISSING: SandboxState = {
  active: false,
  off: false,
  reason: "bubblewrap (bwrap) is not installed: apt-get install bubblewrap",
  advice: 'Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap) to sandbox commands, or set "sandbox": "off"…',
};
const OFF: SandboxState = { active: false, off: true, reason: "switched off (TOOLHOST_SANDBOX)" };

let ws: Workspace;
let asked: ApprovalRequest[];
let rules: SessionRules;
const registry = builtinRegistry();
beforeEach(async () => {
  ws = await diskWorkspace({ "a.txt": "a\n" });
  asked = [];
  rules = new SessionRules();
});
afterEach(() => ws.cleanup());

async function decide(
  args: Record<string, unknown>,
  options: { sandbox: SandboxState; mode?: ModeId; ruleset?: SourcedRule[]; answer?: ApprovalAnswer; headless?: boolean; tool?: string },
): Promise<Decision> {
  let decision: Decision | undefined;
  const inner = sessionAuthorizer({
    roots: ws.session.roots,
    mode: () => options.mode ?? "full",
    rules,
    ruleset: () => options.ruleset ?? [],
    sandbox: () => options.sandbox,
    ask: options.headless
      ? undefined
      : async (request) => {
          asked.push(request);
          return options.answer ?? "allow_once";
        },
  });
  // The call is judged, then stopped before it runs.
  await invoke(registry, options.tool ?? "bash", args, {
    session: ws.session,
    authorize: async (call, signal) => {
      decision = await inner(call, signal);
      return { outcome: "deny", reason: "stop here" };
    },
  });
  if (!decision) throw new Error("not judged");
  return decision;
}

const outside = { command: "make install", sandbox: "off", justification: "Install system-wide?" };
const rule = (pattern: string, action: SourcedRule["action"]): SourcedRule => ({ permission: "bash", pattern, action, source: "user" });

describe("escalation (sandbox active)", () => {
  it("asks in full mode, even when a rule allows the command; the approval grants running unsandboxed", async () => {
    expect(await decide(outside, { sandbox: ACTIVE, ruleset: [rule("make *", "allow")] })).toEqual({ outcome: "allow", unsandboxed: true });
    expect(asked.map((a) => a.why)).toEqual(["runs outside the sandbox"]);
  });

  it("a deny rule still denies, without asking; read-only mode still refuses", async () => {
    expect(await decide(outside, { sandbox: ACTIVE, ruleset: [rule("make *", "deny")] })).toMatchObject({
      outcome: "deny",
      code: "permission_denied",
    });
    expect(await decide(outside, { sandbox: ACTIVE, mode: "read-only" })).toMatchObject({ outcome: "deny" });
    expect(asked).toEqual([]);
  });

  it("a remembered always does not cover it, and none is offered; a remembered reject still refuses", async () => {
    expect(await decide({ command: "make install" }, { sandbox: ACTIVE, mode: "ask", answer: "allow_always" })).toEqual({
      outcome: "allow",
    });
    // The same command asking to leave the sandbox is asked about again, once or not at all.
    expect(await decide(outside, { sandbox: ACTIVE, mode: "ask", answer: "allow_once" })).toEqual({ outcome: "allow", unsandboxed: true });
    expect(asked.map((a) => a.why)).toEqual(["no rule matched; ask mode asks before running commands", "runs outside the sandbox"]);
    expect(asked[1]?.always).toEqual([]);
    expect(asked[1]?.project).toBe(false);
    // A command the user rejected for the session stays rejected, inside the sandbox or out.
    expect(await decide({ command: "make clean" }, { sandbox: ACTIVE, mode: "ask", answer: "reject_always" })).toMatchObject({
      outcome: "deny",
    });
    const escalated = { ...outside, command: "make clean" };
    expect(await decide(escalated, { sandbox: ACTIVE, mode: "ask" })).toMatchObject({ outcome: "deny", code: "rejected" });
    expect(asked).toHaveLength(3);
  });

  it("a command inside the sandbox is not asked about in full mode, and has no grant", async () => {
    expect(await decide({ command: "make" }, { sandbox: ACTIVE })).toEqual({ outcome: "allow" });
    expect(asked).toEqual([]);
  });

  it("with the sandbox off, an escalation is an ordinary call", async () => {
    expect(await decide(outside, { sandbox: OFF })).toEqual({ outcome: "allow" });
    expect(asked).toEqual([]);
  });
});

describe("no sandbox can run here", () => {
  it("every call that runs commands asks, in full mode and against an allow rule; the approval grants running unsandboxed", async () => {
    expect(await decide({ command: "make" }, { sandbox: MISSING, ruleset: [rule("make*", "allow")] })).toEqual({
      outcome: "allow",
      unsandboxed: true,
    });
    expect(asked[0]!.why).toBe(`no sandbox can run here: ${MISSING.reason}`);
  });

  it("a remembered always covers the next such command", async () => {
    await decide({ command: "git status" }, { sandbox: MISSING, answer: "allow_always" });
    expect(await decide({ command: "git status" }, { sandbox: MISSING, answer: "reject_once" })).toEqual({
      outcome: "allow",
      unsandboxed: true,
    });
    expect(asked).toHaveLength(1);
  });

  it("headless: refused, naming what to install; a read is not asked about", async () => {
    const decision = await decide({ command: "make" }, { sandbox: MISSING, headless: true });
    expect(decision).toMatchObject({ outcome: "deny", code: "permission_denied" });
    expect(decision.outcome === "deny" && decision.reason).toMatch(/apt-get install bubblewrap.*"sandbox": "off"/);
    // The refusal gives the runtime's advice for this reason (a container's option), not a fixed one.
    const container = { ...MISSING, reason: "bwrap cannot start a sandbox here: …", advice: "start the container with …" };
    const refused = await decide({ command: "make" }, { sandbox: container, headless: true });
    expect(refused.outcome === "deny" && refused.reason).toMatch(/so it was refused\. start the container with …$/);
    expect(await decide({ path: "a.txt" }, { sandbox: MISSING, headless: true, tool: "read" })).toEqual({ outcome: "allow" });
  });
});
