import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentSession } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { builtinRegistry } from "../../src/host/builtins.js";
import { invoke } from "../../src/host/invoke.js";
import { sessionAuthorizer, type ApprovalRequest } from "../../src/policy/authorizer.js";
import type { PolicyCall } from "../../src/policy/call.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { PermissionRule } from "../../src/policy/rules.js";
import { describeRule, evaluateRules, loadRules, type SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import type { ToolKind } from "../../src/tool/kinds.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { CLI_PATH, diskWorkspace, useAgentEnv, type Workspace } from "../helpers.js";

const WS = "/work/project";
const ctx = { workspace: WS, home: "/home/me" };

function policyCall(id: string, kind: ToolKind, targets: { paths?: string[]; commands?: string[]; hosts?: string[] }): PolicyCall {
  return { tool: { id, kind }, targets: { paths: targets.paths ?? [], commands: targets.commands ?? [], hosts: targets.hosts ?? [] } };
}
const rule = (
  permission: string,
  pattern: string,
  action: PermissionRule["action"],
  source: SourcedRule["source"] = "user",
): SourcedRule => ({
  permission,
  pattern,
  action,
  source,
});

describe("evaluateRules: rules × calls", () => {
  const bash = (command: string) => policyCall("bash", "execute", { commands: [command], paths: [WS] });
  const write = (...paths: string[]) => policyCall("write", "edit", { paths });
  const read = (p: string) => policyCall("read", "read", { paths: [p] });
  const fetch = (host: string) => policyCall("webfetch", "fetch", { hosts: [host] });

  const table: [string, SourcedRule[], PolicyCall, "allow" | "deny" | "ask" | null][] = [
    ["no rules: the mode decides", [], bash("ls"), null],
    ["a command pattern matches the line", [rule("bash", "git push*", "deny")], bash("git push --force origin"), "deny"],
    ["a command pattern leaves other lines alone", [rule("bash", "git push*", "deny")], bash("git status"), null],
    ["shell.run is bash's capability", [rule("shell.run", "npm run *", "allow")], bash("npm run test"), "allow"],
    ["tool id over capability", [rule("shell.run", "*", "deny"), rule("bash", "*", "allow")], bash("ls"), "allow"],
    ["capability over *", [rule("*", "*", "deny"), rule("shell.run", "*", "allow")], bash("ls"), "allow"],
    ["longer literal over shorter", [rule("bash", "git *", "allow"), rule("bash", "git push*", "deny")], bash("git push"), "deny"],
    [
      "longer literal over shorter (allow)",
      [rule("bash", "git *", "deny"), rule("bash", "git status*", "allow")],
      bash("git status -s"),
      "allow",
    ],
    ["a tie: deny over allow", [rule("bash", "ls*", "allow"), rule("bash", "ls*", "deny")], bash("ls -la"), "deny"],
    ["a relative path glob is inside the workspace", [rule("fs.write", "src/**", "allow")], write(`${WS}/src/a.ts`), "allow"],
    ["a relative path glob is not elsewhere", [rule("fs.write", "src/**", "allow")], write(`${WS}/lib/a.ts`), null],
    ["~ is the home folder", [rule("*", "~/.ssh/**", "deny")], read("/home/me/.ssh/id_rsa"), "deny"],
    ["an absolute glob; dot files match", [rule("fs.read", "/etc/**", "ask")], read("/etc/.hidden"), "ask"],
    ["a read is not an fs.write", [rule("fs.write", "**", "deny")], read(`${WS}/a.ts`), null],
    ["every path must be allowed", [rule("fs.write", "src/**", "allow")], write(`${WS}/src/a.ts`, `${WS}/b.ts`), null],
    [
      "one denied path denies the call",
      [rule("write", "**", "allow"), rule("write", "secret/**", "deny")],
      write(`${WS}/a`, `${WS}/secret/k`),
      "deny",
    ],
    ["an ask on one path asks", [rule("write", "**", "allow"), rule("write", "*.lock", "ask")], write(`${WS}/a`, `${WS}/b.lock`), "ask"],
    ["hosts match case-insensitively", [rule("net.fetch", "*.github.com", "allow")], fetch("API.github.com"), "allow"],
    // A Claude Code rule's `mcp__github`: every tool of that server, not another server's.
    [
      "mcp__server__* covers the server's tools",
      [rule("mcp__github__*", "*", "deny")],
      policyCall("mcp__github__push", "execute", {}),
      "deny",
    ],
    ["mcp__server__* is that server's only", [rule("mcp__github__*", "*", "deny")], policyCall("mcp__githubx__push", "execute", {}), null],
    ["a host glob is not a suffix of its own", [rule("net.fetch", "*.github.com", "allow")], fetch("evilgithub.com"), null],
    [
      "a call without targets: only * patterns",
      [rule("todo", "x*", "deny"), rule("todo", "*", "allow")],
      policyCall("todo", "other", {}),
      "allow",
    ],
    ["a tool id names only that tool", [rule("edit", "*", "deny")], write(`${WS}/a`), null],
    [
      "a manifest deny beats a more specific allow",
      [rule("*", "*", "deny", "manifest"), rule("bash", "ls", "allow", "project")],
      bash("ls"),
      "deny",
    ],
    [
      "a user deny is overridden by a more specific allow",
      [rule("*", "*", "deny", "user"), rule("bash", "ls", "allow", "project")],
      bash("ls"),
      "allow",
    ],
  ];
  it.each(table)("%s", (_name, rules, call, expected) => {
    expect(evaluateRules(rules, call, ctx)?.action ?? null).toBe(expected);
  });

  it("names the rule that decided", () => {
    const verdict = evaluateRules([{ ...rule("bash", "git push*", "deny"), file: "/h/config.json" }], bash("git push"), ctx);
    expect(describeRule(verdict!.rule)).toBe('user rule in /h/config.json: deny bash "git push*"');
  });
});

describe("loadRules: the sources", () => {
  const t = useAgentEnv({
    home: { "config.json": JSON.stringify({ permissions: [{ permission: "bash", pattern: "rm *", action: "allow" }] }) },
    files: {
      ".toolhost/config.json": JSON.stringify({
        permissions: [
          { permission: "bash", pattern: "rm -rf *", action: "allow" },
          { permission: "bash", pattern: 7, action: "allow" },
        ],
      }),
    },
  });
  const manifest = { rules: [{ permission: "bash", pattern: "rm*", action: "deny" as const }], file: "/profiles/p/profile.json" };
  const rmCall = policyCall("bash", "execute", { commands: ["rm -rf build"] });

  it("a manifest deny is never overridden by user or project allows", () => {
    const { rules } = loadRules({ manifest, home: t.home, project: { dir: t.ws, trusted: true } });
    expect(rules.map((r) => r.source)).toEqual(["manifest", "user", "project"]);
    const verdict = evaluateRules(rules, rmCall, { workspace: t.ws });
    expect(verdict?.action).toBe("deny");
    expect(verdict?.rule.source).toBe("manifest");
  });

  it("a trusted project's rules count; an untrusted project's are never read", () => {
    const trusted = loadRules({ manifest: { rules: [] }, home: t.home, project: { dir: t.ws, trusted: true } });
    expect(evaluateRules(trusted.rules, rmCall, { workspace: t.ws })?.rule.source).toBe("project");
    const untrusted = loadRules({ manifest: { rules: [] }, home: t.home, project: { dir: t.ws, trusted: false } });
    expect(untrusted.rules.map((r) => r.source)).toEqual(["user"]);
    expect(untrusted.problems).toEqual([]);
    expect(evaluateRules(untrusted.rules, rmCall, { workspace: t.ws })?.rule.source).toBe("user");
  });

  it("a broken rule is reported with its file and index; the others hold", async () => {
    const { rules, problems } = loadRules({ manifest: { rules: [] }, home: t.home, project: { dir: t.ws, trusted: true } });
    expect(rules).toHaveLength(2);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(path.join(t.ws, ".toolhost", "config.json"));
    expect(problems[0]).toContain("permissions[1]");
    expect(problems[0]).toContain('"pattern":7');

    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ permissions: [{ permission: "", action: "allow" }] }));
    const user = loadRules({ manifest: { rules: [] }, home: t.home, project: { dir: t.ws, trusted: false } });
    expect(user.rules).toEqual([]);
    expect(user.problems[0]).toMatch(/config\.json: permissions\[0\]/);
  });
});

