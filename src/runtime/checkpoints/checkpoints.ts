import type { FsMonitor } from "./change-feed.js";
import { lstat, readdir, rm } from "node:fs/promises";
import path from "node:path";
import type { RepoLock } from "./repo-lock.js";
import { applyRestore, diffTrees, keepFiles, planRestore, proceeds, readObjects, type PathNote, type RestoreFile } from "./restore.js";
import type { ShadowGit } from "./shadow-git.js";
import { WorkspaceScanner, type SkippedFile } from "./workspace-tree.js";

// Checkpoints of a workspace (issue 23 §2): snapshots of the files under a root, kept in a shadow
// git repository that never touches the user's own `.git`, and restored on request.
//
// - Where (repository.ts): `<toolhost home>/checkpoints/<project>` is the shadow repository's
//   GIT_DIR for the project's folder (one per project, shared by its sessions); a session's further
//   roots have one each below it. The work tree is the root. git runs isolated (shadow-git.ts): no
//   user or system config, no hooks, no attributes, no GIT_* of the parent.
// - A snapshot is a commit (no parent) of the workspace's tree, named by the ref
//   `refs/toolhost/<session>/<commit id>`; its message holds the label and the files it left out
//   (over `maxFileBytes`, or a name that is not UTF-8). What `.gitignore` files (and the user's
//   `.git/info/exclude`) ignore is not recorded. Each session has its own index file, so a snapshot
//   after a turn lists and hashes only what changed, and two sessions snapshot side by side. An
//   unchanged tree is not committed again: the previous id comes back.
// - Disk: git stores each distinct content once, so a snapshot costs what changed. `drop`, `prune`
//   and `discard` remove refs; `pack` (git gc --prune=now, exclusive against every other
//   operation on the repository: repo-lock.ts) packs what is left and deletes the rest, but what
//   the sessions' index files name (a ref to each index's tree), so no session hashes afresh.
// - Restore (restore.ts) makes the work tree equal to a snapshot for what it records: changed
//   files restored byte for byte (executable bit, symlinks as symlinks), files created since
//   removed, deleted ones brought back, folders the removals emptied removed. Ignored files, and
//   files the snapshot left out, stay as they are. With `knownId` (the last state toolhost knew),
//   a file that differs from it was changed outside toolhost: a conflict, left alone unless
//   `force`, which first copies each one it overwrites to `keep` (one it cannot copy is left
//   alone). Nothing is written through a symlink or outside the root (never overridden). With
//   `paths`, only those paths are restored (a rewind restores the files its turns changed).
// - No git on the machine: `openCheckpoints` (repository.ts) says so with the reason, and the
//   session goes on without checkpoints. A session's roots together: roots.ts.

export interface Snapshot {
  /** The commit id. */
  id: string;
  /** Files left out of the snapshot. */
  skipped: SkippedFile[];
  /** True when the workspace had not changed since this session's previous snapshot (whose id this is). */
  unchanged: boolean;
  ms: number;
}

export interface FileChange {
  path: string;
  action: "create" | "modify" | "delete";
}

export interface RestorePlan {
  /** What the restore does (with `force`, the overridable conflicts too). */
  files: RestoreFile[];
  /** Files changed outside toolhost since `knownId`, or that cannot be written safely; not touched unless `force` says so (safety ones never). */
  conflicts: PathNote[];
  /** Files the snapshot left out (over the size cap): they stay as they are. */
  skipped: PathNote[];
}

export interface RestoreResult extends RestorePlan {
  /** False for a dry run. */
  applied: boolean;
  /** Files the restore could not write or remove, and why. */
  failed: PathNote[];
  /** With `force` and `keep`: the folder that holds what the overwritten conflicts were just before (their paths below it). */
  kept?: string;
}

export interface RestoreOptions {
  /** The last state toolhost knew: a file that differs from it was changed outside toolhost (a conflict). */
  knownId?: string;
  /** Overwrite conflicts too (not the ones a symlink or a bad path makes). */
  force?: boolean;
  /** Only say what would be done. */
  dryRun?: boolean;
  /** Restore only these paths (workspace-relative, with `/`); the rest of the workspace stays as it is. */
  paths?: readonly string[];
  /** With `force`: a folder to copy each conflict to (at its relative path) before it is overwritten; one that cannot be copied is not overwritten. */
  keep?: string;
}

