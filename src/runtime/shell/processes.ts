import * as fsp from "node:fs/promises";
import { randomBytes } from "node:crypto";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import type { RemoteProcess } from "./remote-process.js";
import type { ProcessInfo, ProcessOutput, ProcessStream, ProcessWaitOptions } from "../../tool/context.js";
import { ToolError } from "../../tool/errors.js";
import { groupExists, killTree, signalGroup, terminateTree, waitForGroupExit } from "../process-groups.js";
import { groupEnded, spawnGroup } from "./background.js";
import { OutputRing, RING_BYTES } from "./output-ring.js";

// A session's background processes (the `process` tool's): a table of at most MAX_RUNNING live
// processes, each with a ring file per stream in the session's sidecar folder, stopped as a tree,
// all of them when the session closes. `background.ts` spawns them; `scoped.ts` checks and wraps
// (the sandbox) what they run first, as for any command.

/** Processes that may run at once in one session. */
export const MAX_RUNNING_PROCESSES = 8;
/** Ended processes kept (with their output) for `get` and `output`; the oldest go first. */
const MAX_ENDED_PROCESSES = 16;
/** Between SIGTERM and SIGKILL when a process is stopped. */
const STOP_GRACE_MS = 2000;
/** How long the pipes may stay open after the group has ended (a process that left it holding them). */
const DRAIN_MS = 500;
/** What `wait` scans of what was written before it started, and keeps of the text between chunks. */
const WAIT_SCAN_BYTES = 64 * 1024;
const WAIT_WINDOW_CHARS = 4096;
/** A write to a stdin nobody reads gives up after this long. */
const WRITE_TIMEOUT_MS = 10_000;

export interface ProcessListener {
  output(chunk: Buffer, stream: ProcessStream): void;
  exit(info: ProcessInfo): void;
}

/** What a viewer of a process (an editor terminal) gets: what it is, and its output as it comes. */
export interface ProcessFeed {
  info(): ProcessInfo;
  /** Calls `listener` with every chunk from now on and with the end (at once, if it has ended); returns the unsubscribe. */
  follow(listener: ProcessListener): () => void;
}

/** A command to start, after the scope check and the session's transform (the sandbox). */
export interface BackgroundRequest {
  file: string;
  args: string[];
  cwd: string;
  env?: Record<string, string>;
  /** The command line as asked, for `list` and `get`. */
  command: string;
  name?: string;
  sandboxed?: boolean;
  /** The sandbox's check of what the process left behind, once it has ended. */
  settle?: () => Promise<string | undefined>;
  /** The same check while it runs (what it plants is moved as it appears); its notes join the notice. */
  watch?: (said: (note: string) => void) => { close(): Promise<void> };
}

export interface SessionProcessesOptions {
  maxRunning?: number;
  /** Bytes each stream's ring keeps (default 1 MB). */
  ringBytes?: number;
}

const STREAMS: readonly ProcessStream[] = ["stdout", "stderr"];

/** A pattern for `wait`: tested again and again, so without the state of the g and y flags. */
function stateless(pattern: RegExp): RegExp {
  return pattern.global || pattern.sticky ? new RegExp(pattern.source, pattern.flags.replace(/[gy]/g, "")) : pattern;
}

class BackgroundProcess implements ProcessFeed {
  private readonly startedAt = new Date();
  private endedAt: Date | undefined;
  private exit: { code: number | null; signal: string | null } | null = null;
  /** Set by `stop`: the tree was sent SIGTERM and gets `graceMs` before SIGKILL. */
  private stopping: { graceMs: number } | null = null;
  /** What the sandbox's live check moved while the process ran. */
  private readonly notes: string[] = [];
  private readonly watching: { close(): Promise<void> } | undefined;
  private readonly listeners = new Set<ProcessListener>();
  private openStreams = 0;
  private pipesClosed!: () => void;
  private readonly drained: Promise<void> = new Promise((resolve) => (this.pipesClosed = resolve));
  private markEnded!: () => void;
  /** Resolves once the leader has exited, its group is gone and its pipes are drained (or cut). */
  readonly ended: Promise<void> = new Promise((resolve) => (this.markEnded = resolve));

