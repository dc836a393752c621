import { describe, expect, it } from "vitest";
import { builtinRegistry } from "../../src/host/builtins.js";
import { invoke } from "../../src/host/invoke.js";
import { parseSlash } from "../../src/agent/commands.js";
import { sessionAuthorizer, type ApprovalRequest, type SandboxState } from "../../src/policy/authorizer.js";
import type { Decision } from "../../src/policy/call.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import { SessionRules } from "../../src/policy/session-rules.js";
import type { ProcessInfo, ProcessOutput, ToolEvent } from "../../src/tool/context.js";
import { displayResult } from "../../src/tool/display.js";
import processTool from "../../src/tools/process.js";
import { call, diskWorkspace, errorOf, output, sleepMarker, survivors, useWorkspace, type Workspace } from "../helpers.js";

const workspaces = useWorkspace();

type Data = {
  action: string;
  process: ProcessInfo;
  processes: ProcessInfo[];
  stdout?: ProcessOutput;
  stderr?: ProcessOutput;
  waited?: string;
};
const run = async (ws: Workspace, args: Record<string, unknown>) => call(processTool, args, ws.session);
const data = async (ws: Workspace, args: Record<string, unknown>) => output<Data>((await run(ws, args)).envelope);

describe("process", () => {
  it("start → output (waiting for a line, live output as it comes) → get → stop; nothing is left", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const m = sleepMarker();
    const started = await data(ws, {
      action: "start",
      command: `echo booting; sleep 0.2; echo "listening on 4000"; sleep ${m}`,
      name: "dev",
    });
    expect(started.process).toMatchObject({ id: "p1", name: "dev", status: "running" });

    const { envelope, events } = await run(ws, { action: "output", name: "dev", wait_for: "listening on \\d+", timeout_ms: 10_000 });
    const read = output<Data>(envelope);
    expect(read.waited).toBe("matched");
    expect(read.stdout).toMatchObject({ text: "booting\nlistening on 4000\n", offset: 0, next_offset: 26 });
    expect(read.stderr).toMatchObject({ text: "", next_offset: 0 });
    // What arrived while it waited went to the editor as live output.
    expect(
      events
        .filter((e): e is Extract<ToolEvent, { type: "output" }> => e.type === "output")
        .map((e) => e.chunk)
        .join(""),
    ).toContain("listening on 4000");

    // Following one stream from an offset: nothing new yet.
    const next = await data(ws, { action: "output", id: "p1", stream: "stdout", offset: 26 });
    expect(next.stdout).toEqual({ text: "", offset: 26, next_offset: 26 });
    expect(next.stderr).toBeUndefined();

    expect((await data(ws, { action: "get", id: "p1" })).process).toMatchObject({ status: "running", stdout_bytes: 26 });
    const stopped = await data(ws, { action: "stop", name: "dev" });
    expect(stopped.process).toMatchObject({ status: "stopped", signal: "SIGTERM" });
    expect(await survivors(m)).toEqual([]);
    expect((await data(ws, { action: "list" })).processes.map((p) => [p.id, p.status])).toEqual([["p1", "stopped"]]);
  });

  it("write feeds stdin; eof closes it; the process's exit code is kept", async () => {
    const ws = await workspaces.use(diskWorkspace());
    await data(ws, { action: "start", command: 'read -r a; echo "hello $a"; exit 4' });
    expect(await data(ws, { action: "write", id: "p1", input: "world\n", eof: true })).toMatchObject({ bytes: 6, stdin_closed: true });
    const done = await data(ws, { action: "output", id: "p1", wait_for: "never", timeout_ms: 10_000 });
    expect(done.waited).toBe("ended");
    expect(done.process).toMatchObject({ status: "exited", exit_code: 4 });
    expect(done.stdout!.text).toBe("hello world\n");
    expect(errorOf((await run(ws, { action: "write", id: "p1", input: "x" })).envelope, "unavailable")).toMatch(/has ended/);
  });

  it("validates per action, before anything runs", async () => {
    const ws = await workspaces.use(diskWorkspace());
    expect(errorOf((await run(ws, { action: "start" })).envelope, "invalid_arguments")).toMatch(/start needs a command/);
    expect(errorOf((await run(ws, { action: "stop" })).envelope, "invalid_arguments")).toMatch(/stop needs an id or a name/);
    expect(errorOf((await run(ws, { action: "output", id: "p1", offset: 3 })).envelope, "invalid_arguments")).toMatch(
      /offset belongs to one stream/,
    );
    expect(errorOf((await run(ws, { action: "output", id: "p1", wait_for: "(" })).envelope, "invalid_arguments")).toMatch(
      /not a regular expression/,
    );
    expect(errorOf((await run(ws, { action: "start", command: "x", sandbox: "off" })).envelope, "invalid_arguments")).toMatch(
      /justification/,
    );
    expect(errorOf((await run(ws, { action: "get", id: "p9" })).envelope, "not_found")).toMatch(/no background process "p9"/);
  });

  it("shows each action plainly", async () => {
    const info: ProcessInfo = {
      id: "p1",
      name: "dev",
      command: "npm run dev",
      cwd: "/ws",
      pid: 42,
      status: "exited",
      exit_code: 1,
      signal: null,
      started_at: "",
      stdout_bytes: 3,
      stderr_bytes: 0,
      sandboxed: true,
    };
    const show = (d: unknown, args: unknown = {}) => displayResult(processTool, d, args).text;
    expect(show({ action: "start", process: { ...info, status: "running", exit_code: null } })).toBe(
      "p1 (dev): running, pid 42, sandboxed — npm run dev",
    );
    expect(show({ action: "list", processes: [] })).toBe("No background processes");
    expect(show({ action: "output", process: info, stdout: { text: "hi", offset: 0, next_offset: 2 } })).toBe(
      "p1 (dev): exited, exit code 1, pid 42, sandboxed — npm run dev\n[stdout 0–2]\nhi\n",
    );
  });

  it("the slash shorthand: an action first, then the command line or the process", () => {
    const registry = builtinRegistry();
    const args = (text: string) => {
      const slash = parseSlash(text, registry);
      return slash?.type === "tool" ? slash.args : slash;
    };
    expect(args("/process start npm run dev -- --port 3000")).toEqual({ action: "start", command: "npm run dev -- --port 3000" });
    expect(args("/process list")).toEqual({ action: "list" });
    expect(args("/process output p2")).toEqual({ action: "output", id: "p2" });
    expect(args("/process stop dev")).toEqual({ action: "stop", name: "dev" });
    expect(args("/process write p1 rs")).toEqual({ action: "write", id: "p1", input: "rs\n" });
    expect(() => args("/process npm run dev")).toThrow(/takes an action first/);
  });
});

