import { spawn as nodeSpawn, type ChildProcess } from "node:child_process";
import type { Socket } from "node:net";
import type { Readable, Writable } from "node:stream";
import { parentPort } from "node:worker_threads";
import treeKill from "tree-kill";
import { releaseGuard, unrefGuard } from "../process-groups.js";
import type { SpawnReply, SpawnRequest } from "./spawn-protocol.js";

// The spawner thread (spawn-thread.ts): starts every process toolhost runs, so the fork and the
// wait for its exec block this thread, not the agent's, and relays its pipes: bytes, ends and exit
// go to the agent's thread; pause, resume, destroy, writes, kills and the guard's release come
// back. A helper program of toolhost's own (the checkpoints' git, a probe) runs here to its end.

const port = parentPort!;
const post = (reply: SpawnReply, transfer?: ArrayBuffer[]) => port.postMessage(reply, transfer);

interface Running {
  streams: Record<"stdout" | "stderr", Readable | null>;
  stdin: Writable | null;
  child: ChildProcess;
}
const running = new Map<number, Running>();
/** The processes' guards, held until released or closed (or the guard is gone), even after their process ended. */
const guards = new Map<number, Socket>();

/** Bytes of a chunk in a buffer of their own, handed over without another copy. */
function owned(chunk: Buffer): [Uint8Array, ArrayBuffer[]] {
  const copy = new Uint8Array(chunk);
  return [copy, [copy.buffer]];
}

/** Relays a child's stdout, stderr and exit; `settled` once it has exited and both pipes have closed. */
function relay(id: number, child: Pick<ChildProcess, "stdout" | "stderr" | "once">, settled: () => void): void {
  let open = 3;
  const closed = () => {
    if (--open === 0) settled();
  };
  for (const name of ["stdout", "stderr"] as const) {
    const stream = child[name]!;
    let done = false;
    const close = () => {
      if (done) return;
      done = true;
      post({ id, type: "close", stream: name });
      closed();
    };
    stream.on("data", (chunk: Buffer) => {
      const [bytes, transfer] = owned(chunk);
      post({ id, type: "data", stream: name, chunk: bytes }, transfer);
    });
    stream.once("end", () => post({ id, type: "end", stream: name }));
    stream.once("close", close);
    stream.on("error", close);
  }
  child.once("exit", (code, signal) => {
    post({ id, type: "exit", code, signal });
    closed();
  });
}

/**
 * Starts a process with node's spawn, so its fork and the wait for its exec block this thread:
 * a command or a hook's (`spawn`: a group of its own, its guard's pid relayed, `input` written to
 * stdin), or one whose pipes stay open to the agent's thread (`open`: a server, a background
 * process, rg). Its guard, when it has one, is held until released or closed, or until it closes.
 */
function start(request: Extract<SpawnRequest, { op: "spawn" | "open" }>): void {
  const { id } = request;
  const how =
    request.op === "spawn"
      ? { detached: true, stdin: request.input !== undefined, guard: true }
      : { detached: request.detached, stdin: request.stdin, guard: request.guard };
  const child = nodeSpawn(request.file, request.args, {
    cwd: request.cwd,
    env: request.env,
    detached: how.detached,
    stdio: [how.stdin ? "pipe" : "ignore", "pipe", "pipe", ...(how.guard ? ["pipe" as const] : [])],
  });
  let started = false;
  child.on("error", (error: NodeJS.ErrnoException) => {
    // After the start, an error is a failed kill: the exit and pipes still tell (and one unheard would end this thread).
    if (started) return;
    post({ id, type: "failed", code: error.code, message: error.message });
  });
  if (child.pid === undefined) return;
  started = true;
  const guard = how.guard ? (child.stdio[3] as Socket) : undefined;
  if (guard) {
    unrefGuard(guard);
    guards.set(id, guard);
    guard.once("close", () => guards.delete(id));
    // The guard's pid: the shell backend tells it from the rest of the group.
    guard.on("data", (chunk: Buffer) => {
      const [bytes, transfer] = owned(chunk);
      post({ id, type: "data", stream: "guard", chunk: bytes }, transfer);
    });
  }
  // One that does not read its stdin closes the pipe early: its business; a write then fails with the reason.
  child.stdin?.on("error", () => {});
  if (request.op === "spawn" && request.input) child.stdin?.end(request.input);
  running.set(id, { streams: { stdout: child.stdout, stderr: child.stderr }, stdin: child.stdin, child });
  post({ id, type: "spawned", pid: child.pid });
  relay(id, child, () => {
    running.delete(id);
    child.stdin?.destroy();
    post({ id, type: "settled" });
  });
}

