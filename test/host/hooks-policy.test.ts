import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/host/builtins.js";
import { Hooks, type HookSandbox } from "../../src/host/hooks/engine.js";
import type { HookOutcome } from "../../src/host/hooks/events.js";
import { hookPolicyLayers } from "../../src/host/hooks/policy-layer.js";
import { invoke } from "../../src/host/invoke.js";
import { decide, type DecideOptions, type PolicyVerdict, type SandboxState } from "../../src/policy/decide.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import type { Watchdog } from "../../src/policy/watchdog.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { sandboxStatus } from "../sandbox-status.js";
import { sandboxedSpawn } from "../../src/runtime/sandbox/sandboxed-spawn.js";
import { SessionSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { diskWorkspace, tempDir, type Workspace } from "../helpers.js";
import { useTempHome } from "./extension-fixtures.js";

// A hook's verdict as one layer of the policy, over the real call pipeline: what it can refuse,
// ask and allow, and what it cannot loosen. The session wires it the same way: the hooks run on
// the validated call, a rewrite is validated again, and `decide` takes the hook's layers.

/** Claude Code hook scripts as users write them: node (the documentation's validator example) and POSIX sh. */
const SCRIPTS: Record<string, string> = {
  "block-rm.mjs": fileURLToPath(new URL("../fixtures/claude-hooks/block-rm.mjs", import.meta.url)),
  "block-rm.sh": fileURLToPath(new URL("../fixtures/claude-hooks/block-rm.sh", import.meta.url)),
};
const registry = builtinRegistry();
const status = await sandboxStatus("host/hooks-policy.test.ts");
let ws: Workspace;
const runtimes: RuntimeSession[] = [];
beforeEach(async () => {
  await useTempHome();
  ws = await diskWorkspace({ "victim.txt": "keep me\n", "a.ts": "export const a = 1;\n" });
});
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
  await ws.cleanup();
});

/** Where the session runs a project's hooks: its sandbox (they run nowhere else). */
function hookSandbox(): HookSandbox {
  const own = new SessionSandbox({ setting: { value: "on", source: "test" } }).start();
  const runtime = new RuntimeSession({ workspace: ws.root, spawnTransform: own.transform });
  runtimes.push(runtime);
  return (request) => sandboxedSpawn(runtime, request, { toolId: "hook" }, () => own.state());
}

interface Setting {
  mode?: ModeId;
  ruleset?: SourcedRule[];
  sandbox?: SandboxState;
  watchdog?: Watchdog;
  /** Where the project's hooks run (none: they do not). */
  hookSandbox?: HookSandbox;
}

/** One call as the session will make it: hooks, the (rewritten) call validated, then decided with the hook's layers. */
async function call(hooks: Hooks, toolId: string, args: Record<string, unknown>, setting: Setting = {}) {
  const tool = registry.get(toolId);
  if (!tool) throw new Error(toolId);
  const input = { sessionId: "s", cwd: ws.root, callId: "c", tool: { id: toolId, kind: tool.kind }, args };
  const outcome = await hooks.run("tool_call", input, { sandbox: setting.hookSandbox });
  return judge(outcome, toolId, outcome.updatedArgs ?? args, setting);
}

async function judge(outcome: HookOutcome<"tool_call"> | undefined, toolId: string, args: Record<string, unknown>, setting: Setting = {}) {
  const options: DecideOptions = {
    roots: ws.session.roots,
    mode: () => setting.mode ?? "full",
    rules: new SessionRules(),
    ruleset: () => setting.ruleset ?? [],
    ...(setting.sandbox ? { sandbox: () => setting.sandbox as SandboxState } : {}),
    ...(setting.watchdog ? { watchdog: setting.watchdog } : {}),
    layers: hookPolicyLayers(outcome),
  };
  let verdict: PolicyVerdict | undefined;
  const envelope: Envelope = await invoke(registry, toolId, args, {
    session: ws.session,
    authorize: async (c) => {
      verdict = await decide(c, options);
      // Headless: nobody answers an ask.
      return verdict.action === "allow" ? { outcome: "allow" } : { outcome: "deny", reason: verdict.why, code: "permission_denied" };
    },
  });
  return { envelope, verdict };
}

