import { accessSync, constants, lstatSync, readdirSync, readlinkSync, type Dirent, type Stats } from "node:fs";
import path from "node:path";
import { gitDirLayout } from "../../tool/project-control.js";
import type { FolderWatch } from "./folder-watch.js";

// Nested git repositories (issue 20 class 2). git runs code from the first repository it finds on
// its way up from the user's folder: a `.git` folder or file in that folder or any above it, or a
// folder that is itself a git folder (HEAD, and objects and refs, or commondir: a bare repository
// planted as `sub/HEAD`, `sub/config` with `core.worktree` and `core.fsmonitor`). A sandboxed
// command could write the hooks or config of a nested repository, or plant a new one anywhere in
// the workspace, and the user's next `git status` there would run its code outside the sandbox.
//
// So a session keeps a map of each workspace root's folders: what each holds of git, and its
// ctime. Before a command the map is brought up to date and what it finds is bound read-only
// (`projectGuard`); after the command (and every few seconds while a background process runs) it
// is brought up to date again from the command's own copy, and what appeared is a plant, moved to
// quarantine: a `.git` entry that was not there (or is another one), a git folder's entries that
// were not there, a folder that cannot be listed or searched (`chmod 311`, `chmod 644`: toolhost
// runs as the user, so it would not see in, while the user's git can, or can once the mode is put
// right) that is new or changed, unless another user's that toolhost cannot write either (no
// sandboxed command could have changed it; its owner may, as the command runs); an existing one is
// bound read-only.
//
// Why ctime, not mtime: every change to a folder's entries (create, remove, rename in or out, a
// hard link) sets its ctime to the current time, and so does every change of its mode or times:
// `touch -d` can set a folder's mtime back (after planting in it), never its ctime. Only a change of
// the system clock could date a ctime back, which needs CAP_SYS_TIME, and no sandboxed command
// holds a capability. A folder whose ctime and inode are those the map holds has the entries the map
// holds, so a pass stats every known folder, lists again only the changed ones and walks whole only
// the folders new to it (a prepared tree moved in, a folder replaced: another inode). The kernel's
// clock is coarse (a tick; 1 or 2 s on some file systems): a folder stamped within `HOT_MS` of the
// pass that read it could change again with the same ctime, so it is listed again on every pass
// until it is older. Neither follows symlinks (git does not look past a symlinked folder's own path
// for a `.git` either: its cwd is the real one, which the walk reaches where it lies in a root), nor
// enters a `.git` folder (bound read-only whole). A path longer than PATH_MAX cannot be looked at,
// by git either (it finds `.git` by absolute path). File systems that do not keep ctime (none
// of Linux's native ones) are not supported.
//
// What a pass costs: with a `FolderWatch` (the session's map, in a worker thread:
// `nested-git-worker.ts`), the kernel says which folders changed since the last pass, and a pass
// lists those, stats their subfolders (one replaced under the same name is another inode) and
// touches nothing else; the ctime rule above still holds for what it looks at, and a pass is whole
// whenever the watch cannot vouch for every change (`folder-watch.ts`). No pass is skipped: the
// user's editor or another process may have made a repository between two commands, and the map
// must know it before the next command (bound read-only, not taken later for that command's
// plant); when nothing changed, a pass is the fence and a few stats. A command's check compares
// its own start with the map brought current (`diff`), descending only where the two differ:
// folders unchanged are the same objects in both.

/** Names that make a folder a git folder to git (`is_git_directory`), and those it runs code from. Lower case. */
const GITDIR_NAMES = new Set(["head", "objects", "refs", "commondir", "config", "config.worktree", "hooks"]);

/** A ctime within this of the pass that read it does not prove a folder unchanged when equal later. */
export const HOT_MS = 2000;

interface Entry {
  name: string;
  /** Inode and birth time; a symlink's target. */
  id: string;
  link?: string;
}

