import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readConfigFile } from "../../src/config/file.js";
import { parseUserConfig } from "../../src/config/schema.js";
import { Hooks, type HookSandbox, type HooksOptions } from "../../src/host/hooks/engine.js";
import type { HookInput } from "../../src/host/hooks/events.js";
import { groupHasLiveMembers } from "../../src/runtime/process-groups.js";
import { sandboxStatus } from "../sandbox-status.js";
import { sandboxedSpawn } from "../../src/runtime/sandbox/sandboxed-spawn.js";
import { SessionSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { tempDir, writeDeep } from "../helpers.js";
import { useTempHome } from "./extension-fixtures.js";

// The engine with real hook commands: each test writes the files a user would, and the hooks run
// as processes with the JSON on stdin.

/** Claude Code hook scripts as users write them: node (the documentation's validator example) and POSIX sh. */
const SCRIPTS: Record<string, string> = {
  "block-rm.mjs": fileURLToPath(new URL("../fixtures/claude-hooks/block-rm.mjs", import.meta.url)),
  "block-rm.sh": fileURLToPath(new URL("../fixtures/claude-hooks/block-rm.sh", import.meta.url)),
};

// A project's command hooks run only inside the sandbox: those cases need one.
const status = await sandboxStatus("host/hooks-engine.test.ts");
if (!status.available) console.warn(`hooks-engine.test.ts: the project-hook cases skip: ${status.reason}`);

let home: string;
let userHome: string;
let project: string;
const runtimes: RuntimeSession[] = [];
beforeEach(async () => {
  home = await useTempHome();
  userHome = await tempDir();
  project = await tempDir({ "victim.txt": "keep me\n" });
});
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

/** The session's sandbox for the project's hooks, as an AgentSession hands it in (`value: "off"`: switched off). */
function sandbox(value: "on" | "off" = "on"): HookSandbox {
  const own = new SessionSandbox({ setting: { value, source: "test" } }).start();
  const runtime = new RuntimeSession({ workspace: project, spawnTransform: own.transform });
  runtimes.push(runtime);
  return (request) => sandboxedSpawn(runtime, request, { toolId: "hook" }, () => own.state());
}

const write = writeDeep;

/** The session's hooks as a toolset loads them: the user's config, ~/.claude, the (trusted) project. */
function load(options: Partial<HooksOptions> = {}): Hooks {
  const configFile = readConfigFile(home);
  return Hooks.load(project, { config: parseUserConfig(configFile), configFile, trusted: true, userHome, ...options });
}

const session = () => ({ sessionId: "s-1", cwd: project, transcriptPath: path.join(home, "s-1.jsonl"), mode: "ask" });
const toolCall = (id: string, kind: "execute" | "read" | "edit", args: Record<string, unknown>): HookInput<"tool_call"> => ({
  ...session(),
  callId: "call-1",
  tool: { id, kind },
  args,
});

/** A hook command that logs its run (one line per run) to `name`.log in the project, then runs `then`. */
const logged = (name: string, then = "true") => `cat > /dev/null; echo ran >> "$CLAUDE_PROJECT_DIR/${name}.log"; ${then}`;
const runs = async (name: string) =>
  (await fsp.readFile(path.join(project, `${name}.log`), "utf8").catch(() => "")).split("\n").filter(Boolean).length;
const answer = (json: unknown) => `cat > /dev/null; printf '%s' '${JSON.stringify(json)}'`;

describe.skipIf(!status.available)("an unmodified Claude Code hook script", () => {
  for (const script of ["block-rm.mjs", "block-rm.sh"]) {
    it(`${script} in .claude/settings.json blocks an rm through bash, with its stderr as the reason (inside the sandbox)`, async () => {
      await fsp.mkdir(path.join(project, ".claude/hooks"), { recursive: true });
      await fsp.copyFile(SCRIPTS[script] as string, path.join(project, ".claude/hooks", script));
      await fsp.chmod(path.join(project, ".claude/hooks", script), 0o755);
      await write(path.join(project, ".claude/settings.json"), {
        hooks: {
          PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: `"$CLAUDE_PROJECT_DIR"/.claude/hooks/${script}` }] }],
        },
      });
      const hooks = load();
      const inside = { sandbox: sandbox() };
      const blocked = await hooks.run(
        "tool_call",
        toolCall("bash", "execute", { command: "rm victim.txt", description: "clean up" }),
        inside,
      );
      expect(blocked).toMatchObject({
        decision: "deny",
        source: "PreToolUse[0].hooks[0] in " + path.join(project, ".claude/settings.json"),
      });
      expect(blocked.reason).toMatch(
        script.endsWith(".mjs")
          ? /^• Use trash or git clean instead of rm$/
          : /^Blocked by policy: rm is not allowed here \(rm victim\.txt\)$/,
      );
      expect(blocked.problems).toEqual([]);
      // Other commands pass without an opinion; other tools never reach it.
      const passed = await hooks.run("tool_call", toolCall("bash", "execute", { command: "ls -la" }), inside);
      expect(passed).toEqual({ problems: [], messages: [] });
      expect(await hooks.run("tool_call", toolCall("read", "read", { path: "rm victim.txt" }), inside)).toEqual({
        problems: [],
        messages: [],
      });
    });
  }
});

