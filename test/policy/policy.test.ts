import { describe, expect, it } from "vitest";
import path from "node:path";
import type { PolicyCall } from "../../src/policy/call.js";
import { isKindVisible, modeAction } from "../../src/policy/modes.js";
import { commandFacts } from "../../src/policy/command-facts.js";
import { evaluateRules } from "../../src/policy/ruleset.js";
import { SessionRules, alwaysScope } from "../../src/policy/session-rules.js";

// The policy sees targets as the runtime resolved them (here: against /ws).
const targets = (t: Partial<PolicyCall["targets"]>): PolicyCall["targets"] => ({ paths: [], commands: [], hosts: [], ...t });
const bash = (command: string): PolicyCall => ({ tool: { id: "bash", kind: "execute" }, targets: targets({ commands: [command] }) });
const edit = (p: string): PolicyCall => ({ tool: { id: "edit", kind: "edit" }, targets: targets({ paths: [path.resolve("/ws", p)] }) });
const read = (p: string): PolicyCall => ({ tool: { id: "read", kind: "read" }, targets: targets({ paths: [path.resolve("/ws", p)] }) });

describe("modes", () => {
  const ws = ["/ws"];
  it("lets read-only kinds run in every mode", () => {
    for (const mode of ["read-only", "ask", "accept-edits", "full"] as const) expect(modeAction(mode, read("a"), ws)).toBe("allow");
  });
  it("refuses, asks or allows mutating kinds by mode", () => {
    expect(modeAction("read-only", edit("a.ts"), ws)).toBe("deny");
    expect(modeAction("ask", edit("a.ts"), ws)).toBe("ask");
    expect(modeAction("accept-edits", edit("a.ts"), ws)).toBe("allow");
    expect(modeAction("accept-edits", edit("../outside.ts"), ws)).toBe("ask");
    expect(modeAction("accept-edits", bash("ls"), ws)).toBe("ask");
    expect(modeAction("full", bash("rm -rf build"), ws)).toBe("allow");
  });
  it("asks about an edit that names no file, or one outside every root", () => {
    const noTarget: PolicyCall = { tool: { id: "edit", kind: "edit" }, targets: targets({}) };
    expect(modeAction("accept-edits", noTarget, ws)).toBe("ask");
    expect(modeAction("accept-edits", edit("/elsewhere/a.ts"), ["/ws", "/more"])).toBe("ask");
    expect(modeAction("accept-edits", edit("/more/a.ts"), ["/ws", "/more"])).toBe("allow");
  });
  it("asks before a fetch that reaches a host in every mode but full: its URL can carry data out", () => {
    const fetch: PolicyCall = { tool: { id: "web_fetch", kind: "fetch" }, targets: targets({ hosts: ["example.com"] }) };
    expect(modeAction("read-only", fetch, ws)).toBe("ask");
    expect(modeAction("ask", fetch, ws)).toBe("ask");
    expect(modeAction("accept-edits", fetch, ws)).toBe("ask");
    expect(modeAction("full", fetch, ws)).toBe("allow");
    expect(isKindVisible("read-only", "fetch")).toBe(true);
  });
  it("offers the model only what the mode would let run", () => {
    expect(isKindVisible("read-only", "edit")).toBe(false);
    expect(isKindVisible("read-only", "execute")).toBe(false);
    expect(isKindVisible("read-only", "search")).toBe(true);
    expect(isKindVisible("ask", "execute")).toBe(true);
  });
});

