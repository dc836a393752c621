import { createHash } from "node:crypto";
import path from "node:path";
import type { AgentContext } from "@agentclientprotocol/sdk";
import type { DirEntry } from "../tool/context.js";
import type { BackendStat, FsBackend, SearchBackend } from "../runtime/fs/backend.js";
import { fsError } from "../runtime/fs/backend.js";

/**
 * Files larger than this are read from and written to disk: a text round trip of a huge file
 * through the editor is too slow, and the SDK refuses a message over 32 MiB.
 */
const EDITOR_TEXT_LIMIT = 10 * 1024 * 1024;

export interface EditorFsOptions {
  client: AgentContext;
  sessionId: string;
  local: FsBackend;
  canRead: boolean;
  canWrite: boolean;
  /** The largest file that goes through the editor (default 10 MiB). */
  maxTextBytes?: number;
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Text the editor can take: valid UTF-8 without a BOM (the editor keeps its own encoding). */
function editorText(data: Uint8Array): string | null {
  if (data[0] === 0xef && data[1] === 0xbb && data[2] === 0xbf) return null;
  try {
    return utf8.decode(data);
  } catch {
    return null;
  }
}

/**
 * Workspace files through the editor: reads see unsaved buffers (fs/read_text_file) and writes
 * go through fs/write_text_file so the editor can review them. Listing, real paths and search
 * stay on disk. Only the methods the client advertised are ever called.
 */
export class EditorFs implements FsBackend {
  readonly kind = "editor";
  readonly search: SearchBackend;

  /** `texts` caches what the editor answered, for one call's view (see forCall); null: no cache. */
  constructor(
    private readonly options: EditorFsOptions,
    private readonly texts: Map<string, Promise<string>> | null = null,
  ) {
    this.search = options.local.search;
  }

  private get limit(): number {
    return this.options.maxTextBytes ?? EDITOR_TEXT_LIMIT;
  }

  /**
   * One call's view: each file is asked of the editor once (a read's stat, head and lines were
   * three whole-file requests), until the call writes it or takes its lock (`refresh`).
   */
  forCall(): EditorFs & { refresh(): void } {
    const texts = new Map<string, Promise<string>>();
    return Object.assign(new EditorFs(this.options, texts), { refresh: () => texts.clear() });
  }

  private editorRead(abs: string): Promise<string> {
    const cached = this.texts?.get(abs);
    if (cached) return cached;
    const text = this.requestText(abs);
    if (this.texts) {
      this.texts.set(abs, text);
      text.catch(() => this.texts?.delete(abs));
    }
    return text;
  }

  private async requestText(abs: string): Promise<string> {
    try {
      const { content } = await this.options.client.request("fs/read_text_file", { sessionId: this.options.sessionId, path: abs });
      return await this.withDiskEnding(abs, content);
    } catch (err) {
      // Clients report a missing file in their own words; the tools need ENOENT.
      throw fsError("ENOENT", `The editor could not read ${abs}: ${(err as Error).message}`);
    }
  }

  /**
   * Some editors (agentic.nvim) give a buffer's lines without the file's final newline: written
   * back, the file would lose it. A text that differs from the disk's only by that ending is the
   * disk's.
   */
  private async withDiskEnding(abs: string, text: string): Promise<string> {
    if (text.endsWith("\n")) return text;
    const disk = await this.options.local.stat(abs).catch(() => null);
    const extra = disk ? disk.size - Buffer.byteLength(text, "utf8") : 0;
    if (extra !== 1 && extra !== 2) return text;
    const onDisk = Buffer.from(await this.options.local.readFile(abs)).toString("utf8");
    return onDisk === `${text}\n` || onDisk === `${text}\r\n` ? onDisk : text;
  }

  private async viaEditor(abs: string): Promise<boolean> {
    if (!this.options.canRead) return false;
    const s = await this.options.local.stat(abs);
    return s !== null && s.type === "file" && s.size <= this.limit;
  }

  async stat(abs: string): Promise<BackendStat | null> {
    const s = await this.options.local.stat(abs);
    if (!s || s.type !== "file" || !this.options.canRead || s.size > this.limit) return s;
    // The buffer may differ from the disk: the freshness token follows what the editor shows.
    const text = await this.editorRead(abs);
    const version = createHash("sha1").update(text).digest("hex").slice(0, 20);
    return { ...s, size: Buffer.byteLength(text, "utf8"), version: `e${version}` };
  }

  realpath(abs: string): Promise<string> {
    return this.options.local.realpath(abs);
  }

  async readlink(abs: string): Promise<string> {
    const { local } = this.options;
    if (!local.readlink) throw Object.assign(new Error(`Not a symbolic link: ${abs}`), { code: "EINVAL" });
    return local.readlink(abs);
  }

  async readFile(abs: string): Promise<Uint8Array> {
    if (!(await this.viaEditor(abs))) return this.options.local.readFile(abs);
    return Buffer.from(await this.editorRead(abs), "utf8");
  }

  async *readStream(abs: string, range?: { start?: number; end?: number }): AsyncIterable<Uint8Array> {
    if (!(await this.viaEditor(abs))) {
      yield* this.options.local.readStream(abs, range);
      return;
    }
    const bytes = Buffer.from(await this.editorRead(abs), "utf8");
    yield bytes.subarray(range?.start ?? 0, range?.end === undefined ? undefined : range.end + 1);
  }

  readDir(abs: string): Promise<DirEntry[]> {
    return this.options.local.readDir(abs);
  }

  /** The disk's lock: another process writes the same file on disk. */
  lock<T>(abs: string, fn: () => Promise<T>): Promise<T> {
    return this.options.local.lock ? this.options.local.lock(abs, fn) : fn();
  }

  /** Through the editor when it can take the text; then read back, since some editors change what they save. */
  async writeFileAtomic(abs: string, data: Uint8Array): Promise<Uint8Array | void> {
    this.texts?.delete(abs);
    const text = this.options.canWrite && data.length <= this.limit ? editorText(data) : null;
    if (text === null) return this.options.local.writeFileAtomic(abs, data);
    // A file in a folder that does not exist yet goes to disk (the editor creates files, not folders).
    if ((await this.options.local.stat(path.dirname(abs))) === null) return this.options.local.writeFileAtomic(abs, data);
    await this.options.client.request("fs/write_text_file", { sessionId: this.options.sessionId, path: abs, content: text });
    if (!(await this.viaEditor(abs))) return;
    // The read back is kept for the stat that follows a write.
    const landed = await this.editorRead(abs).catch(() => text);
    return landed === text ? undefined : Buffer.from(landed, "utf8");
  }
}
