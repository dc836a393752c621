import { isInside } from "../../tool/paths.js";
import { processAlive } from "../process-alive.js";
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, watch, writeFileSync, type FSWatcher } from "node:fs";
import os from "node:os";
import path from "node:path";

// The kernel's account of which folders changed (inotify, through one non-recursive `fs.watch` per
// folder), so that the map of nested repositories (`nested-git.ts`) lists again only those and
// stats nothing else. Node 20's `fs.watch(…, { recursive: true })` on Linux is no help: it walks
// the tree synchronously and watches every file as well as every folder (a node_modules of 30,000
// folders is 150,000+ watches, past most users' limit), stats a file on each event, and says
// nothing when the kernel drops events.
//
// What the map may trust, and why:
// - A folder's watch is added before it is listed: any change to its entries or its own mode or
//   times after the listing is an event (IN_CREATE, IN_DELETE, IN_MOVED_*, IN_ATTRIB), whatever
//   the times say afterwards (a command that sets mtime back still made the event).
// - The events of one inotify instance (one per thread: libuv's per loop) form one queue, in the
//   order they happened. `fence()` creates a file in a folder of its own and waits for that event:
//   every change made before it (by a command that has ended) has been delivered by then.
// - The queue holds `max_queued_events` (16,384 by default); past that the kernel drops events, and
//   libuv does not pass the overflow on. The events that filled it are all delivered, so fewer than
//   half that many between two fences proves none was dropped; more (or a fence that does not come,
//   or a watch closed while its folder may still change: libuv drops the events of a closed watch
//   uncounted) and the next pass is whole (`take` says so), by ctime as before the watch existed.
// - A folder that cannot be watched (no read permission, the user's watch limit reached: this takes
//   at most a quarter of it, leaving the rest to the user's editor) is stat'ed on every pass.
//
// The same events also feed the checkpoints (`feed`): which paths of a root changed between two
// of its marks, by name (a file written, a folder made or removed), so that git looks at those and
// nothing else (runtime/checkpoints/change-feed.ts). A feed trusts the watch only as far as the map
// does, and less: it starts blind (what changed before it existed is unknown), and anything that
// blinds the map, an event from a watch the map dropped (its folder moved: the event's path is
// stale), a folder that cannot be watched and too many paths all make its next answer "everything".

const FENCE_MS = 2000;
const FENCE_PREFIX = "toolhost-fence-";

