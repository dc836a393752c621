import { closeSync, constants, fstatSync, openSync, readSync } from "node:fs";
import path from "node:path";

// The one reader of git's pointers, as git follows them: a `.git` file's `gitdir: X` (a worktree,
// a submodule, `--separate-git-dir`), and a git folder's `commondir` (a linked worktree's shared
// folder). The project guard, the watchdog and the checkpoints' excludes all need the same two
// folders, and the files are workspace files: each is opened without blocking (a FIFO named `.git`
// must not hang a session), read only when a regular file, and only its first bytes.

/** Git's own limit is a path; nothing longer is a pointer. */
const MAX_POINTER_BYTES = 4096;

const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);

export interface GitPointer {
  /** The repository's git folder: the `.git` folder itself, or the one a `.git` file names. */
  gitDir: string;
  /** Its common folder (objects, refs, config, hooks): `commondir`'s, or the git folder. */
  commonDir: string;
}

/** A regular file's first bytes as trimmed text, or what an open `fd` is: a folder, or nothing readable. */
function readOpened(fd: number): { text: string } | "folder" | undefined {
  const stat = fstatSync(fd);
  if (stat.isDirectory()) return "folder";
  if (!stat.isFile()) return undefined;
  const buffer = Buffer.alloc(MAX_POINTER_BYTES);
  const n = readSync(fd, buffer, 0, buffer.length, 0);
  return { text: buffer.subarray(0, n).toString("utf8").trim() };
}

function open(p: string): ReturnType<typeof readOpened> {
  let fd: number;
  try {
    fd = openSync(p, FLAGS);
  } catch {
    return undefined;
  }
  try {
    return readOpened(fd);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function commonOf(gitDir: string): string {
  const common = open(path.join(gitDir, "commondir"));
  return typeof common === "object" && common.text ? path.resolve(gitDir, common.text) : gitDir;
}

/**
 * Where the repository whose `.git` entry is `dotGit` keeps its git folder and common folder, as
 * git follows them (a symlinked `.git` too); undefined when `dotGit` is neither a folder nor a
 * readable `gitdir:` file.
 */
export function readGitPointer(dotGit: string): GitPointer | undefined {
  const what = open(dotGit);
  if (what === "folder") return { gitDir: dotGit, commonDir: commonOf(dotGit) };
  const pointer = what && /^gitdir:\s*(.+)$/m.exec(what.text)?.[1]?.trim();
  if (!pointer) return undefined;
  const gitDir = path.resolve(path.dirname(dotGit), pointer);
  return { gitDir, commonDir: commonOf(gitDir) };
}
