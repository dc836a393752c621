import path from "node:path/posix";
import type { DirEntry } from "../../tool/context.js";
import { MemorySearch } from "../search/memory.js";
import { fsError, readOnlyError, type BackendStat, type FsBackend, type SearchBackend, type WalkableFs } from "./backend.js";

interface MemoryFile {
  type: "file";
  data: Uint8Array;
  mtimeMs: number;
  mode: number;
  generation: number;
}
interface MemoryDir {
  type: "directory";
  mtimeMs: number;
}
type MemoryNode = MemoryFile | MemoryDir;

let generations = 0;

/** An in-process filesystem (tests, scratch documents). POSIX absolute paths; no symlinks. */
export class MemoryFs implements FsBackend, WalkableFs {
  readonly kind = "memory";
  readonly search: SearchBackend = new MemorySearch(this);
  private readonly nodes = new Map<string, MemoryNode>([["/", { type: "directory", mtimeMs: Date.now() }]]);

  constructor(files: Record<string, string | Uint8Array> = {}) {
    for (const [p, content] of Object.entries(files)) this.put(p, content);
  }

  /** Creates or replaces a file synchronously (test set-up). */
  put(p: string, content: string | Uint8Array, mode = 0o644): void {
    const abs = path.resolve("/", p);
    this.ensureDir(path.dirname(abs));
    const data = typeof content === "string" ? new TextEncoder().encode(content) : content;
    this.nodes.set(abs, { type: "file", data, mtimeMs: Date.now(), mode, generation: ++generations });
  }

  /** The current text of a file (test assertions). */
  text(p: string): string | undefined {
    const node = this.nodes.get(path.resolve("/", p));
    return node?.type === "file" ? new TextDecoder().decode(node.data) : undefined;
  }

  /** Every path below a directory, depth-first in name order. */
  *walk(dir: string): Generator<{ path: string; type: "file" | "directory" }> {
    for (const entry of this.list(dir)) {
      const child = path.join(dir, entry.name);
      yield { path: child, type: entry.type as "file" | "directory" };
      if (entry.type === "directory") yield* this.walk(child);
    }
  }

  private ensureDir(dir: string): void {
    const node = this.nodes.get(dir);
    if (node?.type === "directory") return;
    if (node) throw fsError("ENOTDIR", `Not a directory: ${dir}`);
    this.ensureDir(path.dirname(dir));
    this.nodes.set(dir, { type: "directory", mtimeMs: Date.now() });
  }

  private file(abs: string): MemoryFile {
    const node = this.nodes.get(abs);
    if (!node) throw fsError("ENOENT", `No such file: ${abs}`);
    if (node.type !== "file") throw fsError("EISDIR", `Is a directory: ${abs}`);
    return node;
  }

  private list(dir: string): DirEntry[] {
    const prefix = dir === "/" ? "/" : `${dir}/`;
    const out: DirEntry[] = [];
    for (const [p, node] of this.nodes) {
      if (p !== dir && p.startsWith(prefix) && !p.slice(prefix.length).includes("/")) {
        out.push({ name: p.slice(prefix.length), type: node.type });
      }
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async stat(abs: string): Promise<BackendStat | null> {
    const node = this.nodes.get(path.resolve("/", abs));
    if (!node) return null;
    if (node.type === "directory") return { type: "directory", size: 0, mtimeMs: node.mtimeMs, version: "dir" };
    return {
      type: "file",
      size: node.data.byteLength,
      mtimeMs: node.mtimeMs,
      mode: node.mode,
      version: `m${node.generation.toString(36)}`,
    };
  }

  async realpath(abs: string): Promise<string> {
    const p = path.resolve("/", abs);
    if (!this.nodes.has(p)) throw fsError("ENOENT", `No such file or directory: ${abs}`);
    return p;
  }

  async readFile(abs: string): Promise<Uint8Array> {
    return this.file(path.resolve("/", abs)).data;
  }

  async *readStream(abs: string, range?: { start?: number; end?: number }): AsyncIterable<Uint8Array> {
    const data = this.file(path.resolve("/", abs)).data;
    const start = range?.start ?? 0;
    const end = range?.end === undefined ? data.byteLength : Math.min(data.byteLength, range.end + 1);
    for (let at = start; at < end; at += 64 * 1024) yield data.subarray(at, Math.min(end, at + 64 * 1024));
  }

  async readDir(abs: string): Promise<DirEntry[]> {
    const p = path.resolve("/", abs);
    const node = this.nodes.get(p);
    if (!node) throw fsError("ENOENT", `No such directory: ${abs}`);
    if (node.type !== "directory") throw fsError("ENOTDIR", `Not a directory: ${abs}`);
    return this.list(p);
  }

  async writeFileAtomic(abs: string, data: Uint8Array): Promise<void> {
    const p = path.resolve("/", abs);
    const existing = this.nodes.get(p);
    if (existing?.type === "directory") throw fsError("EISDIR", `Is a directory: ${abs}`);
    if (existing && (existing.mode & 0o222) === 0) throw readOnlyError(abs, existing.mode);
    this.put(p, new Uint8Array(data), existing?.mode ?? 0o644);
  }
}