  constructor(
    readonly id: string,
    private readonly request: BackgroundRequest,
    private readonly child: RemoteProcess,
    readonly pid: number,
    readonly rings: Record<ProcessStream, OutputRing>,
  ) {
    for (const stream of STREAMS) {
      const pipe = child[stream];
      if (!pipe) continue;
      this.openStreams++;
      let closed = false;
      const onClosed = () => {
        if (closed) return;
        closed = true;
        if (--this.openStreams === 0) this.pipesClosed();
      };
      pipe.on("data", (chunk: Buffer) => this.onData(stream, chunk));
      pipe.once("end", onClosed);
      pipe.once("close", onClosed);
      pipe.on("error", onClosed);
    }
    if (this.openStreams === 0) this.pipesClosed();
    this.watching = request.watch?.((note) => this.notes.push(note));
    if (child.exitCode !== null || child.signalCode !== null) this.onExit(child.exitCode, child.signalCode);
    else child.once("exit", (code, signal) => this.onExit(code, signal));
  }

  get name(): string | undefined {
    return this.request.name;
  }

  get running(): boolean {
    return this.endedAt === undefined;
  }

  info(): ProcessInfo {
    const { request } = this;
    return {
      id: this.id,
      ...(request.name !== undefined ? { name: request.name } : {}),
      command: request.command,
      cwd: request.cwd,
      pid: this.pid,
      status: this.endedAt === undefined ? "running" : this.stopping ? "stopped" : "exited",
      exit_code: this.exit?.code ?? null,
      signal: this.exit?.signal ?? null,
      started_at: this.startedAt.toISOString(),
      ...(this.endedAt ? { ended_at: this.endedAt.toISOString() } : {}),
      stdout_bytes: this.rings.stdout.total,
      stderr_bytes: this.rings.stderr.total,
      ...(request.sandboxed ? { sandboxed: true } : {}),
      ...(this.notes.length ? { notice: this.notes.join("\n") } : {}),
    };
  }

