import { readFileSync } from "node:fs";
import * as fsp from "node:fs/promises";
import { StringDecoder } from "node:string_decoder";
import type { Readable } from "node:stream";
import type { ShellResult, SidecarWriter } from "../../tool/context.js";
import { ToolError } from "../../tool/errors.js";
import { utf8HeadEnd, utf8TailStart } from "../../tool/truncate.js";
import type { ShellBackend, ShellSpawnOptions } from "./backend.js";
import type { Duplex } from "node:stream";
import {
  groupExists,
  groupLiveMembers,
  guardedCommand,
  killTree,
  releaseGuard,
  signalGroup,
  terminateTree,
  unrefGuard,
  waitForGroupExit,
} from "../process-groups.js";
import { spawnOffThread, type RemoteChild } from "./spawn-thread.js";

export interface LocalShellOptions {
  /** How long a killed tree gets between SIGTERM and SIGKILL (default 2 s). */
  killGraceMs?: number;
  /**
   * How long the pipes may stay open after the command's own process has exited (a background
   * child still holding stdout). Past it, reading stops and the rest of the group is killed.
   */
  pipeDrainMs?: number;
  /** Sidecar bytes queued in memory before the child's output is paused (backpressure). */
  sidecarHighWaterBytes?: number;
}

type StreamName = "stdout" | "stderr";

/** What a Run needs of the child (spawn-thread.ts). */
type RunChild = Pick<RemoteChild, "stdout" | "stderr" | "once"> & PromiseLike<unknown>;

/**
 * What one stream keeps in memory: its first `headCap` bytes (copied) and at least the last
 * `tailCap` bytes after them (the chunks themselves, no copy). With headCap + tailCap = the
 * combined cap, a stream that fits the cap is kept whole, and any head + tail split the final
 * budget asks for is available.
 */
class StreamKeeper {
  size = 0;
  private readonly head: Buffer[] = [];
  private headLen = 0;
  private readonly tail: Buffer[] = [];
  private tailLen = 0;

  constructor(
    private readonly headCap: number,
    private readonly tailCap: number,
  ) {}

  push(chunk: Buffer): void {
    this.size += chunk.length;
    let rest = chunk;
    if (this.headLen < this.headCap) {
      const take = Math.min(this.headCap - this.headLen, rest.length);
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headLen += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0 || this.tailCap === 0) return;
    this.tail.push(rest);
    this.tailLen += rest.length;
    // Drop whole chunks from the front while the rest still covers tailCap.
    for (let first = this.tail[0]; first && this.tailLen - first.length >= this.tailCap; first = this.tail[0]) {
      this.tail.shift();
      this.tailLen -= first.length;
    }
  }

  /** The text kept within `budget` bytes: everything, or head + marker + tail. */
  render(budget: number, marker: (omitted: number) => string): string {
    const retained = Buffer.concat([...this.head, ...this.tail]);
    // A stream within its budget is whole in memory (budget ≤ headCap + tailCap).
    if (this.size <= budget) return retained.toString("utf8");
    const headEnd = utf8HeadEnd(retained, Math.ceil(budget / 2));
    const tailStart = utf8TailStart(retained, retained.length - Math.floor(budget / 2));
    const head = retained.subarray(0, headEnd).toString("utf8");
    const tail = retained.subarray(tailStart).toString("utf8");
    const omitted = this.size - headEnd - (retained.length - tailStart);
    const sep = head === "" || head.endsWith("\n") ? "" : "\n";
    return `${head}${sep}${marker(omitted)}\n${tail}`;
  }
}

/** Splits a combined budget between two streams: the smaller one keeps all it can, the other the rest. */
export function shareBudget(cap: number, out: number, err: number): { out: number; err: number } {
  const errShare = Math.min(err, Math.max(Math.floor(cap / 2), cap - out));
  return { out: Math.min(out, cap - errShare), err: errShare };
}

/**
 * One running command: reads both pipes, keeps head + tail, spills to the sidecar past the cap,
 * and settles once. Completion is the exit of the process we spawned; see `onExit`.
 */
