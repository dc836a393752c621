import { getEventListeners } from "node:events";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import type { ShellSpawnOptions } from "../../src/runtime/shell/backend.js";
import { LocalShell, shareBudget } from "../../src/runtime/shell/local.js";
import { SessionSidecars } from "../../src/runtime/sidecars.js";
import type { SidecarWriter } from "../../src/tool/context.js";
import { sleepMarker, survivors, tempDir, until } from "../helpers.js";

let dir: string;
let sidecars: SessionSidecars;
const shell = new LocalShell({ killGraceMs: 300 });
// For the tests that expect SIGTERM to be what ended the command: on a busy machine a group can
// take longer than 300 ms to die of it, and the escalation would then report SIGKILL.
const patient = new LocalShell({ killGraceMs: 10_000 });

beforeAll(async () => {
  dir = await tempDir({ "sub/file.txt": "x" });
  sidecars = new SessionSidecars(path.join(dir, ".sidecars"));
});
afterAll(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

function opts(over: Partial<ShellSpawnOptions> = {}): ShellSpawnOptions {
  return {
    cwd: dir,
    timeoutMs: 10_000,
    maxOutputBytes: 200 * 1024,
    signal: new AbortController().signal,
    openSidecar: () => sidecars.create("bash"),
    ...over,
  };
}

const bash = (line: string, over: Partial<ShellSpawnOptions> = {}) => shell.spawn("/bin/bash", ["-c", line], opts(over));
const patientBash = (line: string, over: Partial<ShellSpawnOptions> = {}) => patient.spawn("/bin/bash", ["-c", line], opts(over));

/** The text before the truncation marker line, the omitted byte count, and the tail after it. */
function splitAtMarker(text: string): { before: string; omitted: number; tail: string; marker: string } {
  const m = /… \[(\d+) bytes omitted;[^\n]*\] …\n/.exec(text);
  if (!m) throw new Error("no truncation marker");
  return { before: text.slice(0, m.index), omitted: Number(m[1]), tail: text.slice(m.index + m[0].length), marker: m[0] };
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return (err as { code?: string }).code ?? String(err);
  }
}

