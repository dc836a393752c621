import { describe, expect, it } from "vitest";
import { parseBash } from "../../src/policy/bash-parse.js";
import { sessionAuthorizer, type ApprovalRequest } from "../../src/policy/authorizer.js";
import type { ToolCallRequest } from "../../src/policy/call.js";
import { normalizeLine } from "../../src/policy/normalize.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import { deniedPrograms } from "../../src/policy/denied-programs.js";
import type { AnyTool } from "../../src/tool/define.js";

// Issue 33: a command whose effect is not in its text (a script file, a makefile, a package's
// program, a program named by its path, an environment variable that hands a program code) is
// opaque: where a bash deny or ask rule is in force it asks, headless it is refused, with the reason.

const ws = "/tmp/th-opaque-ws";
const BASH = { id: "bash", kind: "execute", requires: { shell: ["*"] } } as unknown as AnyTool;
const call = (line: string): ToolCallRequest => ({
  callId: "c1",
  sessionId: "s1",
  tool: BASH,
  args: { command: line },
  targets: { commands: [line], paths: [ws], hosts: [] },
  title: line,
  locations: [],
  preview: [],
});
const rule = (action: SourcedRule["action"], pattern: string): SourcedRule => ({ source: "user", permission: "bash", pattern, action });

async function judge(line: string, rules: SourcedRule[], headless = false) {
  let asked: ApprovalRequest | undefined;
  const authorize = sessionAuthorizer({
    roots: [ws],
    mode: () => "full",
    rules: new SessionRules(),
    ruleset: () => rules,
    ask: headless
      ? undefined
      : async (request) => {
          asked = request;
          return "reject_once";
        },
  });
  const decision = await authorize(call(line), new AbortController().signal);
  return { decision, asked, verdict: asked ? "ask" : decision.outcome };
}

const unknownOf = async (line: string) => {
  const parsed = await parseBash(line);
  if (!parsed) throw new Error(`${line} does not parse`);
  return (await normalizeLine(parsed)).unknown;
};

