import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { copyFile, lstat, mkdir, open, readFile, readlink, rename, rm, rmdir, symlink, unlink } from "node:fs/promises";
import path from "node:path";
import type { ShadowGit } from "./shadow-git.js";
import { splitZ, type SkippedFile } from "./workspace-tree.js";

// Restoring a snapshot: the plan (what differs between the snapshot and the workspace now, and
// what may not be overwritten) and its application with plain file operations. Nothing is ever
// written or removed through a symbolic link: every folder above a path is checked with lstat
// (at planning, and again right before each write or removal), and files are written to a new
// name beside their place, then renamed over it, so a symlink in the file's own place is replaced,
// never followed.

/** One side of a tree entry: git mode (`100644`, `100755`, `120000`) and object id. */
interface TreeEntry {
  mode: string;
  sha: string;
}

interface DiffEntry {
  path: string;
  status: string;
  /** The entry in the first tree; absent when only the second has the path. */
  src?: TreeEntry;
  dst?: TreeEntry;
}

/** `git diff-tree -r` between two trees (or commits), both sides of every path that differs. */
export async function diffTrees(git: ShadowGit, a: string, b: string): Promise<DiffEntry[]> {
  const parts = splitZ(await git.run(["diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", "--raw", a, b]));
  const out: DiffEntry[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    // ":<mode> <mode> <sha> <sha> <status>", then the path.
    const [srcMode = "", dstMode = "", srcSha = "", dstSha = "", status = ""] = (parts[i]?.path ?? "").slice(1).split(" ");
    const entry: DiffEntry = { path: parts[i + 1]?.path ?? "", status: status.slice(0, 1) };
    if (!/^0+$/.test(srcMode)) entry.src = { mode: srcMode, sha: srcSha };
    if (!/^0+$/.test(dstMode)) entry.dst = { mode: dstMode, sha: dstSha };
    out.push(entry);
  }
  return out;
}

export interface RestoreFile {
  /** Workspace-relative, with `/`. */
  path: string;
  /** `restore`: put back its content; `delete`: absent in the snapshot, removed; `create`: absent now, brought back. */
  action: "restore" | "delete" | "create";
}

export interface PathNote {
  path: string;
  reason: string;
}

/** What is on disk at a path the workspace tree does not hold (ignored, over the cap, or absent). */
type DiskState = { kind: "none" } | { kind: "entry"; entry: TreeEntry } | { kind: "large"; bytes: number } | { kind: "other" };

export interface Step extends RestoreFile {
  /** The snapshot's entry (for restore and create). */
  target?: TreeEntry;
  disk?: DiskState;
  conflict?: string;
  /** A conflict that `force` does not override (a path through a symlink, a bad path). */
  hard?: boolean;
}

interface TreeState {
  tree: string;
  skipped: readonly SkippedFile[];
}

export interface PlanInput {
  git: ShadowGit;
  root: string;
  maxFileBytes: number;
  target: TreeState;
  workspace: TreeState;
  known?: TreeState;
  force: boolean;
  /** Only these paths (workspace-relative, with `/`) are restored; default every path. */
  paths?: ReadonlySet<string>;
}

export interface Plan {
  steps: Step[];
  skipped: PathNote[];
}

const GITLINK = "160000";
const SYMLINK = "120000";

function blobId(content: Buffer, algorithm: "sha1" | "sha256"): string {
  return createHash(algorithm).update(`blob ${content.length}\0`).update(content).digest("hex");
}

/** A path git may hold, and that stays inside the root: no empty, `.`, `..` or `.git` part. */
function safeRelative(rel: string): boolean {
  return (
    rel.length > 0 &&
    !rel.includes("\0") &&
    rel.split("/").every((part) => part !== "" && part !== "." && part !== ".." && part.toLowerCase() !== ".git")
  );
}

/** Why a folder above `rel` cannot be written through, if one cannot; undefined when all are real folders or absent. */
async function blockedParent(root: string, rel: string, removed: ReadonlySet<string> = new Set()): Promise<string | undefined> {
  const parts = rel.split("/");
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join("/");
    const stat = await lstat(path.join(root, dir)).catch(() => undefined);
    if (!stat) return undefined;
    if (stat.isDirectory()) continue;
    if (removed.has(dir)) return undefined;
    return stat.isSymbolicLink() ? `${dir} is a symbolic link: nothing is written through it` : `${dir} is not a folder`;
  }
  return undefined;
}

