import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { toolhostHome, version } from "../../config/paths.js";
import { asWorkspace, projectFolderName, type Workspace } from "../../config/workspace.js";
import { checkpointSessions, discardSessionCheckpoints } from "../../runtime/checkpoints/repository.js";
import { AI_MAJOR, type SessionHeader, type TreeEntry } from "./session-format.js";
import { migrateV1, type V1Entry, type V1Header } from "./session-migrate.js";
import { decodeCursor, encodeCursor, newestFirst } from "./session-cursor.js";
import { takeHold, type SessionHold } from "./session-hold.js";

// Sessions on disk: one append-only JSONL file per session, grouped by project, under
// `~/.toolhost/sessions/<project>/<id>.jsonl`. The first line is the header; every later line is
// one entry of the session's tree (session-format.ts), written as it happens. A line cut short by a
// crash is ignored on read. A format-1 file (before issue 23) is read migrated (session-migrate.ts)
// and rewritten as format 2 before anything is appended to it, so a file is always of one format.

/** The file format this toolhost writes; a reader refuses files of a newer one. */
const FORMAT = 2;

/** A session as read back from its file (a format-1 file migrated): its header and its entries in file order. */
export interface StoredSession {
  header: SessionHeader;
  entries: TreeEntry[];
  file: string;
  /** Lines that could not be read (a torn last line after a crash, or damage); they are skipped. */
  skippedLines: number;
  /** The file on disk is of format 1 (read migrated); its first append rewrites it as format 2. */
  migratedFrom?: 1;
}

/** One row of the session list. */
export interface SessionSummary {
  id: string;
  cwd: string;
  additionalDirectories?: string[];
  title?: string;
  /** ISO time of the last write. */
  updatedAt: string;
  file: string;
  /** Why the file cannot be opened (damaged, or of a newer format); such a row has no title. */
  problem?: string;
  /** Something odd that does not stop it opening (a copied file whose header names another id). */
  note?: string;
}

export interface ListOptions {
  /** Only sessions of this working directory. */
  cwd?: string;
  /** From `nextCursor` of the previous page. */
  cursor?: string;
  /** Rows per page (default 50). */
  limit?: number;
}

export interface SessionPage {
  sessions: SessionSummary[];
  /** Present when more rows follow. */
  nextCursor?: string;
}

const DEFAULT_PAGE = 50;
/** How much of a file's head `list` reads for the header and the title. */
const HEAD_BYTES = 16 * 1024;
const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** How long an orphan data folder is left alone: its session may be writing its file right now. */
const ORPHAN_GRACE_MS = 3600 * 1000;

/** Sessions are written to disk unless TOOLHOST_SESSIONS=off. */
export function recordingEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.TOOLHOST_SESSIONS !== "off";
}

/** The folder that holds every project's sessions. */
export function sessionsRoot(home = toolhostHome()): string {
  return path.join(home, "sessions");
}

/** The folder next to a session's file that keeps its large outputs (sidecar files). */
export function sessionDataDir(file: string): string {
  return file.replace(/\.jsonl$/, "");
}

