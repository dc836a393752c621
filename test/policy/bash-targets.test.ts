import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/host/builtins.js";
import { invoke } from "../../src/host/invoke.js";
import { sessionAuthorizer, type ApprovalAnswer, type ApprovalRequest } from "../../src/policy/authorizer.js";
import { parseBash } from "../../src/policy/bash-parse.js";
import { bashFileTargets } from "../../src/policy/bash-targets.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { diskWorkspace, tempDir, type Workspace } from "../helpers.js";

// A bash line's files, read from the parser: what it redirects to and the paths it names.

async function files(line: string, cwd = "/ws", home = "/home/u") {
  const parsed = await parseBash(line);
  if (!parsed) throw new Error(`does not parse: ${line}`);
  return bashFileTargets(parsed, cwd, home);
}
const show = async (line: string) => {
  const f = await files(line);
  return [...f.targets.map((t) => `${t.access} ${t.path}`), ...f.unknown.map((u) => `unknown ${u}`)];
};

describe("bashFileTargets", () => {
  it("reads redirections: out is a write, < is a read, devices are nothing", async () => {
    expect(await show("echo x > ~/.bashrc")).toEqual(["write /home/u/.bashrc"]);
    expect(await show("echo x >> /etc/hosts 2>&1")).toEqual(["write /etc/hosts"]);
    expect(await show("make &> build.log")).toEqual(["write /ws/build.log"]);
    expect(await show("sort < ../in.txt > out.txt")).toEqual(["read /in.txt", "write /ws/out.txt"]);
    expect(await show("ls > /dev/null 2>/dev/stderr")).toEqual([]);
    expect(await show("{ echo a; echo b; } > /tmp/ab")).toContain("write /tmp/ab");
  });

  it("takes literal path arguments as reads, and the destinations of commands that write", async () => {
    expect(await show("cat /etc/passwd ./a notes.txt")).toEqual(["read /etc/passwd", "read /ws/a"]);
    expect(await show("cp src/a.ts ~/backup/a.ts")).toEqual(["read /ws/src/a.ts", "write /home/u/backup/a.ts"]);
    expect(await show("mv -f ./x ../y")).toEqual(["read /ws/x", "write /y"]);
    expect(await show("rm -rf ~/.cache/x /tmp/y")).toEqual(["write /home/u/.cache/x", "write /tmp/y"]);
    expect(await show("dd if=/dev/zero of=/tmp/disk.img bs=1M")).toEqual(["read /dev/zero", "write /tmp/disk.img"]);
    expect(await show("tee -a /tmp/log")).toEqual(["write /tmp/log"]);
    expect(await show("curl https://example.com/a/b --output=/tmp/o")).toEqual(["read /tmp/o"]);
    expect(await show("bash -c 'echo hi > /tmp/inner'")).toContain("write /tmp/inner");
  });

  it("follows a literal cd; after an unknown one, relative targets are unknown", async () => {
    expect(await show("cd /tmp && echo x > out")).toEqual(["read /tmp", "write /tmp/out"]);
    expect(await show("cd && touch .profile")).toEqual(["write /home/u/.profile"]);
    expect(await show('cd "$D" && echo x > out')).toEqual(["unknown out"]);
  });

  it("calls targets the shell expands at run time unknown", async () => {
    expect(await show("echo x > $F")).toEqual(["unknown $F"]);
    expect(await show('cat "$HOME/.ssh/id_rsa"')).toEqual(['unknown "$HOME/.ssh/id_rsa"']);
    expect(await show("cat ~root/.ssh/id_rsa")).toEqual(["unknown ~root/.ssh/id_rsa"]);
    expect(await show("echo $X")).toEqual([]);
  });
});

