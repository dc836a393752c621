import { randomBytes } from "node:crypto";
import { constants, createReadStream } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import type { DirEntry, EntryType } from "../../tool/context.js";
import { RipgrepSearch } from "../search/ripgrep.js";
import { withFileLock } from "./file-lock.js";
import { removeStaleTemps, tempNameFor } from "./stale-temps.js";
import { readOnlyError, type BackendStat, type FsBackend, type SearchBackend } from "./backend.js";

function entryType(s: { isFile(): boolean; isDirectory(): boolean; isSymbolicLink(): boolean }): EntryType {
  if (s.isFile()) return "file";
  if (s.isDirectory()) return "directory";
  if (s.isSymbolicLink()) return "symlink";
  return "other";
}

/** The real disk. Versions come from nanosecond mtime/ctime, size and inode, so fast rewrites are seen. */
export class NodeFs implements FsBackend {
  readonly kind = "node";
  readonly search: SearchBackend = new RipgrepSearch();
  /** Folders already swept of temp files left by killed writes: once per folder per process. */
  private readonly sweptFolders = new Set<string>();

  async stat(abs: string): Promise<BackendStat | null> {
    try {
      const s = await fsp.stat(abs, { bigint: true });
      return {
        type: entryType(s),
        size: Number(s.size),
        mtimeMs: Number(s.mtimeMs),
        mode: Number(s.mode) & 0o7777,
        version: `${s.mtimeNs.toString(36)}.${s.ctimeNs.toString(36)}.${s.size.toString(36)}.${s.ino.toString(36)}`,
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT" || (err as NodeJS.ErrnoException).code === "ENOTDIR") {
        return null;
      }
      throw err;
    }
  }

  realpath(abs: string): Promise<string> {
    return fsp.realpath(abs);
  }

  readlink(abs: string): Promise<string> {
    return fsp.readlink(abs);
  }

  async readFile(abs: string): Promise<Uint8Array> {
    return fsp.readFile(abs);
  }

  async *readStream(abs: string, range?: { start?: number; end?: number }): AsyncIterable<Uint8Array> {
    // 64 KiB chunks: a line window of a huge file stops after a few chunks.
    const stream = createReadStream(abs, { start: range?.start, end: range?.end, highWaterMark: 64 * 1024 });
    try {
      for await (const chunk of stream) yield chunk as Buffer;
    } finally {
      stream.destroy();
    }
  }

  async readDir(abs: string): Promise<DirEntry[]> {
    const entries = await fsp.readdir(abs, { withFileTypes: true });
    return entries.map((e) => ({ name: e.name, type: entryType(e) }));
  }

  /** A lock file next to the file (`.<name>.toolhost-lock`): what another toolhost process waits for. */
  lock<T>(abs: string, fn: () => Promise<T>): Promise<T> {
    return withFileLock(abs, fn);
  }

  /** `newFileMode` applies only when the file does not exist yet; an existing file keeps its mode. */
  async writeFileAtomic(abs: string, data: Uint8Array, options: { newFileMode?: number } = {}): Promise<void> {
    let target: string;
    let mode: number | undefined;
    try {
      // Write through a symlink to its target, so the link stays a link.
      target = await fsp.realpath(abs);
      const s = await fsp.stat(target);
      if (!s.isFile()) throw Object.assign(new Error(`Not a regular file: ${abs}`), { code: "EISDIR" });
      mode = s.mode & 0o7777;
      // The rename below needs only the folder's permission, so the file's own is checked here.
      // access() asks the kernel, which lets root write anything: a file with no write bit at all
      // is read-only for everyone, root included.
      if ((mode & 0o222) === 0) throw readOnlyError(abs, mode);
      await fsp.access(target, constants.W_OK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      // A link whose target does not exist yet (ScopedFs checked that target): create the target,
      // so the link stays a link, rather than replacing the link with a file.
      target = await danglingTarget(abs);
      await fsp.mkdir(path.dirname(target), { recursive: true });
    }
    // Always a new inode, hard links included: a file with nlink > 1 shares its inode with paths
    // elsewhere (pnpm's store, or a file outside the workspace linked in by someone else), and
    // writing in place would change those too. The rename replaces this link only.
    // The writer's pid in the name lets a later write into this folder remove what a killed one left.
    const temp = tempNameFor(target, randomBytes(6).toString("hex"));
    const folder = path.dirname(target);
    if (!this.sweptFolders.has(folder)) {
      this.sweptFolders.add(folder);
      await removeStaleTemps(folder);
    }
    try {
      const handle = await fsp.open(temp, "wx", mode ?? options.newFileMode ?? 0o666);
      try {
        await handle.writeFile(data);
        await handle.sync();
        if (mode !== undefined) await handle.chmod(mode);
      } finally {
        await handle.close();
      }
      await fsp.rename(temp, target);
    } catch (err) {
      await fsp.rm(temp, { force: true });
      throw err;
    }
  }
}

/** Where a chain of symlinks ending at a missing file leads, resolved lexically; `abs` itself when it is no link. */
async function danglingTarget(abs: string): Promise<string> {
  let current = abs;
  for (let hops = 0; hops < 40; hops++) {
    const link = await fsp.readlink(current).catch(() => null);
    if (link === null) return current;
    current = path.resolve(path.dirname(current), link);
  }
  throw Object.assign(new Error(`Too many levels of symbolic links: ${abs}`), { code: "ELOOP" });
}