/** One folder as the map holds it. Never changed once made: a command's copy is the map of its start. */
export interface Folder {
  /** ctimeMs when listed; NaN: list it again on the next pass (a plant was found in it). */
  ctime: number;
  ino: number;
  hot: boolean;
  /** Watched since before it was listed (`FolderWatch`): any change since is an event, whatever its ctime. */
  watched: boolean;
  /** Which listing this is: a folder listed again is another. */
  stamp: number;
  /** It could not be listed (no read permission): nothing in it can be seen. */
  opaque: boolean;
  /** Opaque, and another user's that toolhost's cannot write either: no sandboxed command could have changed it. */
  foreign?: boolean;
  git?: Entry;
  /** Its entries named like a git folder's (`GITDIR_NAMES`), as spelled. */
  gitdir: string[];
  /** Its entries that are folders (or of an unknown type), `.git` aside. */
  subdirs: string[];
  children: Map<string, Folder>;
  /** How many findings it and the folders below it hold (a root's own `.git` counted): where to look for them. */
  finds: number;
  /**
   * Loaded from disk (`nested-git-store.ts`) and not yet handed to any command: the first pass may
   * mark it watched in place, where any other folder is copied (a command's start holds it).
   */
  loaded?: boolean;
}

/** What a pass found to protect: a nested `.git`, a git folder (its config, hooks, commondir), a folder it cannot list. */
export interface GitFinding {
  path: string;
  root: string;
  kind: "git" | "gitdir" | "opaque";
}

/** Something a command planted: moved to quarantine (a symlink it replaced is put back). */
export interface Plant {
  path: string;
  root: string;
  /** The symlink's target before the command, when a symlinked `.git` was replaced. */
  link?: string;
}

/** A command's view: what to protect before it, and what it planted since (each call from the last). */
export interface NestedGitCheck {
  found: GitFinding[];
  changes(): Plant[] | Promise<Plant[]>;
  /** A plant that could not be moved: every later command is refused while it is there. */
  failed(plant: Plant): void;
}

function lower(names: readonly string[]): Set<string> {
  return new Set(names.map((n) => n.toLowerCase()));
}

/** A folder git takes for a git folder (tool/project-control.ts's rule; names in any case). */
function shaped(folder: Folder): boolean {
  if (folder.gitdir.length < 2) return false;
  const names = lower(folder.gitdir);
  return gitDirLayout((name) => names.has(name.toLowerCase()));
}

/** Which file this is: the inode, and the birth time where the file system keeps one (an inode number is reused). */
export function fileIdentity(stat: { ino: number; birthtimeMs: number }): string {
  return `${stat.ino}:${stat.birthtimeMs}`;
}

function identity(p: string): Entry | undefined {
  let stat: Stats;
  try {
    stat = lstatSync(p);
  } catch {
    return undefined;
  }
  const name = path.basename(p);
  if (!stat.isSymbolicLink()) return { name, id: fileIdentity(stat) };
  const link = readlinkSync(p);
  return { name, id: `link:${link}`, link };
}

