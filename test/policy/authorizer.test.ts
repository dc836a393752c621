import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { invoke } from "../../src/host/invoke.js";
import { builtinRegistry } from "../../src/host/builtins.js";
import {
  sessionAuthorizer,
  type ApprovalAnswer,
  type ApprovalRequest,
  type PermissionOptions,
  type SandboxState,
} from "../../src/policy/authorizer.js";
import type { ToolCallRequest } from "../../src/policy/call.js";
import { decide, POLICY_LAYERS, type PolicyLayer, type PolicyVerdict } from "../../src/policy/decide.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import type { Watchdog } from "../../src/policy/watchdog.js";
import { builtinWatchdog } from "../../src/policy/watchdog/builtin.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { diskWorkspace, type Workspace } from "../helpers.js";

// The session's authorizer over the real pipeline: the policy judges the targets the runtime
// resolved, so what is asked, remembered and refused is about the file that would be touched.

let ws: Workspace;
let asked: ApprovalRequest[];
let answers: ApprovalAnswer[];
let rules: SessionRules;
let mode: ModeId;
const registry = builtinRegistry();

beforeEach(async () => {
  ws = await diskWorkspace({ "src/a.ts": "export const a = 1;\n", "src/b.ts": "export const b = 1;\n" });
  asked = [];
  answers = [];
  rules = new SessionRules();
  mode = "ask";
});
afterEach(() => ws.cleanup());

function call(toolId: string, args: Record<string, unknown>, signal?: AbortSignal): Promise<Envelope> {
  const authorize = sessionAuthorizer({
    roots: ws.session.roots,
    mode: () => mode,
    rules,
    ask: async (request) => {
      asked.push(request);
      const answer = answers.shift();
      if (!answer) throw new Error("nobody answered");
      return answer;
    },
  });
  return invoke(registry, toolId, args, { session: ws.session, authorize, signal });
}

const outcome = (e: Envelope) => (e.type === "output" ? "ran" : e.metadata.error_code);
const edit = (file: string, from: string, to: string) => ({ path: file, old_string: from, new_string: to });

describe("mode × kind", () => {
  const table: [ModeId, string, Record<string, unknown>, string, number][] = [
    // mode, tool, args, outcome, questions asked (every answer is "allow once")
    ["read-only", "read", { path: "src/a.ts" }, "ran", 0],
    ["read-only", "edit", edit("src/a.ts", "1", "2"), "permission_denied", 0],
    ["read-only", "bash", { command: "true" }, "permission_denied", 0],
    ["ask", "read", { path: "src/a.ts" }, "ran", 0],
    ["ask", "edit", edit("src/a.ts", "1", "2"), "ran", 1],
    ["ask", "bash", { command: "true" }, "ran", 1],
    ["accept-edits", "edit", edit("src/a.ts", "1", "2"), "ran", 0],
    ["accept-edits", "bash", { command: "true" }, "ran", 1],
    ["full", "edit", edit("src/a.ts", "1", "2"), "ran", 0],
    ["full", "bash", { command: "true" }, "ran", 0],
  ];
  it.each(table)("%s mode, %s", async (m, tool, args, expected, questions) => {
    mode = m;
    answers = ["allow_once"];
    expect(outcome(await call(tool, args))).toBe(expected);
    expect(asked).toHaveLength(questions);
  });
});