describe("the authorizer judges the files a bash line writes outside the workspace", () => {
  let ws: Workspace;
  let home: string;
  let asked: ApprovalRequest[];
  let answers: ApprovalAnswer[];
  let ruleset: SourcedRule[];
  let mode: ModeId;
  const registry = builtinRegistry();
  beforeEach(async () => {
    ws = await diskWorkspace({ "a.txt": "a\n" });
    home = await tempDir();
    asked = [];
    answers = [];
    ruleset = [];
    mode = "ask";
  });
  afterEach(async () => {
    await ws.cleanup();
    await fsp.rm(home, { recursive: true, force: true });
  });

  const rule = (permission: string, pattern: string, action: SourcedRule["action"]): SourcedRule => ({
    permission,
    pattern,
    action,
    source: "user",
  });
  function run(command: string): Promise<Envelope> {
    const authorize = sessionAuthorizer({
      roots: ws.session.roots,
      mode: () => mode,
      rules: new SessionRules(),
      ruleset: () => ruleset,
      home,
      ask: async (request) => {
        asked.push(request);
        return answers.shift() ?? "reject_once";
      },
    });
    return invoke(registry, "bash", { command }, { session: ws.session, authorize });
  }
  const outcome = (e: Envelope) => (e.type === "output" ? "ran" : e.metadata.error_code);
  const exists = (p: string) =>
    fsp.access(p).then(
      () => true,
      () => false,
    );

  it('a rule deny fs.write "~/**" refuses `echo x > ~/.bashrc`, even in full mode', async () => {
    mode = "full";
    ruleset = [rule("fs.write", "~/**", "deny")];
    const target = path.join(home, ".bashrc");
    const envelope = await run(`echo x > ${target}`);
    expect(outcome(envelope)).toBe("permission_denied");
    expect(JSON.stringify(envelope)).toContain('deny fs.write \\"~/**\\"');
    expect(await exists(target)).toBe(false);
    // A read of the same file is no write: the rule does not speak about it.
    await fsp.writeFile(target, "hi\n");
    expect(outcome(await run(`cat ${target}`))).toBe("ran");
    // Writing inside the workspace is untouched.
    expect(outcome(await run("echo x > inside.txt"))).toBe("ran");
    expect(await ws.text("inside.txt")).toBe("x\n");
  });

  it("a symlink inside the workspace that leads out is judged where it lands", async () => {
    mode = "full";
    ruleset = [rule("fs.write", "~/**", "deny")];
    await fsp.symlink(home, path.join(ws.root, "link"));
    const envelope = await run("echo x > link/.bashrc");
    expect(outcome(envelope)).toBe("permission_denied");
    expect(await exists(path.join(home, ".bashrc"))).toBe(false);
    expect(outcome(await run("echo x > a-file.txt"))).toBe("ran");
  });

  it("an allow rule for the command does not cover a write outside the workspace: it asks, saying why", async () => {
    for (const m of ["ask", "accept-edits"] as const) {
      mode = m;
      asked = [];
      ruleset = [rule("bash", "echo *", "allow")];
      expect(outcome(await run("echo x > inside.txt"))).toBe("ran");
      const target = path.join(home, `${m}.txt`);
      answers = ["allow_once"];
      expect(outcome(await run(`echo x > ${target}`))).toBe("ran");
      expect(asked).toHaveLength(1);
      expect(asked[0]?.why).toBe(
        `no rule covers every part of the call (it writes ${target}, outside the workspace); ${m} mode asks before running commands`,
      );
      expect(await fsp.readFile(target, "utf8")).toBe("x\n");
      // An allow for the path too lets it run without asking.
      ruleset.push(rule("fs.write", `${home}/**`, "allow"));
      expect(outcome(await run(`echo y > ${target}`))).toBe("ran");
      expect(asked).toHaveLength(1);
    }
  });

  it("a target known only at run time turns a rule's allow into an ask", async () => {
    ruleset = [rule("bash", "echo *", "allow")];
    expect(outcome(await run("echo x > $F"))).toBe("rejected");
    expect(asked[0]?.why).toBe("the line names `$F`, known only when it runs, so no rule can allow it without asking");
  });

  it("an 'always' answer covers the outside file it was asked about, and only that one", async () => {
    const rules = new SessionRules();
    const authorize = sessionAuthorizer({
      roots: ws.session.roots,
      mode: () => "ask",
      rules,
      home,
      ask: async (request) => {
        asked.push(request);
        return answers.shift() ?? "reject_once";
      },
    });
    const go = (command: string) => invoke(registry, "bash", { command }, { session: ws.session, authorize });
    const target = path.join(home, "out.txt");
    answers = ["allow_always"];
    expect(outcome(await go(`echo x > ${target}`))).toBe("ran");
    expect(outcome(await go(`echo x > ${target}`))).toBe("ran");
    expect(asked).toHaveLength(1);
    expect(outcome(await go(`echo x > ${path.join(home, "other.txt")}`))).toBe("rejected");
    expect(asked).toHaveLength(2);
    expect(rules.list().map((r) => r.pattern)).toEqual(["echo x", target]);
  });
});
