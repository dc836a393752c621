import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/host/builtins.js";
import { invoke } from "../../src/host/invoke.js";
import { sessionAuthorizer, type ApprovalAnswer, type ApprovalRequest } from "../../src/policy/authorizer.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import type { Watchdog, WatchdogCall, WatchdogVerdict } from "../../src/policy/watchdog.js";
import { builtinWatchdog } from "../../src/policy/watchdog/builtin.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { diskWorkspace, tempDir, type Workspace } from "../helpers.js";

// The watchdog's place in the session's authorizer, over the real pipeline and real processes:
// after the rules' deny, before the mode; it refuses what rules and modes allow, its ask holds in
// full mode, and headless an ask is a deny that names the check.

let ws: Workspace;
let outside: string;
let asked: ApprovalRequest[];
let answers: ApprovalAnswer[];
let seen: WatchdogCall[];
const registry = builtinRegistry();

beforeEach(async () => {
  ws = await diskWorkspace({ "a.txt": "a\n" });
  outside = await tempDir({ "keep.txt": "precious\n" });
  asked = [];
  answers = [];
  seen = [];
});
afterEach(async () => {
  await ws.cleanup();
  await fsp.rm(outside, { recursive: true, force: true });
});

const rule = (action: SourcedRule["action"], pattern = "*"): SourcedRule =>
  ({ source: "user", file: "/cfg.json", index: 0, permission: "bash", pattern, action }) as SourcedRule;

function run(
  toolId: string,
  args: Record<string, unknown>,
  options: { mode?: ModeId; watchdog?: Watchdog; rules?: SourcedRule[]; headless?: boolean; sandboxed?: boolean } = {},
): Promise<Envelope> {
  const watchdog = options.watchdog ?? builtinWatchdog();
  const authorize = sessionAuthorizer({
    roots: ws.session.roots,
    mode: () => options.mode ?? "full",
    rules: new SessionRules(),
    ruleset: () => options.rules ?? [],
    ask: options.headless
      ? undefined
      : async (request) => {
          asked.push(request);
          return answers.shift() ?? "reject_once";
        },
    watchdog: async (call, signal) => {
      seen.push(call);
      return watchdog(call, signal);
    },
    manifest: () => ({ profile: "default", requires: {}, permissions: [] }),
    // Not sandboxed: the user switched the sandbox off (so the sandbox stage itself asks nothing).
    sandbox:
      options.sandboxed === undefined ? undefined : () => (options.sandboxed ? { active: true, off: false } : { active: false, off: true }),
  });
  return invoke(registry, toolId, args, { session: ws.session, authorize });
}

const code = (e: Envelope) => (e.type === "output" ? "ran" : e.metadata.error_code);
const text = (e: Envelope) => (e.type === "error" ? e.error_text : "");

describe("the watchdog in the authorizer", () => {
  it("refuses rm -rf outside the workspace in full mode, and nothing is removed", async () => {
    const envelope = await run("bash", { command: `rm -rf ${outside}` });
    expect(code(envelope)).toBe("permission_denied");
    expect(text(envelope)).toMatch(/watchdog refused this bash call \(rm-outside: .*outside the workspace\)/);
    expect(await fsp.readFile(path.join(outside, "keep.txt"), "utf8")).toBe("precious\n");
    expect(asked).toHaveLength(0);
  });

  it("refuses what an allow rule allows; a deny rule decides before the watchdog is asked", async () => {
    expect(code(await run("bash", { command: `rm -rf ${outside}` }, { rules: [rule("allow")] }))).toBe("permission_denied");
    expect(seen).toHaveLength(1);
    const denied = await run("bash", { command: "true" }, { rules: [rule("deny")] });
    expect(text(denied)).toMatch(/permission rule/);
    expect(seen).toHaveLength(1);
  });

  it("lets everyday commands run in full mode without a question", async () => {
    expect(code(await run("bash", { command: "rm -rf ./build && echo ok" }))).toBe("ran");
    expect(code(await run("read", { path: "a.txt" }))).toBe("ran");
    expect(asked).toHaveLength(0);
  });

  it("asks in full mode when the watchdog asks, and says why", async () => {
    answers = ["allow_once"];
    const envelope = await run("bash", { command: "git ls-remote https://127.0.0.1:9/x.git || true" }, { sandboxed: false });
    expect(code(envelope)).toBe("ran");
    expect(asked).toHaveLength(1);
    expect(asked[0]?.why).toMatch(/^watchdog: network: git ls-remote talks to a remote/);
  });

  it("headless, an ask is a deny that names the check", async () => {
    const envelope = await run("bash", { command: "curl https://example.invalid" }, { sandboxed: false, headless: true });
    expect(code(envelope)).toBe("permission_denied");
    expect(text(envelope)).toMatch(/needs approval .*\(watchdog: network: curl reaches the network/);
  });

  it("never allows what read-only mode refuses", async () => {
    const allowAll: Watchdog = async () => ({ action: "allow" });
    const asks: Watchdog = async () => ({ action: "ask", check: "x", reason: "because" });
    expect(code(await run("bash", { command: "true" }, { mode: "read-only", watchdog: allowAll }))).toBe("permission_denied");
    expect(code(await run("bash", { command: "true" }, { mode: "read-only", watchdog: asks }))).toBe("permission_denied");
    expect(asked).toHaveLength(0);
  });

  it("a watchdog that throws refuses the call", async () => {
    const broken: Watchdog = async () => {
      throw new Error("wedged");
    };
    const envelope = await run("read", { path: "a.txt" }, { watchdog: broken });
    expect(code(envelope)).toBe("permission_denied");
    expect(text(envelope)).toMatch(/the watchdog failed: wedged/);
  });

  it("sees the tool, arguments, targets, manifest, session, roots and sandbox", async () => {
    const verdict: WatchdogVerdict = { action: "allow" };
    await run("bash", { command: "echo hi", workdir: "." }, { watchdog: async () => verdict });
    expect(seen[0]).toMatchObject({
      tool: { id: "bash", kind: "execute" },
      args: { command: "echo hi", workdir: "." },
      targets: { commands: ["echo hi"], paths: [ws.root] },
      manifest: { profile: "default" },
      sessionId: ws.session.id,
      roots: ws.session.roots,
      sandboxed: true,
    });
  });
});