describe("answers", () => {
  it("remembers 'always allow' for the same command prefix only", async () => {
    answers = ["allow_always", "reject_once"];
    expect(outcome(await call("bash", { command: "git status" }))).toBe("ran");
    expect(outcome(await call("bash", { command: "git status --short" }))).toBe("ran");
    expect(asked).toHaveLength(1);
    expect(outcome(await call("bash", { command: "git push" }))).toBe("rejected");
    expect(asked).toHaveLength(2);
  });

  it("remembers 'always reject' without asking again; 'reject once' asks again", async () => {
    answers = ["reject_always", "reject_once", "reject_once"];
    expect(outcome(await call("edit", edit("src/a.ts", "1", "2")))).toBe("rejected");
    expect(outcome(await call("edit", edit("src/a.ts", "1", "3")))).toBe("rejected");
    expect(asked).toHaveLength(1);
    expect(outcome(await call("edit", edit("src/b.ts", "1", "2")))).toBe("rejected");
    expect(outcome(await call("edit", edit("src/b.ts", "1", "2")))).toBe("rejected");
    expect(asked).toHaveLength(3);
  });

  it("counts an unanswered request as a reject and a cancelled turn as aborted", async () => {
    expect(outcome(await call("bash", { command: "true" }))).toBe("rejected");
    const controller = new AbortController();
    const pending = call("bash", { command: "true" }, controller.signal);
    controller.abort();
    expect(outcome(await pending)).toBe("aborted");
  });

  it("refuses what needs approval when nobody can answer (headless)", async () => {
    const authorize = sessionAuthorizer({ roots: ws.session.roots, mode: () => "ask", rules });
    const envelope = await invoke(registry, "bash", { command: "true" }, { session: ws.session, authorize });
    expect(outcome(envelope)).toBe("permission_denied");
  });
});

describe("targets", () => {
  it("gives the approval the preview's diff and the resolved path", async () => {
    answers = ["allow_once"];
    await call("edit", edit("src/a.ts", "1", "2"));
    const [request] = asked;
    expect(request?.call.targets.paths).toEqual([path.join(ws.root, "src/a.ts")]);
    expect(request?.call.preview).toEqual([
      { type: "diff", path: path.join(ws.root, "src/a.ts"), oldText: "export const a = 1;\n", newText: "export const a = 2;\n" },
    ]);
    expect(request?.scopeLabel).toBe("edit on src/a.ts");
  });

  it("gives bash calls their command line and working directory", async () => {
    answers = ["allow_once"];
    await call("bash", { command: "ls -la", workdir: "src" });
    expect(asked[0]?.call.targets).toEqual({ commands: ["ls -la"], paths: [path.join(ws.root, "src")], hosts: [] });
  });

  it("stores an 'always' answer for @src/a.ts under the file it edits", async () => {
    answers = ["allow_always"];
    expect(outcome(await call("edit", edit("@src/a.ts", "1", "2")))).toBe("ran");
    expect(outcome(await call("edit", edit("src/a.ts", "2", "3")))).toBe("ran");
    expect(asked).toHaveLength(1);
    expect(rules.list()).toEqual([{ permission: "edit", pattern: path.join(ws.root, "src/a.ts"), action: "allow", source: "session" }]);
  });

  it("judges ~/x.txt as the home-directory file it is, not as a workspace file", async () => {
    mode = "accept-edits";
    const envelope = await call("edit", edit("~/x.txt", "", "new"));
    // The runtime and the policy agree: outside the workspace, refused before anyone is asked.
    expect(outcome(envelope)).toBe("outside_root");
    expect(envelope.type === "error" && envelope.error_text).toContain(path.join(os.homedir(), "x.txt"));
    expect(asked).toHaveLength(0);
  });
});