describe("a hook in the policy's ordered decision", () => {
  it.skipIf(!status.available)(
    "an unmodified Claude Code script refuses an rm through bash: the call never runs, and the why names the hook",
    async () => {
      const userHome = await tempDir();
      await fsp.mkdir(path.join(ws.root, ".claude/hooks"), { recursive: true });
      await fsp.copyFile(SCRIPTS["block-rm.mjs"] as string, path.join(ws.root, ".claude/hooks/block-rm.mjs"));
      await fsp.writeFile(
        path.join(ws.root, ".claude/settings.json"),
        JSON.stringify({
          hooks: {
            PreToolUse: [
              { matcher: "Bash", hooks: [{ type: "command", command: 'node "$CLAUDE_PROJECT_DIR/.claude/hooks/block-rm.mjs"' }] },
            ],
          },
        }),
      );
      const hooks = Hooks.load(ws.root, { config: { config: {}, path: "/none", problems: [] }, trusted: true, userHome });
      const sandboxed = hookSandbox();
      const { envelope, verdict } = await call(hooks, "bash", { command: "rm victim.txt" }, { hookSandbox: sandboxed });
      expect(verdict).toMatchObject({ action: "deny", layer: "hook", code: "permission_denied" });
      expect(envelope).toMatchObject({ type: "error", metadata: { error_code: "permission_denied" } });
      expect(envelope.type === "error" && envelope.error_text).toBe(
        `The bash call was refused by the hook PreToolUse[0].hooks[0] in ${path.join(ws.root, ".claude/settings.json")}: • Use trash or git clean instead of rm. Do not work around it; ask the user if it should run.`,
      );
      expect(await ws.text("victim.txt")).toBe("keep me\n");
      // Anything else runs as the mode says.
      const listed = await call(hooks, "bash", { command: "ls" }, { hookSandbox: sandboxed });
      expect(listed.verdict).toMatchObject({ action: "allow", layer: "mode" });
      expect(listed.envelope.type).toBe("output");
    },
  );

  it("a project's PreToolUse hook that cannot run (no sandbox) fails closed: headless, every call it covers is refused, naming it", async () => {
    const userHome = await tempDir();
    const settings = path.join(ws.root, ".claude/settings.json");
    await fsp.mkdir(path.dirname(settings), { recursive: true });
    await fsp.writeFile(settings, JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ command: "exit 0" }] }] } }));
    const hooks = Hooks.load(ws.root, { config: { config: {}, path: "/none", problems: [] }, trusted: true, userHome });
    const { envelope, verdict } = await call(hooks, "bash", { command: "echo ran > ran.txt" });
    expect(verdict).toMatchObject({ action: "ask", layer: "hook" });
    expect(envelope.type === "error" && envelope.error_text).toContain(
      `the hook PreToolUse[0].hooks[0] in ${settings} asks: the project's hook could not run (this session runs no sandbox for hooks)`,
    );
    expect(await fsp.stat(path.join(ws.root, "ran.txt")).catch(() => null)).toBeNull();
    // A call it does not cover runs as the mode says.
    expect((await call(hooks, "read", { path: "a.ts" })).verdict).toMatchObject({ action: "allow", layer: "mode" });
  });

  it("a rewritten call is validated again and runs as rewritten", async () => {
    const userHome = await tempDir();
    const rewrite = (json: unknown) => `cat > /dev/null; printf '%s' '${JSON.stringify(json)}'`;
    const config = {
      config: {
        hooks: {
          PreToolUse: [
            { matcher: "Bash", hooks: [{ command: rewrite({ hookSpecificOutput: { updatedInput: { command: "echo rewritten" } } }) }] },
            { matcher: "Read", hooks: [{ command: rewrite({ hookSpecificOutput: { updatedInput: { offset: "first" } } }) }] },
          ],
        },
      },
      path: path.join(userHome, "config.json"),
      problems: [],
    };
    const hooks = Hooks.load(ws.root, { config, trusted: true, userHome });
    const { envelope } = await call(hooks, "bash", { command: "echo original" });
    expect(envelope).toMatchObject({ type: "output", data: { stdout: "rewritten\n" } });
    const bad = await call(hooks, "read", { path: "a.ts" });
    expect(bad.verdict).toBeUndefined();
    expect(bad.envelope).toMatchObject({ type: "error", metadata: { error_code: "invalid_arguments" } });
  });

  const hook = (decision: "allow" | "deny" | "ask", reason?: string): HookOutcome<"tool_call"> => ({
    problems: [],
    messages: [],
    decision,
    source: "tool_call[0] in ~/.toolhost/config.json",
    ...(reason ? { reason } : {}),
  });
  const MISSING: SandboxState = { active: false, off: false, reason: "bwrap is not installed" };
  const rule = (pattern: string, action: SourcedRule["action"], source: SourcedRule["source"] = "user"): SourcedRule => ({
    permission: "bash",
    pattern,
    action,
    source,
  });
  const asks: Watchdog = async () => ({ action: "ask", check: "x", reason: "because" });
  const table: [string, HookOutcome<"tool_call">, string, Record<string, unknown>, Setting, Partial<PolicyVerdict>][] = [
    ["its deny refuses in full mode", hook("deny", "no"), "bash", { command: "true" }, {}, { action: "deny", layer: "hook" }],
    [
      "its ask asks in full mode",
      hook("ask", "sure?"),
      "bash",
      { command: "true" },
      {},
      { action: "ask", layer: "hook", why: "the hook tool_call[0] in ~/.toolhost/config.json asks: sure?" },
    ],
    [
      "its allow skips the mode's question",
      hook("allow", "known safe"),
      "bash",
      { command: "true" },
      { mode: "ask" },
      { action: "allow", layer: "hook", why: "allowed by the hook tool_call[0] in ~/.toolhost/config.json: known safe" },
    ],
    [
      "its allow cannot loosen a manifest deny",
      hook("allow"),
      "bash",
      { command: "rm -rf x" },
      { ruleset: [rule("rm *", "deny", "manifest")] },
      { action: "deny", layer: "rule" },
    ],
    [
      "its allow cannot loosen a missing sandbox",
      hook("allow"),
      "bash",
      { command: "true" },
      { mode: "ask", sandbox: MISSING },
      { action: "ask", layer: "sandbox" },
    ],
    [
      "its allow leaves an ask rule asking",
      hook("allow"),
      "bash",
      { command: "git push" },
      { ruleset: [rule("git push*", "ask")] },
      { action: "ask", layer: "rule" },
    ],
    [
      "its allow leaves the watchdog's ask",
      hook("allow"),
      "bash",
      { command: "true" },
      { mode: "ask", watchdog: asks },
      { action: "ask", layer: "watchdog" },
    ],
    [
      "its allow cannot loosen read-only mode",
      hook("allow"),
      "edit",
      { path: "a.ts", old_string: "1", new_string: "2" },
      { mode: "read-only" },
      { action: "deny", layer: "mode" },
    ],
    [
      "its deny beats a rule's allow",
      hook("deny"),
      "bash",
      { command: "true" },
      { ruleset: [rule("true", "allow")] },
      { action: "deny", layer: "hook" },
    ],
    [
      "its ask beats a rule's allow",
      hook("ask"),
      "bash",
      { command: "true" },
      { ruleset: [rule("true", "allow")] },
      { action: "ask", layer: "hook" },
    ],
    [
      "a rule's deny keeps its own reason over the hook's",
      hook("deny", "hook says no"),
      "bash",
      { command: "rm x" },
      { ruleset: [rule("rm *", "deny")] },
      { action: "deny", layer: "rule" },
    ],
  ];
  it.each(table)("%s", async (_name, outcome, toolId, args, setting, expected) => {
    const { verdict } = await judge(outcome, toolId, args, setting);
    expect(verdict).toMatchObject(expected);
    // Where the hook decides, it changes the verdict; where it cannot, the verdict is what it is without the hook.
    const without = (await judge(undefined, toolId, args, setting)).verdict;
    if (expected.layer === "hook") expect(without?.action).not.toBe(expected.action);
    else expect({ action: without?.action, layer: without?.layer }).toEqual({ action: verdict?.action, layer: verdict?.layer });
  });
});
