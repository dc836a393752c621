import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { until } from "../helpers.js";
import type { RemoteProcess } from "../../src/runtime/shell/remote-process.js";
import { runOffThread, startOffThread } from "../../src/runtime/shell/spawn-thread.js";

// toolhost's own helper programs (the checkpoints' git) run to their end on the spawner thread
// (`runOffThread`), as commands start there: a fork on the agent's thread held it 15–45 ms a call.
// Its contract is spawnGit's: input in, output whole as bytes, a cap, an exit code or a signal,
// and a program that cannot start throws with its code.

const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" };

describe("runOffThread", () => {
  it("runs a program to its end: input on stdin, stdout and stderr as bytes, its exit code", async () => {
    const input = "x".repeat(200_000);
    const ran = await runOffThread("/bin/sh", ["-c", "wc -c; echo oops >&2; exit 3"], { env, input, maxOutput: 1024 });
    expect(Buffer.from(ran.stdout).toString().trim()).toBe("200000");
    expect(Buffer.from(ran.stderr).toString()).toBe("oops\n");
    expect(ran).toMatchObject({ code: 3, signal: null, overflow: false });
  });

  it("bytes come back as they were, and in its folder", async () => {
    const bytes = Buffer.from([0, 255, 10, 13, 128, 1]);
    const ran = await runOffThread("/bin/sh", ["-c", "cat; pwd >&2"], { cwd: "/", env, input: bytes, maxOutput: 1024 });
    expect(Buffer.from(ran.stdout).equals(bytes)).toBe(true);
    expect(Buffer.from(ran.stderr).toString()).toBe("/\n");
  });

  it("past the cap it is killed and says so; a signal is its end", async () => {
    const ran = await runOffThread("/bin/sh", ["-c", "yes"], { env, maxOutput: 64 * 1024 });
    expect(ran.overflow).toBe(true);
    expect(ran.code).toBeNull();
    expect(ran.signal).toBe("SIGKILL");
  });

  it("a program that cannot start throws with its code", async () => {
    await expect(runOffThread("/nonexistent/git", [], { env, maxOutput: 1024 })).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("runs side by side, each answered with its own output", async () => {
    const runs = Array.from({ length: 8 }, (_, i) =>
      runOffThread("/bin/sh", ["-c", `sleep 0.0${8 - i}; echo ${i}`], { env, maxOutput: 1024 }),
    );
    const outputs = (await Promise.all(runs)).map((ran) => Buffer.from(ran.stdout).toString().trim());
    expect(outputs).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
  });
});

// Long-lived processes (language and MCP servers, background processes, ripgrep) start there too
// (`startOffThread`) and keep their pipes open to the agent's thread: a ChildProcess's shape, with
// stdin a stream whose writes complete when the child's pipe took them.
describe("startOffThread", () => {
  const events = (child: RemoteProcess) => {
    const seen: string[] = [];
    child.on("spawn", () => seen.push("spawn"));
    child.on("exit", (code, signal) => seen.push(`exit ${code} ${signal}`));
    child.on("close", (code, signal) => seen.push(`close ${code} ${signal}`));
    child.on("error", (err: NodeJS.ErrnoException) => seen.push(`error ${err.code}`));
    return seen;
  };
  const closed = (child: RemoteProcess) => new Promise<void>((resolve) => child.once("close", () => resolve()));
  const text = async (stream: NodeJS.ReadableStream) => {
    let out = "";
    for await (const chunk of stream) out += String(chunk);
    return out;
  };

  it("streams stdin in and stdout out, in order, with its pid, exit code and events", async () => {
    const child = startOffThread("/bin/sh", ["-c", "cat; echo done >&2; exit 4"], { env, stdin: true });
    const seen = events(child);
    const out = text(child.stdout);
    const err = text(child.stderr);
    await new Promise((resolve) => child.once("spawn", resolve));
    expect(child.pid).toBeGreaterThan(0);
    const lines = Array.from({ length: 2000 }, (_, i) => `line ${i}\n`);
    for (const line of lines) child.stdin!.write(line);
    child.stdin!.end();
    await closed(child);
    expect(await out).toBe(lines.join(""));
    expect(await err).toBe("done\n");
    expect(seen).toEqual(["spawn", "exit 4 null", "close 4 null"]);
    expect([child.exitCode, child.signalCode]).toEqual([4, null]);
  });

  it("a write completes when the child's pipe has taken it: a child that does not read holds it back", async () => {
    const child = startOffThread("/bin/sh", ["-c", "exec sleep 100"], { env, stdin: true });
    await new Promise((resolve) => child.once("spawn", resolve));
    let done: Error | null | undefined;
    child.stdin!.on("error", () => {});
    child.stdin!.write(Buffer.alloc(8 * 1024 * 1024), (error) => (done = error));
    // Another process started and ended after it: the worker has handled the write by now.
    const later = startOffThread("/bin/true", [], { env });
    await closed(later);
    expect(done).toBeUndefined();
    expect(child.kill("SIGKILL")).toBe(true);
    await closed(child);
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBeInstanceOf(Error);
    expect(child.signalCode).toBe("SIGKILL");
  });

  it("kill sends the signal; a program that cannot start says so with its code and then closes", async () => {
    const sleeper = startOffThread("/bin/sleep", ["100"], { env });
    await new Promise((resolve) => sleeper.once("spawn", resolve));
    sleeper.kill("SIGTERM");
    await closed(sleeper);
    expect([sleeper.exitCode, sleeper.signalCode]).toEqual([null, "SIGTERM"]);
    expect(sleeper.kill()).toBe(false);

    const missing = startOffThread("/nonexistent/server", [], { env, stdin: true });
    const seen = events(missing);
    await closed(missing);
    expect(seen).toEqual(["error ENOENT", "close null null"]);
    expect(missing.pid).toBeUndefined();
    missing.stdin!.on("error", () => {});
    await expect(new Promise((resolve) => missing.stdin!.write("x", resolve))).resolves.toBeInstanceOf(Error);
  });

  it("an unref'd process does not keep toolhost alive; a held one does until it ends", async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), "th-offthread-"));
    try {
      const module = pathToFileURL(path.resolve("dist/runtime/shell/spawn-thread.js")).href;
      // The child ends only once the test opens the fifo (the ending is the test's, not a timer's).
      const fifo = path.join(dir, "go");
      execFileSync("mkfifo", [fifo]);
      const run = async (unref: boolean) => {
        const script = path.join(dir, `run-${unref}.mjs`);
        await fsp.writeFile(
          script,
          `import { startOffThread } from ${JSON.stringify(module)};
           const child = startOffThread("/bin/sh", ["-c", "cat ${fifo} >/dev/null; echo > ${dir}/ended"], { env: process.env });
           child.on("spawn", () => { console.log(child.pid); ${unref ? "child.unref();" : ""} });`,
        );
        const node = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
        const closed = new Promise((resolve) => node.once("close", resolve));
        let printed = "";
        for await (const chunk of node.stdout) {
          printed += String(chunk);
          if (printed.endsWith("\n")) break;
        }
        const pid = Number(printed);
        if (!(pid > 0)) throw new Error(`no pid printed: ${printed}`);
        // Unref'd, node leaves while the child is blocked (held, this would wait out the test's timeout).
        if (unref) await closed;
        // Unblocks the child: it writes `ended` and exits.
        await fsp.writeFile(fifo, "go\n");
        await closed;
        const endedBeforeNode = existsSync(path.join(dir, "ended"));
        // It outlived node (unref'd) and finishes on its own.
        await until(() => existsSync(path.join(dir, "ended")));
        await fsp.rm(path.join(dir, "ended"), { force: true });
        return endedBeforeNode;
      };
      // Held: node stays until it has ended.
      expect(await run(false)).toBe(true);
      await run(true);
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
