import { describe, expect, it } from "vitest";
import { commandPrefix, matchesPrefix, simpleCommandWords } from "../../src/policy/command-prefix.js";
import path from "node:path";
import type { PolicyCall } from "../../src/policy/call.js";
import { isKindVisible, modeAction } from "../../src/policy/modes.js";
import { SessionRules, alwaysScope, describeScope } from "../../src/policy/session-rules.js";

// The policy sees targets as the runtime resolved them (here: against /ws).
const targets = (t: Partial<PolicyCall["targets"]>): PolicyCall["targets"] => ({ paths: [], commands: [], hosts: [], ...t });
const bash = (command: string): PolicyCall => ({ tool: { id: "bash", kind: "execute" }, targets: targets({ commands: [command] }) });
const edit = (p: string): PolicyCall => ({ tool: { id: "edit", kind: "edit" }, targets: targets({ paths: [path.resolve("/ws", p)] }) });
const read = (p: string): PolicyCall => ({ tool: { id: "read", kind: "read" }, targets: targets({ paths: [path.resolve("/ws", p)] }) });

describe("command prefixes for 'always'", () => {
  it("takes the command and its subcommand", () => {
    expect(commandPrefix("git status")).toEqual(["git", "status"]);
    expect(commandPrefix("git status -s")).toEqual(["git", "status"]);
    expect(commandPrefix("npm run build --watch")).toEqual(["npm", "run", "build"]);
    expect(commandPrefix("ls -la src")).toEqual(["ls"]);
  });

  it("refuses compound lines, substitutions, newlines and assignments", () => {
    for (const line of [
      "git status && rm -rf /",
      "git status; rm -rf /",
      "git status | sh",
      "git status > /etc/passwd",
      "git status\nrm -rf ~",
      "echo $(rm -rf ~)",
      "echo `rm -rf ~`",
      "PATH=/evil git status",
      "(git status)",
      "git status &",
    ]) {
      expect(simpleCommandWords(line), line).toBeNull();
      expect(commandPrefix(line), line).toBeNull();
    }
  });

  it("never takes a prefix of an interpreter or wrapper", () => {
    for (const line of ["bash -c 'rm -rf /'", "sudo rm x", "env X=1 make", "python3 evil.py", "xargs rm", "./script.sh"]) {
      expect(commandPrefix(line), line).toBeNull();
    }
  });

  it("matches later commands only when they are simple and start with the prefix", () => {
    expect(matchesPrefix("git status --porcelain", ["git", "status"])).toBe(true);
    expect(matchesPrefix("git stash", ["git", "status"])).toBe(false);
    expect(matchesPrefix("git status && git push", ["git", "status"])).toBe(false);
    expect(matchesPrefix("git status\ngit push", ["git", "status"])).toBe(false);
  });
});

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
  it("offers the model only what the mode would let run", () => {
    expect(isKindVisible("read-only", "edit")).toBe(false);
    expect(isKindVisible("read-only", "execute")).toBe(false);
    expect(isKindVisible("read-only", "search")).toBe(true);
    expect(isKindVisible("ask", "execute")).toBe(true);
  });
});

describe("session rules", () => {
  it("remembers a narrow command prefix, never all of bash", () => {
    const rules = new SessionRules();
    expect(rules.remember(bash("git status -s"), "allow").scope).toEqual({ kind: "command_prefix", prefix: ["git", "status"] });
    expect(rules.lookup(bash("git status"))).toBe("allow");
    expect(rules.lookup(bash("git push"))).toBeNull();
    expect(rules.lookup(bash("git status; git push"))).toBeNull();
  });

  it("remembers compound lines exactly", () => {
    const rules = new SessionRules();
    expect(rules.remember(bash("make && make test"), "allow").scope).toEqual({ kind: "exact_command", command: "make && make test" });
    expect(rules.lookup(bash("make && make test"))).toBe("allow");
    expect(rules.lookup(bash("make && make install"))).toBeNull();
  });

  it("scopes file tools to the file and a reject wins", () => {
    const rules = new SessionRules();
    rules.remember(edit("src/a.ts"), "allow");
    expect(rules.lookup(edit("/ws/src/a.ts"))).toBe("allow");
    expect(rules.lookup(edit("src/b.ts"))).toBeNull();
    rules.remember(edit("src/a.ts"), "deny");
    expect(rules.lookup(edit("src/a.ts"))).toBe("deny");
  });

  it("labels scopes for the permission options", () => {
    expect(describeScope("bash", alwaysScope(bash("git status")), "/ws")).toBe("`git status …` commands");
    expect(describeScope("edit", alwaysScope(edit("src/a.ts")), "/ws")).toBe("edit on src/a.ts");
    expect(describeScope("x", { kind: "tool" }, "/ws")).toBe("the x tool");
  });
});
