import { EventEmitter } from "node:events";
import { Duplex, Readable, Writable } from "node:stream";
import type { DistributiveOmit, SpawnReply, SpawnRequest } from "./spawn-protocol.js";

// The agent's side of a process the spawner thread started (spawn-thread.ts): streams fed by the
// worker's messages, and what is done to them (pause, resume, destroy, a write, a kill) sent back.

type Send = (request: DistributiveOmit<SpawnRequest, "id">) => void;

/** A child's output stream, fed by the worker; pausing it pauses the pipe there (backpressure holds). */
export class RemoteOutput extends Readable {
  constructor(private readonly control: (op: "pause" | "resume" | "destroy") => void) {
    super({ read() {} });
  }
  override pause(): this {
    this.control("pause");
    return super.pause();
  }
  override resume(): this {
    this.control("resume");
    return super.resume();
  }
  private finished = false;
  /** No more bytes will come. */
  finish(): void {
    if (this.finished || this.destroyed) return;
    this.finished = true;
    this.push(null);
  }
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.control("destroy");
    callback(error);
  }
}

/**
 * A child's stdin: each chunk goes to the worker, and its write completes when the worker's
 * does (the pipe took it), so a child that stops reading holds its writer back here too.
 */
class RemoteInput extends Writable {
  private readonly pending: ((error?: Error | null) => void)[] = [];
  private gone: Error | undefined;

  constructor(private readonly send: Send) {
    super({ decodeStrings: true });
  }
  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.gone) return callback(this.gone);
    this.pending.push(callback);
    const bytes = new Uint8Array(chunk);
    this.send({ op: "write", chunk: bytes });
  }
  override _final(callback: (error?: Error | null) => void): void {
    this.send({ op: "end" });
    callback();
  }
  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (!this.gone) this.send({ op: "destroy", stream: "stdin" });
    this.cut(new Error("the stream was destroyed"));
    callback(error);
  }
  /** The worker finished the oldest write. */
  written(message: string | undefined): void {
    this.pending.shift()?.(message === undefined ? null : new Error(message));
  }
  /** The pipe is gone: no pending write will complete, and no later one can. */
  cut(error: Error): void {
    this.gone ??= error;
    for (const callback of this.pending.splice(0)) callback(error);
  }
}

/**
 * A process started off the agent's thread, as a ChildProcess looks to the code that holds one
 * (a language or MCP server, a background process, ripgrep): `pid` once it runs, the pipes,
 * `exitCode`/`signalCode`, and the events `spawn`, `error` (it could not start), `exit` and
 * `close` (exited, and its stdout and stderr closed).
 */
export class RemoteProcess extends EventEmitter {
  pid: number | undefined;
  exitCode: number | null = null;
  signalCode: NodeJS.Signals | null = null;
  readonly stdin: Writable | null;
  readonly stdout: RemoteOutput;
  readonly stderr: RemoteOutput;
  /** Whether it keeps toolhost alive (a ChildProcess's ref/unref). */
  held = true;
  private exited = false;
  private done = false;

  constructor(
    private readonly send: Send,
    withStdin: boolean,
    private readonly onRef: () => void,
  ) {
    super();
    this.stdin = withStdin ? new RemoteInput(send) : null;
    this.stdout = new RemoteOutput((op) => send({ op, stream: "stdout" }));
    this.stderr = new RemoteOutput((op) => send({ op, stream: "stderr" }));
  }

  get stdio(): [Writable | null, Readable, Readable] {
    return [this.stdin, this.stdout, this.stderr];
  }

  /** Sends `signal` to the process (not its group); false once it has exited. */
  kill(signal: NodeJS.Signals = "SIGTERM"): boolean {
    if (this.exited || this.pid === undefined) return false;
    this.send({ op: "kill", signal });
    return true;
  }

  /** Closes toolhost's end of its group guard: the guard kills what is left of the group. */
  closeGuard(): void {
    this.send({ op: "closeGuard" });
  }

  ref(): void {
    this.held = true;
    this.onRef();
  }

  unref(): void {
    this.held = false;
    this.onRef();
  }

  /** Whether it is over (the worker forgets it): exited and its pipes closed, or never started. */
  get settled(): boolean {
    return this.done;
  }

  /** A message from the worker about this process. */
  take(reply: SpawnReply): void {
    switch (reply.type) {
      case "spawned":
        this.pid = reply.pid;
        this.emit("spawn");
        break;
      case "failed": {
        const error = Object.assign(new Error(reply.message), reply.code ? { code: reply.code, errno: reply.code } : {});
        (this.stdin as RemoteInput | null)?.cut(error);
        this.stdout.finish();
        this.stderr.finish();
        this.done = true;
        this.emit("error", error);
        this.emit("close", null, null);
        break;
      }
      case "data":
        if (reply.stream !== "guard" && !this[reply.stream].destroyed) {
          this[reply.stream].push(Buffer.from(reply.chunk.buffer, reply.chunk.byteOffset, reply.chunk.byteLength));
        }
        break;
      case "end":
      case "close":
        // The pipe is done there (ended, closed or failed): here it ends once what came is read,
        // never cut short (a paused stream still holds bytes).
        this[reply.stream].finish();
        break;
      case "written":
        (this.stdin as RemoteInput | null)?.written(reply.error);
        break;
      case "exit":
        this.exit(reply.code, reply.signal as NodeJS.Signals | null);
        break;
      case "settled":
        this.settle();
        break;
    }
  }

  /** The worker is gone, and with it the pipes (and the guard, which ends the group). */
  lost(): void {
    this.stdout.finish();
    this.stderr.finish();
    if (this.pid === undefined) this.emit("error", new Error("the spawner thread ended"));
    else this.exit(null, "SIGKILL");
    this.settle();
  }

  private exit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    this.exitCode = code;
    this.signalCode = signal;
    this.emit("exit", code, signal);
  }

  private settle(): void {
    if (this.done) return;
    this.done = true;
    // The worker forgets it now: a write still waiting would never hear back.
    (this.stdin as RemoteInput | null)?.cut(new Error("the process has ended"));
    this.emit("close", this.exitCode, this.signalCode);
  }
}

/**
 * A command (or a hook's) as the shell backend's Run sees it: started already (its pid known), no
 * stdin, its group guard's end here (the guard's pid arrives on it; ending it releases the guard),
 * and awaitable: it settles once it has exited and its pipes have closed.
 */
export class RemoteChild extends RemoteProcess implements PromiseLike<void> {
  declare pid: number;
  readonly guard: Duplex;
  private readonly closed: Promise<void>;

  constructor(pid: number, send: (request: SpawnRequest) => void, id: number) {
    // Held by the spawner thread while it runs (its map of children), not by ref/unref.
    super(
      (request) => send({ id, ...request } as SpawnRequest),
      false,
      () => {},
    );
    this.pid = pid;
    this.guard = new Duplex({
      read() {},
      write(_chunk, _encoding, callback) {
        callback();
      },
      final(callback) {
        send({ id, op: "release" });
        callback();
      },
    });
    this.closed = new Promise((resolve) => this.once("close", () => resolve()));
  }

  override take(reply: SpawnReply): void {
    if (reply.type === "data" && reply.stream === "guard") {
      if (!this.guard.destroyed) this.guard.push(Buffer.from(reply.chunk.buffer, reply.chunk.byteOffset, reply.chunk.byteLength));
    } else super.take(reply);
  }

  then<R1 = void, R2 = never>(
    onFulfilled?: ((value: void) => R1 | PromiseLike<R1>) | null,
    onRejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): PromiseLike<R1 | R2> {
    return this.closed.then(onFulfilled, onRejected);
  }
}
