import { createWriteStream, lstatSync, writeFile, type WriteStream } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { toolhostHome } from "../config/paths.js";
import type { SidecarWriter, Sidecars } from "../tool/context.js";
import { ToolError } from "../tool/errors.js";
import { utf8HeadEnd } from "../tool/truncate.js";
import { sweepStaleQuarantine } from "./sandbox/quarantine.js";

const MB = 1024 * 1024;
/** What one sidecar file keeps at most; the rest is counted and named in a closing line. */
const DEFAULT_FILE_BYTES = 64 * MB;
/** What one session's sidecar folder holds at most, over all its files. */
const DEFAULT_SESSION_BYTES = 512 * MB;
const HOUR = 3600 * 1000;
/** `toolhost call` folders start with this; nothing reads them once the command has printed its output_path. */
export const CLI_SIDECAR_PREFIX = "cli-";

/** This process's effective user id; -1 where there is none (Windows). */
function euid(): number {
  return process.geteuid?.() ?? -1;
}

/** `$XDG_RUNTIME_DIR` when it is a folder of this user that nobody else can enter. */
function runtimeDir(): string | null {
  const dir = process.env.XDG_RUNTIME_DIR;
  if (!dir || !path.isAbsolute(dir)) return null;
  try {
    const s = lstatSync(dir);
    return s.isDirectory() && (euid() < 0 || s.uid === euid()) && (s.mode & 0o077) === 0 ? dir : null;
  } catch {
    return null;
  }
}

/**
 * Where sessions keep their sidecar files (one folder per session): `$TOOLHOST_SIDECAR_DIR`, else
 * `toolhost-sidecars-<uid>` under `$XDG_RUNTIME_DIR` (when usable) or the temp dir. Per user: a
 * shared folder would let one user read another's command output, or plant a folder or symlink at
 * the name first. `checkSidecarRoot` checks it before use.
 */
export function sidecarRoot(): string {
  const override = process.env.TOOLHOST_SIDECAR_DIR?.trim();
  if (override) return path.resolve(override);
  const id = euid() >= 0 ? String(euid()) : os.userInfo().username.replace(/[^\w.-]/g, "_");
  return path.join(runtimeDir() ?? os.tmpdir(), `toolhost-sidecars-${id}`);
}

/**
 * Creates the sidecar root (0700) when missing, then checks it without following a symlink: a
 * folder owned by this user with no group or other bits. Anything else (another user's folder, a
 * symlink planted at the name, a folder others can enter) throws an error that names it and says
 * what to do: command output is never written where another user can read it or swap it.
 */
export async function checkSidecarRoot(root: string): Promise<void> {
  await fsp.mkdir(root, { recursive: true, mode: 0o700 }).catch(() => {});
  const s = await fsp.lstat(root).catch((err: NodeJS.ErrnoException) => err);
  let problem: string | null = null;
  if (s instanceof Error) problem = `cannot be created or read (${s.message})`;
  else if (s.isSymbolicLink()) problem = `is a symlink (to ${await fsp.readlink(root).catch(() => "?")}), not a folder`;
  else if (!s.isDirectory()) problem = "is not a folder";
  else if (euid() >= 0 && s.uid !== euid()) problem = `belongs to another user (uid ${s.uid}; this is uid ${euid()})`;
  else if ((s.mode & 0o077) !== 0)
    problem = `can be entered by other users (mode ${(s.mode & 0o777).toString(8).padStart(4, "0")}, not 0700)`;
  if (problem === null) return;
  const fix = process.env.TOOLHOST_SIDECAR_DIR?.trim()
    ? "Point TOOLHOST_SIDECAR_DIR at a folder of your own with mode 0700."
    : `Remove ${root} (it is not this user's to use; someone may have planted it), or set TOOLHOST_SIDECAR_DIR to a folder of your own with mode 0700.`;
  throw new ToolError(
    "unavailable",
    `The sidecar folder ${root} ${problem}, so toolhost keeps no command output there: another user could read it or plant files in it. ${fix}`,
  );
}

function envBytes(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isSafeInteger(value) && value >= 0 && process.env[name]?.trim() ? value : fallback;
}

function size(bytes: number): string {
  return bytes >= MB && bytes % MB === 0 ? `${bytes / MB} MB` : `${bytes} bytes`;
}

export interface SidecarLimits {
  /** Bytes one sidecar file keeps (default 64 MB, or $TOOLHOST_SIDECAR_MAX_BYTES). */
  maxFileBytes?: number;
  /** Bytes all sidecar files of the session keep together (default 512 MB, or $TOOLHOST_SIDECAR_SESSION_MAX_BYTES). */
  maxSessionBytes?: number;
}

/** The session's byte budget, shared by its sidecar files. */
class SessionBudget {
  private used = 0;
  constructor(readonly max: number) {}

