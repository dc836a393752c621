import { spawn, type ChildProcess } from "node:child_process";
import * as fsp from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { lockPathFor, withFileLock } from "../../src/runtime/fs/file-lock.js";
import { useAgentEnv } from "../helpers.js";

const WORKER = fileURLToPath(new URL("../fixtures/edit-worker.mjs", import.meta.url));

const t = useAgentEnv();

/** A worker process (dist's code), resolved once it printed "ready". */
function startWorker(file: string, worker: number, count: number): Promise<{ child: ChildProcess; lines: string[]; done: Promise<void> }> {
  const child = spawn(process.execPath, [WORKER, t.ws, file, String(worker), String(count)], {
    env: t.env({ TOOLHOST_SESSIONS: "off" }),
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines: string[] = [];
  const done = new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`worker ${worker} exited ${code}`))));
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    const rl = createInterface({ input: child.stdout! });
    rl.on("line", (line) => {
      if (line === "ready") resolve({ child, lines, done });
      else lines.push(line);
    });
  });
}

describe("edits across processes (issue 21 item 2)", () => {
  it("every edit reported completed is in the file: three processes editing one file at once", async () => {
    const workers = 3;
    const count = 12;
    const file = path.join(t.ws, "shared.txt");
    const body: string[] = [];
    for (let i = 0; i < count; i++) for (let w = 0; w < workers; w++) body.push(`w${w}-${i} old\n`);
    await fsp.writeFile(file, body.join(""));
    const started = await Promise.all(Array.from({ length: workers }, (_, w) => startWorker(file, w, count)));
    for (const { child } of started) child.stdin!.write("go\n");
    await Promise.all(started.map((s) => s.done));
    const results = started.flatMap((s) => s.lines.map((l) => JSON.parse(l) as { worker: string; i: number; outcome: string }));
    expect(results).toHaveLength(workers * count);
    const final = await fsp.readFile(file, "utf8");
    const lost = results.filter((r) => r.outcome === "completed" && !final.includes(`w${r.worker}-${r.i} new\n`));
    expect(lost).toEqual([]);
    // Each edit retries a stale refusal after a fresh read, so every one lands in the end.
    expect(results.filter((r) => r.outcome !== "completed")).toEqual([]);
    expect(final).not.toContain(" old\n");
    // No lock file is left behind.
    expect((await fsp.readdir(t.ws)).sort()).toEqual(["shared.txt"]);
  }, 120_000);

  it("a lock left by a dead process is taken over; a live holder is waited for", async () => {
    const file = path.join(t.ws, "a.txt");
    await fsp.writeFile(file, "x\n");
    const lock = await lockPathFor(file);
    expect(lock).toBe(path.join(t.ws, ".a.txt.toolhost-lock"));
    // A process that ran and is gone: its pid is dead.
    const dead = spawn(process.execPath, ["-e", "0"]);
    const pid = dead.pid!;
    await new Promise((resolve) => dead.once("exit", resolve));
    await fsp.writeFile(lock, JSON.stringify({ pid, host: hostname(), nonce: "old", at: Date.now() }));
    expect(await withFileLock(file, async () => "ran")).toBe("ran");
    await expect(fsp.stat(lock)).rejects.toThrow();

    // A live holder (this process, another nonce): the caller waits, then fails naming it.
    await fsp.writeFile(lock, JSON.stringify({ pid: process.pid, host: hostname(), nonce: "live", at: Date.now() }));
    await expect(withFileLock(file, async () => "ran", 100)).rejects.toThrow(`being changed by process ${process.pid}`);
    await fsp.rm(lock);
  });

  it("a new file in a new folder is locked next to the first missing folder", async () => {
    expect(await lockPathFor(path.join(t.ws, "new", "deeper", "f.txt"))).toBe(path.join(t.ws, ".new.toolhost-lock"));
  });
});
