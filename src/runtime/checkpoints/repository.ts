import { copyFile, lstat, mkdir, readdir, readFile, realpath, rename, rm, utimes, writeFile } from "node:fs/promises";
import path from "node:path";
import { toolhostHome } from "../../config/paths.js";
import { projectFolderName } from "../../config/workspace.js";
import { isInside } from "../../tool/paths.js";
import { FsMonitor, type ChangeFeed } from "./change-feed.js";
import { Checkpoints, DEFAULT_MAX_FILE_BYTES, ROOTS_FOLDER, validName } from "./checkpoints.js";
import { RepoLock } from "./repo-lock.js";
import { initShadowRepo, probeGit, ShadowGit } from "./shadow-git.js";
import { literalFolder } from "./workspace-tree.js";

// Where checkpoints are kept (issue 23 §2), and a project's repositories as a whole:
// - `<toolhost home>/checkpoints/<project>`: the project's shadow repository, whose work tree is
//   the project's folder (a session's primary root, `cwd`); its sessions share it.
// - `<that>/toolhost/roots/<root>`: one shadow repository per further root of the project's
//   sessions (ACP's additionalDirectories), `<root>` naming the root's real path (readable, with a
//   hash: config/workspace.ts projectFolderName); sessions of the project that have that root share
//   it. A repository has one work tree, so its exclude file, index files, lock and packing are
//   its root's alone, as the project's are its folder's.
// Everything of a session is below its project's folder: deleting a session, and the sweep of the
// orphans, go over the project's repository and every root repository below it.

export interface CheckpointsOptions {
  /** The workspace root (the work tree). */
  root: string;
  /** The project's folder name under `checkpoints/` (the session store's project folder name). */
  project: string;
  /** The session's id: its index file and its refs. */
  session: string;
  /** toolhost's home (default: `toolhostHome()`). */
  home?: string;
  /** Files larger than this are left out of snapshots and listed (default 10 MiB). */
  maxFileBytes?: number;
  /** A further root of the session (not the project's folder): its snapshots go to a repository of its own below the project's. */
  further?: boolean;
  /** What changed in the work tree since the last snapshot (the sandbox's watch): snapshots then cost what changed. */
  changes?: ChangeFeed;
}

export type OpenedCheckpoints = { available: true; checkpoints: Checkpoints } | { available: false; reason: string };

/** Opens the checkpoints of a workspace root for one session, or says why there are none. */
export async function openCheckpoints(options: CheckpointsOptions): Promise<OpenedCheckpoints> {
  if (!validName(options.project)) return { available: false, reason: `checkpoints: bad project name ${JSON.stringify(options.project)}` };
  if (!validName(options.session)) return { available: false, reason: `checkpoints: bad session id ${JSON.stringify(options.session)}` };
  const git = await probeGit();
  if (!git.ok) return { available: false, reason: `checkpoints need git: ${git.reason}` };
  let root: string;
  try {
    root = await realpath(options.root);
    if (!(await lstat(root)).isDirectory()) return { available: false, reason: `checkpoints: ${options.root} is not a folder` };
  } catch (error) {
    return { available: false, reason: `checkpoints: ${options.root}: ${(error as NodeJS.ErrnoException).code ?? String(error)}` };
  }
  const home = path.resolve(options.home ?? toolhostHome());
  const projectDir = path.join(home, "checkpoints", options.project);
  const gitDir = options.further ? path.join(projectDir, ROOTS_FOLDER, projectFolderName(root)) : projectDir;
  const own = path.join(gitDir, "toolhost");
  try {
    await mkdir(path.join(own, "index"), { recursive: true, mode: 0o700 });
    await mkdir(path.join(own, "home"), { recursive: true });
    const shadow = new ShadowGit(gitDir, root, path.join(own, "index", options.session), path.join(own, "home"));
    await initShadowRepo(shadow);
    await seedIndex(shadow.index);
    // toolhost's own folder is never part of a snapshot (a workspace that is the home folder holds it).
    const realHome = await realpath(home).catch(() => home);
    const exclude = path.join(gitDir, "info", "exclude");
    const rel = path.relative(root, realHome).split(path.sep).join("/");
    const wanted = isInside(realHome, root) && realHome !== root ? `${literalFolder(rel)}\n` : "";
    if ((await readFile(exclude, "utf8").catch(() => "")) !== wanted) await writeFile(exclude, wanted);
    const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
    const monitor = options.changes && new FsMonitor(options.changes, root, own, shadow.index);
    return {
      available: true,
      checkpoints: new Checkpoints(shadow, options.session, maxFileBytes, new RepoLock(path.join(own, "locks")), monitor),
    };
  } catch (error) {
    return { available: false, reason: `checkpoints: ${error instanceof Error ? error.message : String(error)}` };
  }
}

