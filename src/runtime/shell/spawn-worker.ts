import { spawn as nodeSpawn } from "node:child_process";
import type { Socket } from "node:net";
import type { Readable } from "node:stream";
import { parentPort } from "node:worker_threads";
import { releaseGuard, unrefGuard } from "../process-groups.js";
import type { SpawnReply, SpawnRequest } from "./spawn-thread.js";

// The spawner thread (spawn-thread.ts): starts each command with execa, so the fork and the wait
// for its exec block this thread, not the agent's, and relays its pipes: bytes, ends and exit go
// to the agent's thread; pause, resume, destroy and the guard's release come back. A helper
// program of toolhost's own (the checkpoints' git) runs here to its end, with node's spawn.

const port = parentPort!;
const post = (reply: SpawnReply, transfer?: ArrayBuffer[]) => port.postMessage(reply, transfer);

interface Running {
  streams: Record<"stdout" | "stderr", Readable | null>;
  guard: Socket | undefined;
}
const running = new Map<number, Running>();

/** Bytes of a chunk in a buffer of their own, handed over without another copy. */
function owned(chunk: Buffer): [Uint8Array, ArrayBuffer[]] {
  const copy = new Uint8Array(chunk);
  return [copy, [copy.buffer]];
}

async function spawn(request: Extract<SpawnRequest, { op: "spawn" }>): Promise<void> {
  const { id } = request;
  const { execa } = await import("execa");
  const child = execa(request.file, request.args, {
    cwd: request.cwd,
    env: request.env,
    extendEnv: false,
    detached: true,
    stdio: [request.input ? "pipe" : "ignore", "pipe", "pipe", "pipe"],
    buffer: false,
    reject: false,
    stripFinalNewline: false,
    windowsHide: true,
  });
  if (child.pid === undefined) {
    const result = await child;
    const cause = result.cause as NodeJS.ErrnoException | undefined;
    post({ id, type: "failed", code: cause?.code, message: cause?.message ?? result.message ?? "spawn failed" });
    return;
  }
  if (request.input && child.stdin) {
    // One that does not read its stdin closes the pipe early: not an error.
    child.stdin.on("error", () => {});
    child.stdin.end(request.input);
  }
  const guard = child.stdio[3] as Socket;
  unrefGuard(guard);
  guard.on("data", (chunk: Buffer) => {
    const [bytes, transfer] = owned(chunk);
    post({ id, type: "data", stream: "guard", chunk: bytes }, transfer);
  });
  running.set(id, { streams: { stdout: child.stdout, stderr: child.stderr }, guard });
  post({ id, type: "spawned", pid: child.pid });
  // Done here once it has exited and both pipes have closed (execa's own promise would also wait
  // for fd 3, which a guard kept for a background job holds until toolhost ends).
  let open = 3;
  const closed = () => {
    if (--open === 0) post({ id, type: "settled" });
  };
  for (const name of ["stdout", "stderr"] as const) {
    const stream = child[name];
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
  const forget = () => running.delete(id);
  child.then(forget, forget);
}

/** A helper program run to its end: its output collected here, handed over whole. */
function runToEnd(request: Extract<SpawnRequest, { op: "run" }>): void {
  const { id } = request;
  const child = nodeSpawn(request.file, request.args, { cwd: request.cwd, env: request.env, stdio: ["pipe", "pipe", "pipe"] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let size = 0;
  let failed = false;
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
    post({ id, type: "failed", code: error.code, message: error.message });
  });
  child.on("close", (code, signal) => {
    if (failed) return;
    // Buffers of their own (a small one may be a slice of Node's shared pool), moved, not copied again.
    const stdout = new Uint8Array(Buffer.concat(out));
    const stderr = new Uint8Array(Buffer.concat(err));
    const result = { code, signal, stdout, stderr, overflow: size > request.maxOutput };
    post({ id, type: "ran", result }, [stdout.buffer, stderr.buffer]);
  });
  // It may exit before it reads its input (EPIPE): its exit code says what happened.
  child.stdin.on("error", () => {});
  child.stdin.end(request.input);
}

port.on("message", (request: SpawnRequest) => {
  if (request.op === "run") return runToEnd(request);
  if (request.op === "spawn") {
    spawn(request).catch((err: unknown) =>
      post({ id: request.id, type: "failed", message: err instanceof Error ? err.message : String(err) }),
    );
    return;
  }
  const run = running.get(request.id);
  if (!run) return;
  if (request.op === "release") releaseGuard(run.guard);
  else {
    const stream = run.streams[request.stream];
    if (request.op === "pause") stream?.pause();
    else if (request.op === "resume") stream?.resume();
    else stream?.destroy();
  }
});
