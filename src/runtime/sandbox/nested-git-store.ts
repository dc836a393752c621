import { createHash, randomUUID } from "node:crypto";
import { lstatSync, mkdirSync, readFileSync } from "node:fs";
import { lstat, readdir, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { findsOf, nextStamp, type Folder } from "./nested-git.js";

// The map of nested repositories (`nested-git.ts`) kept between sessions, one file per workspace
// root, so that a new session's first pass stats the folders it knows (and watches them) instead of
// listing all of them: at 30,000 folders that is what a session's first command waits for.
//
// Why a map from disk may be trusted: it is a cache, never a verdict. Each folder in it is used only
// as the map uses its own folders from pass to pass: when its inode and ctime are those it was
// listed with (and it was not listed within HOT_MS of its ctime), its entries are those listed, and
// anything else is listed again. A folder whose ctime matches cannot have gained a `.git` since,
// however old the file is, since every change to a folder's entries sets its ctime to the clock.
// What the map must not do is take a record the sandbox could write: the store lives in toolhost's
// home, which every sandbox hides (bubblewrap.ts decides to keep one only then), and a file that
// does not parse, names another root or another file system, or another format, is ignored.

const FORMAT = 2;
/** Past this many folders the map is not kept: its file would cost more to read than a walk saves. */
const MAX_FOLDERS = 400_000;
/** A root's file no session has written for this long goes (its project is gone, or moved): the store does not grow for ever. */
const STALE_MS = 30 * 24 * 3600 * 1000;
/** A temporary file this old is one a killed writer left. */
const STALE_PARTIAL_MS = 3600 * 1000;

const HOT = 1;
const OPAQUE = 2;
const FOREIGN = 4;

/**
 * The folders in preorder, as flat columns (a JSON of 30,000 small nested arrays parses several
 * times slower): each one's name (joined by `/`, which no name holds; the root's is empty), ctime
 * (null: list it again), inode, flags and number of children; by index, the rarer parts.
 */
interface StoreFile {
  v: number;
  root: string;
  dev: number;
  ino: number;
  names: string;
  ctimes: (number | null)[];
  inos: number[];
  flags: number[];
  kids: number[];
  /** The `.git` entry: name, identity, a symlink's target. */
  git: Record<number, [string, string, string?]>;
  /** Its entries named like a git folder's. */
  gitdir: Record<number, string[]>;
  /** Subfolders it listed that are not among its children (left out of walks, or a plant taken out). */
  extra: Record<number, string[]>;
}

type Columns = Omit<StoreFile, "v" | "root" | "dev" | "ino" | "names"> & { names: string[] };

function store(name: string, folder: Folder, out: Columns): void {
  const i = out.names.length;
  if (i >= MAX_FOLDERS) throw new RangeError("too many folders to keep");
  out.names.push(name);
  out.ctimes.push(Number.isNaN(folder.ctime) ? null : folder.ctime);
  out.inos.push(folder.ino);
  out.flags.push((folder.hot ? HOT : 0) | (folder.opaque ? OPAQUE : 0) | (folder.foreign ? FOREIGN : 0));
  out.kids.push(folder.children.size);
  if (folder.git)
    out.git[i] = [folder.git.name, folder.git.id, ...(folder.git.link !== undefined ? [folder.git.link] : [])] as [string, string, string?];
  if (folder.gitdir.length) out.gitdir[i] = folder.gitdir;
  const extra = folder.subdirs.filter((sub) => !folder.children.has(sub));
  if (extra.length) out.extra[i] = extra;
  for (const [childName, child] of folder.children) store(childName, child, out);
}

/** Rebuilt as the map makes folders: not watched (the watch has not seen it), a stamp of its own, no command's yet. */
function load(data: StoreFile): Folder {
  const names = data.names.split("/");
  const count = names.length;
  if (![data.ctimes, data.inos, data.flags, data.kids].every((column) => Array.isArray(column) && column.length === count)) {
    throw new Error("columns of different lengths");
  }
  let next = 0;
  const folderAt = (): Folder => {
    const i = next++;
    if (i >= count) throw new Error("fewer folders than children");
    const flags = data.flags[i] as number;
    const git = data.git[i];
    const children = new Map<string, Folder>();
    const kids = data.kids[i] as number;
    for (let k = 0; k < kids; k++) {
      const name = names[next] as string;
      children.set(name, folderAt());
    }
    const folder: Folder = {
      ctime: data.ctimes[i] ?? Number.NaN,
      ino: data.inos[i] as number,
      hot: (flags & HOT) !== 0,
      watched: false,
      stamp: nextStamp(),
      opaque: (flags & OPAQUE) !== 0,
      foreign: (flags & FOREIGN) !== 0,
      git: git ? { name: git[0], id: git[1], ...(git[2] !== undefined ? { link: git[2] } : {}) } : undefined,
      gitdir: data.gitdir[i] ?? [],
      subdirs: [...children.keys(), ...(data.extra[i] ?? [])],
      children,
      finds: 0,
      loaded: true,
    };
    folder.finds = findsOf(folder, children);
    return folder;
  };
  const root = folderAt();
  if (next !== count) throw new Error("more folders than children");
  return root;
}

/** Where the maps of one toolhost home live; a root's file is named by its path's hash. */
export class FolderMapStore {
  private readonly saving = new Map<string, Promise<void>>();
  private swept = false;

  constructor(private readonly dir: string) {}

  private file(root: string): string {
    return path.join(this.dir, `${createHash("sha256").update(root).digest("hex").slice(0, 32)}.json`);
  }

  /** The root's map as last kept, if it is this root's, on the same file system; undefined otherwise. */
  read(root: string): Folder | undefined {
    try {
      const stat = lstatSync(root);
      const data = JSON.parse(readFileSync(this.file(root), "utf8")) as StoreFile;
      if (data.v !== FORMAT || data.root !== root || data.dev !== stat.dev || data.ino !== stat.ino) return undefined;
      return load(data);
    } catch {
      return undefined;
    }
  }

  /** Keeps the root's map (written whole to a temporary file, then renamed over the last). Never throws. */
  save(root: string, tree: Folder): Promise<void> {
    const previous = this.saving.get(root) ?? Promise.resolve();
    const next = previous.then(async () => {
      const file = this.file(root);
      // Unique: two sessions of one root in one process keep it from two workers.
      const partial = `${file}.${randomUUID()}.tmp`;
      try {
        const stat = lstatSync(root);
        const columns: Columns = { names: [], ctimes: [], inos: [], flags: [], kids: [], git: {}, gitdir: {}, extra: {} };
        store("", tree, columns);
        const data: StoreFile = { v: FORMAT, root, dev: stat.dev, ino: stat.ino, ...columns, names: columns.names.join("/") };
        mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        await writeFile(partial, JSON.stringify(data), { mode: 0o600 });
        await rename(partial, file);
      } catch (err) {
        // The home cannot be written, or the map is too big (its old file goes): the next session walks, as without a store.
        await rm(partial, { force: true }).catch(() => undefined);
        if (err instanceof RangeError) await rm(file, { force: true }).catch(() => undefined);
      }
    });
    this.saving.set(root, next);
    return next.then(() => this.sweep());
  }

  /** Once per store: the files of roots no session kept for STALE_MS, and temporary files a killed writer left. Never throws. */
  private async sweep(): Promise<void> {
    if (this.swept) return;
    this.swept = true;
    const now = Date.now();
    for (const name of await readdir(this.dir).catch(() => [] as string[])) {
      const file = path.join(this.dir, name);
      const stat = await lstat(file).catch(() => undefined);
      if (!stat?.isFile()) continue;
      const limit = name.endsWith(".tmp") ? STALE_PARTIAL_MS : name.endsWith(".json") ? STALE_MS : undefined;
      if (limit !== undefined && now - stat.mtimeMs > limit) await rm(file, { force: true }).catch(() => undefined);
    }
  }
}
