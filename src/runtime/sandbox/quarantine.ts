import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  realpathSync,
  renameSync,
  rmdirSync,
  symlinkSync,
  unlinkSync,
  writeSync,
  type Stats,
} from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { isInside } from "../../tool/paths.js";

// Where a plant goes (issue 33): out of the workspace, into a quarantine no sandbox mount reaches.
// It once lay in the call's sidecar folder, which the sandbox writes: a command made `quarantine` a
// file (every plant stayed) or a symlink (toolhost's own move wrote outside the workspace). Now it
// is a folder of the session in toolhost's home (hidden inside the sandbox), 0700, used only when
// no writable bind covers it (`quarantineReachable`). And the move trusts no path the sandbox could
// have changed: every folder on either side is opened one component at a time without following a
// link (a symlink or a file on the way is refused), the rename goes between those opened folders
// (`/proc/self/fd/N/name`), and after it the source must be gone and the target be what was there.
// A plant that cannot be moved is deleted, the same way (nothing followed, write access given as
// needed); only one that cannot be deleted either is left, and every later command stops for it.

/** Linux's O_PATH (x86_64 and arm64, the sandbox's architectures): a folder held without reading it. */
const O_PATH = 0o10000000;
const FOLDER = O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** `name` in the folder open as `fd`, whatever becomes of the path it was opened by. */
const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;
const held = (fd: number) => `/proc/self/fd/${fd}`;

/** Where one call's plants go, or why they cannot go anywhere (then they are deleted). */
export type QuarantineFor = { anchor: string; parts: readonly string[] } | { unusable: string };

/** What became of a plant: moved (where to), or deleted (why it was not moved). */
export type Removal = { moved: string } | { deleted: string };

/** A symlink or a non-folder where a folder was to be opened. */
class NotAFolder extends Error {}