/** What the agent's thread does to a running process: its streams, a write, a kill, the guard's release. */
function control(request: Exclude<SpawnRequest, { op: "spawn" | "run" | "open" | "treeKill" }>): void {
  const run = running.get(request.id);
  switch (request.op) {
    case "release":
      releaseGuard(guards.get(request.id));
      guards.delete(request.id);
      return;
    case "closeGuard":
      guards.get(request.id)?.destroy();
      guards.delete(request.id);
      return;
    case "write": {
      const stdin = run?.stdin;
      if (!stdin || stdin.destroyed || stdin.writableEnded) return post({ id: request.id, type: "written", error: "the stream is closed" });
      stdin.write(Buffer.from(request.chunk.buffer, request.chunk.byteOffset, request.chunk.byteLength), (error) =>
        post({ id: request.id, type: "written", error: error?.message }),
      );
      return;
    }
    case "end":
      run?.stdin?.end();
      return;
    case "kill":
      run?.child.kill(request.signal);
      return;
    case "destroy":
      if (request.stream === "stdin") run?.stdin?.destroy();
      else run?.streams[request.stream]?.destroy();
      return;
    case "pause":
      run?.streams[request.stream]?.pause();
      return;
    case "resume":
      run?.streams[request.stream]?.resume();
      return;
  }
}

/** A helper program run to its end: its output collected here, handed over whole. */
function runToEnd(request: Extract<SpawnRequest, { op: "run" }>): void {
  const { id } = request;
  const child = nodeSpawn(request.file, request.args, { cwd: request.cwd, env: request.env, stdio: ["pipe", "pipe", "pipe"] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let size = 0;
  let failed = false;
  let timedOut = false;
  const timer =
    request.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          child.kill("SIGKILL");
        }, request.timeoutMs);
  child.stdout.on("data", (chunk: Buffer) => {
    size += chunk.length;
    if (size <= request.maxOutput) out.push(chunk);
    else {
      // Its pipe closed too: a child it left (a shell's) then ends on its next write, not holding the pipe open.
      child.kill("SIGKILL");
      child.stdout.destroy();
    }
  });
  child.stderr.on("data", (chunk: Buffer) => err.push(chunk));
  child.on("error", (error: NodeJS.ErrnoException) => {
    failed = true;
    clearTimeout(timer);
    post({ id, type: "failed", code: error.code, message: error.message });
  });
  child.on("close", (code, signal) => {
    clearTimeout(timer);
    if (failed) return;
    // Buffers of their own (a small one may be a slice of Node's shared pool), moved, not copied again.
    const stdout = new Uint8Array(Buffer.concat(out));
    const stderr = new Uint8Array(Buffer.concat(err));
    const result = { code, signal, stdout, stderr, overflow: size > request.maxOutput, timedOut };
    post({ id, type: "ran", result }, [stdout.buffer, stderr.buffer]);
  });
  // It may exit before it reads its input (EPIPE): its exit code says what happened.
  child.stdin.on("error", () => {});
  child.stdin.end(request.input);
}

port.on("message", (request: SpawnRequest) => {
  if (request.op === "run") return runToEnd(request);
  if (request.op === "spawn" || request.op === "open") {
    try {
      start(request);
    } catch (err) {
      // Arguments spawn refuses outright (a NUL byte in one).
      post({ id: request.id, type: "failed", code: (err as NodeJS.ErrnoException).code, message: (err as Error).message });
    }
    return;
  }
  // tree-kill walks the tree with one `ps` per process: each a fork, here rather than on the agent's thread.
  if (request.op === "treeKill") return treeKill(request.pid, request.signal, () => post({ id: request.id, type: "treeKilled" }));
  control(request);
});