describe("what a command hook answers", () => {
  it('reads JSON "permissionDecision" (deny, ask, allow) with its reason, and the older "decision": "block"', async () => {
    await write(path.join(home, "config.json"), {
      hooks: {
        PreToolUse: [
          {
            matcher: "Bash",
            hooks: [
              {
                type: "command",
                command: answer({
                  hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "deny", permissionDecisionReason: "no curl here" },
                }),
              },
            ],
          },
        ],
        tool_call: [
          { matcher: "read", command: answer({ hookSpecificOutput: { permissionDecision: "ask", permissionDecisionReason: "secrets?" } }) },
          { matcher: "edit", command: answer({ hookSpecificOutput: { permissionDecision: "allow" } }) },
          { matcher: "glob", command: answer({ decision: "block", reason: "old style" }) },
        ],
      },
    });
    const hooks = load();
    expect(await hooks.run("tool_call", toolCall("bash", "execute", { command: "curl x" }))).toMatchObject({
      decision: "deny",
      reason: "no curl here",
    });
    expect(await hooks.run("tool_call", toolCall("read", "read", { path: ".env" }))).toMatchObject({ decision: "ask", reason: "secrets?" });
    const allowed = await hooks.run("tool_call", toolCall("edit", "edit", { path: "a", old_string: "x", new_string: "y" }));
    expect(allowed).toMatchObject({ decision: "allow", source: `tool_call[1] in ${path.join(home, "config.json")}` });
    expect(allowed.reason).toBeUndefined();
    expect(await hooks.run("tool_call", toolCall("glob", "read", { pattern: "*" }))).toMatchObject({
      decision: "deny",
      reason: "old style",
    });
  });

  it("updatedInput rewrites the arguments, in Claude Code's names mapped back (only what changed), or toolhost's", async () => {
    const other = path.join(project, "other.txt");
    await write(path.join(home, "config.json"), {
      hooks: {
        PreToolUse: [
          // It echoes the whole input back with one field changed, as scripts do.
          {
            matcher: "Read",
            hooks: [
              {
                command: `node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const i=JSON.parse(s).tool_input;i.file_path=${JSON.stringify(other)};i.limit=5;console.log(JSON.stringify({hookSpecificOutput:{permissionDecision:"allow",updatedInput:i}}))})'`,
              },
            ],
          },
          {
            matcher: "Bash",
            hooks: [{ command: answer({ hookSpecificOutput: { updatedInput: { timeout: 5000, dangerouslyDisableSandbox: false } } }) }],
          },
        ],
        tool_call: [{ matcher: "grep", command: answer({ hookSpecificOutput: { updatedInput: { pattern: "TODO", ignore_case: null } } }) }],
      },
    });
    const hooks = load();
    const read = await hooks.run("tool_call", toolCall("read", "read", { path: "victim.txt", offset: 2 }));
    expect(read).toMatchObject({ decision: "allow", updatedArgs: { path: other, offset: 2, limit: 5 } });
    expect(read.updatedBy).toMatch(/^PreToolUse\[0\]\.hooks\[0\] in /);
    const bash = await hooks.run("tool_call", toolCall("bash", "execute", { command: "make", sandbox: "off", justification: "why" }));
    expect(bash.updatedArgs).toEqual({ command: "make", sandbox: "on", justification: "why", timeout_ms: 5000 });
    expect(bash.decision).toBeUndefined();
    const grep = await hooks.run("tool_call", toolCall("grep", "read", { pattern: "FIXME", ignore_case: true }));
    expect(grep.updatedArgs).toEqual({ pattern: "TODO" });
  });

  it("a hook that hangs is killed with its process group at its timeout and has no opinion, said once; failClosed blocks", async () => {
    const pidFile = path.join(project, "hook.pid");
    const hang = `cat > /dev/null; echo $$ > ${pidFile}; sleep 300 & sleep 300; wait`;
    await write(path.join(home, "config.json"), {
      hooks: {
        tool_call: [
          { matcher: "bash", command: hang, timeout: 0.5 },
          { matcher: "edit", command: hang, timeout: 0.5, failClosed: true },
        ],
      },
    });
    const hooks = load();
    const first = await hooks.run("tool_call", toolCall("bash", "execute", { command: "true" }));
    expect(first.decision).toBeUndefined();
    expect(first.problems).toEqual([
      `The hook tool_call[0] in ${path.join(home, "config.json")} did not finish in time (its process group was killed); it counts as no opinion.`,
    ]);
    const pgid = Number(await fsp.readFile(pidFile, "utf8"));
    expect(await groupHasLiveMembers(pgid)).toBe(false);
    // Said once per session: the second time it is quiet.
    expect((await hooks.run("tool_call", toolCall("bash", "execute", { command: "true" }))).problems).toEqual([]);
    const closed = await hooks.run("tool_call", toolCall("edit", "edit", { path: "a", old_string: "x", new_string: "y" }));
    expect(closed).toMatchObject({
      decision: "deny",
      reason: expect.stringMatching(/^the hook tool_call\[1\] in .* failed \(did not finish in time.*\) and fails closed$/),
    });
    expect(closed.problems[0]).toMatch(/its entry says failClosed, so it blocks\.$/);
  });

  it("garbage on stdout, an unknown decision or another exit code is a failure: no opinion, or a block with failClosed", async () => {
    await write(path.join(home, "config.json"), {
      hooks: {
        tool_call: [
          { matcher: "bash", command: "cat > /dev/null; echo 'all good {'" },
          { matcher: "bash", command: answer({ decision: "maybe" }) },
          { matcher: "bash", command: "cat > /dev/null; echo 'oops: no such thing' >&2; exit 1" },
          { matcher: "bash", command: "cat > /dev/null; echo '{not json'" },
          { matcher: "edit", command: "exit 3", failClosed: true },
        ],
      },
    });
    const hooks = load();
    const out = await hooks.run("tool_call", toolCall("bash", "execute", { command: "true" }));
    expect(out.decision).toBeUndefined();
    expect(out.problems.map((p) => p.replace(/ in \S+config\.json/, ""))).toEqual([
      'The hook tool_call[0] printed text that is not JSON ("all good {"); it counts as no opinion.',
      'The hook tool_call[1] printed an unknown "decision" ("maybe"); it counts as no opinion.',
      "The hook tool_call[2] exited with 1: oops: no such thing; it counts as no opinion.",
      expect.stringMatching(/^The hook tool_call\[3\] printed JSON that does not parse \(.+\); it counts as no opinion\.$/),
    ]);
    expect(await hooks.run("tool_call", toolCall("edit", "edit", { path: "a", old_string: "x", new_string: "y" }))).toMatchObject({
      decision: "deny",
    });
  });

  it("runs in the session's folder with the filtered environment and the project folder in TOOLHOST_PROJECT_DIR and CLAUDE_PROJECT_DIR", async () => {
    await write(path.join(home, "config.json"), {
      hooks: {
        session_start: [
          {
            command: `cat > /dev/null; printf '{"systemMessage":"%s|%s|%s|%s"}' "$(pwd)" "$CLAUDE_PROJECT_DIR" "$TOOLHOST_PROJECT_DIR" "\${SECRET_TOKEN:-unset}"`,
          },
        ],
      },
    });
    // A ~/.bashrc that prints: bash reads it when started over a socket with no SHLVL, unless the hook's environment says otherwise.
    const bashHome = await tempDir({ ".bashrc": "echo 'from bashrc'\n" });
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: bashHome, SECRET_TOKEN: "s3cr3t" };
    delete env.SHLVL;
    const hooks = load({ env });
    const out = await hooks.run("session_start", { ...session(), source: "startup" });
    expect(out).toEqual({ problems: [], messages: [`${project}|${project}|${project}|unset`] });
  });

  it("an abort kills the running hooks and reports nothing", async () => {
    const pidFile = path.join(project, "hook.pid");
    await write(path.join(home, "config.json"), {
      hooks: { tool_call: [{ command: `cat > /dev/null; echo $$ > ${pidFile}; exec sleep 300`, failClosed: true }] },
    });
    const hooks = load();
    const controller = new AbortController();
    const running = hooks.run("tool_call", toolCall("bash", "execute", { command: "true" }), { signal: controller.signal });
    await (async () => {
      while (!(await fsp.stat(pidFile).catch(() => null))?.size) await new Promise((r) => setImmediate(r));
    })();
    controller.abort();
    expect(await running).toEqual({ problems: [], messages: [] });
    expect(await groupHasLiveMembers(Number(await fsp.readFile(pidFile, "utf8")))).toBe(false);
  });
});