/** Fence folders of this user's toolhosts that ended without closing them (SIGKILL): their pid is in the name. */
function sweepFences(): void {
  const tmp = os.tmpdir();
  let names: string[];
  try {
    names = readdirSync(tmp).filter((n) => n.startsWith(FENCE_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(/^toolhost-fence-(\d+)-/.exec(name)?.[1]);
    const dir = path.join(tmp, name);
    const stat = lstatSync(dir, { throwIfNoEntry: false });
    if (!pid || !stat?.isDirectory() || stat.uid !== process.getuid?.() || processAlive(pid)) continue;
    rmSync(dir, { recursive: true, force: true });
  }
}

function procNumber(name: string, fallback: number): number {
  try {
    const n = Number(readFileSync(`/proc/sys/fs/inotify/${name}`, "utf8").trim());
    return Number.isFinite(n) && n > 0 ? n : fallback;
  } catch {
    return fallback;
  }
}

/** What changed since the last `take`: folders to list again, and those that cannot be watched (stat'ed every pass). */
export interface Changed {
  dirty: ReadonlySet<string>;
  unwatched: ReadonlySet<string>;
}

/** A root's account for the checkpoints: what changed since its last mark. */
interface Feed {
  /** Absolute paths; a folder's own with a final `/` (everything below it). */
  paths: Set<string>;
  /** Entries made, removed or renamed: a file's path, or a folder's whole (`feed` looks which). */
  renamed: Set<string>;
  /** Something may have changed unseen: the next answer is "everything". */
  lost: boolean;
}

/** More paths than this between two marks: git's whole look costs less than the list. */
const FEED_MAX_PATHS = 20_000;
/** More folders than this in one answer: git's whole look costs less (each is a pass over its index). */
const FEED_MAX_FOLDERS = 500;

export class FolderWatch {
  private readonly feeds = new Map<string, Feed>();
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly unwatched = new Set<string>();
  /** Watches of folders the map dropped: kept open (and counted) until many, then closed and the next pass made whole. */
  private retired: FSWatcher[] = [];
  private dirty = new Set<string>();
  private events = 0;
  /** Events may have been lost since the last take (or nothing is watched yet): the next pass is whole. */
  private blind = true;
  private readonly budget: number;
  private readonly overflowAt: number;
  private readonly fenceDir: string;
  private readonly fenceWatcher: FSWatcher;
  private fences = 0;
  private waiting: { name: string; arrived: () => void } | undefined;

  /** `budget` (watches) and `overflowAt` (events between takes): tests only. */
  constructor(options: { budget?: number; overflowAt?: number } = {}) {
    this.budget = options.budget ?? Math.floor(procNumber("max_user_watches", 8192) / 4);
    this.overflowAt = options.overflowAt ?? Math.floor(procNumber("max_queued_events", 16384) / 2);
    sweepFences();
    this.fenceDir = mkdtempSync(path.join(os.tmpdir(), `${FENCE_PREFIX}${process.pid}-`));
    this.fenceWatcher = watch(this.fenceDir, { persistent: false }, (_event, name) => {
      this.events++;
      if (this.waiting && name === this.waiting.name) this.waiting.arrived();
    });
    this.fenceWatcher.on("error", () => this.lose());
  }

  /** Watches folder `p` (call before listing it); false when it cannot be: it is then stat'ed every pass. */
  watch(p: string): boolean {
    if (this.watchers.has(p)) return true;
    if (this.watchers.size < this.budget) {
      try {
        const watcher = watch(p, { persistent: false }, (event, name) => {
          this.events++;
          this.dirty.add(p);
          if (this.feeds.size) this.fed(p, event, name, this.watchers.get(p) === watcher);
        });
        watcher.on("error", () => this.lose());
        this.watchers.set(p, watcher);
        this.unwatched.delete(p);
        return true;
      } catch {
        // EACCES (cannot be listed), ENOSPC (the user's limit): stat'ed every pass instead
      }
    }
    this.unwatched.add(p);
    return false;
  }

  /** The folder at `p` left the map (gone, replaced, moved): its watch is retired. */
  forget(p: string): void {
    this.unwatched.delete(p);
    const watcher = this.watchers.get(p);
    if (!watcher) return;
    this.watchers.delete(p);
    this.retired.push(watcher);
    if (this.retired.length > Math.max(256, this.watchers.size / 4)) {
      for (const w of this.retired) w.close();
      this.retired = [];
      this.lose();
    }
  }

  /** `p` is listed again on the next pass (a plant was found in it). */
  touch(p: string): void {
    this.dirty.add(p);
  }

  /** Resolves once every change made before the call has been delivered (or, on timeout, the next pass is whole). */
  async fence(): Promise<void> {
    const name = `f${++this.fences}`;
    let timer: NodeJS.Timeout | undefined;
    const arrived = await new Promise<boolean>((resolve) => {
      this.waiting = { name, arrived: () => resolve(true) };
      timer = setTimeout(() => resolve(false), FENCE_MS);
      try {
        writeFileSync(path.join(this.fenceDir, name), "");
      } catch {
        resolve(false);
      }
    });
    clearTimeout(timer);
    this.waiting = undefined;
    if (!arrived) this.lose();
    try {
      unlinkSync(path.join(this.fenceDir, name));
    } catch {
      // gone: nothing to remove
    }
  }

  /** What changed since the last take; undefined when events may have been lost: the pass must be whole. */
  take(): Changed | undefined {
    const lost = this.blind || this.events >= this.overflowAt;
    if (lost) for (const feed of this.feeds.values()) feed.lost = true;
    const dirty = this.dirty;
    this.dirty = new Set();
    this.events = 0;
    this.blind = false;
    return lost ? undefined : { dirty, unwatched: this.unwatched };
  }

  /** Events may have been lost: the map's next pass is whole, and every feed's next answer is everything. */
  private lose(): void {
    this.blind = true;
    for (const feed of this.feeds.values()) feed.lost = true;
  }

  /** An event in folder `p` (`name` in it, or `p` itself: the kernel names the folder then) for the feeds of its roots. */
  private fed(p: string, event: string, name: string | Buffer | null, current: boolean): void {
    const entry = typeof name === "string" ? name : undefined;
    for (const [root, feed] of this.feeds) {
      if (!isInside(p, root)) continue;
      // A dropped watch's folder may be anywhere now: its event's path says nothing. A name that is
      // not UTF-8 comes decoded with U+FFFD: its folder is named instead.
      if (!current || entry === undefined) feed.lost = true;
      else if (entry.includes("\uFFFD") || entry === path.basename(p)) feed.paths.add(`${p}/`);
      // A file written or its mode changed: that file. Made, removed or renamed: maybe a folder (`feed` looks).
      else if (event === "change") feed.paths.add(`${p}/${entry}`);
      else feed.renamed.add(`${p}/${entry}`);
      if (feed.paths.size + feed.renamed.size > FEED_MAX_PATHS) feed.lost = true;
    }
  }

  /**
   * For the checkpoints of `root` (after a `fence()` and the map's pass, so every folder it holds is
   * watched): the paths below it that changed since the last call, a folder's whole with a final
   * `/` (one made, or one removed or renamed away: a path that is gone may have been one), with
   * every folder that is not watched; undefined when that is not known (the first call, events
   * lost, too many folders for git to look up one by one): everything may have changed.
   */
  feed(root: string): string[] | undefined {
    const feed = this.feeds.get(root);
    this.feeds.set(root, { paths: new Set(), renamed: new Set(), lost: false });
    if (!feed || feed.lost || this.blind || this.events >= this.overflowAt) return undefined;
    const paths = new Set(feed.paths);
    for (const p of feed.renamed) {
      paths.add(p);
      // A file now: git's `update-index --replace` drops what the index held below it, if a folder.
      if (!lstatSync(p, { throwIfNoEntry: false })?.isFile()) paths.add(`${p}/`);
    }
    for (const p of this.unwatched) if (isInside(p, root)) paths.add(`${p}/`);
    const out = [...paths];
    // git looks each folder up against every index entry: past a few hundred, its whole look is cheaper.
    return out.filter((p) => p.endsWith("/")).length > FEED_MAX_FOLDERS ? undefined : out;
  }

  close(): void {
    for (const w of [...this.watchers.values(), ...this.retired, this.fenceWatcher]) w.close();
    this.watchers.clear();
    this.retired = [];
    rmSync(this.fenceDir, { recursive: true, force: true });
  }
}