/** A title from a prompt: its first non-empty line, shortened. */
export function titleFromPrompt(text: string, max = 80): string | undefined {
  const line = text
    .split("\n")
    .map((l) => l.trim())
    .find((l) => l !== "");
  if (!line) return undefined;
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/**
 * The writing end of one session's file. Nothing is written until the first entry, so a session
 * that never got a prompt leaves no file. A write that fails is reported once on stderr and to
 * `onFailure` (the recorder tells the editor), and recording stops: a full disk must not end the
 * user's session.
 */
export class SessionWriter {
  private fd: number | null = null;
  /** The file's length after the last whole line: a write cut short is taken back to it. */
  private size = 0;
  private failed = false;
  /** Called once, when recording stops for an error (its `code`: ENOSPC, EFBIG, EACCES …). */
  onFailure?: (error: NodeJS.ErrnoException) => void;

  constructor(
    readonly file: string,
    private readonly header: SessionHeader,
    /** The hold of a loaded session (taken before its load); a new session takes it on its first write. */
    private hold?: SessionHold,
    /** A format-1 file's entries, migrated: the file is rewritten as format 2 (header and these) before the first append. */
    private rewrite?: readonly TreeEntry[],
  ) {}

  /**
   * Writes the header now (and takes the hold), before any entry: a session made by session/new
   * can be loaded by id from another process before its first prompt. A failure here is said at
   * the first entry's write, which tries again (the editor hears of it then).
   */
  start(): void {
    if (this.failed || this.fd !== null) return;
    try {
      this.open();
    } catch {
      if (this.fd !== null) fs.closeSync(this.fd);
      this.fd = null;
    }
  }

  append(entry: TreeEntry): void {
    if (this.failed) return;
    try {
      if (this.fd === null) this.open();
      this.writeLine(`${JSON.stringify(entry)}\n`);
    } catch (error) {
      this.failed = true;
      console.error(`toolhost: recording session ${this.header.id} stopped: ${(error as Error).message}`);
      this.onFailure?.(error as NodeJS.ErrnoException);
    }
  }

  /**
   * One whole line or none: a write cut short (a full disk, a file-size limit: the kernel writes
   * what fits, then refuses) is truncated back, so the file stays whole lines of JSON.
   */
  private writeLine(text: string): void {
    const data = Buffer.from(text);
    let written = 0;
    try {
      while (written < data.length) {
        const n = fs.writeSync(this.fd!, data, written);
        if (n === 0) throw Object.assign(new Error(`nothing more could be written to ${this.file}`), { code: "ENOSPC" });
        written += n;
      }
    } catch (error) {
      if (written > 0) fs.ftruncateSync(this.fd!, this.size);
      throw error;
    }
    this.size += written;
  }

  private open(): void {
    fs.mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
    this.hold ??= takeHold(this.file, this.header.id);
    if (this.rewrite) {
      // The whole file at once, then renamed over the old one: a crash leaves the old file or the new one, never half of each.
      const tmp = `${this.file}.${process.pid}.tmp`;
      try {
        fs.writeFileSync(tmp, sessionFileText(this.header, this.rewrite), { mode: 0o600, flag: "w" });
        fs.renameSync(tmp, this.file);
      } catch (error) {
        fs.rmSync(tmp, { force: true });
        throw error;
      }
      this.rewrite = undefined;
    }
    this.fd = fs.openSync(this.file, "a", 0o600);
    const size = fs.fstatSync(this.fd).size;
    this.size = size;
    if (size === 0) this.writeLine(`${JSON.stringify(this.header)}\n`);
    // A line torn by a crash ends without a newline: start on a fresh line, or the next entry would be lost with it.
    else if (!endsWithNewline(this.file, size)) this.writeLine("\n");
  }

  close(): void {
    if (this.fd !== null) fs.closeSync(this.fd);
    this.fd = null;
    this.hold?.release();
  }
}

/** A session as the text of a format-2 file: the header line, then one line per entry. */
export function sessionFileText(header: SessionHeader, entries: readonly TreeEntry[]): string {
  let text = `${JSON.stringify(header)}\n`;
  for (const entry of entries) text += `${JSON.stringify(entry)}\n`;
  return text;
}

function endsWithNewline(file: string, size: number): boolean {
  const fd = fs.openSync(file, "r");
  try {
    const last = Buffer.alloc(1);
    fs.readSync(fd, last, 0, 1, size - 1);
    return last[0] === 0x0a;
  } finally {
    fs.closeSync(fd);
  }
}

/** The sessions of one toolhost home. */
export class SessionStore {
  readonly root: string;

  constructor(private readonly home = toolhostHome()) {
    this.root = sessionsRoot(home);
  }

  /** The file a session of this id and workspace (or working directory) lives in. */
  fileFor(id: string, cwd: string | Workspace): string {
    if (!SESSION_ID.test(id)) throw new Error(`Not a session id: ${JSON.stringify(id)}`);
    return path.join(this.root, typeof cwd === "string" ? projectFolderName(cwd) : cwd.projectFolder, `${id}.jsonl`);
  }

  /** A writer that appends to a stored session's own file (a format-1 file is rewritten as format 2 first). */
  writerFor(stored: StoredSession, hold?: SessionHold): SessionWriter {
    return new SessionWriter(stored.file, stored.header, hold, stored.migratedFrom ? stored.entries : undefined);
  }

  /**
   * A writer for a session in its workspace (a session's, resolved at its start; or a folder,
   * resolved here, with `additionalDirectories`); an existing file (a loaded session) is appended to.
   */
  writer(header: { id: string; cwd: string | Workspace; additionalDirectories?: string[]; created?: string }): SessionWriter {
    const workspace = asWorkspace(header.cwd);
    const additionalDirectories = header.additionalDirectories ?? workspace.additionalRoots;
    const full: SessionHeader = {
      type: "session",
      format: FORMAT,
      id: header.id,
      cwd: workspace.cwd,
      ...(additionalDirectories.length ? { additionalDirectories: [...additionalDirectories] } : {}),
      created: header.created ?? new Date().toISOString(),
      toolhost: version,
      ai: AI_MAJOR,
    };
    return new SessionWriter(this.fileFor(header.id, workspace), full);
  }

  /** Where a session's file is, searching every project; undefined when there is none. */
  async find(id: string): Promise<string | undefined> {
    if (!SESSION_ID.test(id)) return undefined;
    for (const project of await readdirOrEmpty(this.root)) {
      const file = path.join(this.root, project, `${id}.jsonl`);
      if (await exists(file)) return file;
    }
    return undefined;
  }

  /** Reads a session back; undefined when it does not exist or its header is unreadable. */
  async read(id: string): Promise<StoredSession | undefined> {
    const file = await this.find(id);
    if (!file) return undefined;
    return readSessionFile(file);
  }

  /** Why a session's file cannot be opened; undefined when there is no such file or it opens. */
  async problem(id: string): Promise<string | undefined> {
    const file = await this.find(id);
    if (!file) return undefined;
    const head = await readHead(file);
    return "problem" in head ? head.problem : undefined;
  }

  /** Sessions, most recently updated first, a page at a time. */
  async list(options: ListOptions = {}): Promise<SessionPage> {
    const limit = Math.max(1, options.limit ?? DEFAULT_PAGE);
    const projects = options.cwd ? [projectFolderName(options.cwd)] : await readdirOrEmpty(this.root);
    const rows: { id: string; file: string; mtimeMs: number }[] = [];
    await Promise.all(
      projects.map(async (project) => {
        const dir = path.join(this.root, project);
        for (const name of await readdirOrEmpty(dir)) {
          if (!name.endsWith(".jsonl")) continue;
          const file = path.join(dir, name);
          const stat = await fsp.stat(file).catch(() => undefined);
          if (stat?.isFile()) rows.push({ id: name.slice(0, -".jsonl".length), file, mtimeMs: stat.mtimeMs });
        }
      }),
    );
    rows.sort(newestFirst);
    const after = decodeCursor(options.cursor);
    const start = after ? rows.findIndex((row) => newestFirst(row, after) > 0) : 0;
    const page: SessionSummary[] = [];
    let index = start < 0 ? rows.length : start;
    for (; index < rows.length && page.length < limit; index++) {
      const row = rows[index]!;
      const head = await readHead(row.file);
      // Made by session/new and never prompted: loadable by its id, but no conversation to list.
      if ("header" in head && !head.prompted) continue;
      if ("problem" in head) {
        page.push({
          id: row.id,
          cwd: head.cwd ?? "",
          updatedAt: new Date(row.mtimeMs).toISOString(),
          file: row.file,
          problem: head.problem,
        });
        continue;
      }
      page.push({
        // The file's name, which opens it: a copied file's header may name another id.
        id: row.id,
        ...(head.header.id !== row.id ? { note: `its header names session ${head.header.id} (a copied file?)` } : {}),
        cwd: head.header.cwd,
        ...(Array.isArray(head.header.additionalDirectories) && head.header.additionalDirectories.length
          ? { additionalDirectories: head.header.additionalDirectories }
          : {}),
        ...(head.title ? { title: head.title } : {}),
        updatedAt: new Date(row.mtimeMs).toISOString(),
        file: row.file,
      });
    }
    const last = rows[index - 1];
    return { sessions: page, ...(index < rows.length && last ? { nextCursor: encodeCursor(last) } : {}) };
  }

  /** Removes a session's file and its folder of large outputs; false when there was none. */
  /** Deletes a session's file and data; throws SessionHeldError while another live process has it open. */
  async delete(id: string): Promise<boolean> {
    const file = await this.find(id);
    if (!file) return false;
    // Held while deleting: a process that has it open keeps it, and a load cannot start halfway through.
    const hold = takeHold(file, id);
    try {
      await fsp.rm(file, { force: true });
      await fsp.rm(sessionDataDir(file), { recursive: true, force: true });
      // Its checkpoints of the workspace go too, and the project's repository is packed.
      await discardSessionCheckpoints({ project: path.basename(path.dirname(file)), sessions: [id], home: this.home });
    } finally {
      hold.release();
    }
    return true;
  }

  /**
   * The retention sweep: removes the data folders (sidecar files) and the checkpoints whose session
   * file is gone (a delete cut short, a file removed by hand), once untouched for `graceMs`. Returns how many.
   */
  async sweepOrphans(graceMs = ORPHAN_GRACE_MS): Promise<number> {
    const now = Date.now();
    let removed = 0;
    for (const project of await readdirOrEmpty(this.root)) {
      const dir = path.join(this.root, project);
      const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
      const files = new Set(entries.filter((e) => e.isFile()).map((e) => e.name));
      for (const entry of entries) {
        if (!entry.isDirectory() || !SESSION_ID.test(entry.name) || files.has(`${entry.name}.jsonl`)) continue;
        const folder = path.join(dir, entry.name);
        const stat = await fsp.stat(folder).catch(() => undefined);
        // The file again, now: a session that started since the listing wrote its first line.
        if (!stat || now - stat.mtimeMs < graceMs || (await exists(`${folder}.jsonl`))) continue;
        await fsp.rm(folder, { recursive: true, force: true });
        removed++;
      }
    }
    // Checkpoints (runtime/checkpoints/) of sessions whose file is gone, untouched for as long.
    const orphans = new Map<string, string[]>();
    for (const { project, session, touchedMs } of await checkpointSessions(this.home)) {
      if (now - touchedMs < graceMs || (await exists(path.join(this.root, project, `${session}.jsonl`)))) continue;
      orphans.set(project, [...(orphans.get(project) ?? []), session]);
    }
    for (const [project, sessions] of orphans) {
      if (await discardSessionCheckpoints({ project, sessions, home: this.home })) removed += sessions.length;
    }
    return removed;
  }
}

/** Parses a session file (a format-1 file migrated). Unreadable lines are counted and skipped, never fatal. */
export async function readSessionFile(file: string): Promise<StoredSession | undefined> {
  const text = await fsp.readFile(file, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  const lines = text.split("\n");
  const checked = checkHeader(lines[0]);
  if (!("header" in checked)) return undefined;
  // Opened by its file name: a copied file whose header names another id is that file's session.
  const id = path.basename(file, ".jsonl");
  const header = checked.header.id === id || !SESSION_ID.test(id) ? checked.header : { ...checked.header, id };
  const parsed: Record<string, unknown>[] = [];
  let skippedLines = 0;
  const ids = new Set<string>();
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === "") continue;
    let entry: unknown;
    try {
      entry = JSON.parse(line);
    } catch {
      skippedLines++;
      continue;
    }
    if (header.format === 1 ? isV1Entry(entry) : isTreeEntry(entry, ids)) parsed.push(entry as Record<string, unknown>);
    else skippedLines++;
  }
  if (header.format === FORMAT) return { header, entries: parsed as unknown as TreeEntry[], file, skippedLines };
  const migrated = migrateV1(header, parsed as unknown as V1Entry[]);
  return { header: migrated.header, entries: migrated.entries, file, skippedLines: skippedLines + migrated.skipped, migratedFrom: 1 };
}