describe.skipIf(!status.available)("the order of the sources", () => {
  it("runs every hook, user → profile → project, and the first block wins (a deny over an ask, an ask over an allow)", async () => {
    await write(path.join(home, "config.json"), {
      hooks: {
        tool_call: [
          {
            command: logged(
              "user",
              `printf '%s' '${JSON.stringify({ hookSpecificOutput: { permissionDecision: "ask", permissionDecisionReason: "user asks", updatedInput: { command: "echo user" } } })}'`,
            ),
          },
        ],
      },
    });
    const profileFile = await write(path.join(home, "profiles/p/profile.json"), {
      name: "p",
      description: "test",
      hooks: { tool_call: [{ command: logged("profile", "echo 'profile says no' >&2; exit 2") }] },
    });
    await write(path.join(project, ".toolhost/config.json"), {
      hooks: { tool_call: [{ command: logged("project", "echo 'project says no' >&2; exit 2") }] },
    });
    await write(path.join(project, ".claude/settings.json"), {
      hooks: {
        PreToolUse: [
          {
            hooks: [
              { type: "command", command: logged("claude", answer({ hookSpecificOutput: { updatedInput: { command: "echo claude" } } })) },
            ],
          },
        ],
      },
    });
    const profile = JSON.parse(await fsp.readFile(profileFile, "utf8"));
    const hooks = load({ profile: { hooks: profile.hooks, file: profileFile } });
    expect(hooks.list.map((h) => `${h.level} ${h.file}`)).toEqual([
      `user ${path.join(home, "config.json")}`,
      `profile ${profileFile}`,
      `project ${path.join(project, ".toolhost/config.json")}`,
      `project ${path.join(project, ".claude/settings.json")}`,
    ]);
    const out = await hooks.run("tool_call", toolCall("bash", "execute", { command: "rm -rf /" }), { sandbox: sandbox() });
    expect(out).toMatchObject({ decision: "deny", reason: "profile says no", source: `tool_call[0] in ${profileFile}` });
    // A denied call is not rewritten; every hook ran.
    expect(out.updatedArgs).toBeUndefined();
    for (const name of ["user", "profile", "project", "claude"]) expect(await runs(name)).toBe(1);
    // Without the denials, the user's ask holds and the first rewrite (the user's) wins.
    const asking = load({ trusted: false });
    const asked = await asking.run("tool_call", toolCall("bash", "execute", { command: "ls" }));
    expect(asked).toMatchObject({ decision: "ask", reason: "user asks", updatedArgs: { command: "echo user" } });
  });
});