describe("session rules: what an 'always' answer covers", () => {
  const facts = async (call: PolicyCall) => commandFacts(call, ["/ws"], "/home/u");
  const scope = async (call: PolicyCall) => alwaysScope(call, await facts(call), "/ws");
  const patterns = async (call: PolicyCall) => (await scope(call)).rules.map((r) => `${r.permission} ${r.pattern}`);
  /** The session's remembered rules' verdict on a call, through the ruleset as the authorizer runs it. */
  const verdict = async (rules: SessionRules, call: PolicyCall) => {
    const f = await facts(call);
    return (
      evaluateRules(rules.list(), call, { workspace: "/ws", home: "/home/u", commandUnits: f.units, lineFiles: f.outside })?.action ?? null
    );
  };

  it("stores the parser's arity-aware prefix, matching the prefix alone or followed by a space", async () => {
    expect(await patterns(bash("git status -s"))).toEqual(["bash git status", "bash git status *"]);
    expect(await patterns(bash("npm run test -- --watch"))).toEqual(["bash npm run test", "bash npm run test *"]);
    expect(await patterns(bash("docker compose up -d"))).toEqual(["bash docker compose up", "bash docker compose up *"]);
    const rules = new SessionRules();
    rules.remember(await scope(bash("git status -s")), "allow");
    expect(await verdict(rules, bash("git status"))).toBe("allow");
    expect(await verdict(rules, bash("git status --porcelain"))).toBe("allow");
    expect(await verdict(rules, bash("git statusfoo"))).toBeNull();
    expect(await verdict(rules, bash("git push"))).toBeNull();
    expect(await verdict(rules, bash("git status; git push"))).toBeNull();
    expect(await verdict(rules, bash("git status && rm -rf ~/x"))).toBeNull();
    expect(rules.list().every((r) => r.source === "session" && r.action === "allow")).toBe(true);
  });

  it("never takes a prefix of an interpreter or wrapper: each simple command exactly", async () => {
    for (const line of ["python3 evil.py", "node -e 1", "bash -c 'rm -rf x'", "env X=1 make", "xargs rm", "sudo rm x"]) {
      const p = await patterns(bash(line));
      expect(p, line).not.toContain(expect.stringMatching(/\*$/));
    }
    expect(await patterns(bash("python3 evil.py"))).toEqual(["bash python3 evil.py"]);
    expect(await patterns(bash("bash -c 'rm -rf x'"))).toEqual(["bash bash -c 'rm -rf x'", "bash rm -rf x"]);
    const rules = new SessionRules();
    rules.remember(await scope(bash("python3 evil.py")), "allow");
    expect(await verdict(rules, bash("python3 evil.py"))).toBe("allow");
    expect(await verdict(rules, bash("python3 other.py"))).toBeNull();
  });

  it("stores compound lines as their simple commands exactly, glob characters made plain", async () => {
    const rules = new SessionRules();
    rules.remember(await scope(bash("make && make test")), "allow");
    expect(await verdict(rules, bash("make && make test"))).toBe("allow");
    expect(await verdict(rules, bash("make && make install"))).toBeNull();
    rules.remember(await scope(bash("rm *.txt")), "allow");
    expect(rules.list().at(-1)?.pattern).toBe("rm \\*.txt");
    expect(await verdict(rules, bash("rm *.txt"))).toBe("allow");
    expect(await verdict(rules, bash("rm a.txt"))).toBeNull();
  });

  it("scopes file tools to the absolute path, a fetch to its host, other tools to the tool, and a reject is a deny rule", async () => {
    expect(await patterns(edit("src/a.ts"))).toEqual(["edit /ws/src/a.ts"]);
    expect(await patterns({ tool: { id: "webfetch", kind: "fetch" }, targets: targets({ hosts: ["x.org"] }) })).toEqual(["webfetch x.org"]);
    expect((await scope({ tool: { id: "web_fetch", kind: "fetch" }, targets: targets({ hosts: ["X.org"] }) })).label).toBe(
      "fetches from x.org",
    );
    const rules = new SessionRules();
    rules.remember(await scope(edit("src/[id].ts")), "allow");
    expect(await verdict(rules, edit("src/[id].ts"))).toBe("allow");
    expect(await verdict(rules, edit("src/i.ts"))).toBeNull();
    rules.remember(await scope(edit("src/[id].ts")), "deny");
    expect(await verdict(rules, edit("src/[id].ts"))).toBe("deny");
  });

  it("labels scopes for the permission options", async () => {
    expect((await scope(bash("git status"))).label).toBe("`git status …` commands");
    expect((await scope(bash("make && make test"))).label).toBe("exactly `make && make test`");
    expect((await scope(edit("src/a.ts"))).label).toBe("edit on src/a.ts");
    expect((await scope({ tool: { id: "x", kind: "other" }, targets: targets({}) })).label).toBe("the x tool");
  });
});
