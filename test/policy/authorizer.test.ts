import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { invoke } from "../../src/host/invoke.js";
import { builtinRegistry } from "../../src/host/builtins.js";
import { sessionAuthorizer, type ApprovalAnswer, type ApprovalRequest } from "../../src/policy/authorizer.js";
import type { ModeId } from "../../src/policy/modes.js";
import { SessionRules } from "../../src/policy/session-rules.js";
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