describe("why it asks, and 'always' as rules", () => {
  it("says which rule or mode asks", async () => {
    answers = ["reject_once", "reject_once", "reject_once"];
    await call("bash", { command: "true" });
    expect(asked[0]?.why).toBe("no rule matched; ask mode asks before running commands");
    await call("edit", edit("src/a.ts", "1", "2"));
    expect(asked[1]?.why).toBe("no rule matched; ask mode asks before changing files");
    const authorize = sessionAuthorizer({
      roots: ws.session.roots,
      mode: () => "full",
      rules,
      ruleset: () => [{ permission: "bash", pattern: "git push*", action: "ask", source: "user", file: "/h/config.json" }],
      ask: async (request) => {
        asked.push(request);
        return "reject_once";
      },
    });
    await invoke(registry, "bash", { command: "git push origin" }, { session: ws.session, authorize });
    expect(asked[2]?.why).toBe('user rule in /h/config.json: ask bash "git push*"');
  });

  it("a remembered reject is a session deny rule, refused as rejected without asking", async () => {
    answers = ["reject_always"];
    expect(outcome(await call("bash", { command: "git status" }))).toBe("rejected");
    expect(outcome(await call("bash", { command: "git status -s" }))).toBe("rejected");
    expect(asked).toHaveLength(1);
    expect(rules.list().map((r) => `${r.source} ${r.action} ${r.permission} ${r.pattern}`)).toEqual([
      "session deny bash git status",
      "session deny bash git status *",
    ]);
  });

  it("a manifest deny wins over a session 'always'", async () => {
    rules.remember({ rules: [{ permission: "bash", pattern: "touch *" }], label: "" }, "allow");
    const authorize = sessionAuthorizer({
      roots: ws.session.roots,
      mode: () => "ask",
      rules,
      ruleset: () => [{ permission: "bash", pattern: "touch *", action: "deny", source: "manifest" }],
    });
    const envelope = await invoke(registry, "bash", { command: "touch x" }, { session: ws.session, authorize });
    expect(outcome(envelope)).toBe("permission_denied");
    expect(await ws.text("x")).toBeUndefined();
  });

  it("offers 'always, for this project' only when the project is trusted; a failed save holds for the session", async () => {
    let trusted = false;
    const saved: unknown[] = [];
    const authorize = sessionAuthorizer({
      roots: ws.session.roots,
      mode: () => "ask",
      rules,
      project: {
        trusted: () => trusted,
        save: async (r) => {
          saved.push(...r);
          return false;
        },
      },
      ask: async (request) => {
        asked.push(request);
        return answers.shift() ?? "reject_once";
      },
    });
    const go = (command: string) => invoke(registry, "bash", { command }, { session: ws.session, authorize });
    await go("git log");
    expect(asked[0]?.project).toBe(false);
    trusted = true;
    answers = ["allow_always_project"];
    expect(outcome(await go("git status"))).toBe("ran");
    expect(asked[1]?.project).toBe(true);
    expect(saved).toEqual([
      { permission: "bash", pattern: "git status", action: "allow" },
      { permission: "bash", pattern: "git status *", action: "allow" },
    ]);
    // Not saved: it holds as a session "always".
    expect(outcome(await go("git status -s"))).toBe("ran");
    expect(asked).toHaveLength(2);
  });
});

