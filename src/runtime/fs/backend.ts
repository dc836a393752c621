import type { DirEntry, EntryType, FileQuery, GrepOutcome, GrepQuery } from "../../tool/context.js";

export interface BackendStat {
  type: EntryType;
  size: number;
  mtimeMs: number;
  mode?: number;
  /** Freshness token; see FileInfo.version. */
  version: string;
}

/**
 * Search over a backend's files. Paths in results are relative to `cwd` when inside it.
 * The caller has already checked `root` against the scope.
 */
export interface SearchBackend {
  files(root: string, query: FileQuery, signal: AbortSignal): Promise<{ files: string[]; limited: boolean }>;
  grep(root: string, cwd: string, query: GrepQuery, signal: AbortSignal): Promise<GrepOutcome>;
}

/**
 * A store whose whole tree can be walked in process: what the in-memory search engine needs
 * of the in-memory fs (and nothing more, so neither imports the other).
 */
export interface WalkableFs {
  /** Every path below a directory, depth-first in name order. */
  walk(dir: string): Iterable<{ path: string; type: "file" | "directory" }>;
  /** The text of a file, undefined when there is none (read synchronously, for .gitignore files). */
  text(abs: string): string | undefined;
  readFile(abs: string): Promise<Uint8Array>;
  stat(abs: string): Promise<BackendStat | null>;
}

/**
 * Storage under the file tools. Paths are absolute and already checked by the scoped layer;
 * a backend never decides what is allowed. Errors carry Node-style codes (ENOENT, EISDIR …).
 */
export interface FsBackend {
  readonly kind: string;
  /** Follows symlinks; null when nothing is there. */
  stat(abs: string): Promise<BackendStat | null>;
  /** The canonical path; throws ENOENT when the path does not exist. */
  realpath(abs: string): Promise<string>;
  /**
   * Where a symlink points, as written; throws (EINVAL, ENOENT) when `abs` is not a symlink. For a
   * link whose target does not exist, which `realpath` cannot follow. A backend without symlinks omits it.
   */
  readlink?(abs: string): Promise<string>;
  readFile(abs: string): Promise<Uint8Array>;
  readStream(abs: string, range?: { start?: number; end?: number }): AsyncIterable<Uint8Array>;
  readDir(abs: string): Promise<DirEntry[]>;
  /**
   * Replaces the file atomically (never half-written), keeping its mode; creates parent directories.
   * Returns the bytes that landed when they differ from `data` (an editor that adds a final newline).
   */
  writeFileAtomic(abs: string, data: Uint8Array): Promise<Uint8Array | void>;
  /**
   * A view of this backend for one tool call, which may keep what it read until the call writes
   * the file or calls `refresh()` (a backend whose reads are requests, such as the editor's).
   */
  forCall?(): FsBackend & { refresh(): void };
  /**
   * Runs `fn` holding the file's lock between processes (a backend on a shared disk), so a
   * check of its version and the write that follows are one step for every process.
   */
  lock?<T>(abs: string, fn: () => Promise<T>): Promise<T>;
  readonly search: SearchBackend;
}

export function fsError(code: string, message: string): NodeJS.ErrnoException {
  const err = new Error(message) as NodeJS.ErrnoException;
  err.code = code;
  return err;
}

/** EACCES for a file whose mode grants no write permission (chmod 444), with the mode in the message. */
export function readOnlyError(abs: string, mode: number): NodeJS.ErrnoException {
  return Object.assign(fsError("EACCES", `${abs} is read-only (mode ${mode.toString(8).padStart(4, "0")})`), { readOnlyMode: mode });
}
