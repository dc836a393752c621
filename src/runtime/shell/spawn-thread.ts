import { Worker } from "node:worker_threads";
import { workerFile } from "../../tool/worker-file.js";
import { RemoteChild, RemoteProcess } from "./remote-process.js";
import type { DistributiveOmit, RunResult, SpawnReply, SpawnRequest } from "./spawn-protocol.js";

export type { RunResult } from "./spawn-protocol.js";
export type { RemoteChild } from "./remote-process.js";

// Commands are started on a worker thread of their own (`spawn-worker.ts`), never on the agent's.
// Node's spawn() is synchronous: libuv forks on the calling thread and waits for the child's exec
// before it returns, 10–27 ms a command on the machines measured (more the bigger the process and
// the busier the machine; nodejs/node#14917), during which no ACP message is read. The child's
// pipes live on the worker's event loop; their bytes come here as messages, and pause, resume and
// destroy go back, so a paused stream stops the pipe (backpressure holds). The pipes, and the
// group guard's socket (process-groups.ts), still belong to this process: whatever ends toolhost
// closes them, and the guard ends the command's group. A worker that dies closes them too.

type Started = { child: RemoteChild } | { failed: { code?: string; message: string } };

/** Where and how a process starts: `input`, when given, is written to its stdin, which then closes. */
interface SpawnOptions {
  cwd: string;
  env: Record<string, string | undefined>;
  input?: Uint8Array;
}

/** The process's one spawner thread: started with the first command, unref'd while no command runs. */
class SpawnThread {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly starting = new Map<number, (started: Started) => void>();
  private readonly children = new Map<number, RemoteChild>();
  private readonly runs = new Map<number, (ran: RunResult | { failed: { code?: string; message: string } }) => void>();
  private readonly opened = new Map<number, RemoteProcess>();
  private readonly kills = new Map<number, () => void>();

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(workerFile(import.meta.url, "spawn-worker.js"));
    worker.unref();
    const lost = (why: string) => {
      if (this.worker === worker) this.worker = undefined;
      for (const resolve of this.starting.values()) resolve({ failed: { message: `the spawner thread ${why}` } });
      this.starting.clear();
      for (const resolve of this.runs.values()) resolve({ failed: { message: `the spawner thread ${why}` } });
      this.runs.clear();
      for (const child of this.children.values()) child.lost();
      this.children.clear();
      for (const child of this.opened.values()) child.lost();
      this.opened.clear();
      for (const resolve of this.kills.values()) resolve();
      this.kills.clear();
    };
    worker.on("message", (reply: SpawnReply) => this.take(reply));
    worker.on("error", (err) => lost(`failed: ${err.message}`));
    worker.on("exit", (code) => lost(`ended (exit code ${code})`));
    this.worker = worker;
    return worker;
  }

  private take(reply: SpawnReply): void {
    const opened = this.opened.get(reply.id);
    if (opened) {
      opened.take(reply);
      if (opened.settled) this.opened.delete(reply.id);
      return this.holdWhileBusy();
    }
    const kill = this.kills.get(reply.id);
    if (kill && reply.type === "treeKilled") {
      this.kills.delete(reply.id);
      kill();
      return this.holdWhileBusy();
    }
    const starting = this.starting.get(reply.id);
    const run = this.runs.get(reply.id);
    if (run && (reply.type === "ran" || reply.type === "failed")) {
      this.runs.delete(reply.id);
      run(reply.type === "ran" ? reply.result : { failed: { code: reply.code, message: reply.message } });
    } else if (starting && (reply.type === "spawned" || reply.type === "failed")) {
      this.starting.delete(reply.id);
      if (reply.type === "failed") starting({ failed: { code: reply.code, message: reply.message } });
      else {
        const child = new RemoteChild(reply.pid, (request) => this.worker?.postMessage(request), reply.id);
        this.children.set(reply.id, child);
        starting({ child });
      }
    } else {
      const child = this.children.get(reply.id);
      child?.take(reply);
      if (reply.type === "settled") this.children.delete(reply.id);
    }
    this.holdWhileBusy();
  }

  /** A running command keeps toolhost alive, as its pipes did on this thread; an unref'd process does not. */
  private holdWhileBusy(): void {
    const held = [...this.opened.values()].some((child) => child.held);
    if (this.starting.size === 0 && this.children.size === 0 && this.runs.size === 0 && this.kills.size === 0 && !held)
      this.worker?.unref();
    else this.worker?.ref();
  }

  /** Sends a request, its answer awaited in `pending`; the worker is held while it waits. */
  private ask<T>(pending: Map<number, (answer: T) => void>, request: DistributiveOmit<SpawnRequest, "id">): Promise<T> {
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve) => {
      pending.set(id, resolve);
      worker.ref();
      worker.postMessage({ id, ...request } as SpawnRequest);
    });
  }

  /** Starts `file args` in a group of its own (detached), stdin closed (or `input` written to it), stdout, stderr and fd 3 piped. */
  spawn(file: string, args: string[], options: SpawnOptions): Promise<Started> {
    return this.ask(this.starting, { op: "spawn", file, args, ...options });
  }

  /** Runs `file args` to its end with `input` on its stdin, its output collected (past `maxOutput` bytes it is killed). */
  run(
    file: string,
    args: string[],
    options: { cwd?: string; env: Record<string, string | undefined>; input: Uint8Array; maxOutput: number; timeoutMs?: number },
  ): Promise<RunResult | { failed: { code?: string; message: string } }> {
    return this.ask(this.runs, { op: "run", file, args, ...options });
  }

  /** tree-kill's walk of `pid`'s descendants and their signal, done there; resolves when it has. */
  treeKill(pid: number, signal: NodeJS.Signals): Promise<void> {
    return this.ask(this.kills, { op: "treeKill", pid, signal });
  }

  /** Starts a process whose pipes stay open to it (see `startOffThread`); it is there at once, its pid once it runs. */
  open(file: string, args: string[], options: OpenOptions): RemoteProcess {
    const worker = this.start();
    const id = this.nextId++;
    const child = new RemoteProcess(
      (request) => this.worker?.postMessage({ id, ...request } as SpawnRequest),
      options.stdin ?? false,
      () => this.holdWhileBusy(),
    );
    this.opened.set(id, child);
    worker.ref();
    worker.postMessage({
      id,
      op: "open",
      file,
      args,
      cwd: options.cwd,
      env: options.env,
      detached: options.detached ?? false,
      stdin: options.stdin ?? false,
      guard: options.guard ?? false,
    } satisfies SpawnRequest);
    return child;
  }
}