async function diskState(root: string, rel: string, maxFileBytes: number, algorithm: "sha1" | "sha256"): Promise<DiskState> {
  if (await blockedParent(root, rel)) return { kind: "none" };
  const abs = path.join(root, rel);
  const stat = await lstat(abs).catch(() => undefined);
  if (!stat) return { kind: "none" };
  if (stat.isSymbolicLink())
    return { kind: "entry", entry: { mode: SYMLINK, sha: blobId(await readlink(abs, { encoding: "buffer" }), algorithm) } };
  if (!stat.isFile()) return { kind: "other" };
  if (stat.size > maxFileBytes) return { kind: "large", bytes: stat.size };
  const mode = stat.mode & 0o100 ? "100755" : "100644";
  return { kind: "entry", entry: { mode, sha: blobId(await readFile(abs), algorithm) } };
}

const same = (a: TreeEntry | undefined, b: TreeEntry | undefined): boolean => !!a && !!b && a.mode === b.mode && a.sha === b.sha;

/** Why a step's path counts as changed since the known snapshot (outside toolhost), if it does. */
function changedSinceKnown(
  step: Step,
  sinceKnown: ReadonlyMap<string, DiffEntry>,
  knownSkipped: ReadonlyMap<string, SkippedFile>,
): string | undefined {
  const changed = sinceKnown.get(step.path);
  const disk = step.disk;
  if (!disk) return changed ? "changed since the last checkpoint" : undefined;
  switch (disk.kind) {
    case "none":
      return changed?.src || knownSkipped.has(step.path) ? "deleted since the last checkpoint" : undefined;
    case "entry":
      if (same(changed?.src, disk.entry)) return undefined;
      return changed?.src
        ? "changed since the last checkpoint"
        : "not in the last checkpoint (ignored now): whether it changed cannot be told";
    case "large":
      return knownSkipped.get(step.path)?.bytes === disk.bytes ? undefined : "over the size cap, and changed since the last checkpoint";
    case "other":
      return changed?.src ? "changed since the last checkpoint" : undefined;
  }
}

/** What restoring `target` would do to the workspace, with the conflicts. */
export async function planRestore(input: PlanInput): Promise<Plan> {
  const { git, root, target, workspace, known } = input;
  const algorithm = workspace.tree.length === 64 ? "sha256" : "sha1";
  const tooLarge = (list: readonly SkippedFile[]) => new Map(list.filter((s) => s.reason === "too-large").map((s) => [s.path, s]));
  const targetSkipped = tooLarge(target.skipped);
  const steps: Step[] = [];
  for (const entry of await diffTrees(git, target.tree, workspace.tree)) {
    if (input.paths && !input.paths.has(entry.path)) continue;
    if (entry.src?.mode === GITLINK || entry.dst?.mode === GITLINK) continue;
    if (!entry.src) {
      // Only in the workspace: created since, unless the snapshot left it out for its size.
      if (!targetSkipped.has(entry.path)) steps.push({ path: entry.path, action: "delete" });
    } else if (entry.dst) {
      steps.push({ path: entry.path, action: "restore", target: entry.src });
    } else {
      // Only in the snapshot: deleted since, or on disk but ignored or over the cap now.
      const disk = await diskState(root, entry.path, input.maxFileBytes, algorithm);
      if (disk.kind === "entry" && same(disk.entry, entry.src)) continue;
      steps.push({ path: entry.path, action: disk.kind === "none" ? "create" : "restore", target: entry.src, disk });
    }
  }
  for (const step of steps) {
    if (!safeRelative(step.path)) Object.assign(step, { conflict: "not a path inside the workspace", hard: true });
  }
  if (known) {
    const sinceKnown = new Map((await diffTrees(git, known.tree, workspace.tree)).map((e) => [e.path, e]));
    const knownSkipped = tooLarge(known.skipped);
    for (const step of steps) step.conflict ??= changedSinceKnown(step, sinceKnown, knownSkipped);
  }
  // Paths below a symlink (or a file) are refused, unless the restore removes that symlink first.
  for (let changed = true; changed;) {
    changed = false;
    const removed = new Set(steps.filter((s) => s.action === "delete" && proceeds(s, input.force)).map((s) => s.path));
    for (const step of steps) {
      if (step.hard) continue;
      const reason = await blockedParent(root, step.path, removed);
      if (reason) {
        Object.assign(step, { conflict: reason, hard: true });
        changed = true;
      }
    }
  }
  const skipped = target.skipped.map((s) => ({
    path: s.path,
    reason:
      s.reason === "too-large"
        ? `not in the checkpoint: ${s.bytes} bytes, over the size cap`
        : "not in the checkpoint: its name is not UTF-8",
  }));
  return { steps, skipped };
}