class Run {
  private readonly started = performance.now();
  private readonly keepers: Record<StreamName, StreamKeeper>;
  /** Null without a listener, or once it said it has seen enough. */
  private decoders: Record<StreamName, StringDecoder> | null;
  private readonly streams: Readable[];
  private openStreams = 0;
  private total = 0;

  // Sidecar: arrival-ordered chunks until it is open, then a write queue handed over a batch at a time.
  private early: Buffer[] | null = [];
  private sidecarState: "none" | "opening" | "open" | "failed" = "none";
  private sidecar: SidecarWriter | null = null;
  private sidecarError: string | null = null;
  private sidecarOpening: Promise<void> | null = null;
  private queue: Buffer[] = [];
  private queued = 0;
  private pumping: Promise<void> | null = null;

  private paused = false;
  private drainDue = false;
  private exit: { code: number | null; signal: string | null } | null = null;
  private timedOut = false;
  private killing = false;
  private finishing = false;
  private timeoutTimer: NodeJS.Timeout | undefined;
  private drainTimer: NodeJS.Timeout | undefined;
  private escalateTimer: NodeJS.Timeout | undefined;
  private settle!: { resolve: (r: ShellResult) => void; reject: (e: unknown) => void };
  readonly done: Promise<ShellResult>;

  /** The guard's pid, as it reports it on its socket (GROUP_GUARD in process-groups.ts). */
  private guardPid: number | undefined;

  constructor(
    private readonly child: RunChild,
    private readonly pid: number,
    private readonly options: ShellSpawnOptions,
    private readonly config: Required<LocalShellOptions>,
    private readonly guard: Duplex | undefined,
  ) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    unrefGuard(guard);
    guard?.setEncoding("utf8").on("data", (text: string) => (this.guardPid ??= Number.parseInt(text, 10) || undefined));
    const cap = options.maxOutputBytes;
    this.keepers = {
      stdout: new StreamKeeper(Math.ceil(cap / 2), Math.floor(cap / 2)),
      stderr: new StreamKeeper(Math.ceil(cap / 2), Math.floor(cap / 2)),
    };
    this.decoders = options.onOutput ? { stdout: new StringDecoder("utf8"), stderr: new StringDecoder("utf8") } : null;
    this.streams = [];
    for (const name of ["stdout", "stderr"] as const) {
      const stream = child[name];
      if (!stream) continue;
      this.streams.push(stream);
      this.openStreams++;
      let closed = false;
      const onClosed = () => {
        if (closed) return;
        closed = true;
        this.openStreams--;
        this.maybeFinish();
      };
      stream.on("data", (chunk: Buffer) => this.onData(name, chunk));
      stream.once("end", onClosed);
      stream.once("close", onClosed);
      // A read error ends that stream's output; the exit status still decides the result.
      stream.on("error", onClosed);
    }
    child.once("exit", (code, signal) => this.onExit(code, signal));
    // The child settles after exit and the pipes; that carries nothing we need, but must not go unhandled.
    child.then(
      () => undefined,
      () => undefined,
    );