describe("LocalShell: results", () => {
  it("keeps stdout and stderr apart and reports the exit code", async () => {
    const r = await bash("echo out; echo err >&2; exit 3");
    expect(r).toMatchObject({ stdout: "out\n", stderr: "err\n", exit_code: 3, signal: null, timed_out: false, truncated: false });
    expect(r.output_path).toBeUndefined();
    expect(r.duration_ms).toBeGreaterThanOrEqual(0);
  });

  it("reports the signal that ended the command", async () => {
    const r = await bash("kill -USR1 $$");
    expect(r.exit_code).toBeNull();
    expect(r.signal).toBe("SIGUSR1");
  });

  it("closes stdin, so cat ends at once", async () => {
    const started = Date.now();
    const r = await bash("cat; echo done");
    expect(r.stdout).toBe("done\n");
    expect(r.exit_code).toBe(0);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("runs in cwd with the extra environment", async () => {
    const r = await bash('pwd; echo "$TOOLHOST_T"', { cwd: path.join(dir, "sub"), env: { TOOLHOST_T: "v 1" } });
    expect(r.stdout).toBe(`${path.join(dir, "sub")}\nv 1\n`);
  });

  it("keeps a trailing newline and no output at all", async () => {
    expect((await bash("printf 'a\\n\\n'")).stdout).toBe("a\n\n");
    expect(await bash("true")).toMatchObject({ stdout: "", stderr: "", exit_code: 0 });
  });

  it("refuses a missing binary and a bad cwd with not_found", async () => {
    expect(await codeOf(shell.spawn("toolhost-no-such-binary", [], opts()))).toBe("not_found");
    expect(await codeOf(shell.spawn("/bin/bash", ["-c", "true"], opts({ cwd: path.join(dir, "nope") })))).toBe("not_found");
    expect(await codeOf(shell.spawn("/bin/bash", ["-c", "true"], opts({ cwd: path.join(dir, "sub/file.txt") })))).toBe("not_found");
  });

  it("refuses to start when already aborted", async () => {
    const ac = new AbortController();
    ac.abort();
    expect(await codeOf(bash("echo no", { signal: ac.signal }))).toBe("aborted");
  });

  it("streams decoded output without splitting characters", async () => {
    const chunks: Record<string, string[]> = { stdout: [], stderr: [] };
    // 3-byte characters written in odd-sized pieces cross every chunk boundary.
    const r = await bash("for i in $(seq 1 2000); do printf '€€€ %d ' $i; done; echo x >&2", {
      onOutput: (chunk, stream) => chunks[stream]!.push(chunk),
    });
    expect(chunks.stdout!.join("")).toBe(r.stdout);
    expect(chunks.stderr!.join("")).toBe("x\n");
    expect(r.stdout).not.toContain("\uFFFD");
  });

  it("stops live output when the listener returns false, and survives a throwing one", async () => {
    const seen: string[] = [];
    const r = await bash("echo a; sleep 0.05; echo b; sleep 0.05; echo c", {
      onOutput: (chunk) => {
        seen.push(chunk);
        return false;
      },
    });
    expect(seen).toEqual(["a\n"]);
    expect(r.stdout).toBe("a\nb\nc\n");
    const thrown = await bash("echo a; sleep 0.05; echo b", {
      onOutput: () => {
        throw new Error("listener bug");
      },
    });
    expect(thrown).toMatchObject({ stdout: "a\nb\n", exit_code: 0 });
  });

  it("leaves no abort listener and settles once", async () => {
    const ac = new AbortController();
    await bash("echo hi", { signal: ac.signal });
    expect(getEventListeners(ac.signal, "abort")).toHaveLength(0);
    ac.abort(); // after the end: a no-op
  });
});

describe("LocalShell: killing the tree", () => {
  it("kills the whole tree on timeout", async () => {
    const m = sleepMarker();
    const started = Date.now();
    const r = await patientBash(`sleep ${m} & sleep ${m}; wait`, { timeoutMs: 300 });
    expect(r.timed_out).toBe(true);
    expect(r.signal).toBe("SIGTERM");
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await survivors(m)).toEqual([]);
  });

  it("kills descendants that left the process group", async () => {
    const m = sleepMarker();
    const r = await bash(`setsid sleep ${m} & sleep ${m}; wait`, { timeoutMs: 300 });
    expect(r.timed_out).toBe(true);
    expect(await survivors(m)).toEqual([]);
  });

  it("escalates to SIGKILL when SIGTERM is ignored", async () => {
    const m = sleepMarker();
    const r = await bash(`trap '' TERM; while :; do sleep 0.05; done # ${m}`, { timeoutMs: 200 });
    expect(r).toMatchObject({ timed_out: true, signal: "SIGKILL" });
    expect(await survivors(m)).toEqual([]);
  });

  it("kills the tree on abort and leaves no process behind", async () => {
    const m = sleepMarker();
    const ac = new AbortController();
    const running = patientBash(`sleep ${m} & sleep ${m}; wait`, { signal: ac.signal });
    // bash and its two sleeps, however long a busy machine takes to start them (a fork not yet
    // exec'd still shows bash's command line, so the sleeps are counted by their own).
    const sleeps = async () => (await survivors(m)).filter((line) => / sleep \S+ $/.test(line.replace(/^\d+:/, " "))).length;
    await vi.waitUntil(async () => (await sleeps()) === 2, { timeout: 20_000, interval: 20 });
    ac.abort();
    const r = await running;
    expect(r).toMatchObject({ timed_out: false, exit_code: null, signal: "SIGTERM" });
    expect(await survivors(m)).toEqual([]);
  });

  it("does not hang on a background child that holds the pipes, and kills it", async () => {
    const m = sleepMarker();
    const started = Date.now();
    const r = await bash(`sleep ${m} & echo started`);
    expect(r).toMatchObject({ stdout: "started\n", exit_code: 0, timed_out: false });
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await survivors(m)).toEqual([]);
  });

  it("leaves a background job alone when it redirected its output", async () => {
    const m = sleepMarker();
    const r = await bash(`sleep ${m} >/dev/null 2>&1 & echo $!`);
    const pid = Number(r.stdout.trim());
    try {
      // The job may not have exec'd its sleep yet when the command returns (a busy machine): wait for
      // it. One the command's end had killed would never show.
      await until(async () => (await survivors(m)).length === 1);
    } finally {
      process.kill(pid, "SIGKILL");
    }
  });
});