describe("the other events", () => {
  it("tool_result: a block's reason and additionalContext annotate, updatedToolOutput replaces what the model sees", async () => {
    await write(path.join(home, "config.json"), {
      hooks: {
        PostToolUse: [
          {
            matcher: "Bash",
            hooks: [
              { command: answer({ decision: "block", reason: "the tests failed", hookSpecificOutput: { additionalContext: "see log" } }) },
            ],
          },
          {
            matcher: "Bash",
            hooks: [
              {
                command: `node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const r=JSON.parse(s).tool_response;console.log(JSON.stringify({hookSpecificOutput:{updatedToolOutput:{...r,stdout:r.stdout.replaceAll("hunter2","[redacted]")}}}))})'`,
              },
            ],
          },
        ],
      },
    });
    const hooks = load();
    const data = {
      stdout: "password=hunter2\n",
      stderr: "",
      exit_code: 0,
      signal: null,
      timed_out: false,
      truncated: false,
      duration_ms: 3,
    };
    const out = await hooks.run("tool_result", {
      ...session(),
      callId: "c",
      tool: { id: "bash", kind: "execute" },
      args: { command: "cat .env" },
      result: { type: "output", data, metadata: { duration_ms: 3 } },
    });
    expect(out.annotation).toBe("the tests failed\n\nsee log");
    expect(out.replaceModelResult).toEqual({ ...data, stdout: "password=[redacted]\n", interrupted: false });
  });

  it("prompt: plain stdout adds context, exit 2 blocks with stderr; stop: a block continues the turn unless stop_hook_active", async () => {
    await write(path.join(home, "config.json"), {
      hooks: {
        UserPromptSubmit: [
          { hooks: [{ command: "cat > /dev/null; echo 'Today is a holiday.'" }] },
          { hooks: [{ command: `grep -q 'password' && { echo 'no passwords in prompts' >&2; exit 2; }; exit 0` }] },
        ],
        Stop: [
          {
            hooks: [
              {
                command: `grep -q '"stop_hook_active":true' && exit 0; printf '%s' '${JSON.stringify({ decision: "block", reason: "Run the tests first." })}'`,
              },
            ],
          },
        ],
      },
    });
    const hooks = load();
    expect(await hooks.run("prompt", { ...session(), prompt: "hello" })).toEqual({
      problems: [],
      messages: [],
      addContext: ["Today is a holiday."],
    });
    expect(await hooks.run("prompt", { ...session(), prompt: "my password is x" })).toMatchObject({
      block: true,
      reason: "no passwords in prompts",
    });
    expect(await hooks.run("stop", { ...session(), stopHookActive: false })).toMatchObject({ continue: "Run the tests first." });
    expect((await hooks.run("stop", { ...session(), stopHookActive: true })).continue).toBeUndefined();
    expect(hooks.has("compact")).toBe(false);
    expect(await hooks.run("compact", { ...session(), trigger: "auto" })).toEqual({ problems: [], messages: [] });
  });

  it("a failing tool_result hook with failClosed withholds the result; PostToolUse runs only after a call that succeeded", async () => {
    await write(path.join(home, "config.json"), {
      hooks: {
        tool_result: [
          { command: logged("every", answer({ hookSpecificOutput: { updatedToolOutput: "partly redacted" } })) },
          { matcher: "bash", command: "exit 1", failClosed: true },
        ],
        PostToolUse: [{ hooks: [{ command: logged("claude") }] }],
        stop: [{ command: "exit 1", failClosed: true }],
      },
    });
    const hooks = load();
    const result = (type: "output" | "error") => ({
      ...session(),
      callId: "c",
      tool: { id: "bash", kind: "execute" as const },
      args: { command: "cat .env" },
      result:
        type === "output"
          ? { type, data: { stdout: "pw=hunter2" }, metadata: { duration_ms: 1 } }
          : { type, error_text: "no such file", metadata: { duration_ms: 1, error_code: "not_found" as const } },
    });
    const ok = await hooks.run("tool_result", result("output"));
    expect(ok.replaceModelResult).toMatch(
      /^The result is withheld: the hook tool_result\[1\] in .* failed \(exited with 1\) and fails closed\.$/,
    );
    await hooks.run("tool_result", result("error"));
    expect([await runs("every"), await runs("claude")]).toEqual([2, 1]);
    // A stop hook that fails does not keep the turn going, failClosed or not.
    const stop = await hooks.run("stop", { ...session(), stopHookActive: false });
    expect(stop.continue).toBeUndefined();
    expect(stop.problems).toEqual([expect.stringMatching(/^The hook stop\[0\] in .* exited with 1; it counts as no opinion\.$/)]);
  });

  it('"continue": false ends the turn, and refuses the call it was about', async () => {
    await write(path.join(home, "config.json"), {
      hooks: { tool_call: [{ command: answer({ continue: false, stopReason: "budget spent" }) }] },
    });
    const out = await load().run("tool_call", toolCall("bash", "execute", { command: "true" }));
    expect(out).toMatchObject({ halt: { reason: "budget spent" }, decision: "deny", reason: "budget spent" });
    // Whatever another hook allowed.
    await write(path.join(home, "config.json"), {
      hooks: {
        tool_call: [{ command: answer({ hookSpecificOutput: { permissionDecision: "allow" } }) }, { command: answer({ continue: false }) }],
      },
    });
    expect(await load().run("tool_call", toolCall("bash", "execute", { command: "true" }))).toMatchObject({
      halt: { reason: "a hook ended the turn" },
      decision: "deny",
      reason: "a hook ended the turn",
    });
  });
});