    if (options.signal.aborted) this.kill();
    else options.signal.addEventListener("abort", this.onAbort, { once: true });
    // setTimeout fires at once past 2^31-1 ms: clamp (that is ~24 days).
    this.timeoutTimer = setTimeout(
      // One turn of the event loop first: an exit that is already pending is read before we
      // decide. A command that finished before its timeout did not time out.
      () => setImmediate(() => this.onTimeout()),
      Math.min(options.timeoutMs, 2 ** 31 - 1),
    );
  }

  private readonly onAbort = () => this.kill();

  private onTimeout(): void {
    // Already aborted (that is what ended it), or exited meanwhile.
    if (this.killing || this.exit !== null) return;
    // The command has exited and only its exit has not been seen yet: it finished in time.
    if (leaderState(this.pid) === "exited") return;
    // Freeze the group, then look again. Between a look and a signal a busy machine can run the
    // command to its end; a frozen leader cannot finish, and one that got there is seen exiting.
    signalGroup(this.pid, "SIGSTOP");
    this.confirmTimeout(performance.now());
  }

  private confirmTimeout(frozenAt: number): void {
    const state = this.killing || this.exit !== null ? "exited" : leaderState(this.pid);
    if (state === "exited") {
      // It finished in time (or an abort ended it meanwhile): the rest of its group runs on.
      signalGroup(this.pid, "SIGCONT");
      return;
    }
    // A leader in uninterruptible sleep stops only when it wakes: past the bound, it timed out.
    if (state === "stopped" || performance.now() - frozenAt > FREEZE_CONFIRM_MS) {
      this.timedOut = true;
      this.kill();
      return;
    }
    setTimeout(() => this.confirmTimeout(frozenAt), 1);
  }

  private onData(name: StreamName, chunk: Buffer): void {
    this.total += chunk.length;
    this.keepers[name].push(chunk);
    if (this.decoders) this.emit(this.decoders[name].write(chunk), name);

    // `early` is there until the sidecar opens or fails.
    if (this.sidecarState === "none") {
      this.early?.push(chunk);
      if (this.total > this.options.maxOutputBytes) this.openSidecar();
    } else if (this.sidecarState === "opening") {
      this.early?.push(chunk);
    } else if (this.sidecarState === "open") {
      this.enqueue(chunk);
    }
  }

  private emit(text: string, name: StreamName): void {
    const listener = this.options.onOutput;
    if (text === "" || !this.decoders || !listener) return;
    try {
      if (listener(text, name) === false) this.decoders = null;
    } catch {
      // A failing progress listener must not break the command or lose its output.
    }
  }

  private openSidecar(): void {
    this.sidecarState = "opening";
    this.pause();
    this.sidecarOpening = this.options.openSidecar().then(
      (writer) => {
        this.sidecar = writer;
        this.sidecarState = "open";
        const early = this.early ?? [];
        this.early = null;
        for (const chunk of early) this.enqueue(chunk);
        this.maybeResume();
      },
      (err: unknown) => this.sidecarFailed(err),
    );
  }

  private sidecarFailed(err: unknown): void {
    this.sidecarState = "failed";
    this.sidecarError = err instanceof Error ? err.message : String(err);
    this.early = null;
    this.queue = [];
    this.queued = 0;
    this.maybeResume();
  }

  private enqueue(chunk: Buffer): void {
    this.queue.push(chunk);
    this.queued += chunk.length;
    if (this.queued > this.config.sidecarHighWaterBytes) this.pause();
    this.pumping ??= this.pump();
  }

  /**
   * Hands the queued chunks to the sidecar one batch at a time and waits until the batch is
   * accepted. The chunks go over as they are (the writer batches them: no copy), and the next
   * batch fills meanwhile, up to the high-water mark.
   */
  private async pump(): Promise<void> {
    try {
      for (let writer = this.sidecar; writer && this.queue.length > 0 && this.sidecarState === "open"; writer = this.sidecar) {
        const batch = this.queue;
        this.queue = [];
        this.queued = 0;
        this.maybeResume();
        await Promise.all(batch.map((chunk) => writer.write(chunk)));
      }
    } catch (err) {
      this.sidecarFailed(err);
    } finally {
      this.pumping = null;
      this.maybeResume();
      this.maybeFinish();
    }
  }

  private pause(): void {
    if (this.paused) return;
    this.paused = true;
    for (const s of this.streams) s.pause();
  }

  private maybeResume(): void {
    if (!this.paused || this.sidecarState === "opening" || this.queued > this.config.sidecarHighWaterBytes) return;
    this.paused = false;
    for (const s of this.streams) s.resume();
    if (this.drainDue) this.armDrain();
  }

  private onExit(code: number | null, signal: string | null): void {
    this.exit = { code, signal };
    clearTimeout(this.timeoutTimer);
    this.options.signal.removeEventListener("abort", this.onAbort);
    // The command is done when its own process exits. Whatever still holds the pipes after a
    // short moment (a background job writing to our stdout) is cut off and killed with its
    // group, so the call neither hangs nor leaves it behind. Background jobs whose output is
    // redirected elsewhere close our pipes and are left running.
    if (this.openStreams > 0) this.armDrain();
    this.maybeFinish();
  }

  private armDrain(): void {
    this.drainDue = false;
    clearTimeout(this.drainTimer);
    this.drainTimer = setTimeout(() => {
      if (this.openStreams === 0) return;
      // Time spent paused for the sidecar does not count: the data is ours, not a stray writer's.
      if (this.paused) {
        this.drainDue = true;
        return;
      }
      for (const s of this.streams) s.destroy();
      this.kill();
    }, this.config.pipeDrainMs);
  }

  /**
   * SIGTERM to the process group and, through tree-kill, to descendants that left it; SIGKILL
   * to both after the grace period if the group is still there.
   */
  private kill(): void {
    if (this.killing) return;
    this.killing = true;
    const { pid } = this;
    if (this.exit !== null) signalGroup(pid, "SIGTERM");
    else terminateTree(pid);
    this.escalateTimer = setTimeout(() => {
      if (!groupExists(pid) && this.exit !== null) return;
      killTree(pid, this.exit === null);
    }, this.config.killGraceMs);
    // Bounded and self-ending: it outlives the result only while the group is still there.
    this.escalateTimer.unref();
  }

  /**
   * Once the command is done, the guard goes if nothing but itself is left of the group. A
   * background job that redirected its output stays, and so does its guard, until toolhost ends.
   */
  private async releaseGuard(): Promise<void> {
    if (!this.guard) return;
    const left = await groupLiveMembers(this.pid);
    if (left.every((pid) => pid === this.guardPid)) releaseGuard(this.guard);
  }

  private maybeFinish(): void {
    if (this.finishing || this.exit === null || this.openStreams > 0) return;
    this.finishing = true;
    clearTimeout(this.drainTimer);
    this.finish(this.exit).then(this.settle.resolve, this.settle.reject);
  }

  private async finish(exit: { code: number | null; signal: string | null }): Promise<ShellResult> {
    if (this.decoders) this.emit(this.decoders.stdout.end(), "stdout");
    if (this.decoders) this.emit(this.decoders.stderr.end(), "stderr");
    // A killed tree is reported once it is gone (or SIGKILL has had its moment), so the caller
    // never sees a result while the processes it ended are still running.
    if (this.killing) {
      await waitForGroupExit(this.pid, this.config.killGraceMs + 500);
      if (!groupExists(this.pid)) clearTimeout(this.escalateTimer);
    }
    await this.releaseGuard();
    await this.sidecarOpening;
    while (this.pumping) await this.pumping;
    if (this.sidecar) {
      await this.sidecar.close().catch((err: unknown) => {
        this.sidecarError ??= err instanceof Error ? err.message : String(err);
      });
    }
    const cap = this.options.maxOutputBytes;
    const truncated = this.total > cap;
    const outputPath = this.sidecarState === "open" && this.sidecarError === null ? this.sidecar?.path : undefined;
    const dropped = this.sidecar?.dropped ?? 0;
    const where = !outputPath
      ? `the full output could not be saved: ${this.sidecarError ?? "no sidecar"}`
      : dropped > 0
        ? `the first ${this.total - dropped} bytes of the output are in ${outputPath}, the sidecar cap dropped the last ${dropped}`
        : `full output in ${outputPath}`;
    const marker = (omitted: number) => `… [${omitted} bytes omitted; ${where}] …`;
    const { stdout, stderr } = this.keepers;
    const budget = truncated ? shareBudget(cap, stdout.size, stderr.size) : { out: cap, err: cap };
    return {
      stdout: stdout.render(budget.out, marker),
      stderr: stderr.render(budget.err, marker),
      exit_code: exit.code,
      signal: exit.signal,
      timed_out: this.timedOut,
      truncated,
      duration_ms: Math.round(performance.now() - this.started),
      ...(truncated && outputPath ? { output_path: outputPath } : {}),
    };
  }
}