  follow(listener: ProcessListener): () => void {
    if (!this.running) {
      listener.exit(this.info());
      return () => undefined;
    }
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private onData(stream: ProcessStream, chunk: Buffer): void {
    try {
      this.rings[stream].write(chunk);
    } catch {
      // A ring that cannot be written (the folder removed under it) stops keeping; the process goes on.
    }
    for (const listener of this.listeners) {
      try {
        listener.output(chunk, stream);
      } catch {
        // A failing viewer must not break the process or the others.
      }
    }
  }

  private onExit(code: number | null, signal: string | null): void {
    if (this.exit) return;
    this.exit = { code, signal };
    // The leader is gone, so is the process: what is left of its group (children, the guard) goes
    // too, at once, unless a stop is under way (then they have the rest of its grace).
    if (!this.stopping) signalGroup(this.pid, "SIGKILL");
    void this.finish();
  }

  /** Once the group is gone and the pipes are drained (cut after DRAIN_MS: a process that left the group holds them). */
  private async finish(): Promise<void> {
    await waitForGroupExit(this.pid, (this.stopping?.graceMs ?? 0) + 2000);
    let cut: NodeJS.Timeout | undefined;
    await Promise.race([this.drained, new Promise((resolve) => (cut = setTimeout(resolve, DRAIN_MS)))]);
    clearTimeout(cut);
    for (const stream of STREAMS) this.child[stream]?.destroy();
    this.child.stdin?.destroy();
    groupEnded(this.pid);
    // A check of the watch still under way ends first: two at once would both move the same plant.
    await this.watching?.close();
    const last = await this.request.settle?.().catch((err: unknown) => `The sandbox's check after the process failed: ${String(err)}`);
    if (last) this.notes.push(last);
    this.endedAt = new Date();
    const info = this.info();
    for (const listener of this.listeners) {
      try {
        listener.exit(info);
      } catch {
        // as above
      }
    }
    this.listeners.clear();
    this.markEnded();
  }

  /** SIGTERM to the tree, SIGKILL after `graceMs`; resolves once it has ended. */
  async stop(graceMs: number): Promise<void> {
    if (this.running && !this.exit && !this.stopping) {
      this.stopping = { graceMs };
      terminateTree(this.pid);
      const escalate = setTimeout(() => {
        if (this.running && (this.exit === null || groupExists(this.pid))) killTree(this.pid, this.exit === null);
      }, graceMs);
      escalate.unref();
      void this.ended.then(() => clearTimeout(escalate));
    }
    await this.ended;
  }

  read(stream: ProcessStream, range: { offset?: number; tail?: number; maxBytes: number }): ProcessOutput {
    return this.rings[stream].read(range, !this.running);
  }

  async write(data: string, end: boolean): Promise<number> {
    const stdin = this.child.stdin;
    if (!this.running || this.exit) throw new ToolError("unavailable", `${this.id} has ended: there is nothing to write to`);
    if (!stdin || stdin.writableEnded || stdin.destroyed) throw new ToolError("unavailable", `The stdin of ${this.id} is closed`);
    const bytes = Buffer.byteLength(data);
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        new Promise<void>((resolve, reject) => stdin.write(data, (err) => (err ? reject(err) : resolve()))),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new ToolError("timeout", `${this.id} did not read its stdin within ${WRITE_TIMEOUT_MS / 1000} s`)),
            WRITE_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (err) {
      if (err instanceof ToolError) throw err;
      throw new ToolError("unavailable", `Could not write to ${this.id}: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      clearTimeout(timer);
    }
    if (end) stdin.end();
    return bytes;
  }

  /** Waits for `pattern` in the streams' output (past `offsets`), the end, the timeout or the signal. */
  wait(options: ProcessWaitOptions, signal: AbortSignal): Promise<"matched" | "ended" | "timeout"> {
    const pattern = options.pattern ? stateless(options.pattern) : undefined;
    const windows: Record<ProcessStream, string> = { stdout: "", stderr: "" };
    for (const stream of options.streams) {
      const ring = this.rings[stream];
      const from = Math.max(options.offsets?.[stream] ?? 0, ring.total - WAIT_SCAN_BYTES);
      const { text } = ring.read({ offset: from, maxBytes: WAIT_SCAN_BYTES }, !this.running);
      if (pattern?.test(text)) return Promise.resolve("matched");
      windows[stream] = text.slice(-WAIT_WINDOW_CHARS);
    }
    if (!this.running) return Promise.resolve("ended");
    if (signal.aborted) return Promise.reject(new ToolError("aborted", "The call was cancelled"));
    return new Promise((resolve, reject) => {
      const decoders = { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") };
      const done = (outcome: "matched" | "ended" | "timeout" | Error) => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        unfollow();
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome);
      };
      const onAbort = () => done(new ToolError("aborted", "The call was cancelled"));
      const timer = setTimeout(() => done("timeout"), Math.min(options.timeoutMs, 2 ** 31 - 1));
      signal.addEventListener("abort", onAbort, { once: true });
      const unfollow = this.follow({
        output: (chunk, stream) => {
          if (!options.streams.includes(stream)) return;
          const text = decoders[stream].write(chunk);
          if (text === "") return;
          options.onOutput?.(text, stream);
          const window = windows[stream] + text;
          windows[stream] = window.slice(-WAIT_WINDOW_CHARS);
          if (pattern?.test(window)) done("matched");
        },
        exit: () => done("ended"),
      });
    });
  }

  /** Removes the ring files (the process has ended). */
  discard(): void {
    for (const stream of STREAMS) {
      try {
        this.rings[stream].remove();
      } catch {
        // already gone with the folder
      }
    }
  }
}

/** A process ring file's name (`process-<id>-<tag>.<stream>`). */
const RING_FILE = /^process-p\d+-[0-9a-f]{6}\.(stdout|stderr)$/;

/** Removes the ring files in `dir`: called before a table's first ring exists there. */
async function sweepRings(dir: string): Promise<void> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  await Promise.all(names.filter((n) => RING_FILE.test(n)).map((n) => fsp.rm(path.join(dir, n), { force: true })));
}

/**
 * The background processes of one session. `folder` is the session's sidecar folder (made and
 * checked on first use), where the rings go. Closing it stops every process (tree kill) and removes
 * the rings; a closed table starts nothing.
 */
export class SessionProcesses {
  private readonly processes = new Map<string, BackgroundProcess>();
  private seq = 0;
  /** Starts under way: they count against the cap before their process exists, and a close waits for them. */
  private readonly starting = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;
  /** Set once the rings a crashed earlier run left in the folder are removed. */
  private swept: Promise<void> | undefined;
  private readonly maxRunning: number;
  private readonly ringBytes: number;

  constructor(
    private readonly folder: () => Promise<string>,
    options: SessionProcessesOptions = {},
  ) {
    this.maxRunning = options.maxRunning ?? MAX_RUNNING_PROCESSES;
    this.ringBytes = options.ringBytes ?? RING_BYTES;
  }

  private running(): BackgroundProcess[] {
    return [...this.processes.values()].filter((p) => p.running);
  }

  /** Throws when one more process may not start now: the session is closing, the cap is reached, or the name is taken. */
  checkRoom(name?: string): void {
    if (this.closing) throw new ToolError("unavailable", "The session is closing: no process starts any more");
    const running = this.running();
    if (running.length + this.starting.size >= this.maxRunning) {
      const list = running.map((p) => (p.name ? `${p.id} (${p.name})` : p.id)).join(", ");
      throw new ToolError(
        "unavailable",
        `${this.maxRunning} background processes are running already, the most a session may run at once (${list}): stop one first (process stop)`,
      );
    }
    if (name !== undefined && running.some((p) => p.name === name)) {
      throw new ToolError("already_exists", `A running process is named "${name}" already: stop it first, or choose another name`);
    }
  }

  /** Starts a checked and wrapped command; its feed is returned before any of its output is read. */
  start(request: BackgroundRequest): Promise<BackgroundProcess> {
    this.checkRoom(request.name);
    const started = this.spawn(request);
    this.starting.add(started);
    const settled = () => this.starting.delete(started);
    started.then(settled, settled);
    return started;
  }

  private async spawn(request: BackgroundRequest): Promise<BackgroundProcess> {
    let rings: Record<ProcessStream, OutputRing> | undefined;
    try {
      const dir = await this.folder();
      // No process outlives toolhost, so rings found before this table's first are a crashed run's.
      await (this.swept ??= sweepRings(dir));
      const id = `p${++this.seq}`;
      const tag = randomBytes(3).toString("hex");
      const ring = (stream: ProcessStream) => new OutputRing(path.join(dir, `process-${id}-${tag}.${stream}`), this.ringBytes);
      rings = { stdout: ring("stdout"), stderr: ring("stderr") };
      const { child, pid } = await spawnGroup(request.file, request.args, { cwd: request.cwd, env: request.env });
      // A close under way waited for this start: it stops it with the rest.
      const started = new BackgroundProcess(id, request, child, pid, rings);
      this.processes.set(id, started);
      this.evictEnded();
      return started;
    } catch (err) {
      for (const r of Object.values(rings ?? {})) r.remove();
      await request.settle?.().catch(() => undefined);
      throw err;
    }
  }

  /** By id, else the newest process of that name. */
  find(ref: string): BackgroundProcess {
    const byId = this.processes.get(ref);
    if (byId) return byId;
    const named = [...this.processes.values()].filter((p) => p.name === ref).at(-1);
    if (named) return named;
    const known = [...this.processes.values()].map((p) => (p.name ? `${p.id} (${p.name})` : p.id));
    throw new ToolError(
      "not_found",
      `There is no background process "${ref}" in this session${known.length ? `; there are: ${known.join(", ")}` : ""}`,
    );
  }

  list(): ProcessInfo[] {
    return [...this.processes.values()].map((p) => p.info());
  }

  async stop(ref: string, graceMs = STOP_GRACE_MS): Promise<ProcessInfo> {
    const found = this.find(ref);
    await found.stop(graceMs);
    return found.info();
  }

  /** Past MAX_ENDED_PROCESSES ended ones, the oldest are forgotten and their rings removed. */
  private evictEnded(): void {
    const ended = [...this.processes.values()].filter((p) => !p.running);
    for (const old of ended.slice(0, Math.max(0, ended.length - MAX_ENDED_PROCESSES))) {
      old.discard();
      this.processes.delete(old.id);
    }
  }

  /** Stops every process (SIGTERM, then SIGKILL after the grace) and removes the rings. */
  close(graceMs = STOP_GRACE_MS): Promise<void> {
    this.closing ??= (async () => {
      await Promise.allSettled([...this.starting]);
      const all = [...this.processes.values()];
      await Promise.all(all.map((p) => p.stop(graceMs)));
      for (const p of all) p.discard();
    })();
    return this.closing;
  }
}