  /** Takes up to `bytes` from what is left; returns how many it got. */
  take(bytes: number): number {
    const got = Math.max(0, Math.min(bytes, this.max - this.used));
    this.used += got;
    return got;
  }

  giveBack(bytes: number): void {
    this.used -= bytes;
  }
}

/** Applies the file and session caps to one chunk: what to keep, and why the rest goes. */
class Cap {
  written = 0;
  dropped = 0;
  private why: "file" | "session" | null = null;
  private endsWithNewline = true;

  constructor(
    private readonly maxFileBytes: number,
    private readonly budget: SessionBudget,
  ) {}

  keep(chunk: string | Uint8Array): Uint8Array | string {
    if (this.dropped > 0) {
      this.dropped += typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
      return "";
    }
    const length = typeof chunk === "string" ? Buffer.byteLength(chunk) : chunk.length;
    const fileRoom = Math.max(0, this.maxFileBytes - this.written);
    const wanted = Math.min(length, fileRoom);
    const granted = this.budget.take(wanted);
    if (granted === length) {
      this.written += length;
      if (length > 0) this.endsWithNewline = lastByteIsNewline(chunk);
      return chunk;
    }
    this.why = granted < wanted ? "session" : "file";
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    // Cut on a character boundary, and return what the cut left over to the session.
    const end = utf8HeadEnd(bytes, granted);
    this.budget.giveBack(granted - end);
    this.written += end;
    this.dropped += length - end;
    const head = bytes.subarray(0, end);
    if (end > 0) this.endsWithNewline = head[end - 1] === 0x0a;
    return head;
  }

  /** The closing line of a capped file, or "". */
  note(): string {
    if (this.dropped === 0) return "";
    const reason =
      this.why === "session"
        ? `this session's sidecar folder reached its cap of ${size(this.budget.max)}`
        : `this file reached the sidecar cap of ${size(this.maxFileBytes)}`;
    return `${this.endsWithNewline ? "" : "\n"}[toolhost: ${this.dropped} bytes dropped: ${reason}]\n`;
  }
}

function lastByteIsNewline(chunk: string | Uint8Array): boolean {
  return typeof chunk === "string" ? chunk.endsWith("\n") : chunk[chunk.length - 1] === 0x0a;
}

class FileSidecar implements SidecarWriter {
  private readonly stream: WriteStream;
  private failure: Error | null = null;
  /** One drain waiter shared by every write made while the buffer is full. */
  private drained: Promise<void> | null = null;

  constructor(
    readonly path: string,
    handle: fsp.FileHandle,
    private readonly cap: Cap,
  ) {
    this.stream = createWriteStream(path, { fd: handle });
    this.stream.on("error", (err) => (this.failure = err));
  }

  /** Bytes the caps kept out of this file. */
  get dropped(): number {
    return this.cap.dropped;
  }

  /** Resolves once the chunk is accepted; waits for drain so a fast producer cannot grow memory. */
  write(chunk: string | Uint8Array): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    const kept = this.cap.keep(chunk);
    if (kept.length === 0) return Promise.resolve();
    if (this.stream.write(kept)) return Promise.resolve();
    // Writes issued back to back (bash hands over a batch of chunks) share one waiter, so the
    // stream can writev them without a listener per chunk.
    this.drained ??= new Promise<void>((resolve, reject) => {
      const onDrain = () => {
        this.stream.off("error", onError);
        this.drained = null;
        resolve();
      };
      const onError = (err: Error) => {
        this.stream.off("drain", onDrain);
        this.drained = null;
        reject(err);
      };
      this.stream.once("drain", onDrain);
      this.stream.once("error", onError);
    });
    return this.drained;
  }

  close(): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.stream.closed) return resolve();
      const note = this.cap.note();
      if (note) this.stream.write(note);
      this.stream.end((err?: Error | null) => (err ? reject(err) : resolve()));
    });
  }
}

/** The number a sidecar file's name ends with (`bash-0007.txt`). */
const SIDECAR_NUMBER = /-(\d+)\.txt$/;

/**
 * Sidecar files of one session, under its own folder. Each file keeps at most `maxFileBytes` and
 * the folder at most `maxSessionBytes`: past either, the rest is dropped and the file ends with a
 * line that says how much and why. A folder that exists already (a loaded session's) is added to:
 * numbering goes on after its highest file and its files count against the folder's cap; a name
 * taken meanwhile (another process) is skipped, never overwritten.
 */
export class SessionSidecars implements Sidecars {
  private seq = 0;
  private ready: Promise<void> | null = null;
  private readonly maxFileBytes: number;
  private readonly budget: SessionBudget;

  /**
   * `root`: the shared folder `dir` lies in (sidecarRoot()), checked (`checkSidecarRoot`) before
   * `dir` is made; absent for a folder handed in.
   */
  constructor(
    readonly dir: string,
    limits: SidecarLimits = {},
    private readonly root?: string,
  ) {
    this.maxFileBytes = limits.maxFileBytes ?? envBytes("TOOLHOST_SIDECAR_MAX_BYTES", DEFAULT_FILE_BYTES);
    this.budget = new SessionBudget(limits.maxSessionBytes ?? envBytes("TOOLHOST_SIDECAR_SESSION_MAX_BYTES", DEFAULT_SESSION_BYTES));
  }