describe("process and the policy: a start is judged as bash; reads never ask; write and stop ask as commands do", () => {
  const ACTIVE: SandboxState = { active: true, off: false };
  const MISSING: SandboxState = { active: false, off: false, reason: "bubblewrap (bwrap) is not installed" };
  const registry = builtinRegistry();

  async function judge(
    ws: Workspace,
    args: Record<string, unknown>,
    options: { mode?: ModeId; ruleset?: SourcedRule[]; sandbox?: SandboxState } = {},
  ): Promise<{ decision: Decision; asked: ApprovalRequest[] }> {
    const asked: ApprovalRequest[] = [];
    let decision: Decision | undefined;
    const inner = sessionAuthorizer({
      roots: ws.session.roots,
      mode: () => options.mode ?? "ask",
      rules: new SessionRules(),
      ruleset: () => options.ruleset ?? [],
      sandbox: () => options.sandbox ?? ACTIVE,
      ask: async (request) => {
        asked.push(request);
        return "reject_once";
      },
    });
    const envelope = await invoke(registry, "process", args, {
      session: ws.session,
      authorize: async (request, signal) => {
        decision = await inner(request, signal);
        // Judged, and run only when it is a read (the start below runs through `call`).
        return decision.outcome === "allow" && ["list", "get", "output"].includes(String(args.action))
          ? decision
          : { outcome: "deny", reason: "stop here" };
      },
    });
    if (!decision) throw new Error(`not judged: ${JSON.stringify(envelope)}`);
    return { decision, asked };
  }

  const rule = (permission: string, pattern: string, action: SourcedRule["action"]): SourcedRule => ({
    permission,
    pattern,
    action,
    source: "user",
  });

  it("in ask mode a start asks with the command line; list, get and output do not; write and stop do", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const start = await judge(ws, { action: "start", command: "npm run dev" });
    expect(start.decision.outcome).toBe("deny");
    expect(start.asked).toHaveLength(1);
    expect(start.asked[0]!.call.targets.commands).toEqual(["npm run dev"]);
    expect(start.asked[0]!.why).toMatch(/ask mode asks before running commands/);

    await data(ws, { action: "start", command: `sleep ${sleepMarker()}`, name: "s" });
    for (const action of ["list", "get", "output"]) {
      const read = await judge(ws, { action, name: "s" });
      expect({ action, outcome: read.decision.outcome, asked: read.asked.length }).toEqual({ action, outcome: "allow", asked: 0 });
    }
    // Not even where no sandbox can run (then every command asks, in every mode).
    expect((await judge(ws, { action: "output", name: "s" }, { sandbox: MISSING, mode: "full" })).asked).toEqual([]);
    const write = await judge(ws, { action: "write", name: "s", input: "rs\n" });
    expect(write.asked.map((r) => r.call.targets.commands)).toEqual([["rs\n"]]);
    // Closing stdin alone is a command target too, so an "always" answer cannot cover every process call.
    const close = await judge(ws, { action: "write", name: "s", eof: true });
    expect(close.asked.map((r) => r.call.targets.commands)).toEqual([[expect.stringMatching(/^: close the stdin of process \d+$/)]]);
    const stop = await judge(ws, { action: "stop", name: "s" });
    expect(stop.asked).toHaveLength(1);
    expect(stop.asked[0]!.call.targets.commands).toEqual([expect.stringMatching(/^kill -TERM -- -\d+$/)]);
    // Read-only mode refuses what changes something, and lets the reads run.
    expect((await judge(ws, { action: "stop", name: "s" }, { mode: "read-only" })).decision.outcome).toBe("deny");
    expect((await judge(ws, { action: "list" }, { mode: "read-only" })).decision.outcome).toBe("allow");
  });

  it("rules: a deny on the command denies the start (rules naming bash speak for it too); an allow lets it run without asking", async () => {
    const ws = await workspaces.use(diskWorkspace());
    for (const permission of ["process", "bash", "shell.run"]) {
      const denied = await judge(
        ws,
        { action: "start", command: "git push --force origin main" },
        { mode: "full", ruleset: [rule(permission, "git push*", "deny")] },
      );
      expect({ permission, ...denied.decision }).toMatchObject({ permission, outcome: "deny", code: "permission_denied" });
      expect((denied.decision as { reason: string }).reason).toMatch(new RegExp(`deny ${permission.replace(".", "\\.")} "git push\\*"`));
    }
    const allowed = await judge(ws, { action: "start", command: "npm run dev" }, { ruleset: [rule("bash", "npm run dev", "allow")] });
    expect(allowed).toEqual({ decision: { outcome: "allow" }, asked: [] });
    // A rule about bash's command lines says nothing about reading a process's output.
    expect((await judge(ws, { action: "list" }, { ruleset: [rule("bash", "*", "deny")] })).decision.outcome).toBe("allow");
    expect((await judge(ws, { action: "list" }, { ruleset: [rule("process", "*", "deny")] })).decision.outcome).toBe("deny");
  });

  it("the watchdog and the sandbox see a start as they see bash", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const missing = await judge(ws, { action: "start", command: "npm run dev" }, { mode: "full", sandbox: MISSING });
    expect(missing.asked[0]!.why).toMatch(/no sandbox can run here/);
    const escalate = await judge(
      ws,
      { action: "start", command: "npm run dev", sandbox: "off", justification: "Reach the dev server from the browser?" },
      { mode: "full" },
    );
    expect(escalate.asked[0]!.why).toMatch(/runs outside the sandbox/);
    expect(escalate.asked[0]!.call.targets.unsandboxed).toBe(true);
  });
});