/** Whether a step is carried out: no conflict, or one that `force` overrides. */
export const proceeds = (step: Step, force: boolean): boolean => !step.conflict || (force && !step.hard);

const BATCH_BYTES = 64 * 1024 * 1024;

/** The objects' sizes, through one `cat-file --batch-check` (a missing one is left out). */
async function objectSizes(git: ShadowGit, ids: readonly string[]): Promise<Map<string, number>> {
  const unique = [...new Set(ids)].filter(Boolean);
  if (!unique.length) return new Map();
  const out = await git.run(["cat-file", "--batch-check"], { input: unique.map((id) => `${id}\n`).join("") });
  const sizes = new Map<string, number>();
  for (const line of out.toString("utf8").split("\n")) {
    const [id = "", type = "", size] = line.split(" ");
    if (type !== "missing" && size) sizes.set(id, Number(size));
  }
  return sizes;
}

/** The objects' contents, through one `cat-file --batch` (a missing one is left out). */
export async function readObjects(git: ShadowGit, ids: readonly string[]): Promise<Map<string, Buffer>> {
  const unique = [...new Set(ids)].filter(Boolean);
  const objects = new Map<string, Buffer>();
  if (!unique.length) return objects;
  const out = await git.run(["cat-file", "--batch"], { input: unique.map((id) => `${id}\n`).join("") });
  let at = 0;
  while (at < out.length) {
    const newline = out.indexOf(10, at);
    const [id = "", type = "", size = ""] = out.subarray(at, newline).toString("utf8").split(" ");
    if (type === "missing" || !size) {
      at = newline + 1;
      continue;
    }
    const start = newline + 1;
    objects.set(id, out.subarray(start, start + Number(size)));
    at = start + Number(size) + 1;
  }
  return objects;
}

class Refused extends Error {}

/** Creates the folders above `rel` that are missing; refuses a symlink or a file on the way. */
async function ensureParents(root: string, rel: string): Promise<void> {
  let dir = root;
  for (const part of rel.split("/").slice(0, -1)) {
    dir = path.join(dir, part);
    let stat = await lstat(dir).catch(() => undefined);
    if (!stat) {
      await mkdir(dir).catch((error: NodeJS.ErrnoException) => {
        if (error.code !== "EEXIST") throw error;
      });
      stat = await lstat(dir);
    }
    if (stat.isSymbolicLink()) throw new Refused(`${path.relative(root, dir)} is a symbolic link: nothing is written through it`);
    if (!stat.isDirectory()) throw new Refused(`${path.relative(root, dir)} is not a folder`);
  }
}

let temporaryCount = 0;