export interface CheckpointInfo {
  id: string;
  label: string;
  createdAt: number;
}

interface SnapshotRecord {
  tree: string;
  label: string;
  createdAt: number;
  skipped: SkippedFile[];
}

export const DEFAULT_MAX_FILE_BYTES = 10 * 1024 * 1024;
const NAME = /^[A-Za-z0-9._-]{1,128}$/;
const ID = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;
const TRAILER = "toolhost-checkpoint: ";
/** Refs to each session index's tree, made by `pack` (see keepIndexes). */
const INDEX_REFS = "refs/toolhost-index/";

/** A name git and the file system take as one ref part and one file name (a project, a session). */
export const validName = (name: string): boolean => NAME.test(name) && !/^\.+$/.test(name) && !name.endsWith(".lock");

/** Below a project's repository: the repositories of its sessions' further roots (repository.ts). */
export const ROOTS_FOLDER = path.join("toolhost", "roots");

/** One session's view of a workspace's checkpoints. Calls run one after another. */
export class Checkpoints {
  private readonly scanner: WorkspaceScanner;
  private readonly records = new Map<string, SnapshotRecord>();
  private last: { id: string; tree: string; skipped: string } | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly git: ShadowGit,
    readonly session: string,
    readonly maxFileBytes: number,
    private readonly lock: RepoLock,
    monitor?: FsMonitor,
  ) {
    this.scanner = new WorkspaceScanner(git, maxFileBytes, path.join(path.dirname(git.index), "..", "no-index"), monitor);
  }

  get root(): string {
    return this.git.workTree;
  }

  get gitDir(): string {
    return this.git.gitDir;
  }

  private ref(id: string): string {
    return `refs/toolhost/${this.session}/${id}`;
  }

  /** Runs `fn` after the calls before it, holding the repository's shared lock (`exclusive` for pack). */
  private serial<T>(fn: () => Promise<T>, exclusive = false): Promise<T> {
    if (this.closed) return Promise.reject(new Error("checkpoints: closed"));
    const run = () => (exclusive ? this.lock.exclusive(fn) : this.lock.shared(fn));
    const next = this.queue.then(run, run);
    this.queue = next.catch(() => {});
    return next;
  }

  /** Records the workspace as it is now. */
  snapshot(label = "checkpoint"): Promise<Snapshot> {
    return this.serial(async () => {
      const start = performance.now();
      const cleanLabel =
        label
          .replace(/[\p{Cc}\p{Cf}]+/gu, " ")
          .trim()
          .slice(0, 200) || "checkpoint";
      let snapshot: Omit<Snapshot, "ms">;
      try {
        snapshot = await this.commit(cleanLabel);
      } catch {
        // A tree or object the index named is gone (a pack that kept no index refs): scan afresh.
        await this.scanner.reset();
        snapshot = await this.commit(cleanLabel);
      }
      return { ...snapshot, ms: performance.now() - start };
    });
  }

  private async commit(label: string): Promise<Omit<Snapshot, "ms">> {
    const { tree, skipped } = await this.scanner.scan();
    const skippedKey = JSON.stringify(skipped);
    if (this.last && this.last.tree === tree && this.last.skipped === skippedKey) return { id: this.last.id, skipped, unchanged: true };
    const createdAt = Date.now();
    const body = `${label}\n\n${TRAILER}${JSON.stringify({ v: 1, session: this.session, createdAt, skipped })}\n`;
    const id = await this.git.text(["commit-tree", tree], { input: body });
    await this.git.run(["update-ref", this.ref(id), id]);
    this.records.set(id, { tree, label, createdAt, skipped });
    this.last = { id, tree, skipped: skippedKey };
    return { id, skipped, unchanged: false };
  }

  /**
   * Leaves these folders (work-tree relative, with `/`: other roots of the session inside this one,
   * checkpointed by their own repositories) out of every snapshot from now on.
   */
  exclude(folders: readonly string[]): Promise<void> {
    return this.serial(async () => this.scanner.exclude(folders));
  }

  /** Brings the session's index up to date with the workspace (what changed is hashed) without recording a snapshot: the next one lists only what changes after. */
  warm(): Promise<void> {
    return this.serial(async () => {
      await this.scanner.scan();
    });
  }

  /** The snapshot's tree, label and left-out files. */
  private async record(id: string): Promise<SnapshotRecord> {
    return (await this.loadRecords(id)).get(id) as SnapshotRecord;
  }

  private async loadRecords(...ids: string[]): Promise<Map<string, SnapshotRecord>> {
    const bad = ids.find((id) => !ID.test(id));
    if (bad !== undefined) throw new Error(`checkpoints: ${JSON.stringify(bad)} is not a checkpoint id`);
    const missing = ids.filter((id) => !this.records.has(id));
    if (missing.length) {
      const objects = await readObjects(this.git, missing);
      for (const id of missing) {
        const raw = objects.get(id);
        if (!raw) throw new Error(`checkpoints: no checkpoint ${id}`);
        this.records.set(id, parseCommit(id, raw.toString("utf8")));
      }
    }
    return this.records;
  }

  /** What differs between two snapshots, or between a snapshot and the workspace now. */
  changes(fromId: string, toId: string | "workspace"): Promise<FileChange[]> {
    return this.serial(async () => {
      const from = (await this.record(fromId)).tree;
      const to = toId === "workspace" ? (await this.scanner.scan()).tree : (await this.record(toId)).tree;
      return (await diffTrees(this.git, from, to)).map((e) => ({
        path: e.path,
        action: !e.src ? "create" : !e.dst ? "delete" : "modify",
      }));
    });
  }

  /**
   * A snapshot equal to `baseId` but for `paths`, which are as `fromId` has them (absent there:
   * absent): what toolhost knows of the workspace after a restore that left some files alone.
   */
  overlay(baseId: string, fromId: string, paths: readonly string[], label = "overlay"): Promise<string> {
    return this.serial(async () => {
      if (!paths.length) return baseId;
      const records = await this.loadRecords(baseId, fromId);
      const base = records.get(baseId) as SnapshotRecord;
      const from = records.get(fromId) as SnapshotRecord;
      const index = path.join(path.dirname(path.dirname(this.git.index)), `overlay-${this.session}-${process.pid}`);
      try {
        await this.git.run(["read-tree", base.tree], { index });
        // `<mode> <type> <id>\t<path>` for each path `from` has; the others are removed.
        const listed = (await this.git.run(["ls-tree", "-r", "-z", from.tree, "--", ...paths])).toString("utf8").split("\0");
        const entries = new Map(listed.filter(Boolean).map((line) => [line.slice(line.indexOf("\t") + 1), line]));
        const zero = "0".repeat(base.tree.length);
        const input = paths.map((p) => entries.get(p) ?? `0 ${zero}\t${p}`).join("\0");
        await this.git.run(["update-index", "-z", "--index-info"], { index, input: `${input}\0` });
        const tree = await this.git.text(["write-tree"], { index });
        const createdAt = Date.now();
        const body = `${label}\n\n${TRAILER}${JSON.stringify({ v: 1, session: this.session, createdAt, skipped: base.skipped })}\n`;
        const id = await this.git.text(["commit-tree", tree], { input: body });
        await this.git.run(["update-ref", this.ref(id), id]);
        this.records.set(id, { tree, label, createdAt, skipped: base.skipped });
        return id;
      } finally {
        await rm(index, { force: true });
      }
    });
  }

  /** What `restore` would do, without doing it. */
  plan(targetId: string, options: Omit<RestoreOptions, "dryRun"> = {}): Promise<RestorePlan> {
    return this.restore(targetId, { ...options, dryRun: true });
  }

  /** Makes the workspace equal to a snapshot (see the top of this file). */
  restore(targetId: string, options: RestoreOptions = {}): Promise<RestoreResult> {
    return this.serial(async () => {
      const force = options.force ?? false;
      const target = await this.record(targetId);
      const known = options.knownId ? await this.record(options.knownId) : undefined;
      const workspace = await this.scanner.scan();
      const paths = options.paths ? new Set(options.paths) : undefined;
      const { git, root, maxFileBytes } = this;
      const plan = await planRestore({ git, root, maxFileBytes, target, workspace, known, force, paths });
      let carried = plan.steps.filter((s) => proceeds(s, force));
      const forced = carried.filter((s) => s.conflict).map((s) => s.path);
      // What force overwrites is copied first: a conflict that cannot be kept is left as it is.
      const unkept = !options.dryRun && options.keep && forced.length ? await keepFiles(root, forced, options.keep) : [];
      if (unkept.length) carried = carried.filter((s) => !unkept.some((u) => u.path === s.path));
      const result: RestoreResult = {
        applied: !options.dryRun,
        files: carried.map(({ path, action }) => ({ path, action })),
        conflicts: plan.steps
          .filter((s) => s.conflict && !unkept.some((u) => u.path === s.path))
          .map((s) => ({ path: s.path, reason: s.conflict as string })),
        skipped: plan.skipped,
        failed: unkept,
        ...(!options.dryRun && options.keep && forced.length > unkept.length ? { kept: options.keep } : {}),
      };
      if (!options.dryRun) result.failed.push(...(await applyRestore(this.git, this.root, carried)));
      return result;
    });
  }

  /** This session's snapshots, oldest first. */
  list(): Promise<CheckpointInfo[]> {
    return this.serial(async () => {
      const ids = await this.refIds();
      const records = await this.loadRecords(...ids);
      return ids
        .map((id) => {
          const r = records.get(id) as SnapshotRecord;
          return { id, label: r.label, createdAt: r.createdAt };
        })
        .sort((a, b) => a.createdAt - b.createdAt);
    });
  }

  /** The sessions with snapshots in this repository (refs under `refs/toolhost/`). */
  async refSessions(): Promise<string[]> {
    const out = await this.git.text(["for-each-ref", "--format=%(refname)", "refs/toolhost/"]);
    const names = out ? out.split("\n").map((ref) => ref.split("/")[2] ?? "") : [];
    return [...new Set(names)].filter(validName);
  }

  private async refIds(): Promise<string[]> {
    const out = await this.git.text(["for-each-ref", "--format=%(objectname)", `refs/toolhost/${this.session}/`]);
    return out ? out.split("\n") : [];
  }

  private async deleteRefs(ids: readonly string[]): Promise<void> {
    if (!ids.length) return;
    await this.git.run(["update-ref", "--stdin"], { input: ids.map((id) => `delete ${this.ref(id)}\n`).join("") });
    if (this.last && ids.includes(this.last.id)) this.last = undefined;
  }

  /** Forgets these snapshots of this session (`pack` then frees their disk). */
  drop(ids: readonly string[]): Promise<void> {
    return this.serial(async () => {
      const existing = new Set(await this.refIds());
      await this.deleteRefs(ids.filter((id) => existing.has(id)));
    });
  }

  /**
   * Makes snapshots of another session of this project this session's own too (a fork keeps the
   * checkpoints it copied when the session it came from is deleted). Ids that name no checkpoint are
   * left out; returns the ids kept.
   */
  adopt(ids: readonly string[]): Promise<string[]> {
    return this.serial(async () => {
      const candidates = [...new Set(ids)].filter((id) => ID.test(id));
      const objects = await readObjects(this.git, candidates);
      const kept = candidates.filter((id) => {
        const raw = objects.get(id);
        if (!raw) return false;
        try {
          this.records.set(id, parseCommit(id, raw.toString("utf8")));
          return true;
        } catch {
          return false;
        }
      });
      if (kept.length)
        await this.git.run(["update-ref", "--stdin"], { input: kept.map((id) => `update ${this.ref(id)} ${id}\n`).join("") });
      return kept;
    });
  }

  /** Forgets every snapshot of this session but these. */
  prune(keep: readonly string[]): Promise<void> {
    return this.serial(async () => {
      const kept = new Set(keep);
      await this.deleteRefs((await this.refIds()).filter((id) => !kept.has(id)));
    });
  }

  /** Forgets every snapshot of this session and its index (then, with `pack`, packs), and closes the handle. */
  async discard(options: { pack?: boolean } = {}): Promise<void> {
    await this.serial(async () => {
      await this.deleteRefs(await this.refIds());
      await this.git.run(["update-ref", "-d", `${INDEX_REFS}${this.session}`]);
      await rm(this.git.index, { force: true });
    });
    if (options.pack) await this.pack();
    this.closed = true;
  }

  /** Packs the repository and deletes what no snapshot of any session names; waits for other sessions' operations. */
  pack(): Promise<{ bytes: number }> {
    return this.serial(async () => {
      await this.keepIndexes();
      await this.git.run(["gc", "--quiet", "--prune=now"]);
      return { bytes: await this.diskBytes() };
    }, true);
  }

  /**
   * Each session's index names the objects of the workspace as it last saw it, which no snapshot
   * may name (a plan, or files changed since): a ref to each index's tree keeps them through the
   * pack, so no session has to hash its whole workspace again. An index that cannot be written
   * (objects missing) is deleted; its session starts a fresh one. Refs of gone indexes go.
   */
  private async keepIndexes(): Promise<void> {
    const dir = path.dirname(this.git.index);
    const names = new Set((await readdir(dir).catch(() => [] as string[])).filter(validName));
    const commands: string[] = [];
    for (const name of names) {
      const result = await this.git.raw(["write-tree"], { index: path.join(dir, name) });
      if (result.exitCode === 0) commands.push(`update ${INDEX_REFS}${name} ${result.stdout.toString("utf8").trim()}\n`);
      else await rm(path.join(dir, name), { force: true });
    }
    const existing = await this.git.text(["for-each-ref", "--format=%(refname)", INDEX_REFS]);
    for (const ref of existing ? existing.split("\n") : []) {
      if (!names.has(ref.slice(INDEX_REFS.length))) commands.push(`delete ${ref}\n`);
    }
    if (commands.length) await this.git.run(["update-ref", "--stdin"], { input: commands.join("") });
  }

  /** Whether this session has anything in this repository: a snapshot or an index. */
  async inUse(): Promise<boolean> {
    return (await this.refIds()).length > 0 || !!(await lstat(this.git.index).catch(() => undefined));
  }

  /** Bytes the shadow repository takes on disk (not the further roots' repositories below it). */
  diskBytes(): Promise<number> {
    return diskBytes(this.gitDir, path.join(this.gitDir, ROOTS_FOLDER));
  }

  /** Waits for the calls under way; later calls are refused. */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
  }
}

