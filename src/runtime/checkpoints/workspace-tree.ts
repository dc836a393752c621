import { isUtf8 } from "node:buffer";
import { lstat, rm } from "node:fs/promises";
import path from "node:path";
import type { FsMonitor } from "./change-feed.js";
import type { GitRun, ShadowGit } from "./shadow-git.js";

// The workspace as a git tree, through the session's own index: the index keeps each file's stat
// data between snapshots, so a snapshot lists only what changed since the last one (`ls-files -m
// -d -o`: modified, deleted, new and not ignored), checks those in Node (real parent folders, the
// size cap, a UTF-8 name), and hands them to `update-index`; `write-tree` then reuses the cached
// trees of every folder that did not change.
//
// Nested repositories: git lists a folder with its own `.git` as one entry (`sub/`) until files
// under it are in the index; the first time, that folder is listed with itself as the work tree
// (an empty index) and its files are added like any other. From then on git walks into it. Its
// `.git` is never listed (git skips every `.git`). The first listing follows the nested folder's
// own ignore files; the check below then applies the outer ones too.
//
// With a change feed (change-feed.ts) git looks only at the paths the kernel's watch saw change, and
// when none did, no git runs: the last tree holds.
//
// Folders of the work tree that are another root of the session (a nested root: its own
// repository checkpoints it) are left out like ignored ones, through `--exclude` patterns on each
// listing, so every file belongs to one root's snapshots.

export interface SkippedFile {
  /** Workspace-relative, with `/`. */
  path: string;
  bytes: number;
  /** `too-large`: over the size cap; `name`: a file name that is not UTF-8 (never recorded, never touched). */
  reason: "too-large" | "name";
}

export interface WorkspaceTree {
  tree: string;
  skipped: SkippedFile[];
}

const NESTED_DEPTH = 16;
const STAT_CONCURRENCY = 64;

/** NUL-separated git output → paths (raw bytes kept aside when they are not UTF-8). */
export function splitZ(output: Buffer): { path: string; utf8: boolean }[] {
  const out: { path: string; utf8: boolean }[] = [];
  let start = 0;
  for (let end = output.indexOf(0, start); end >= 0; end = output.indexOf(0, start)) {
    const bytes = output.subarray(start, end);
    if (bytes.length) out.push({ path: bytes.toString("utf8"), utf8: isUtf8(bytes) });
    start = end + 1;
  }
  return out;
}

/** A pattern that matches exactly one folder, `rel` (with `/`) below the work tree's top. */
export const literalFolder = (rel: string): string => `/${rel.replace(/[\\*?[\]!# ]/g, (c) => `\\${c}`)}/`;

const joinZ = (paths: readonly string[]): Buffer => Buffer.from(paths.map((p) => `${p}\0`).join(""), "utf8");

