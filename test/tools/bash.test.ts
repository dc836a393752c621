import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it, vi } from "vitest";
import bash, { BASH_LIVE_OUTPUT_CHARS, type BashResult } from "../../src/tools/bash.js";
import { bashTitle } from "../../src/tools/command-line.js";
import type { ToolEvent } from "../../src/tool/context.js";
import { call, diskWorkspace, errorOf, output, sleepMarker, survivors, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

const outputEvents = (events: ToolEvent[]) => events.filter((e): e is Extract<ToolEvent, { type: "output" }> => e.type === "output");

describe("bash", () => {
  it("returns the honest result shape; a non-zero exit is output", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const { envelope } = await call(bash, { command: "echo out; echo err >&2; exit 7", description: "Test" }, ws.session);
    expect(envelope.type).toBe("output");
    const data = output<BashResult>(envelope);
    expect(data).toMatchObject({ stdout: "out\n", stderr: "err\n", exit_code: 7, signal: null, timed_out: false, truncated: false });
    expect(typeof data.duration_ms).toBe("number");
    expect(data.notice).toBeUndefined();
    expect(envelope.metadata.truncated).toBeUndefined();
  });

  it("streams progress events", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const { envelope, events } = await call(bash, { command: "echo one; sleep 0.1; echo two; echo three >&2" }, ws.session);
    const data = output<BashResult>(envelope);
    const live = outputEvents(events);
    expect(
      live
        .filter((e) => e.stream === "stdout")
        .map((e) => e.chunk)
        .join(""),
    ).toBe(data.stdout);
    expect(
      live
        .filter((e) => e.stream === "stderr")
        .map((e) => e.chunk)
        .join(""),
    ).toBe("three\n");
  });

  it("stops live output at its budget but keeps the result whole", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const { envelope, events } = await call(bash, { command: "head -c 3000000 /dev/zero | tr '\\0' x" }, ws.session);
    const live = outputEvents(events);
    const chars = live.reduce((n, e) => n + e.chunk.length, 0);
    expect(chars).toBeLessThanOrEqual(BASH_LIVE_OUTPUT_CHARS + 200);
    expect(live.at(-1)!.chunk).toContain("live output stops here");
    expect(envelope.metadata.truncated).toBe(true);
  });

  it("closes stdin", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const data = output<BashResult>((await call(bash, { command: 'cat; read -r x; echo "read=$?"' }, ws.session)).envelope);
    expect(data.stdout).toBe("read=1\n");
  });

  it("runs in a relative workdir and refuses one outside the workspace", async () => {
    const ws = await workspaces.use(diskWorkspace({ "pkg/a.txt": "A" }));
    const data = output<BashResult>((await call(bash, { command: "pwd; ls", workdir: "pkg" }, ws.session)).envelope);
    expect(data.stdout).toBe(`${path.join(ws.root, "pkg")}\na.txt\n`);
    errorOf((await call(bash, { command: "pwd", workdir: "/" }, ws.session)).envelope, "outside_root");
    errorOf((await call(bash, { command: "pwd", workdir: "../" }, ws.session)).envelope, "outside_root");
    errorOf((await call(bash, { command: "pwd", workdir: "missing" }, ws.session)).envelope, "not_found");
  });

  it("rejects bad arguments with error envelopes", async () => {
    const ws = await workspaces.use(diskWorkspace());
    errorOf((await call(bash, { command: "true", timeout_ms: 600_001 }, ws.session)).envelope, "invalid_arguments");
    errorOf((await call(bash, { command: "true", timeout_ms: 0 }, ws.session)).envelope, "invalid_arguments");
    errorOf((await call(bash, {}, ws.session)).envelope, "invalid_arguments");
    errorOf((await call(bash, { command: "" }, ws.session)).envelope, "invalid_arguments");
    errorOf((await call(bash, { command: " \n " }, ws.session)).envelope, "invalid_arguments");
    errorOf((await call(bash, { command: "true", timeout_ms: 1.5 }, ws.session)).envelope, "invalid_arguments");
    output((await call(bash, { command: "true", timeout_ms: 600_000 }, ws.session)).envelope);
  });

  it("a command that exits before a tiny timeout fires is not reported as timed out", async () => {
    const ws = await workspaces.use(diskWorkspace());
    // With timeout_ms 1 the timer often fires after the command has exited but before its exit is seen.
    const results = await Promise.all(
      Array.from({ length: 12 }, () =>
        call(bash, { command: "echo done", timeout_ms: 1 }, ws.session).then((r) => output<BashResult>(r.envelope)),
      ),
    );
    for (const data of results) {
      if (data.exit_code === 0 && data.signal === null) {
        expect(data).toMatchObject({ stdout: "done\n", timed_out: false });
        expect(data.notice).toBeUndefined();
      } else {
        // Killed before it could finish: then it really timed out.
        expect(data.timed_out).toBe(true);
      }
    }
    // A command that really runs past its timeout still times out.
    const slow = output<BashResult>((await call(bash, { command: "sleep 5", timeout_ms: 1 }, ws.session)).envelope);
    expect(slow.timed_out).toBe(true);
  });

  it("kills the whole tree on timeout and says how to retry", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const m = sleepMarker();
    const { envelope } = await call(bash, { command: `sleep ${m} & sleep ${m}; wait`, timeout_ms: 400 }, ws.session);
    const data = output<BashResult>(envelope);
    expect(data.timed_out).toBe(true);
    expect(data.notice).toMatch(/timed out after 0\.4 s.*larger timeout_ms \(max 600000\)/);
    expect(await survivors(m)).toEqual([]);
  });

  it("abort leaves no process behind", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const m = sleepMarker();
    const ac = new AbortController();
    const pending = call(bash, { command: `bash -c 'sleep ${m} & sleep ${m}; wait'` }, ws.session, { signal: ac.signal });
    // The inner bash and its two sleeps.
    await vi.waitUntil(async () => (await survivors(m)).length === 3, { timeout: 20_000, interval: 20 });
    ac.abort();
    const { envelope } = await pending;
    const data = output<BashResult>(envelope);
    expect(data.notice).toMatch(/cancelled/);
    expect(data.exit_code).toBeNull();
    expect(await survivors(m)).toEqual([]);
  });

  it("does not hang when a background child keeps the output open", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const m = sleepMarker();
    const started = Date.now();
    const data = output<BashResult>((await call(bash, { command: `sleep ${m} & echo started` }, ws.session)).envelope);
    expect(data.stdout).toBe("started\n");
    expect(Date.now() - started).toBeLessThan(3000);
    expect(await survivors(m)).toEqual([]);
  });

  it("keeps head and tail of a large output and the whole of it in the sidecar", async () => {
    const ws = await workspaces.use(diskWorkspace());
    const lines = 600_000; // ~4.5 MB
    const { envelope } = await call(bash, { command: `seq 1 ${lines}; echo done >&2` }, ws.session);
    const data = output<BashResult>(envelope);
    expect(envelope.metadata.truncated).toBe(true);
    expect(envelope.metadata.output_path).toBe(data.output_path);
    expect(data.truncated).toBe(true);
    expect(data.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(data.stdout.endsWith(`${lines - 1}\n${lines}\n`)).toBe(true);
    expect(data.stdout).toContain(`full output in ${data.output_path}`);
    expect(data.stderr).toBe("done\n");
    expect(Buffer.byteLength(data.stdout) + Buffer.byteLength(data.stderr)).toBeLessThanOrEqual(200 * 1024 + 300);
    const side = await fsp.readFile(data.output_path!, "utf8");
    const expected = Array.from({ length: lines }, (_, i) => `${i + 1}\n`).join("");
    expect(side.replace("done\n", "")).toBe(expected);
    expect(side.length).toBe(expected.length + "done\n".length);
  });

  it("titles a call with the real command, shortened", () => {
    expect(bash.title!({ command: "  npm test  " })).toBe("npm test");
    expect(bash.title!({ command: "cd a\nmake" })).toBe("cd a …");
    const long = bashTitle(`echo ${"x".repeat(300)}`);
    expect(long.length).toBe(120);
    expect(long.endsWith("…")).toBe(true);
    expect(bash.shorthand!("ls -la")).toEqual({ command: "ls -la" });
    expect(bash.kind).toBe("execute");
    expect(bash.requires.shell).toEqual([{ cmd: "bash" }]);
  });
});