describe("decide(): the verdict as a value", () => {
  type Row = {
    mode?: ModeId;
    ruleset?: SourcedRule[];
    remember?: { pattern: string; action: "allow" | "deny" };
    sandbox?: SandboxState;
    watchdog?: Watchdog;
  };
  const user = (pattern: string, action: SourcedRule["action"]): SourcedRule => ({ permission: "bash", pattern, action, source: "user" });
  const ACTIVE: SandboxState = { active: true, off: false };
  const MISSING: SandboxState = { active: false, off: false, reason: "bwrap is not installed" };
  const OFF: SandboxState = { active: false, off: true };
  const asks: Watchdog = async () => ({ action: "ask", check: "x", reason: "because" });
  const outsideArgs = { command: "make install", sandbox: "off", justification: "Install it?" };

  function optionsFor(row: Row): PermissionOptions {
    const session = new SessionRules();
    if (row.remember) session.remember({ rules: [{ permission: "bash", pattern: row.remember.pattern }], label: "" }, row.remember.action);
    return {
      roots: ws.session.roots,
      mode: () => row.mode ?? "full",
      rules: session,
      ruleset: () => row.ruleset ?? [],
      ...(row.sandbox ? { sandbox: () => row.sandbox as SandboxState } : {}),
      ...(row.watchdog ? { watchdog: row.watchdog } : {}),
    };
  }

  /** The prepared call, judged by `judge`, then stopped before it runs. */
  async function judged<T>(toolId: string, args: Record<string, unknown>, judge: (c: ToolCallRequest) => Promise<T>): Promise<T> {
    let out: { value: T } | undefined;
    await invoke(registry, toolId, args, {
      session: ws.session,
      authorize: async (c) => {
        out = { value: await judge(c) };
        return { outcome: "deny", reason: "stop here" };
      },
    });
    if (!out) throw new Error("not judged");
    return out.value;
  }

  // name, tool, args, options, the verdict (a subset), whether an "always" is offered on an ask
  const table: [string, string, Record<string, unknown>, Row, Partial<PolicyVerdict>][] = [
    ["read-only mode allows a read", "read", { path: "src/a.ts" }, { mode: "read-only" }, { action: "allow", layer: "mode" }],
    [
      "read-only mode refuses an edit",
      "edit",
      edit("src/a.ts", "1", "2"),
      { mode: "read-only" },
      { action: "deny", layer: "mode", code: "permission_denied" },
    ],
    [
      "ask mode asks before a command",
      "bash",
      { command: "true" },
      { mode: "ask" },
      { action: "ask", layer: "mode", why: "no rule matched; ask mode asks before running commands" },
    ],
    [
      "accept-edits allows an edit inside",
      "edit",
      edit("src/a.ts", "1", "2"),
      { mode: "accept-edits" },
      { action: "allow", layer: "mode" },
    ],
    ["full mode allows a command", "bash", { command: "true" }, {}, { action: "allow", layer: "mode" }],
    [
      "a deny rule refuses, before the watchdog and the sandbox",
      "bash",
      { command: "git push" },
      { ruleset: [user("git push*", "deny")], watchdog: asks, sandbox: MISSING },
      { action: "deny", layer: "rule", code: "permission_denied", watchdog: undefined, sandbox: undefined },
    ],
    [
      "a remembered reject is the user's",
      "bash",
      { command: "git status" },
      { remember: { pattern: "git status", action: "deny" } },
      { action: "deny", layer: "rule", code: "rejected" },
    ],
    [
      "an allow rule allows in ask mode",
      "bash",
      { command: "git status" },
      { mode: "ask", ruleset: [user("git *", "allow")] },
      { action: "allow", layer: "rule" },
    ],
    [
      "an ask rule asks in full mode",
      "bash",
      { command: "git push" },
      { ruleset: [user("git push*", "ask")] },
      { action: "ask", layer: "rule", why: 'user rule: ask bash "git push*"' },
    ],
    [
      "read-only mode wins over an allow rule",
      "bash",
      { command: "git status" },
      { mode: "read-only", ruleset: [user("git *", "allow")] },
      { action: "deny", layer: "mode" },
    ],
    [
      "the guard asks about a line it cannot read where a deny rule speaks",
      "bash",
      { command: 'eval "$X"' },
      { ruleset: [user("git push*", "deny")] },
      { action: "ask", layer: "guard" },
    ],
    [
      "the guard asks about a file known only when the line runs",
      "bash",
      { command: 'cat a.txt > "$F"' },
      { ruleset: [user("cat *", "allow")] },
      { action: "ask", layer: "guard" },
    ],
    [
      "the watchdog refuses what the mode allows",
      "bash",
      { command: "rm -rf /" },
      { watchdog: builtinWatchdog() },
      { action: "deny", layer: "watchdog", code: "permission_denied" },
    ],
    [
      "the watchdog's ask holds in full mode",
      "bash",
      { command: "true" },
      { watchdog: asks },
      { action: "ask", layer: "watchdog", why: "watchdog: x: because" },
    ],
    [
      "a remembered always covers the watchdog's ask",
      "bash",
      { command: "true" },
      { watchdog: asks, remember: { pattern: "true", action: "allow" } },
      { action: "allow", layer: "rule" },
    ],
    [
      "read-only mode refuses before the watchdog asks",
      "bash",
      { command: "true" },
      { mode: "read-only", watchdog: asks },
      { action: "deny", layer: "mode" },
    ],
    [
      "no sandbox here: a command asks, and runs unsandboxed",
      "bash",
      { command: "make" },
      { sandbox: MISSING, ruleset: [user("make*", "allow")] },
      { action: "ask", layer: "sandbox", unsandboxed: true, why: "no sandbox can run here: bwrap is not installed" },
    ],
    [
      "no sandbox here: a remembered always covers it",
      "bash",
      { command: "make" },
      { sandbox: MISSING, remember: { pattern: "make", action: "allow" } },
      { action: "allow", layer: "rule", unsandboxed: true },
    ],
    [
      "no sandbox here: a read is not asked about",
      "read",
      { path: "src/a.ts" },
      { sandbox: MISSING },
      { action: "allow", layer: "mode", unsandboxed: undefined },
    ],
    [
      "leaving an active sandbox asks every time, no always",
      "bash",
      outsideArgs,
      { sandbox: ACTIVE, remember: { pattern: "make install", action: "allow" } },
      { action: "ask", layer: "sandbox", why: "runs outside the sandbox", alwaysScope: null, unsandboxed: true },
    ],
    [
      "with the sandbox off, leaving it is an ordinary call",
      "bash",
      outsideArgs,
      { sandbox: OFF },
      { action: "allow", layer: "mode", unsandboxed: undefined },
    ],
  ];

  it.each(table)("%s", async (_name, tool, args, row, expected) => {
    const verdict = await judged(tool, args, (c) => decide(c, optionsFor(row)));
    // A key expected as undefined is absent (not consulted, or no grant).
    const absent = Object.keys(expected).filter((k) => expected[k as keyof PolicyVerdict] === undefined);
    expect(verdict).toMatchObject(Object.fromEntries(Object.entries(expected).filter(([k]) => !absent.includes(k))));
    for (const key of absent) expect(verdict).not.toHaveProperty(key);
    if (verdict.action === "ask" && expected.alwaysScope !== null) expect(verdict.alwaysScope?.rules.length).toBeGreaterThan(0);
    // authorize = decide + ask: the decision follows the verdict, and an ask asks with its why.
    const questions: ApprovalRequest[] = [];
    const authorize = sessionAuthorizer({ ...optionsFor(row), ask: async (r) => (questions.push(r), "allow_once") });
    const decision = await judged(tool, args, (c) => authorize(c, new AbortController().signal));
    if (verdict.action === "deny") expect(decision).toEqual({ outcome: "deny", code: verdict.code, reason: verdict.why });
    else expect(decision).toEqual(verdict.unsandboxed ? { outcome: "allow", unsandboxed: true } : { outcome: "allow" });
    expect(questions.map((q) => q.why)).toEqual(verdict.action === "ask" ? [verdict.why] : []);
  });

  it("is pure: it asks nobody, remembers nothing, and consults the watchdog only when a layer needs it", async () => {
    let watched = 0;
    const options = optionsFor({ mode: "ask", ruleset: [user("git push*", "deny")] });
    options.watchdog = async () => (watched++, { action: "allow" });
    expect(await judged("bash", { command: "git push" }, (c) => decide(c, options))).toMatchObject({ action: "deny", layer: "rule" });
    expect(watched).toBe(0);
    const verdict = await judged("bash", { command: "git status" }, (c) => decide(c, options));
    expect(verdict).toMatchObject({ action: "ask", layer: "mode", watchdog: { action: "allow" } });
    expect(verdict.alwaysScope?.label).toBe("`git status …` commands");
    expect(watched).toBe(1);
    expect(options.rules.list()).toEqual([]);
  });

  it("explain reads every input: the watchdog, the sandbox and every target, even with no rules", async () => {
    const options = optionsFor({ sandbox: ACTIVE });
    const plain = await judged("bash", { command: "ls src" }, (c) => decide(c, options));
    expect(plain.targets).toEqual([]);
    const explained = await judged("bash", { command: "ls src" }, (c) => decide(c, options, { explain: true }));
    expect(explained).toMatchObject({ action: plain.action, layer: plain.layer, why: plain.why, rulesInForce: 0 });
    expect(explained.watchdog).toEqual({ action: "allow" });
    expect(explained.sandbox).toMatchObject({ applies: true, active: true, outside: false });
    expect(explained.targets.map((t) => t.kind)).toContain("command");
    expect(explained.facts?.unparsed).toBe(false);
  });

  it("takes one more layer (where hooks plug in) in the order given", async () => {
    const hook: PolicyLayer = ({ call }) =>
      call.targets.commands.some((c) => c.startsWith("curl"))
        ? { action: "deny", layer: "guard", why: "a hook said no", code: "permission_denied" }
        : undefined;
    const options = { ...optionsFor({}), layers: [hook, ...POLICY_LAYERS] };
    expect(await judged("bash", { command: "curl x" }, (c) => decide(c, options))).toMatchObject({ action: "deny", why: "a hook said no" });
    expect(await judged("bash", { command: "true" }, (c) => decide(c, options))).toMatchObject({ action: "allow", layer: "mode" });
  });
});