function isV1Entry(entry: unknown): entry is Record<string, unknown> {
  return typeof entry === "object" && entry !== null && typeof (entry as { type?: unknown }).type === "string";
}

/** A format-2 entry: a type, an id no earlier line has, and a parentId (null for a root). */
function isTreeEntry(entry: unknown, ids: Set<string>): entry is Record<string, unknown> {
  if (!isV1Entry(entry)) return false;
  const { id, parentId } = entry as { id?: unknown; parentId?: unknown };
  if (typeof id !== "string" || ids.has(id) || (parentId !== null && typeof parentId !== "string")) return false;
  ids.add(id);
  return true;
}

/** The header of a session file (format 1 or 2), or why it is not one this toolhost reads. */
function checkHeader(line: string | undefined): { header: SessionHeader | V1Header } | { problem: string; cwd?: string } {
  if (!line) return { problem: "empty file: no session header" };
  let header: Partial<Omit<SessionHeader, "format">> & { format?: unknown; toolhost?: unknown };
  try {
    header = JSON.parse(line) as typeof header;
  } catch {
    return { problem: "damaged: its first line is not a session header (JSON)" };
  }
  if (typeof header !== "object" || header === null || header.type !== "session")
    return { problem: "not a session file: its first line is not a session header" };
  const cwd = typeof header.cwd === "string" ? header.cwd : undefined;
  if (typeof header.format === "number" && header.format > FORMAT) {
    const by = typeof header.toolhost === "string" ? ` by toolhost ${header.toolhost}` : "";
    return { problem: `format ${header.format}, written${by}, is newer than this toolhost (${version}) reads: update toolhost`, cwd };
  }
  if ((header.format !== 1 && header.format !== FORMAT) || typeof header.id !== "string" || typeof header.cwd !== "string")
    return { problem: "damaged: its header lacks the format, id or folder", cwd };
  return { header: header as unknown as SessionHeader | V1Header };
}