describe("in-process hooks of extension files", () => {
  it("get the event in toolhost's names and answer as objects; a throw, a hang or garbage is no opinion unless failClosed", async () => {
    const { extensionLoader } = await import("../../src/agent/extension-loader.js");
    const { buildToolset } = await import("../../src/host/toolset.js");
    const dir = await tempDir();
    await write(path.join(home, "config.json"), { toolDirs: [dir] });
    await write(
      path.join(dir, "guard.ts"),
      `export const hooks = {
  tool_call: [
    {
      matcher: "bash",
      handler(event: { event: string; tool: { id: string }; args: { command: string }; sessionId: string }) {
        if (event.event !== "tool_call" || event.sessionId !== "s-1" || event.tool.id !== "bash") return { decision: "ask", reason: "unexpected event" };
        const secret = event.args.command.includes("secret");
        event.args.command = "mutated"; // its own copy
        if (secret) return { decision: "deny", reason: "no secrets" };
        return undefined;
      },
    },
    { matcher: "read", handler: (event: { args: Record<string, unknown> }) => ({ updatedArgs: { path: "safe.txt" }, addContext: "read rewritten" }) },
    { matcher: "glob", handler: () => { throw new Error("boom"); } },
    { matcher: "grep", timeout: 0.2, handler: () => new Promise(() => {}) },
    { matcher: "edit", failClosed: true, handler: () => "yes" },
  ],
  tool_result(event: { result: { type: string; data?: { stdout?: string } } }) {
    const out = event.result.type === "output" ? event.result.data?.stdout ?? "" : "";
    if (out.includes("hunter2")) return { replaceModelResult: out.replaceAll("hunter2", "[redacted]"), annotation: "a secret was redacted" };
  },
  stop: (event: { stopHookActive: boolean }) => (event.stopHookActive ? undefined : { continue: "Check your work once more." }),
};
`,
    );
    const { hooks, report } = await buildToolset({ loader: extensionLoader(), cwd: project, userHome });
    expect(report.errors).toEqual([]);
    const args = { command: "cat secret.txt" };
    const denied = await hooks.run("tool_call", toolCall("bash", "execute", args));
    expect(denied).toMatchObject({ decision: "deny", reason: "no secrets", source: `hooks.tool_call[0] of ${path.join(dir, "guard.ts")}` });
    expect(args.command).toBe("cat secret.txt");
    expect((await hooks.run("tool_call", toolCall("bash", "execute", { command: "ls" }))).decision).toBeUndefined();
    expect(await hooks.run("tool_call", toolCall("read", "read", { path: ".env", limit: 3 }))).toEqual({
      problems: [],
      messages: [],
      addContext: ["read rewritten"],
      updatedArgs: { path: "safe.txt", limit: 3 },
      updatedBy: `hooks.tool_call[1] of ${path.join(dir, "guard.ts")}`,
    });
    expect((await hooks.run("tool_call", toolCall("glob", "read", { pattern: "*" }))).problems).toEqual([
      `The hook hooks.tool_call[2] of ${path.join(dir, "guard.ts")} threw: boom; it counts as no opinion.`,
    ]);
    expect((await hooks.run("tool_call", toolCall("grep", "read", { pattern: "x" }))).problems).toEqual([
      `The hook hooks.tool_call[3] of ${path.join(dir, "guard.ts")} did not answer within 0.2 s; it counts as no opinion.`,
    ]);
    const garbage = await hooks.run("tool_call", toolCall("edit", "edit", { path: "a", old_string: "x", new_string: "y" }));
    expect(garbage).toMatchObject({
      decision: "deny",
      problems: [expect.stringMatching(/returned string, not an object; its entry says failClosed, so it blocks\.$/)],
    });
    const result = await hooks.run("tool_result", {
      ...session(),
      callId: "c",
      tool: { id: "bash", kind: "execute" },
      args: { command: "cat .env" },
      result: { type: "output", data: { stdout: "pw=hunter2" }, metadata: { duration_ms: 1 } },
    });
    expect(result).toMatchObject({ replaceModelResult: "pw=[redacted]", annotation: "a secret was redacted" });
    expect(await hooks.run("stop", { ...session(), stopHookActive: false })).toMatchObject({ continue: "Check your work once more." });
    expect((await hooks.run("stop", { ...session(), stopHookActive: true })).continue).toBeUndefined();
  });
});