describe("LocalShell: large output", () => {
  const cap = 200 * 1024;

  it("keeps head and tail, writes every byte to the sidecar", async () => {
    const r = await bash("seq 1 700000");
    const full = Array.from({ length: 700000 }, (_, i) => `${i + 1}\n`).join("");
    expect(r.truncated).toBe(true);
    expect(r.output_path).toBeDefined();
    expect(await fsp.readFile(r.output_path!, "utf8")).toBe(full);
    expect(r.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(r.stdout.endsWith("699999\n700000\n")).toBe(true);
    expect(r.stdout).toMatch(new RegExp(`… \\[\\d+ bytes omitted; full output in ${r.output_path}\\] …`));
    const { before, omitted, tail, marker } = splitAtMarker(r.stdout);
    // Shown head + omitted + shown tail is exactly the whole stream (ASCII: chars are bytes).
    expect(full.endsWith(tail)).toBe(true);
    expect([before, before.slice(0, -1)].some((h) => full.startsWith(h) && h.length + omitted + tail.length === full.length)).toBe(true);
    // The cap, plus the marker line and the line break before it.
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(cap + Buffer.byteLength(marker) + 1);
  });

  it("shares the budget: a small stderr stays whole next to a huge stdout", async () => {
    const r = await bash("echo begin >&2; head -c 3000000 /dev/zero | tr '\\0' a; echo; echo end >&2");
    expect(r.stderr).toBe("begin\nend\n");
    expect(r.truncated).toBe(true);
    const size = (await fsp.stat(r.output_path!)).size;
    expect(size).toBe(3000001 + "begin\nend\n".length);
    expect(Buffer.byteLength(r.stdout) + Buffer.byteLength(r.stderr)).toBeLessThanOrEqual(cap + 200);
  });

  it("truncates both streams and keeps both in the sidecar in arrival order", async () => {
    const r = await bash("for i in $(seq 1 20000); do echo out$i; echo err$i >&2; done", { maxOutputBytes: 10_000 });
    expect(r.truncated).toBe(true);
    expect(r.stdout.startsWith("out1\n")).toBe(true);
    expect(r.stdout.endsWith("out20000\n")).toBe(true);
    expect(r.stderr.startsWith("err1\n")).toBe(true);
    expect(r.stderr.endsWith("err20000\n")).toBe(true);
    const side = await fsp.readFile(r.output_path!, "utf8");
    const lines = side.trimEnd().split("\n");
    expect(lines).toHaveLength(40000);
    expect(lines.filter((l) => l.startsWith("out"))).toEqual(Array.from({ length: 20000 }, (_, i) => `out${i + 1}`));
    expect(lines.filter((l) => l.startsWith("err"))).toEqual(Array.from({ length: 20000 }, (_, i) => `err${i + 1}`));
    for (const s of [r.stdout, r.stderr]) expect(Buffer.byteLength(s)).toBeLessThan(5000 + 200);
  });

  it("cuts head and tail on character boundaries", async () => {
    const r = await bash("for i in $(seq 1 5000); do printf 'é€𝄞'; done", { maxOutputBytes: 1001 });
    expect(r.truncated).toBe(true);
    expect(r.stdout).not.toContain("\uFFFD");
    expect(r.stdout.startsWith("é€𝄞")).toBe(true);
    expect(r.stdout.endsWith("é€𝄞")).toBe(true);
  });

  it("waits for a slow sidecar instead of buffering (backpressure)", async () => {
    const written: Buffer[] = [];
    let pending = 0;
    let maxPending = 0;
    const slow: SidecarWriter = {
      path: path.join(dir, "slow.txt"),
      async write(chunk) {
        pending += chunk.length;
        maxPending = Math.max(maxPending, pending);
        written.push(Buffer.from(chunk));
        await new Promise((r) => setTimeout(r, 5));
        pending -= chunk.length;
      },
      async close() {},
    };
    const r = await shell.spawn("/bin/bash", ["-c", "seq 1 1000000"], opts({ openSidecar: async () => slow }));
    const expected = Array.from({ length: 1000000 }, (_, i) => `${i + 1}\n`).join("");
    expect(Buffer.concat(written).toString()).toBe(expected);
    // Never more than the high-water mark (1 MiB) plus one pipe read in the writer's hands.
    expect(maxPending).toBeLessThanOrEqual(1024 * 1024 + 256 * 1024);
    expect(r.output_path).toBe(slow.path);
  });

  it("still returns head and tail when the sidecar cannot be written", async () => {
    const r = await bash("seq 1 100000", { openSidecar: async () => Promise.reject(new Error("disk full")) });
    expect(r.truncated).toBe(true);
    expect(r.output_path).toBeUndefined();
    expect(r.stdout).toContain("the full output could not be saved: disk full");
    expect(r.stdout.endsWith("100000\n")).toBe(true);
  });

  it("splits a budget by water-filling", () => {
    expect(shareBudget(100, 1000, 10)).toEqual({ out: 90, err: 10 });
    expect(shareBudget(100, 10, 1000)).toEqual({ out: 10, err: 90 });
    expect(shareBudget(100, 1000, 1000)).toEqual({ out: 50, err: 50 });
    expect(shareBudget(100, 60, 60)).toEqual({ out: 50, err: 50 });
  });
});

describe("ScopedShell over LocalShell", () => {
  it("runs only what the requirements allow", async () => {
    const session = new RuntimeSession({ workspace: dir });
    const ctx = createToolContext({
      session,
      toolId: "t",
      callId: "c",
      requires: { shell: [{ cmd: "echo", args: [{ wildcard: true }] }], fs: { read: ["{workspace}/**"] } },
      signal: new AbortController().signal,
    });
    try {
      expect((await ctx.shell.exec("echo", ["hi"])).stdout).toBe("hi\n");
      expect(await codeOf(ctx.shell.exec("echo", ["a", "b"]))).toBe("capability_denied");
      expect(await codeOf(ctx.shell.exec("ls", []))).toBe("capability_denied");
      expect(await codeOf(ctx.shell.run("echo hi"))).toBe("capability_denied");
      expect(await codeOf(ctx.shell.exec("echo", ["x"], { cwd: "/" }))).toBe("outside_root");
    } finally {
      await session.close();
    }
  });
});