/** The kernel's flag on a task inside exit(): its status is fixed, a signal no longer changes it. */
const PF_EXITING = 0x4;
/** How long a timed-out command's frozen leader may take to show it stopped. */
const FREEZE_CONFIRM_MS = 200;

/**
 * The process itself, where /proc can tell (elsewhere "running"): "exited" when gone, a zombie not
 * yet reaped, or inside the kernel's exit path (its status fixed); "stopped" by a signal.
 */
function leaderState(pid: number): "exited" | "stopped" | "running" {
  if (process.platform !== "linux") return "running";
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command's name: state ppid pgrp session tty_nr tpgid flags …
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const state = fields[0] ?? "";
    if (state === "Z" || state === "X" || (Number(fields[6]) & PF_EXITING) !== 0) return "exited";
    return state === "T" || state === "t" ? "stopped" : "running";
  } catch {
    return "exited";
  }
}

/**
 * Runs processes on this machine (started off the agent's thread, spawn-thread.ts): own process group (detached), stdin closed,
 * output streamed with bounded memory, the whole tree killed on timeout or abort.
 *
 * - Memory: per stream a head and a tail of the combined cap (≈ 2 × cap in all), plus at most
 *   `sidecarHighWaterBytes` queued for the sidecar; past that the child's pipes are paused.
 * - Completion is the exit of the spawned process. Pipes still held open `pipeDrainMs` after it
 *   (`sleep 100 &` inheriting stdout) are closed and that process group is killed; background
 *   jobs that redirected their output (`server >log 2>&1 &`) are left running on purpose.
 * - A killed tree's result is returned once the group has no live member (or after the SIGKILL).
 */