/** Writes one entry: a new file beside its place, renamed over it (a symlink there is replaced, not followed). */
async function writeEntry(root: string, rel: string, entry: TreeEntry, content: Buffer): Promise<void> {
  await ensureParents(root, rel);
  const abs = path.join(root, rel);
  const existing = await lstat(abs).catch(() => undefined);
  if (existing?.isDirectory()) {
    await rmdir(abs).catch(() => {
      throw new Refused("a folder is in its place");
    });
  }
  const temporary = path.join(path.dirname(abs), `.toolhost-restore-${process.pid}-${++temporaryCount}`);
  try {
    if (entry.mode === SYMLINK) await symlink(content, temporary);
    else {
      const executable = entry.mode === "100755";
      const handle = await open(temporary, "wx", executable ? 0o777 : 0o666);
      try {
        await handle.writeFile(content);
        if (existing?.isFile()) {
          // Keep the file's own permissions; only the executable bits follow the snapshot (git records no more).
          const mode = existing.mode & 0o7777;
          await handle.chmod(executable ? mode | ((mode & 0o444) >> 2) : mode & ~0o111);
        }
      } finally {
        await handle.close();
      }
    }
    await rename(temporary, abs);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
}

const depth = (rel: string): number => rel.split("/").length;
const message = (error: unknown): string =>
  error instanceof Refused ? error.message : ((error as NodeJS.ErrnoException).code ?? String(error));

/** Carries out the steps (removals, then empty folders, then writes); returns the paths that failed. */
export async function applyRestore(git: ShadowGit, root: string, steps: readonly Step[]): Promise<PathNote[]> {
  const failed: PathNote[] = [];
  const removals = steps.filter((s) => s.action === "delete").sort((a, b) => depth(b.path) - depth(a.path));
  const writes = steps.filter((s) => s.action !== "delete").sort((a, b) => (a.path < b.path ? -1 : 1));
  const emptied = new Set<string>();
  for (const step of removals) {
    try {
      const blocked = await blockedParent(root, step.path);
      if (blocked) throw new Refused(blocked);
      const abs = path.join(root, step.path);
      const stat = await lstat(abs).catch(() => undefined);
      if (stat?.isDirectory()) throw new Refused("a folder is in its place now");
      if (stat) await unlink(abs);
      for (let dir = path.posix.dirname(step.path); dir !== "."; dir = path.posix.dirname(dir)) emptied.add(dir);
    } catch (error) {
      failed.push({ path: step.path, reason: message(error) });
    }
  }
  // Folders the removals left empty go too (deepest first; a folder with anything left stays).
  for (const dir of [...emptied].sort((a, b) => depth(b) - depth(a))) {
    if (await blockedParent(root, `${dir}/x`)) continue;
    const stat = await lstat(path.join(root, dir)).catch(() => undefined);
    if (stat?.isDirectory()) await rmdir(path.join(root, dir)).catch(() => {});
  }
  // Contents in batches of at most BATCH_BYTES, so a restore of many large files holds few at once.
  const sizes = await objectSizes(
    git,
    writes.map((s) => s.target?.sha ?? ""),
  );
  let blobs = new Map<string, Buffer>();
  for (let i = 0; i < writes.length; i++) {
    const step = writes[i] as Step;
    if (!blobs.has(step.target?.sha ?? "")) {
      const batch: string[] = [];
      for (let j = i, bytes = 0; j < writes.length && (bytes < BATCH_BYTES || !batch.length); j++) {
        const id = writes[j]?.target?.sha ?? "";
        batch.push(id);
        bytes += sizes.get(id) ?? 0;
      }
      blobs = await readObjects(git, batch);
    }
    const content = blobs.get(step.target?.sha ?? "");
    if (!step.target || !content) {
      failed.push({ path: step.path, reason: "its content is missing from the checkpoint" });
      continue;
    }
    try {
      await writeEntry(root, step.path, step.target, content);
    } catch (error) {
      failed.push({ path: step.path, reason: message(error) });
    }
  }
  return failed;
}

/**
 * Copies what is at each path now to the same path under `folder` (user-only), before a forced
 * restore overwrites it: a file byte for byte, a symlink as a symlink; nothing there, nothing to
 * keep. Returns the paths that could not be kept, with why: those must not be overwritten.
 */
export async function keepFiles(root: string, paths: readonly string[], folder: string): Promise<PathNote[]> {
  const failed: PathNote[] = [];
  for (const rel of paths) {
    try {
      const blocked = await blockedParent(root, rel);
      if (blocked) throw new Refused(blocked);
      const abs = path.join(root, rel);
      const stat = await lstat(abs).catch(() => undefined);
      if (!stat) continue;
      const kept = path.join(folder, rel);
      await mkdir(path.dirname(kept), { recursive: true, mode: 0o700 });
      if (stat.isSymbolicLink()) await symlink(await readlink(abs), kept);
      else if (stat.isFile()) await copyFile(abs, kept, constants.COPYFILE_EXCL);
      else throw new Refused("it is not a file");
    } catch (error) {
      failed.push({ path: rel, reason: `not overwritten: it could not be kept first (${message(error)})` });
    }
  }
  return failed;
}