describe("sessionAuthorizer with rules, over the real pipeline", () => {
  let ws: Workspace;
  let asked: ApprovalRequest[];
  let ruleset: SourcedRule[];
  const registry = builtinRegistry();
  beforeEach(async () => {
    ws = await diskWorkspace({ "a.txt": "a\n" });
    asked = [];
    ruleset = [];
  });
  afterEach(() => ws.cleanup());

  function run(mode: ModeId, toolId: string, args: Record<string, unknown>, headless = false): Promise<Envelope> {
    const authorize = sessionAuthorizer({
      roots: ws.session.roots,
      mode: () => mode,
      rules: new SessionRules(),
      ruleset: () => ruleset,
      ask: headless
        ? undefined
        : async (request) => {
            asked.push(request);
            return "reject_once";
          },
    });
    return invoke(registry, toolId, args, { session: ws.session, authorize });
  }
  const exists = (name: string) =>
    fsp.access(path.join(ws.root, name)).then(
      () => true,
      () => false,
    );

  it("a deny rule holds in full mode, and the refusal names the rule", async () => {
    ruleset = [{ ...rule("bash", "touch *", "deny"), file: "/h/config.json" }];
    const envelope = await run("full", "bash", { command: "touch made-in-full" });
    expect(envelope.type).toBe("error");
    expect(envelope.type === "error" && envelope.metadata.error_code).toBe("permission_denied");
    expect(JSON.stringify(envelope)).toContain('user rule in /h/config.json: deny bash \\"touch *\\"');
    expect(await exists("made-in-full")).toBe(false);
    // Another command still runs in full mode.
    const other = await run("full", "bash", { command: "echo ok > other" });
    expect(other.type).toBe("output");
    expect(await exists("other")).toBe(true);
  });

  it("an allow rule lets a call run in ask mode without a question", async () => {
    ruleset = [rule("bash", "touch allowed*", "allow")];
    expect((await run("ask", "bash", { command: "touch allowed-file" })).type).toBe("output");
    expect(await exists("allowed-file")).toBe(true);
    expect(asked).toEqual([]);
    // Without a matching rule, ask mode still asks.
    expect((await run("ask", "bash", { command: "touch asked-file" })).type).toBe("error");
    expect(asked).toHaveLength(1);
    expect(await exists("asked-file")).toBe(false);
  });

  it("an allow rule for a path lets an edit run in ask mode; read-only mode still refuses", async () => {
    ruleset = [rule("fs.write", "notes/**", "allow")];
    expect((await run("ask", "write", { path: "notes/n.md", content: "x\n" })).type).toBe("output");
    expect(asked).toEqual([]);
    expect((await run("read-only", "write", { path: "notes/m.md", content: "x\n" })).type).toBe("error");
    expect(await exists("notes/m.md")).toBe(false);
  });

  it("matches each simple command of a bash line on its own", async () => {
    ruleset = [rule("bash", "touch allowed*", "allow"), rule("bash", "rm *", "deny")];
    // Every part allowed: runs without a question.
    expect((await run("ask", "bash", { command: "touch allowed-1 && touch allowed-2" })).type).toBe("output");
    expect(asked).toEqual([]);
    // A part no rule allows: the line is asked about, even though it starts with an allowed command.
    expect((await run("ask", "bash", { command: "touch allowed-3; touch smuggled" })).type).toBe("error");
    expect(asked).toHaveLength(1);
    expect(await exists("smuggled")).toBe(false);
    // A denied part hidden after an allowed one, or in a substitution, denies the line in full mode.
    for (const command of ["touch allowed-4; rm -f a.txt", "touch allowed-5 $(rm -f a.txt)"]) {
      const envelope = await run("full", "bash", { command });
      expect(envelope.type === "error" && envelope.metadata.error_code).toBe("permission_denied");
    }
    expect(await exists("a.txt")).toBe(true);
  });

  it("asks about a line that does not parse, whatever a rule allows", async () => {
    ruleset = [rule("bash", "*", "allow")];
    expect((await run("ask", "bash", { command: "echo ok > parsed" })).type).toBe("output");
    expect((await run("ask", "bash", { command: "echo 'unclosed > broken" })).type).toBe("error");
    expect(asked).toHaveLength(1);
    expect(await exists("broken")).toBe(false);
  });

  it("an ask rule asks in full mode; headless, the refusal names the rule", async () => {
    ruleset = [rule("fs.write", "*.md", "ask", "project")];
    expect((await run("full", "write", { path: "r.md", content: "x\n" })).type).toBe("error");
    expect(asked).toHaveLength(1);
    const headless = await run("full", "write", { path: "r.md", content: "x\n" }, true);
    expect(JSON.stringify(headless)).toContain('project rule: ask fs.write \\"*.md\\"');
    expect(await exists("r.md")).toBe(false);
  });
});