function writable(p: string): boolean {
  try {
    accessSync(p, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

function unknownType(d: Dirent): boolean {
  return !(d.isFile() || d.isDirectory() || d.isSymbolicLink() || d.isFIFO() || d.isSocket() || d.isBlockDevice() || d.isCharacterDevice());
}

/** How many findings a folder with these children holds, its own and below. */
export function findsOf(folder: Folder, children: ReadonlyMap<string, Folder>): number {
  let finds = (folder.opaque ? 1 : 0) + (folder.git ? 1 : 0) + (shaped(folder) ? 1 : 0);
  for (const child of children.values()) finds += child.finds;
  return finds;
}

/** The folder with these children, its count of findings below made again. */
function withChildren(folder: Folder, children: Map<string, Folder>): Folder {
  return { ...folder, children, finds: findsOf(folder, children) };
}

let stamps = 0;
/** A new listing's stamp (a folder loaded from disk gets one too: it is not any listing of this process). */
export const nextStamp = () => ++stamps;

interface Pass {
  /** When the pass started, less the margin below which a ctime is too recent to trust (`HOT_MS`). */
  hotFrom: number;
  skip: ReadonlySet<string>;
  watch: FolderWatch | undefined;
  /** Whether `p` must be looked at: changed, or holds a folder that changed or is not watched. Always, in a whole pass. */
  needs: (p: string) => boolean;
  /** The folders the watch says changed; undefined in a whole pass. */
  dirty: ReadonlySet<string> | undefined;
}

/** Lists a folder (watched first, so no change after the listing goes unseen); undefined when it is gone. */
function list(pass: Pass, p: string, stat: Stats): Folder | undefined {
  const watched = pass.watch?.watch(p) ?? false;
  const folder: Folder = {
    ctime: stat.ctimeMs,
    ino: stat.ino,
    hot: stat.ctimeMs >= pass.hotFrom,
    watched,
    stamp: nextStamp(),
    opaque: false,
    gitdir: [],
    subdirs: [],
    children: new Map(),
    finds: 0,
  };
  let entries: Dirent[];
  try {
    entries = readdirSync(p, { withFileTypes: true });
    // Listed but not searchable (`chmod 644`): what is in its folders cannot be looked at.
    accessSync(p, constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    return { ...folder, opaque: true, finds: 1, foreign: stat.uid !== process.getuid?.() && !writable(p) };
  }
  for (const d of entries) {
    const name = d.name.toLowerCase();
    if (name === ".git") {
      folder.git = identity(`${p}/${d.name}`);
      continue;
    }
    if (GITDIR_NAMES.has(name)) folder.gitdir.push(d.name);
    if (d.isDirectory() || unknownType(d)) folder.subdirs.push(d.name);
  }
  return withChildren(folder, folder.children);
}

/** A folder the watch now covers. One loaded from disk no command holds yet is marked in place (30,000 copies spared on a session's first pass). */
function adopt(folder: Folder): Folder {
  if (!folder.loaded) return { ...folder, watched: true };
  folder.watched = true;
  folder.loaded = false;
  return folder;
}

/** Every folder of a subtree the map no longer holds there: their watches go. */
function forget(pass: Pass, p: string, folder: Folder): void {
  if (!pass.watch) return;
  pass.watch.forget(p);
  for (const [name, child] of folder.children) forget(pass, `${p}/${name}`, child);
}

/** The folder at `p` now, from `before` (the map's, undefined when new to it); the same object when nothing changed below it. */
function visit(pass: Pass, p: string, before: Folder | undefined, top: boolean, force: boolean): Folder | undefined {
  // Not changed, nothing changed below it, its folder not listed again: as it was.
  if (before && !top && !force && !pass.needs(p)) return before;
  // One the map holds but no watch covers yet (loaded from disk, or past the watch budget): watched
  // before it is looked at, so a change after the look is an event; its ctime vouches for the rest.
  const adopted = before !== undefined && !before.watched && pass.watch !== undefined && pass.watch.watch(p);
  let stat: Stats | undefined;
  try {
    stat = lstatSync(p, { throwIfNoEntry: false });
  } catch {
    stat = undefined; // past PATH_MAX (git cannot look there either), or not to be looked at
  }
  if (!stat?.isDirectory()) {
    if (before) forget(pass, p, before);
    return undefined;
  }
  // Another folder under the same name (replaced, moved in) is new, all of it.
  const old = before?.ino === stat.ino ? before : undefined;
  if (before && !old) forget(pass, p, before);
  // Its ctime vouches for its entries unless too recent; its watch does in a pass the watch vouches for.
  const trusted = old !== undefined && (!old.hot || (pass.dirty !== undefined && old.watched));
  const same = trusted && old.ctime === stat.ctimeMs && !pass.dirty?.has(p);
  const folder = same ? (adopted ? adopt(old) : old) : list(pass, p, stat);
  if (!folder) {
    if (old) forget(pass, p, old);
    return undefined;
  }
  // The folder's children as they were, copied only when one of them changed (most passes change none).
  let children = folder === old ? old.children : new Map<string, Folder>();
  let copied = folder !== old;
  for (const name of folder.subdirs) {
    const child = `${p}/${name}`;
    if (pass.skip.has(child)) continue;
    const prev = old?.children.get(name);
    const now = visit(pass, child, prev, false, folder !== old);
    if (now === prev && !copied) continue;
    if (!copied) {
      children = new Map(children);
      copied = true;
    }
    if (now) children.set(name, now);
    else children.delete(name);
  }
  // Folders the new listing no longer holds (removed, renamed away).
  if (old && folder !== old) for (const [name, prev] of old.children) if (!children.has(name)) forget(pass, `${p}/${name}`, prev);
  return copied ? withChildren(folder, children) : folder;
}

/** What appeared in `folder` that `old` (the same folder before, if it existed) did not hold. */
function plantsIn(p: string, root: string, old: Folder | undefined, folder: Folder, top: boolean): Plant[] {
  if (folder.opaque) {
    // One its owner changes as it runs (a database's folder in a volume) is no plant: it is bound read-only.
    const known = old?.opaque === true && !old.hot && old.ctime === folder.ctime;
    return top || known || folder.foreign ? [] : [{ path: p, root }];
  }
  const plants: Plant[] = [];
  // The root's own `.git` is the project guard's (`PROJECT_CONTROL_PATHS`).
  if (folder.git && !top && folder.git.id !== old?.git?.id) {
    plants.push({ path: `${p}/${folder.git.name}`, root, ...(old?.git?.link !== undefined ? { link: old.git.link } : {}) });
  }
  if (shaped(folder)) {
    const before = lower(old?.gitdir ?? []);
    for (const name of folder.gitdir) if (!before.has(name.toLowerCase())) plants.push({ path: `${p}/${name}`, root });
  }
  return plants;
}

interface Diff {
  root: string;
  watch: FolderWatch | undefined;
  plants: Plant[];
}

/**
 * What `now` (the map brought current) holds that `then` (a command's start) did not: the plants,
 * and `now` without them. Descends only where the two differ (an unchanged folder is the same object).
 */
function diff(d: Diff, p: string, then: Folder | undefined, now: Folder, top: boolean): Folder | undefined {
  if (then === now) return now;
  const old = then?.ino === now.ino ? then : undefined;
  let folder = now;
  if (old?.stamp !== now.stamp) {
    const plants = plantsIn(p, d.root, old, now, top);
    if (plants.length) {
      d.plants.push(...plants);
      // The map does not keep them: were one not moved, the next pass finds it again.
      d.watch?.touch(p);
      if (now.opaque) return undefined;
      const moved = new Set(plants.map((x) => path.basename(x.path)));
      folder = {
        ...now,
        ctime: NaN,
        ...(now.git && moved.has(now.git.name) ? { git: undefined } : {}),
        gitdir: now.gitdir.filter((n) => !moved.has(n)),
      };
    }
  }
  let children = now.children;
  for (const [name, child] of now.children) {
    const kept = diff(d, `${p}/${name}`, old?.children.get(name), child, false);
    if (kept === child) continue;
    if (children === now.children) children = new Map(children);
    if (kept) children.set(name, kept);
    else children.delete(name);
  }
  return folder === now && children === now.children ? now : withChildren(folder, children);
}

/** What a tree holds to protect, found where its counts say. */
function collect(root: string, p: string, folder: Folder, top: boolean, found: GitFinding[]): void {
  if (folder.opaque && !top) found.push({ path: p, root, kind: "opaque" });
  if (folder.git && !top) found.push({ path: `${p}/${folder.git.name}`, root, kind: "git" });
  if (shaped(folder)) found.push({ path: p, root, kind: "gitdir" });
  for (const [name, child] of folder.children) if (child.finds > 0) collect(root, `${p}/${name}`, child, false, found);
}

/** Every folder from `p` up to the file system's root, into `into`. */
function withAncestors(paths: Iterable<string>, into: Set<string>): void {
  for (let p of paths) {
    while (!into.has(p)) {
      into.add(p);
      const up = path.dirname(p);
      if (up === p) break;
      p = up;
    }
  }
}

/**
 * A session's map of its workspace roots' folders (see above). `scan` before each command gives
 * what to protect and the command's check; the map moves on with every pass, whichever command made it.
 * With a `FolderWatch`, a pass looks only at what the watch says changed (`fence` it first).
 */
export class NestedGitMap {
  private trees = new Map<string, Folder>();
  private readonly stuck = new Set<string>();
  /** Roots seeded from disk that no pass has checked yet: the next pass looks at all of each, whatever the watch says. */
  private readonly unverified = new Set<string>();
  /** How long the last pass took (ms): a background process's check is spaced by it. */
  lastPassMs = 0;

  /** `hotMs`: tests only, to see folders the kernel stamped a tick ago trusted by their ctime alone. */
  constructor(
    private readonly hotMs = HOT_MS,
    private readonly watch?: FolderWatch,
  ) {}

  /** The map brought current: a pass from its last state. */
  private pass(roots: readonly string[], skip: ReadonlySet<string>): Map<string, Folder> {
    const started = performance.now();
    const changed = this.watch?.take();
    let needs: (p: string) => boolean = () => true;
    if (changed) {
      const touched = new Set<string>();
      withAncestors(changed.dirty, touched);
      withAncestors(changed.unwatched, touched);
      needs = (p) => touched.has(p);
    }
    if (changed && this.unverified.size) {
      const seeded = [...this.unverified].map((root) => (root.endsWith("/") ? root : `${root}/`));
      const watched = needs;
      needs = (p) => seeded.some((prefix) => `${p}/`.startsWith(prefix)) || watched(p);
    }
    const pass: Pass = { hotFrom: Date.now() - this.hotMs, skip, watch: this.watch, needs, dirty: changed?.dirty };
    const trees = new Map<string, Folder>();
    for (const root of roots) {
      const tree = visit(pass, root, this.trees.get(root), true, false);
      if (tree) trees.set(root, tree);
    }
    for (const root of roots) this.unverified.delete(root);
    // Roots no longer asked for keep their folders: another command may name them again.
    for (const [root, tree] of this.trees) if (!trees.has(root)) trees.set(root, tree);
    this.trees = trees;
    this.lastPassMs = performance.now() - started;
    return trees;
  }

  /** Starts a root's map from `tree` (kept by an earlier session: `nested-git-store.ts`) unless it has one: the next pass checks all of it. */
  seed(root: string, tree: Folder): void {
    if (this.trees.has(root)) return;
    this.trees.set(root, tree);
    this.unverified.add(root);
  }

  /** Whether the map holds `root`. */
  holds(root: string): boolean {
    return this.trees.has(root);
  }

  /** The map of each root now (to keep: `FolderMapStore.save`). */
  current(): ReadonlyMap<string, Folder> {
    return this.trees;
  }

  /**
   * The map brought up to date over every root it holds and `roots` (the checkpoints' mark:
   * `FolderWatch.feed` then trusts the watches of what it holds). `skip` as for `scan`.
   */
  refresh(roots: readonly string[], skip: readonly string[] = []): void {
    this.pass([...new Set([...this.trees.keys(), ...roots])], new Set(skip));
  }

  /**
   * Before a command: the map brought up to date, what to protect in `roots` (real paths), and the
   * command's check. `skip`: folders never walked (the quarantine, hidden folders). Throws while a
   * plant that could not be moved is still there.
   */
  scan(roots: readonly string[], skip: readonly string[] = []): { found: GitFinding[]; changes(): Plant[]; failed(plant: Plant): void } {
    for (const p of this.stuck) {
      if (identity(p)) throw new Error(`${p} was planted by a sandboxed command and could not be moved; remove it to run commands again`);
      this.stuck.delete(p);
    }
    const skipped = new Set(skip);
    const trees = this.pass(roots, skipped);
    const found: GitFinding[] = [];
    for (const root of roots) {
      const tree = trees.get(root);
      if (tree) collect(root, root, tree, true, found);
    }
    let baseline: ReadonlyMap<string, Folder> = trees;
    return {
      found,
      changes: () => {
        const now = this.pass(roots, skipped);
        const plants: Plant[] = [];
        const next = new Map(now);
        for (const root of roots) {
          const tree = now.get(root);
          if (!tree) continue;
          const kept = diff({ root, watch: this.watch, plants }, root, baseline.get(root), tree, true);
          if (kept) next.set(root, kept);
          else next.delete(root);
        }
        this.trees = next;
        baseline = next;
        return plants;
      },
      failed: (plant) => this.stuck.add(plant.path),
    };
  }
}