function parseCommit(id: string, text: string): SnapshotRecord {
  const tree = /^tree ([0-9a-f]+)\n/.exec(text)?.[1];
  const message = text.slice(text.indexOf("\n\n") + 2);
  const label = message.split("\n")[0] ?? "";
  const trailer = message.split("\n").find((line) => line.startsWith(TRAILER));
  if (!tree || !trailer) throw new Error(`checkpoints: ${id} is not a checkpoint`);
  let meta: { createdAt?: number; skipped?: SkippedFile[] } = {};
  try {
    meta = JSON.parse(trailer.slice(TRAILER.length)) as typeof meta;
  } catch {}
  const committed = Number(/^committer .* (\d+) [+-]\d{4}$/m.exec(text)?.[1] ?? 0) * 1000;
  return { tree, label, createdAt: meta.createdAt ?? committed, skipped: Array.isArray(meta.skipped) ? meta.skipped : [] };
}

/** The bytes of the files under `dir`, but the lock files (which come and go) and the folder `skip`. */
async function diskBytes(dir: string, skip: string): Promise<number> {
  let total = 0;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) total += entry.name === "locks" || full === skip ? 0 : await diskBytes(full, skip);
    else total += (await lstat(full).catch(() => undefined))?.size ?? 0;
  }
  return total;
}