export class LocalShell implements ShellBackend {
  readonly kind = "local";
  private readonly config: Required<LocalShellOptions>;

  constructor(options: LocalShellOptions = {}) {
    this.config = {
      killGraceMs: options.killGraceMs ?? 2000,
      pipeDrainMs: options.pipeDrainMs ?? 250,
      sidecarHighWaterBytes: options.sidecarHighWaterBytes ?? 1024 * 1024,
    };
  }

  async spawn(file: string, args: string[], options: ShellSpawnOptions): Promise<ShellResult> {
    // A missing cwd makes spawn fail with the same ENOENT as a missing binary: tell them apart first.
    const cwdStat = await fsp.stat(options.cwd).catch(() => null);
    if (!cwdStat) throw new ToolError("not_found", `The working directory does not exist: ${options.cwd}`);
    if (!cwdStat.isDirectory()) throw new ToolError("not_found", `The working directory is not a directory: ${options.cwd}`);
    if (options.signal.aborted) throw new ToolError("aborted", "The command was cancelled before it started");

    const env = { ...process.env, ...options.env };
    // Behind the group guard (process-groups.ts): the command's whole group ends with toolhost.
    const command = guardedCommand("toolhost-command", file, args, { env, cwd: options.cwd });
    // Off the agent's thread: spawn() blocks its caller until the child has exec'd (spawn-thread.ts).
    const started = await spawnOffThread(command.file, command.args, { cwd: options.cwd, env });
    if ("failed" in started) {
      const { code, message } = started.failed;
      if (code === "ENOENT") throw new ToolError("not_found", `Command not found: ${file}`);
      if (code === "EACCES") throw new ToolError("permission_denied", `Command is not executable: ${file}`);
      throw new ToolError("execution_failed", `Could not start ${file}: ${message}`);
    }
    const { child } = started;
    // Not `command.file !== file`: a sandboxed command's file is /bin/sh too, and its guard went unreleased and kept toolhost alive.
    const guard = command.guarded ? child.guard : undefined;
    return new Run(child, child.pid, options, this.config, guard).done;
  }
}