/** Runs `fn` over `items`, `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await fn(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

type Verdict = { kind: "add" } | { kind: "remove" } | { kind: "skip"; bytes: number };

export class WorkspaceScanner {
  /** The user's excludes file as last seen; undefined before the first scan (which checks ignored entries). */
  private excludes: string | undefined;
  /** The index's tree as last written: when nothing changed, the next scan needs no write-tree. */
  private tree: string | undefined;
  /** Folders (work-tree relative, with `/`) left out of every listing: nested roots. */
  private excluded: readonly string[] = [];
  /** The files the last scan left out: still so while nothing changed. */
  private skipped: SkippedFile[] | undefined;

  constructor(
    private readonly git: ShadowGit,
    private readonly maxFileBytes: number,
    /** A path that does not exist: the empty index of a nested repository's first listing. */
    private readonly noIndex: string,
    /** What changed since the last scan, from the kernel's watch (change-feed.ts); without it git looks at everything. */
    private readonly monitor?: FsMonitor,
  ) {}

  /** Brings the index up to date with the workspace and writes its tree. */
  async scan(): Promise<WorkspaceTree> {
    try {
      return await this.scanOnce();
    } catch {
      // An index naming objects a pack removed, or a file that moved under git's feet: once more,
      // from an empty index (every file hashed again).
      await this.reset();
      return await this.scanOnce();
    }
  }

  /** Leaves these folders (work-tree relative, with `/`) out from the next scan on (their entries leave the index). */
  exclude(folders: readonly string[]): void {
    this.excluded = [...folders];
    this.excludes = undefined;
  }

  /** `--exclude` arguments for a listing whose work tree is `prefix` (a nested repository's folder, with `/`) below the top. */
  private excludeArgs(prefix = ""): string[] {
    return this.excluded.filter((rel) => rel.startsWith(prefix)).map((rel) => `--exclude=${literalFolder(rel.slice(prefix.length))}`);
  }

  /** Starts over from an empty index. */
  async reset(): Promise<void> {
    await rm(this.git.index, { force: true });
    this.excludes = undefined;
    this.tree = undefined;
    this.skipped = undefined;
  }

  private async scanOnce(): Promise<WorkspaceTree> {
    const { git } = this;
    this.dirs.clear();
    const mark = await this.monitor?.mark();
    const excludes = await git.refreshExcludes();
    // Nothing changed since the last scan (the watch vouches for every folder): its tree holds, no git runs.
    if (mark?.unchanged && this.tree !== undefined && this.skipped && excludes === this.excludes) {
      mark.completed();
      return { tree: this.tree, skipped: this.skipped };
    }
    const own = { fsmonitor: mark?.git };
    let checkIgnored = excludes !== this.excludes;
    const candidates = new Set<string>();
    const skipped: SkippedFile[] = [];
    const nested: { dir: string; depth: number }[] = [];
    const take = (entries: { path: string; utf8: boolean }[], prefix: string, depth: number): void => {
      for (const entry of entries) {
        const rel = prefix + entry.path;
        if (!entry.utf8) skipped.push({ path: rel, bytes: 0, reason: "name" });
        else if (rel.endsWith("/")) nested.push({ dir: rel, depth });
        else candidates.add(rel);
      }
    };
    take(await this.changedEntries(own), "", 0);
    for (let item = nested.shift(); item; item = nested.shift()) {
      if (item.depth >= NESTED_DEPTH) continue;
      checkIgnored = true;
      const workTree = path.join(git.workTree, item.dir);
      if (!(await this.realParents(item.dir.slice(0, -1) + "/x"))) continue;
      take(
        splitZ(
          await git.run(["ls-files", "-z", "-o", "--exclude-standard", ...this.excludeArgs(item.dir)], { workTree, index: this.noIndex }),
        ),
        item.dir,
        item.depth + 1,
      );
    }

    const add: string[] = [];
    const remove: string[] = [];
    await eachLimited([...candidates], STAT_CONCURRENCY, async (rel) => {
      if (path.posix.basename(rel) === ".gitignore") checkIgnored = true;
      const verdict = await this.classify(rel);
      if (verdict.kind === "add") add.push(rel);
      else remove.push(rel);
      if (verdict.kind === "skip") skipped.push({ path: rel, bytes: verdict.bytes, reason: "too-large" });
    });
    if (remove.length) await git.run(["update-index", "-z", "--force-remove", "--stdin"], { input: joinZ(remove.sort()), ...own });
    if (add.length)
      await git.run(["update-index", "-z", "--add", "--remove", "--replace", "--stdin"], { input: joinZ(add.sort()), ...own });
    let changed = add.length + remove.length > 0;
    if (checkIgnored) {
      // Entries an ignore file now covers (a .gitignore changed, or the user's exclude file) leave the index.
      const ignored = splitZ(await git.run(["ls-files", "-z", "-c", "-i", "--exclude-standard", ...this.excludeArgs()], own)).map(
        (e) => e.path,
      );
      if (ignored.length) await git.run(["update-index", "-z", "--force-remove", "--stdin"], { input: joinZ(ignored), ...own });
      changed ||= ignored.length > 0;
    }
    const tree = !changed && this.tree ? this.tree : await git.text(["write-tree"], own);
    this.tree = tree;
    this.excludes = excludes;
    skipped.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    this.skipped = skipped;
    mark?.completed();
    return { tree, skipped };
  }

  /**
   * Files modified, deleted or new (not ignored) since the index, and nested repositories (`sub/`),
   * from `git status`: unlike `ls-files -o`, it keeps the index's untracked cache, so only folders
   * whose stat data moved are read again. HEAD is unborn in the shadow repository, so every entry
   * also shows as added (`A `): only the work tree's column counts. Nested roots are dropped here.
   */
  private async changedEntries(own: Pick<GitRun, "fsmonitor">): Promise<{ path: string; utf8: boolean }[]> {
    const out = await this.git.run(["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"], {
      writeIndex: true,
      ...own,
    });
    const excluded = this.excluded.map((rel) => `${rel}/`);
    return splitZ(out).flatMap((entry) => {
      const worktree = entry.path[1];
      if (entry.path.length < 4 || (worktree === " " && entry.path[0] !== "?")) return [];
      const rel = entry.path.slice(3);
      return excluded.some((folder) => rel.startsWith(folder)) ? [] : [{ path: rel, utf8: entry.utf8 }];
    });
  }

  /** Folder → whether it is a real folder, for one scan. */
  private readonly dirs = new Map<string, Promise<boolean>>();

  /** Whether every folder above `rel` is a real folder (not a symlink, not a file). */
  private async realParents(rel: string): Promise<boolean> {
    const parts = rel.split("/").slice(0, -1);
    for (let i = 1; i <= parts.length; i++) {
      const dir = parts.slice(0, i).join("/");
      let known = this.dirs.get(dir);
      if (!known) {
        known = lstat(path.join(this.git.workTree, dir)).then(
          (s) => s.isDirectory(),
          () => false,
        );
        this.dirs.set(dir, known);
      }
      if (!(await known)) return false;
    }
    return true;
  }

  private async classify(rel: string): Promise<Verdict> {
    if (!(await this.realParents(rel))) return { kind: "remove" };
    const stat = await lstat(path.join(this.git.workTree, rel)).catch(() => undefined);
    if (stat?.isSymbolicLink()) return { kind: "add" };
    if (!stat?.isFile()) return { kind: "remove" };
    return stat.size > this.maxFileBytes ? { kind: "skip", bytes: stat.size } : { kind: "add" };
  }
}