/**
 * A new session's index starts as a copy of the newest index of the repository's other sessions
 * (same work tree), so its first scan hashes only what changed since that session's last one. The
 * copy's mtime is set back a little: git re-checks the content of every entry not older than its
 * index file (racy git), so an entry written in the source's last second is never trusted by its
 * stat data alone. Anything wrong with the copy (objects gone after a pack) makes the scan start
 * over from an empty index (workspace-tree.ts).
 */
async function seedIndex(index: string): Promise<void> {
  if (await lstat(index).catch(() => undefined)) return;
  const dir = path.dirname(index);
  let newest: { file: string; mtimeMs: number; atime: Date } | undefined;
  for (const name of (await readdir(dir).catch(() => [] as string[])).filter(validName)) {
    const file = path.join(dir, name);
    const stat = await lstat(file).catch(() => undefined);
    if (stat?.isFile() && stat.mtimeMs > (newest?.mtimeMs ?? -1)) newest = { file, mtimeMs: stat.mtimeMs, atime: stat.atime };
  }
  if (!newest) return;
  const partial = `${index}.seed-${process.pid}.lock`;
  try {
    await copyFile(newest.file, partial);
    await utimes(partial, newest.atime, new Date(newest.mtimeMs - RACY_MARGIN_MS));
    await rename(partial, index);
  } catch {
    await rm(partial, { force: true });
  }
}

/** How far back a seeded index's mtime is set (a whole second at least: some file systems keep seconds). */
const RACY_MARGIN_MS = 2000;

const isRepository = async (gitDir: string): Promise<boolean> => !!(await lstat(path.join(gitDir, "HEAD")).catch(() => undefined));

/** A project's repositories that exist: its own first (when it exists), then its further roots'. */
async function projectRepositories(project: string, home: string): Promise<string[]> {
  const projectDir = path.join(path.resolve(home), "checkpoints", project);
  const rootsDir = path.join(projectDir, ROOTS_FOLDER);
  const candidates = [
    projectDir,
    ...(await readdir(rootsDir).catch(() => [] as string[])).filter(validName).map((name) => path.join(rootsDir, name)),
  ];
  const out: string[] = [];
  for (const gitDir of candidates) if (await isRepository(gitDir)) out.push(gitDir);
  return out;
}

/** A shadow repository without a work tree (for what needs none: refs, packing). */
function bareHandle(gitDir: string, session: string): Checkpoints {
  const own = path.join(gitDir, "toolhost");
  const shadow = new ShadowGit(gitDir, gitDir, path.join(own, "index", session), path.join(own, "home"));
  return new Checkpoints(shadow, session, DEFAULT_MAX_FILE_BYTES, new RepoLock(path.join(own, "locks")));
}

/**
 * Forgets sessions' checkpoints and packs their project's repositories (its own and its further
 * roots'), without a workspace (the sessions were deleted; their folders may be gone). A root
 * repository is packed only when one of the sessions had something in it. False when there is no
 * repository (or no git).
 */
export async function discardSessionCheckpoints(options: {
  project: string;
  sessions: readonly string[];
  home?: string;
}): Promise<boolean> {
  if (!validName(options.project) || !(await probeGit()).ok) return false;
  const projectDir = path.join(path.resolve(options.home ?? toolhostHome()), "checkpoints", options.project);
  let found = false;
  for (const gitDir of await projectRepositories(options.project, options.home ?? toolhostHome())) {
    const handles: Checkpoints[] = [];
    for (const session of options.sessions.filter(validName)) {
      const handle = bareHandle(gitDir, session);
      if (gitDir === projectDir || (await handle.inUse())) handles.push(handle);
    }
    for (const [i, handle] of handles.entries()) await handle.discard({ pack: i === handles.length - 1 });
    found ||= handles.length > 0;
  }
  return found;
}

/**
 * Every session that has checkpoints (refs or an index) in each project's repositories, with when
 * its index last changed (0: none; the latest of its indexes, one per root).
 */
export async function checkpointSessions(home = toolhostHome()): Promise<{ project: string; session: string; touchedMs: number }[]> {
  const root = path.join(path.resolve(home), "checkpoints");
  const out: { project: string; session: string; touchedMs: number }[] = [];
  if (!(await probeGit()).ok) return out;
  for (const project of (await readdir(root).catch(() => [] as string[])).filter(validName)) {
    const sessions = new Map<string, number>();
    for (const gitDir of await projectRepositories(project, home)) {
      const indexDir = path.join(gitDir, "toolhost", "index");
      const names = new Set((await readdir(indexDir).catch(() => [] as string[])).filter(validName));
      for (const session of await bareHandle(gitDir, "list")
        .refSessions()
        .catch(() => [] as string[]))
        names.add(session);
      for (const session of names) {
        const stat = await lstat(path.join(indexDir, session)).catch(() => undefined);
        sessions.set(session, Math.max(sessions.get(session) ?? 0, stat?.mtimeMs ?? 0));
      }
    }
    for (const [session, touchedMs] of sessions) out.push({ project, session, touchedMs });
  }
  return out;
}
