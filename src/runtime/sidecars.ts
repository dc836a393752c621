import { createWriteStream, type WriteStream } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { SidecarWriter, Sidecars } from "../tool/context.js";

/** Where sessions keep their sidecar files (one folder per session). */
export function sidecarRoot(): string {
  return process.env.TOOLHOST_SIDECAR_DIR ?? path.join(os.tmpdir(), "toolhost-sidecars");
}

class FileSidecar implements SidecarWriter {
  private readonly stream: WriteStream;
  private failure: Error | null = null;
  /** One drain waiter shared by every write made while the buffer is full. */
  private drained: Promise<void> | null = null;

  constructor(readonly path: string) {
    this.stream = createWriteStream(path, { flags: "wx", mode: 0o600 });
    this.stream.on("error", (err) => (this.failure = err));
  }

  /** Resolves once the chunk is accepted; waits for drain so a fast producer cannot grow memory. */
  write(chunk: string | Uint8Array): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.stream.write(chunk)) return Promise.resolve();
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
      this.stream.end((err?: Error | null) => (err ? reject(err) : resolve()));
    });
  }
}

/** Sidecar files of one session, under its own folder; removed when the session closes. */
export class SessionSidecars implements Sidecars {
  private seq = 0;
  private ready: Promise<void> | null = null;

  constructor(readonly dir: string) {}

  private ensureDir(): Promise<void> {
    this.ready ??= fsp.mkdir(this.dir, { recursive: true, mode: 0o700 }).then(() => undefined);
    return this.ready;
  }

  private nextPath(toolId: string): string {
    this.seq += 1;
    return path.join(this.dir, `${toolId}-${String(this.seq).padStart(4, "0")}.txt`);
  }

  async create(toolId: string): Promise<SidecarWriter> {
    await this.ensureDir();
    return new FileSidecar(this.nextPath(toolId));
  }

  async writeText(toolId: string, text: string): Promise<string> {
    await this.ensureDir();
    const file = this.nextPath(toolId);
    await fsp.writeFile(file, text, { flag: "wx", mode: 0o600 });
    return file;
  }

  async remove(): Promise<void> {
    await fsp.rm(this.dir, { recursive: true, force: true });
  }
}

/** Removes sidecar folders older than `maxAgeMs` left behind by processes that died (default 7 days). */
export async function sweepStaleSidecars(maxAgeMs = 7 * 24 * 3600 * 1000): Promise<void> {
  const root = sidecarRoot();
  const entries = await fsp.readdir(root, { withFileTypes: true }).catch(() => []);
  const now = Date.now();
  await Promise.all(
    entries
      .filter((e) => e.isDirectory())
      .map(async (e) => {
        const dir = path.join(root, e.name);
        const s = await fsp.stat(dir).catch(() => null);
        if (s && now - s.mtimeMs > maxAgeMs) await fsp.rm(dir, { recursive: true, force: true });
      }),
  );
}