/** The header and the first title of a file, from its first bytes only (list stays fast), or why it cannot be read. */
async function readHead(
  file: string,
): Promise<{ header: SessionHeader | V1Header; title?: string; prompted: boolean } | { problem: string; cwd?: string }> {
  let handle: fsp.FileHandle | undefined;
  try {
    handle = await fsp.open(file, "r");
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    const lines = buffer.subarray(0, bytesRead).toString("utf8").split("\n");
    // A header longer than the head (many additional directories): up to 1 MiB of it, not a whole damaged file.
    if (lines.length === 1 && bytesRead === HEAD_BYTES) {
      const more = Buffer.alloc(1024 * 1024);
      const read = await handle.read(more, 0, more.length, 0);
      lines[0] = more.subarray(0, read.bytesRead).toString("utf8").split("\n", 1)[0]!;
    }
    const checked = checkHeader(lines[0]);
    if (!("header" in checked)) return checked;
    const { header } = checked;
    // A format-1 file was written from its first prompt on; a format-2 one from session/new: prompted once it holds
    // more than settings (or more than the head holds).
    const prompted =
      header.format === 1 || bytesRead === HEAD_BYTES || lines.slice(1).some((line) => line && !line.startsWith('{"type":"setting"'));
    // Both formats write an entry's type first. The last line may be cut by the buffer's end; it fails to parse and is skipped.
    for (const line of lines.slice(1)) {
      if (!line.startsWith('{"type":"title"')) continue;
      try {
        return { header, title: (JSON.parse(line) as { title: string }).title, prompted };
      } catch {
        break;
      }
    }
    return { header, prompted };
  } catch (err) {
    return { problem: `unreadable: ${(err as Error).message}` };
  } finally {
    await handle?.close();
  }
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  return fsp.readdir(dir).catch(() => []);
}

async function exists(file: string): Promise<boolean> {
  return fsp.stat(file).then(
    (s) => s.isFile(),
    () => false,
  );
}
