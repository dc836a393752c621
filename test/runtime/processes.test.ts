import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { GROUP_GUARD } from "../../src/runtime/process-groups.js";
import { MAX_RUNNING_PROCESSES } from "../../src/runtime/shell/processes.js";
import type { ToolContext } from "../../src/tool/context.js";
import type { RequirementSet } from "../../src/tool/requirements.js";
import { sleepMarker, survivors, tempDir, toolErrorOf, until } from "../helpers.js";

// The runtime's background processes, through the context a tool gets (`ctx.processes`), with
// real processes: groups, rings in the sidecar folder, tree kills, the cap, the session's close.

const REQUIRES: RequirementSet = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };

let session: RuntimeSession | undefined;
let dir: string | undefined;
afterEach(async () => {
  await session?.close();
  session = undefined;
  if (dir) await fsp.rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function context(requires: RequirementSet = REQUIRES, signal = new AbortController().signal): Promise<ToolContext> {
  dir ??= await tempDir({ "sub/x.txt": "x" });
  session ??= new RuntimeSession({ workspace: dir, sidecarDir: path.join(dir, ".sidecars") });
  return createToolContext({ session, toolId: "process", callId: "c1", requires, signal });
}

/** Waits until nothing with `marker` in its command line runs (bounded), and returns what still does. */
async function gone(marker: string, limitMs = 5000): Promise<string[]> {
  const deadline = Date.now() + limitMs;
  let left = await survivors(marker);
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = await survivors(marker);
  }
  return left;
}

describe("background processes", () => {
  it("removes the rings a crashed earlier run left in the sidecar folder, before its first start", async () => {
    const ctx = await context();
    const sidecars = path.join(dir!, ".sidecars");
    await fsp.mkdir(sidecars, { recursive: true });
    const stale = ["process-p1-abc123.stdout", "process-p1-abc123.stderr"];
    for (const name of stale) await fsp.writeFile(path.join(sidecars, name), "left by a crash\n");
    await fsp.writeFile(path.join(sidecars, "bash-output.txt"), "another tool's sidecar\n");
    await ctx.processes.start("echo fresh", { name: "one" });
    expect(await ctx.processes.wait("one", { streams: ["stdout"], timeoutMs: 10_000 })).toBe("ended");
    const names = await fsp.readdir(sidecars);
    expect(names.filter((n) => stale.includes(n))).toEqual([]);
    expect(names).toContain("bash-output.txt");
    expect(names.filter((n) => /^process-p1-[0-9a-f]{6}\.stdout$/.test(n))).toHaveLength(1);
  });

  it("start returns at once; the output lands in ring files of the sidecar folder, read by offset", async () => {
    const ctx = await context();
    const m = sleepMarker();
    const started = await ctx.processes.start(`echo ready; echo oops >&2; sleep ${m}`, { name: "srv" });
    expect(started).toMatchObject({ id: "p1", name: "srv", status: "running", command: `echo ready; echo oops >&2; sleep ${m}`, cwd: dir });
    expect(started.pid).toBeGreaterThan(0);
    expect(await ctx.processes.wait("srv", { streams: ["stdout"], pattern: /ready/, timeoutMs: 10_000 })).toBe("matched");
    expect(await ctx.processes.wait("p1", { streams: ["stderr"], pattern: /oops/, timeoutMs: 10_000 })).toBe("matched");
    expect(ctx.processes.read("p1", "stdout", { maxBytes: 100 })).toEqual({ text: "ready\n", offset: 0, next_offset: 6 });
    expect(ctx.processes.read("srv", "stderr", { offset: 2, maxBytes: 100 })).toEqual({ text: "ps\n", offset: 2, next_offset: 5 });
    const rings = (await fsp.readdir(path.join(dir!, ".sidecars"))).filter((f) => f.startsWith("process-p1-"));
    expect(rings.sort()).toEqual([expect.stringMatching(/\.stderr$/), expect.stringMatching(/\.stdout$/)]);
    expect(ctx.processes.get("srv")).toMatchObject({ stdout_bytes: 6, stderr_bytes: 5, status: "running" });
    // Its last command may not have exec'd yet when its output is read: wait for it to be running.
    await until(async () => (await survivors(m)).length > 0);

    const stopped = await ctx.processes.stop("srv");
    expect(stopped).toMatchObject({ status: "stopped", signal: "SIGTERM" });
    expect(stopped.ended_at).toBeDefined();
    expect(await survivors(m)).toEqual([]);
    // An ended process keeps its output (until the session ends).
    expect(ctx.processes.read("p1", "stdout", { maxBytes: 100 }).text).toBe("ready\n");
  });

  it("stop kills the whole tree: a child that ignores SIGTERM (SIGKILL after the grace), one that left the group", async () => {
    const ctx = await context();
    const m = sleepMarker();
    await ctx.processes.start(`(trap '' TERM; sleep ${m}) & setsid sleep ${m} & echo up; wait`);
    expect(await ctx.processes.wait("p1", { streams: ["stdout"], pattern: /up/, timeoutMs: 10_000 })).toBe("matched");
    expect((await survivors(m)).length).toBeGreaterThanOrEqual(2);
    const stopped = await ctx.processes.stop("p1", { graceMs: 300 });
    expect(stopped.status).toBe("stopped");
    expect(await survivors(m)).toEqual([]);
  });

  it("a process that ends by itself is `exited` with its code, and what it left in its group goes with it", async () => {
    const ctx = await context();
    const m = sleepMarker();
    await ctx.processes.start(`sleep ${m} & echo bye; exit 3`);
    expect(await ctx.processes.wait("p1", { streams: ["stdout", "stderr"], timeoutMs: 10_000 })).toBe("ended");
    expect(ctx.processes.get("p1")).toMatchObject({ status: "exited", exit_code: 3, signal: null, stdout_bytes: 4 });
    expect(await survivors(m)).toEqual([]);
    // Nothing to stop: stop returns what it is.
    expect((await ctx.processes.stop("p1")).status).toBe("exited");
  });

  it("write goes to stdin; eof closes it", async () => {
    const ctx = await context();
    await ctx.processes.start(`while read -r line; do echo "got:$line"; done; echo "stdin closed"`);
    expect(await ctx.processes.write("p1", "one\ntwo\n")).toBe(8);
    expect(await ctx.processes.wait("p1", { streams: ["stdout"], pattern: /got:two/, timeoutMs: 10_000 })).toBe("matched");
    await ctx.processes.write("p1", "three\n", { end: true });
    expect(await ctx.processes.wait("p1", { streams: ["stdout"], timeoutMs: 10_000 })).toBe("ended");
    expect(ctx.processes.read("p1", "stdout", { maxBytes: 1000 }).text).toBe("got:one\ngot:two\ngot:three\nstdin closed\n");
    expect((await toolErrorOf(ctx.processes.write("p1", "x"))).code).toBe("unavailable");
  });

  it("wait: a pattern already written, new output live, a timeout, the call's cancel", async () => {
    const controller = new AbortController();
    const ctx = await context(REQUIRES, controller.signal);
    await ctx.processes.start(`echo first; read -r _; echo second; sleep ${sleepMarker()}`);
    expect(await ctx.processes.wait("p1", { streams: ["stdout"], pattern: /first/, timeoutMs: 10_000 })).toBe("matched");
    // From an offset past it, it is not there yet: a short wait times out.
    const offset = ctx.processes.read("p1", "stdout", { maxBytes: 100 }).next_offset;
    expect(await ctx.processes.wait("p1", { streams: ["stdout"], pattern: /first/, offsets: { stdout: offset }, timeoutMs: 100 })).toBe(
      "timeout",
    );
    const live: string[] = [];
    const waiting = ctx.processes.wait("p1", {
      streams: ["stdout"],
      pattern: /sec.nd/g,
      offsets: { stdout: offset },
      timeoutMs: 10_000,
      onOutput: (chunk) => live.push(chunk),
    });
    await ctx.processes.write("p1", "go\n");
    expect(await waiting).toBe("matched");
    expect(live.join("")).toBe("second\n");
    const cancelled = ctx.processes.wait("p1", { streams: ["stdout"], pattern: /never/, timeoutMs: 10_000 });
    controller.abort();
    expect((await toolErrorOf(cancelled)).code).toBe("aborted");
  });

  it(`at most ${MAX_RUNNING_PROCESSES} run at once; a clear error past it; room again once one stops; names are unique among the running`, async () => {
    const ctx = await context();
    const m = sleepMarker();
    for (let i = 0; i < MAX_RUNNING_PROCESSES; i++) await ctx.processes.start(`sleep ${m}`, { name: `s${i}` });
    const refused = await toolErrorOf(ctx.processes.start(`sleep ${m}`));
    expect(refused.code).toBe("unavailable");
    expect(refused.message).toMatch(/8 background processes are running already.*stop one first/);
    expect((await toolErrorOf(ctx.processes.start("true", { name: "s1" }))).code).toBe("unavailable");
    await ctx.processes.stop("s3");
    expect((await toolErrorOf(ctx.processes.start(`sleep ${m}`, { name: "s1" }))).code).toBe("already_exists");
    // The stopped one's name is free again, and a name finds the newest process of that name.
    const again = await ctx.processes.start(`sleep ${m}`, { name: "s3" });
    expect(ctx.processes.get("s3").id).toBe(again.id);
    expect(ctx.processes.list().filter((p) => p.status === "running")).toHaveLength(MAX_RUNNING_PROCESSES);
    await session!.close();
    expect(await survivors(m)).toEqual([]);
  });

  it("the session's close stops every process and removes the rings; a closed session starts none", async () => {
    const ctx = await context();
    const m = sleepMarker();
    await ctx.processes.start(`sleep ${m}`);
    await ctx.processes.start(`trap '' TERM; sleep ${m}`);
    await session!.close();
    expect(await survivors(m)).toEqual([]);
    expect(ctx.processes.list().map((p) => p.status)).toEqual(["stopped", "stopped"]);
    expect((await fsp.readdir(path.join(dir!, ".sidecars"))).filter((f) => f.startsWith("process-"))).toEqual([]);
    expect((await toolErrorOf(ctx.processes.start("true"))).message).toMatch(/closing/);
  });

  it("an unknown ref says which processes there are", async () => {
    const ctx = await context();
    await ctx.processes.start("true", { name: "quick" });
    const err = await toolErrorOf(Promise.resolve().then(() => ctx.processes.get("nope")));
    expect(err.code).toBe("not_found");
    expect(err.message).toContain("p1 (quick)");
  });

  it("the start is checked like any command line: cwd inside the scope, shell requirements; the rest needs a scope that runs any line", async () => {
    const ctx = await context();
    expect((await toolErrorOf(ctx.processes.start("true", { cwd: "/etc" }))).code).toBe("outside_root");
    expect((await toolErrorOf(ctx.processes.start("true", { cwd: "missing" }))).code).toBe("not_found");
    const narrow = await context({ shell: [{ cmd: "git" }], fs: { read: ["{workspace}/**"] } });
    expect((await toolErrorOf(narrow.processes.start("echo hi"))).code).toBe("capability_denied");
    expect((await toolErrorOf(Promise.resolve().then(() => narrow.processes.list()))).code).toBe("capability_denied");
  });

  it("never outlives this process: the group guard kills the group when the process holding its socket is gone", async () => {
    const m = sleepMarker();
    const { spawn } = await import("node:child_process");
    // A node that starts a group behind the guard as spawnGroup does, and is then SIGKILLed: no close, no exit hook runs.
    const script = `
      const { spawn } = require("node:child_process");
      spawn("/bin/sh", ["-c", ${JSON.stringify(GROUP_GUARD)}, "toolhost-process", "/bin/sh", "-c", "sleep ${m}"],
        { detached: true, stdio: ["ignore", "ignore", "ignore", "pipe"] }).unref();
      process.stdout.write("started\\n");
      setInterval(() => {}, 1000);
    `;
    const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve) => child.stdout!.on("data", (d: Buffer) => d.toString().includes("started") && resolve()));
    expect(await gone(m, 0)).not.toEqual([]);
    child.kill("SIGKILL");
    expect(await gone(m)).toEqual([]);
  });
});