/** Opens folder `name` in `parent`, refusing a symlink or anything else; `create` makes it (0700) first. */
function openIn(parent: number, name: string, create = false): number {
  if (create) {
    try {
      mkdirSync(at(parent, name), 0o700);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
  }
  try {
    return openSync(at(parent, name), FOLDER);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOTDIR" || code === "ELOOP") throw new NotAFolder(`${name} is a symlink or not a folder`);
    throw err;
  }
}

/** Opens `parts` below the folder `anchor` (held by its path as given), each without following a link. */
function openChain(anchor: string, parts: readonly string[], create = false): number {
  let fd = openSync(anchor, FOLDER);
  try {
    for (const [i, part] of parts.entries()) {
      let next: number;
      try {
        next = openIn(fd, part, create);
      } catch (err) {
        if (err instanceof NotAFolder) throw new NotAFolder(`${path.join(anchor, ...parts.slice(0, i + 1))} is a symlink or not a folder`);
        throw err;
      }
      closeSync(fd);
      fd = next;
    }
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

function lstatAt(fd: number, name: string): Stats | undefined {
  return lstatSync(at(fd, name), { throwIfNoEntry: false });
}

const same = (a: Stats, b: Stats | undefined) => b !== undefined && a.ino === b.ino && a.dev === b.dev;

/** Runs `fn` with the folder open as `fd` given write and search access for its owner, its mode put back after. */
function withWriteAccess<T>(fd: number, fn: () => T): T {
  const mode = fstatSync(fd).mode & 0o7777;
  if ((mode & 0o300) === 0o300) return fn();
  chmodSync(held(fd), mode | 0o700);
  try {
    return fn();
  } finally {
    chmodSync(held(fd), mode);
  }
}

/** Deletes `name` in `parent` and all below it: nothing followed, every folder made 0700 on the way (it goes anyway). */
function removeTree(parent: number, name: string): void {
  if (!lstatAt(parent, name)) return;
  let fd: number;
  try {
    fd = openSync(at(parent, name), FOLDER);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== "ENOTDIR" && code !== "ELOOP") throw err;
    unlinkSync(at(parent, name)); // a file, a symlink (never followed), a FIFO…
    return;
  }
  try {
    chmodSync(held(fd), 0o700);
    for (const child of readdirSync(held(fd))) removeTree(fd, child);
  } finally {
    closeSync(fd);
  }
  rmdirSync(at(parent, name));
}

/** Copies a regular file's bytes from `name` in `from` to a new file in `to`, neither followed. */
function copyFile(from: number, to: number, name: string): void {
  const src = openSync(at(from, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const mode = fstatSync(src).mode & 0o777;
    const dst = openSync(at(to, name), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, mode & 0o700);
    try {
      const buffer = Buffer.alloc(64 * 1024);
      for (let n; (n = readSync(src, buffer, 0, buffer.length, null)) > 0;) writeSync(dst, buffer, 0, n);
    } finally {
      closeSync(dst);
    }
  } finally {
    closeSync(src);
  }
}

/** Across file systems: a copy of folders, regular files and symlinks (as links); anything else fails it. */
function copyTree(from: number, to: number, name: string): void {
  const stat = lstatAt(from, name);
  if (!stat) return;
  if (stat.isSymbolicLink()) symlinkSync(readlinkSync(at(from, name)), at(to, name));
  else if (stat.isFile()) copyFile(from, to, name);
  else if (stat.isDirectory()) {
    const src = openIn(from, name);
    const dst = openIn(to, name, true);
    try {
      // Deleted after the copy anyway: made readable for it.
      chmodSync(held(src), 0o700);
      for (const child of readdirSync(held(src))) copyTree(src, dst, child);
    } finally {
      closeSync(src);
      closeSync(dst);
    }
  } else throw new Error(`${name} is neither a file, a folder nor a symlink`);
}

/** Moves `name` from `parent` into the folder `into`; the source must be gone after, and the target be what it was. */
function moveInto(parent: number, name: string, stat: Stats, into: number): void {
  const rename = () => renameSync(at(parent, name), at(into, name));
  // A folder moved to another parent has its `..` rewritten: it needs write access itself, as its parent does.
  const own = stat.isDirectory() ? openIn(parent, name) : undefined;
  try {
    withWriteAccess(parent, () => {
      try {
        if (own === undefined) rename();
        else withWriteAccess(own, rename);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
        try {
          copyTree(parent, into, name);
        } catch (copying) {
          removeTree(into, name);
          throw copying;
        }
        removeTree(parent, name);
      }
    });
  } finally {
    if (own !== undefined) closeSync(own);
  }
  const left = lstatAt(parent, name);
  if (left && same(stat, left)) throw new Error(`${name} is still there after the move`);
  const arrived = lstatAt(into, name);
  if (!arrived || (arrived.dev === stat.dev && !same(stat, arrived))) throw new Error(`${name} is not what arrived in quarantine`);
}

/**
 * Takes `p` out of the workspace: `p` lies in the folder `base` (a real path), and every folder
 * between them is opened without following a link. Moved into `into` (as `rel` there), or deleted
 * when it cannot be; a symlink `link` it replaced is put back. Undefined when nothing is there (or
 * its folder is a symlink now: then the map finds what it holds where it really is). Throws only
 * when it could be neither moved nor deleted.
 */
export function removePlant(p: string, base: string, into: QuarantineFor, link?: string): Removal | undefined {
  if (!isInside(p, base) || p === base) throw new Error(`${p} is not inside ${base}`);
  const rel = path.relative(base, p).split(path.sep);
  const name = rel.pop() as string;
  let parent: number;
  try {
    parent = openChain(base, rel);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || err instanceof NotAFolder) return undefined;
    throw err;
  }
  try {
    const stat = lstatAt(parent, name);
    if (!stat) return undefined;
    let removal: Removal | undefined;
    let why = "unusable" in into ? into.unusable : undefined;
    if ("anchor" in into) {
      let target: number | undefined;
      try {
        target = openChain(into.anchor, [...into.parts, ...rel], true);
        moveInto(parent, name, stat, target);
        removal = { moved: path.join(into.anchor, ...into.parts, ...rel, name) };
      } catch (err) {
        why = `it could not be moved to quarantine: ${(err as Error).message}`;
      } finally {
        if (target !== undefined) closeSync(target);
      }
    }
    if (!removal) {
      withWriteAccess(parent, () => removeTree(parent, name));
      removal = { deleted: why ?? "" };
    }
    if (link !== undefined) symlinkSync(link, at(parent, name));
    return removal;
  } finally {
    closeSync(parent);
  }
}

/**
 * Whether a sandboxed command could write `dir`: a writable folder covers it, and no hidden
 * folder deeper than that one (a tmpfs laid over it, `mounts.ts`) hides it again. Real paths.
 */
export function quarantineReachable(dir: string, writable: readonly string[], hidden: readonly string[]): boolean {
  const depth = (p: string) => p.split(path.sep).length;
  const deepest = (folders: readonly string[]) => Math.max(-1, ...folders.filter((f) => isInside(dir, f)).map(depth));
  const write = deepest(writable);
  return write >= 0 && deepest(hidden) <= write;
}

/**
 * A session's quarantine: a folder of its own (0700) in `dir` (toolhost's home's `quarantine/`), a
 * folder of each call's in it, made when the first plant is moved. `dir`'s parent is taken as the
 * user's (a symlinked toolhost home is theirs to make); from `dir` down nothing is followed.
 */
export class Quarantine {
  private readonly session = `${new Date().toISOString().replace(/[:.]/g, "-")}-${randomBytes(4).toString("hex")}`;
  private moves = 0;

  /** `dir`: where the quarantine lives, asked at each call (toolhost's home may move in tests). */
  constructor(private readonly dir: () => string) {}

  /** The quarantine's path, its parent made when missing (0700) and resolved: never walked by the map, and checked against the call's mounts. */
  place(): string {
    const dir = path.resolve(this.dir());
    try {
      mkdirSync(path.dirname(dir), { recursive: true, mode: 0o700 });
      return path.join(realpathSync(path.dirname(dir)), path.basename(dir));
    } catch {
      return dir; // no home to put it in: the move fails, and the plants are deleted
    }
  }

  /**
   * Where a call's plants go, in `place` (`place()`'s): `reachable` says a command could write the quarantine (a workspace
   * root that covers toolhost's home), and then nowhere: they are deleted.
   */
  forCall(place: string, label: string, reachable: boolean): (root: string) => QuarantineFor {
    const call = `${Date.now()}-${label}`;
    if (reachable) return () => ({ unusable: `the quarantine (${place}) is writable to sandboxed commands here` });
    // Unique per move: a live watch settles the same call more than once.
    return (root) => ({
      anchor: path.dirname(place),
      parts: [path.basename(place), this.session, call, `${path.basename(root)}-${++this.moves}`],
    });
  }
}

/**
 * Removes the session folders of the quarantine in `dir` that have not changed for `maxAgeMs`
 * (default 30 days: what a plant looked like stays to be read for a while, then goes, as sidecars
 * do). Nothing is followed: `rm` unlinks a symlink, and only folders directly in `dir` are swept.
 */
export async function sweepStaleQuarantine(dir: string, maxAgeMs = 30 * 24 * 3600_000): Promise<void> {
  const entries = await fsp.readdir(dir, { withFileTypes: true }).catch(() => []);
  const now = Date.now();
  for (const entry of entries) {
    if (!entry.isDirectory()) continue;
    const folder = path.join(dir, entry.name);
    const s = await fsp.lstat(folder).catch(() => null);
    if (s?.isDirectory() && now - s.mtimeMs > maxAgeMs) await fsp.rm(folder, { recursive: true, force: true }).catch(() => {});
  }
}