describe("toolhost call obeys the rules", () => {
  const t = useAgentEnv({
    files: { "a.txt": "a\n" },
    home: { "config.json": JSON.stringify({ permissions: [{ permission: "bash", pattern: "touch denied*", action: "deny" }] }) },
  });
  it("a user deny rule refuses the call in the default full mode", async () => {
    const { home, ws } = t;
    const env = t.env();
    const cli = (command: string) =>
      promisify(execFile)(process.execPath, [CLI_PATH, "call", "bash", JSON.stringify({ command }), "--cwd", ws], { env }).then(
        (r) => ({ code: 0, stdout: r.stdout }),
        (e: { code: number; stdout: string }) => ({ code: e.code, stdout: e.stdout }),
      );
    const refused = await cli("touch denied-file");
    expect(refused.code).toBe(1);
    const envelope = JSON.parse(refused.stdout);
    expect(envelope.metadata.error_code).toBe("permission_denied");
    expect(JSON.stringify(envelope)).toContain(`user rule in ${path.join(home, "config.json")}`);
    await expect(fsp.access(path.join(ws, "denied-file"))).rejects.toThrow();
    expect((await cli("touch fine-file")).code).toBe(0);
    await fsp.access(path.join(ws, "fine-file"));
  });
});

describe("AgentSession loads the sources", () => {
  const t = useAgentEnv({
    files: { ".toolhost/config.json": JSON.stringify({ permissions: [{ permission: "bash", pattern: "touch *", action: "deny" }] }) },
  });

  it("ignores an untrusted project's rules, obeys them once trusted, and /reload reports broken user rules", async () => {
    const said: string[] = [];
    const s = new AgentSession({
      tools: await SessionTools.create(resolveWorkspace(t.ws)),
      mode: "full",
      frontEnd: {
        say: (text) => void said.push(text),
        text: () => {},
        thought: () => {},
        usage: () => {},
        pending: () => {},
        event: () => {},
        running: () => {},
        done: () => {},
      },
    });
    try {
      const bash = (command: string) => s.callTool("bash", { command }, new AbortController().signal);
      expect((await bash("touch untrusted")).type).toBe("output");

      await s.prompt({ text: "/trust always", content: () => "" });
      const refused = await bash("touch trusted");
      expect(refused.type === "error" && refused.error_text).toContain(`project rule in ${path.join(t.ws, ".toolhost", "config.json")}`);
      await expect(fsp.access(path.join(t.ws, "trusted"))).rejects.toThrow();

      await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ permissions: [{ permission: "bash", action: "never" }] }));
      await s.prompt({ text: "/reload", content: () => "" });
      expect(said.at(-1)).toMatch(/Permission rules left out:\n- .*config\.json: permissions\[0\]/);
      expect(s.policy.problems).toHaveLength(1);
    } finally {
      await s.close();
    }
  });
});