/** How `startOffThread` starts a process. */
export interface OpenOptions {
  cwd?: string;
  env: Record<string, string | undefined>;
  /** A group of its own. */
  detached?: boolean;
  /** stdin a pipe (else /dev/null). */
  stdin?: boolean;
  /** fd 3 a socket pair for the group guard (process-groups.ts), held unref'd until `releaseGuard` or toolhost's end. */
  guard?: boolean;
}

let thread: SpawnThread | undefined;

/**
 * Runs a helper program of toolhost's own (the checkpoints' git, a probe) to its end off the agent's
 * thread: its fork would hold the thread as a command's does. Throws when it could not start.
 */
export async function runOffThread(
  file: string,
  args: string[],
  options: { cwd?: string; env: Record<string, string | undefined>; input?: string | Uint8Array; maxOutput: number; timeoutMs?: number },
): Promise<RunResult> {
  const input = typeof options.input === "string" ? Buffer.from(options.input) : (options.input ?? new Uint8Array());
  const ran = await (thread ??= new SpawnThread()).run(file, args, { ...options, input });
  if ("failed" in ran) throw Object.assign(new Error(ran.failed.message), ran.failed.code ? { code: ran.failed.code } : {});
  return ran;
}

/**
 * Starts a long-lived process off the agent's thread — a language or MCP server, a background
 * process, ripgrep — and hands back its pipes as a ChildProcess's (remote-process.ts). It is
 * returned at once; `spawn` or `error` says how its start went.
 */
export function startOffThread(file: string, args: string[], options: OpenOptions): RemoteProcess {
  return (thread ??= new SpawnThread()).open(file, args, options);
}

/** Starts a command (or a hook's) off the agent's thread (see the top of this file). */
export function spawnOffThread(file: string, args: string[], options: SpawnOptions) {
  return (thread ??= new SpawnThread()).spawn(file, args, options);
}

/** Signals `pid` and its descendants (tree-kill, which forks a `ps` per process) from the spawner thread. */
export function treeKillOffThread(pid: number, signal: NodeJS.Signals): Promise<void> {
  return (thread ??= new SpawnThread()).treeKill(pid, signal);
}