describe("a project's command hooks run only inside the sandbox", () => {
  const claudeHook = (event: string, command: string, extra: Record<string, unknown> = {}) =>
    write(path.join(project, ".claude/settings.json"), { hooks: { [event]: [{ hooks: [{ type: "command", command, ...extra }] }] } });

  it.skipIf(!status.available)(
    "inside: it rewrites workspace files, reads its stdin and env, answers by exit code; cannot write outside or see secrets; a plant goes to quarantine",
    async () => {
      const outside = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-hook-outside-"));
      try {
        await claudeHook(
          "PreToolUse",
          `cat > "$CLAUDE_PROJECT_DIR/stdin.json"; echo formatted > victim.txt; { echo x > ${outside}/marker; } 2>/dev/null; echo "\${SECRET_TOKEN:-unset}" > seen.txt; echo 'echo pwned' > .envrc; echo 'no rm' >&2; exit 2`,
        );
        const hooks = load({ env: { ...process.env, SECRET_TOKEN: "s3cr3t" } });
        const out = await hooks.run("tool_call", toolCall("bash", "execute", { command: "rm x" }), { sandbox: sandbox() });
        expect(out).toMatchObject({ decision: "deny", reason: "no rm" });
        expect(JSON.parse(await fsp.readFile(path.join(project, "stdin.json"), "utf8"))).toMatchObject({
          hook_event_name: "PreToolUse",
          tool_name: "Bash",
        });
        expect(await fsp.readFile(path.join(project, "victim.txt"), "utf8")).toBe("formatted\n");
        expect(await fsp.readFile(path.join(project, "seen.txt"), "utf8")).toBe("unset\n");
        expect(await fsp.readdir(outside)).toEqual([]);
        // The .envrc it planted (a project-control path) was moved to quarantine, and the user told.
        await expect(fsp.stat(path.join(project, ".envrc"))).rejects.toThrow();
        expect(out.problems).toEqual([expect.stringMatching(/^The hook PreToolUse\[0\]\.hooks\[0\] in .*settings\.json: .*\.envrc/s)]);
      } finally {
        await fsp.rm(outside, { recursive: true, force: true });
      }
    },
  );

  it("without a sandbox (off, none given): not run, said once; the calls a tool_call hook covers ask, a failClosed prompt hook blocks", async () => {
    await claudeHook("PreToolUse", logged("project"));
    await write(path.join(project, ".toolhost/config.json"), {
      hooks: { prompt: [{ command: logged("prompt"), failClosed: true }], stop: [{ command: logged("stop") }] },
    });
    await write(path.join(home, "config.json"), {
      hooks: { tool_call: [{ command: answer({ hookSpecificOutput: { permissionDecision: "allow" } }) }] },
    });
    const hooks = load();
    for (const options of [{ sandbox: sandbox("off") }, {}]) {
      const first = await hooks.run("tool_call", toolCall("bash", "execute", { command: "ls" }), options);
      // The user's allow does not win over the project's guard that could not run.
      expect(first).toMatchObject({
        decision: "ask",
        source: `PreToolUse[0].hooks[0] in ${path.join(project, ".claude/settings.json")}`,
        reason: expect.stringMatching(/^the project's hook could not run \(.+\), and it guards this call$/),
      });
      const prompt = await hooks.run("prompt", { ...session(), prompt: "hi" }, options);
      expect(prompt).toMatchObject({ block: true, reason: expect.stringMatching(/could not run .* and fails closed$/) });
      expect((await hooks.run("stop", { ...session(), stopHookActive: false }, options)).continue).toBeUndefined();
    }
    for (const name of ["project", "prompt", "stop"]) expect(await runs(name)).toBe(0);
  });

  it("says once which hooks were skipped and why", async () => {
    await claudeHook("PreToolUse", logged("project"));
    const hooks = load();
    const first = await hooks.run("tool_call", toolCall("bash", "execute", { command: "ls" }), { sandbox: sandbox("off") });
    expect(first.problems).toEqual([
      `The project's hooks were not run: a project's hook runs only inside the sandbox, and the sandbox is not active: switched off (test). Not run: PreToolUse[0].hooks[0] in ${path.join(project, ".claude/settings.json")}. A call one of its PreToolUse (tool_call) hooks covers is asked about (headless: refused).`,
    ]);
    expect((await hooks.run("tool_call", toolCall("bash", "execute", { command: "ls" }), { sandbox: sandbox("off") })).problems).toEqual(
      [],
    );
  });
});