  private ensureDir(): Promise<void> {
    // A failed check is tried again on the next use: the user may have fixed the folder meanwhile.
    this.ready ??= this.prepare().catch((err: unknown) => {
      this.ready = null;
      throw err;
    });
    return this.ready;
  }

  private async prepare(): Promise<void> {
    if (this.root) await checkSidecarRoot(this.root);
    // mkdir names the folder only when it created it: then there is nothing to go on from.
    if (await fsp.mkdir(this.dir, { recursive: true, mode: 0o700 })) return;
    const names = await fsp.readdir(this.dir).catch(() => [] as string[]);
    const sizes = await Promise.all(
      names.map(async (name) => {
        const number = SIDECAR_NUMBER.exec(name);
        if (number) this.seq = Math.max(this.seq, Number(number[1]));
        const s = await fsp.stat(path.join(this.dir, name)).catch(() => null);
        return s?.isFile() ? s.size : 0;
      }),
    );
    this.budget.take(sizes.reduce((a, b) => a + b, 0));
  }

  /** The folder, made (and its root checked) on first use: for files a tool keeps itself (a background process's output rings). */
  async folder(): Promise<string> {
    await this.ensureDir();
    return this.dir;
  }

  private nextPath(toolId: string): string {
    this.seq += 1;
    return path.join(this.dir, `${toolId}-${String(this.seq).padStart(4, "0")}.txt`);
  }

  /** Runs `open` on the next free name; a name that exists is skipped. */
  private async fresh<T>(toolId: string, open: (file: string) => Promise<T>): Promise<T> {
    for (;;) {
      const file = this.nextPath(toolId);
      try {
        return await open(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      }
    }
  }

  async create(toolId: string): Promise<SidecarWriter> {
    await this.ensureDir();
    const { file, handle } = await this.fresh(toolId, async (file) => ({ file, handle: await fsp.open(file, "wx", 0o600) }));
    return new FileSidecar(file, handle, new Cap(this.maxFileBytes, this.budget));
  }

  async writeText(toolId: string, text: string): Promise<string> {
    await this.ensureDir();
    const cap = new Cap(this.maxFileBytes, this.budget);
    const kept = cap.keep(text);
    const note = cap.note();
    const data = note ? Buffer.concat([Buffer.from(kept), Buffer.from(note)]) : kept;
    // The callback API: the promise one builds a FileHandle per file, a visible cost on every capped result.
    return this.fresh(
      toolId,
      (file) =>
        new Promise<string>((resolve, reject) =>
          writeFile(file, data, { flag: "wx", mode: 0o600 }, (err) => (err ? reject(err) : resolve(file))),
        ),
    );
  }

  async remove(): Promise<void> {
    await fsp.rm(this.dir, { recursive: true, force: true });
  }
}

export interface SweepOptions {
  /** Session folders left behind by processes that died (default 7 days). */
  maxAgeMs?: number;
  /** `toolhost call` folders, kept only so a printed output_path stays readable (default 1 day). */
  cliMaxAgeMs?: number;
}

/** Removes sidecar folders that have not changed for longer than their kind's age. */
export async function sweepStaleSidecars(options: SweepOptions = {}): Promise<void> {
  const maxAgeMs = options.maxAgeMs ?? 7 * 24 * HOUR;
  const cliMaxAgeMs = options.cliMaxAgeMs ?? 24 * HOUR;
  const root = sidecarRoot();
  // Only a folder that passes the checks is swept: never one another user controls.
  if (
    !(await checkSidecarRoot(root).then(
      () => true,
      () => false,
    ))
  )
    return;
  const entries = await fsp.readdir(root, { withFileTypes: true }).catch(() => []);
  const now = Date.now();
  // One folder at a time: it runs beside the session's first requests, and hundreds of stats
  // settled at once held the agent's thread for ~50 ms (a request waited as long).
  for (const e of entries) {
    if (!e.isDirectory()) continue;
    const dir = path.join(root, e.name);
    const s = await fsp.stat(dir).catch(() => null);
    const limit = e.name.startsWith(CLI_SIDECAR_PREFIX) ? cliMaxAgeMs : maxAgeMs;
    if (s && now - s.mtimeMs > limit) await fsp.rm(dir, { recursive: true, force: true }).catch(() => {});
  }
}

/** Sidecars and the sandbox's quarantine (`sandbox/quarantine.ts`), each past its age. */
export async function sweepStale(options: SweepOptions = {}): Promise<void> {
  await Promise.all([sweepStaleSidecars(options), sweepStaleQuarantine(path.join(toolhostHome(), "quarantine"))]);
}