/** The bypasses of issue 33 and their kin: [line, what the reason names]. */
const OPAQUE: [string, RegExp][] = [
  ["sh ./del.sh f", /sh runs the script \.\/del\.sh/],
  ["bash del.sh", /bash runs the script del\.sh/],
  ["bash <(echo rm f)", /bash runs the script <\(echo rm f\)/],
  ["source <(echo rm f)", /source runs the commands/],
  [". ./del.sh", /\. runs the commands/],
  ["./del.sh f", /\.\/del\.sh is a program or script/],
  ["bin/x f", /bin\/x is a program or script/],
  ["/lib64/ld-linux-x86-64.so.2 /usr/bin/rm f", /ld-linux-x86-64\.so\.2 loads and runs/],
  ['script -q -c "$CMD" /dev/null', /script -c runs a script known only when it runs/],
  ["npm exec -- rm f", /npm exec runs a package's/],
  ["npx rm f", /npx runs a package's program/],
  ["pnpx rm f", /pnpx/],
  ["bunx rm f", /bunx/],
  ["yarn dlx rimraf f", /yarn dlx/],
  ["npm test", /npm test/],
  ["make d", /make runs the recipes/],
  ["make -C sub", /make runs the recipes/],
  ["sudo make install", /make runs the recipes/],
  ["echo d | xargs make", /make runs the recipes/],
  ["BASH_ENV=<(echo rm f) bash -c true", /BASH_ENV= makes programs run code/],
  ["export BASH_ENV=./x; bash -c true", /BASH_ENV=/],
  ["env ENV=./x sh -c true", /ENV=/],
  ["LD_PRELOAD=./x.so ls", /LD_PRELOAD=/],
  ["PS4='$(rm f)' bash -xc true", /PS4=/],
  ["python3 x.py", /python3 runs x\.py/],
  ["python3 -m pytest", /python3 runs/],
  ["node del.js", /node runs del\.js/],
  ["node --test", /node runs code/],
  ["perl x.pl", /perl runs x\.pl/],
  ["ruby x.rb", /ruby runs x\.rb/],
  ["awk -f x.awk f", /awk runs a program file/],
  ["sed -f x.sed f", /sed runs a script file/],
  ["env -S 'rm f'", /env -S/],
  ["alias d=rm", /alias changes what a later command name runs/],
  ["hash -p /usr/bin/rm d", /hash changes/],
  ["cargo run", /cargo run/],
];

/** Read through: the deny rule itself sees the `rm` (not opaque). */
const READABLE = [
  "bash -c 'rm f'",
  "sudo sh -c 'rm f'",
  "script -qc 'rm f' /dev/null",
  "script -c 'rm f' /dev/null",
  "script --command='rm f' /dev/null",
  "flock -xc 'rm f' /tmp/l",
  "find . -name f -exec rm {} \\;",
  "echo f | xargs rm",
  "/usr/bin/rm f",
  "chrt 10 rm f",
  "env A=1 rm f",
];

describe("the opaque classifier", () => {
  it.each(OPAQUE)("%s is opaque, with its reason", async (line, reason) => {
    const unknown = await unknownOf(line);
    expect(unknown.join("; ")).toMatch(reason);
  });

  it.each(READABLE)("%s is read through: the rm behind it is denied, not asked about", async (line) => {
    expect((await judge(line, [rule("deny", "rm *")])).verdict).toBe("deny");
  });

  it("ordinary lines are not opaque", async () => {
    for (const line of [
      "git status",
      "ls -la",
      "cat x | grep y",
      "node --version",
      "/usr/bin/env ls",
      "npm view x",
      "cargo --version",
      "tsc --noEmit",
    ]) {
      expect([line, await unknownOf(line)]).toEqual([line, []]);
    }
  });
});

describe("opaque lines under a deny rule", () => {
  it.each(OPAQUE)("%s asks, and the approval says why", async (line) => {
    const { asked } = await judge(line, [rule("deny", "rm *")]);
    expect(asked?.why).toMatch(/its effect cannot be read from its text, and a deny rule for `rm \*` is in force/);
  });

  it.each(OPAQUE)("%s is refused headless with the reason", async (line, reason) => {
    const { decision } = await judge(line, [rule("deny", "rm *")], true);
    expect(decision.outcome).toBe("deny");
    const text = decision.outcome === "deny" ? decision.reason : "";
    expect(text).toMatch(/its effect cannot be read from its text, and a deny rule for `rm \*` is in force/);
    expect(text).toMatch(reason);
  });

  it("an ask rule guards the same way", async () => {
    const { asked } = await judge("make d", [rule("ask", "git push*")]);
    expect(asked?.why).toMatch(/an ask rule for `git push\*` is in force/);
  });

  it("without a bash deny or ask rule, opaque lines are left to the mode", async () => {
    for (const [line] of OPAQUE) {
      expect([line, (await judge(line, [])).verdict]).toEqual([line, "allow"]);
      expect([line, (await judge(line, [rule("allow", "git *")])).verdict]).toEqual([line, "allow"]);
    }
  });
});

describe("the programs the sandbox stubs out", () => {
  it("names a program a bash deny rule denies whole, and nothing a narrower rule names", () => {
    const r = (pattern: string, permission = "bash", action: SourcedRule["action"] = "deny"): SourcedRule => ({
      source: "user",
      permission,
      pattern,
      action,
    });
    const rules = [
      r("rm *"),
      r("/usr/bin/curl *", "shell.run"),
      r("wget"),
      r("git push*"),
      r("rm -rf *"),
      r("* --force"),
      r("nc *", "bash", "ask"),
      r("scp *", "fs.read"),
      { ...r("dd *"), source: "session" as const },
    ];
    expect(deniedPrograms(rules)).toEqual(["rm", "curl", "wget"]);
  });
});
