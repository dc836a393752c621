import { lstat, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { readGitPointer } from "../../config/git-pointer.js";
import { runOffThread } from "../shell/spawn-thread.js";

// The shadow repository: the `git` binary run on a GIT_DIR of toolhost's own, with the workspace
// as its work tree, in an environment where nothing of the user's git set-up applies: no system or
// global config (HOME points to an empty folder too, for a git older than GIT_CONFIG_GLOBAL), no
// GIT_* variable of the parent, no hooks, no fsmonitor but toolhost's own (change-feed.ts), no attributes from anywhere (the shadow's
// own info/attributes, which outranks every .gitattributes, turns off line-ending conversion,
// filters and ident, so a snapshot holds the bytes on disk). The only file of the user's repository
// it reads is `.git/info/exclude`, as its excludes file; the `.git` folders themselves are never
// part of a snapshot (git skips every entry named `.git`).

/** The git settings every command runs with, on its command line (so the repository's config cannot undo them). */
const SETTINGS: readonly (readonly [string, string])[] = [
  ["core.autocrlf", "false"],
  ["core.safecrlf", "false"],
  ["core.symlinks", "true"],
  ["core.filemode", "true"],
  ["core.ignorecase", "false"],
  ["core.precomposeunicode", "false"],
  ["core.hooksPath", "/dev/null"],
  // Empty is "off" both for git ≥ 2.36 (a boolean) and before (a hook's path).
  ["core.fsmonitor", ""],
  // The index's untracked cache (workspace-tree.ts): `status` reads again only the folders whose
  // stat data moved. Its check of a folder includes ctime, which no command can set back (`touch -d`
  // sets mtime only), so a file created in a folder is not hidden from it. git keeps whole seconds:
  // a folder changed both before and after a scan within one second, its mtime then set back, still
  // looks unchanged; inside the sandbox the folder watch (change-feed.ts) names it regardless.
  ["core.untrackedCache", "true"],
  ["core.trustctime", "true"],
  ["core.checkStat", "default"],
  ["status.showUntrackedFiles", "all"],
  ["core.splitIndex", "false"],
  ["core.sparseCheckout", "false"],
  ["core.logAllRefUpdates", "false"],
  ["core.attributesFile", "/dev/null"],
  ["core.quotePath", "false"],
  ["core.looseCompression", "1"],
  ["gc.auto", "0"],
  ["gc.reflogExpire", "now"],
  ["gc.reflogExpireUnreachable", "now"],
  ["gc.pruneExpire", "now"],
  ["gc.worktreePruneExpire", "now"],
  ["gc.rerereResolved", "0"],
  ["maintenance.auto", "false"],
  ["commit.gpgSign", "false"],
  ["submodule.recurse", "false"],
  ["protocol.allow", "never"],
  ["safe.directory", "*"],
];

/** The shadow's info/attributes: no conversion of any kind in either direction. */
const ATTRIBUTES = "* -text -ident -filter -diff -merge !eol !working-tree-encoding\n";

const AUTHOR = { name: "toolhost", email: "checkpoints@toolhost.invalid" };

export interface GitRun {
  /** Bytes for stdin. */
  input?: Buffer | string;
  /** The index file (default: the handle's own). */
  index?: string;
  /** Another work tree (a nested repository's folder, for its first listing). */
  workTree?: string;
  /** Lets `status` write the index it refreshed, with its untracked cache (optional locks on: the index is the session's own). */
  writeIndex?: boolean;
  /** git's fsmonitor hook (a shell command) and its environment, for a snapshot's scan (change-feed.ts); off otherwise. */
  fsmonitor?: { hook: string; env: Record<string, string> };
}

export interface GitResult {
  stdout: Buffer;
  stderr: string;
  exitCode: number;
}

/** The most one git command may print (a restore's `cat-file --batch`): past it the command is stopped and fails. */
const MAX_OUTPUT_BYTES = 1024 * 1024 * 1024;

/**
 * Runs git on the spawner thread (a fork on the agent's thread held it 15–45 ms a call, every
 * prompt: `shell/spawn-thread.ts`): `input` on its stdin, its output as bytes, a non-zero exit
 * returned. Throws when git could not run at all (not found, killed by a signal).
 */
async function spawnGit(
  args: readonly string[],
  options: { cwd?: string; env: Record<string, string>; input?: string | Buffer },
): Promise<GitResult> {
  const ran = await runOffThread("git", [...args], { ...options, maxOutput: MAX_OUTPUT_BYTES }).catch((error: Error) => {
    throw new Error(`git could not run: ${error.message}`);
  });
  if (ran.overflow) throw new Error(`git ${args[0] ?? ""} printed more than ${MAX_OUTPUT_BYTES} bytes`);
  if (ran.code === null) throw new Error(`git could not run: killed by ${ran.signal ?? "a signal"}`);
  const stdout = Buffer.from(ran.stdout.buffer, ran.stdout.byteOffset, ran.stdout.byteLength);
  return { stdout, stderr: Buffer.from(ran.stderr).toString("utf8"), exitCode: ran.code };
}

export class GitError extends Error {
  constructor(
    readonly args: readonly string[],
    readonly exitCode: number,
    readonly stderr: string,
  ) {
    super(`git ${args[0] ?? ""} failed (exit ${exitCode}): ${stderr.trim().split("\n").slice(-3).join(" / ") || "no message"}`);
  }
}

/** The parent's environment minus everything git reads, plus the isolation. */
function isolatedEnv(home: string, gitDir: string, workTree: string, index: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith("GIT_") || name === "HOME" || name.startsWith("XDG_") || name.startsWith("LC_")) continue;
    env[name] = value;
  }
  Object.assign(env, {
    HOME: home,
    LC_ALL: "C",
    GIT_DIR: gitDir,
    GIT_WORK_TREE: workTree,
    GIT_INDEX_FILE: index,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_ATTR_NOSYSTEM: "1",
    GIT_TERMINAL_PROMPT: "0",
    GIT_NO_REPLACE_OBJECTS: "1",
    GIT_LITERAL_PATHSPECS: "1",
    GIT_OPTIONAL_LOCKS: "0",
    GIT_AUTHOR_NAME: AUTHOR.name,
    GIT_AUTHOR_EMAIL: AUTHOR.email,
    GIT_COMMITTER_NAME: AUTHOR.name,
    GIT_COMMITTER_EMAIL: AUTHOR.email,
  });
  return env;
}

/** One shadow repository seen from one work tree, with one index file (a session's). */
export class ShadowGit {
  private excludesFile = "/dev/null";

  constructor(
    readonly gitDir: string,
    readonly workTree: string,
    readonly index: string,
    private readonly emptyHome: string,
  ) {}

  /** Runs git; a non-zero exit is returned, not thrown. */
  async raw(args: readonly string[], options: GitRun = {}): Promise<GitResult> {
    const workTree = options.workTree ?? this.workTree;
    const monitor = options.fsmonitor;
    const settings = [...SETTINGS, ["core.excludesFile", this.excludesFile] as const];
    if (monitor) settings.push(["core.fsmonitor", monitor.hook], ["core.fsmonitorHookVersion", "2"]);
    const flags = settings.flatMap(([k, v]) => ["-c", `${k}=${v}`]);
    return spawnGit([...flags, ...args], {
      cwd: workTree,
      env: {
        ...isolatedEnv(this.emptyHome, this.gitDir, workTree, options.index ?? this.index),
        ...(options.writeIndex ? { GIT_OPTIONAL_LOCKS: "1" } : {}),
        ...monitor?.env,
      },
      input: options.input,
    });
  }

  /** Runs git and returns its stdout; throws GitError on a non-zero exit. */
  async run(args: readonly string[], options: GitRun = {}): Promise<Buffer> {
    const result = await this.raw(args, options);
    if (result.exitCode !== 0) throw new GitError(args, result.exitCode, result.stderr);
    return result.stdout;
  }

  /** Runs git and returns its stdout as trimmed text. */
  async text(args: readonly string[], options: GitRun = {}): Promise<string> {
    return (await this.run(args, options)).toString("utf8").trim();
  }

  /**
   * The user's own `.git/info/exclude` as the excludes file, when the work tree is a repository's
   * top (a `.git` folder, or a `.git` file naming one). Returns a signature of that file (path,
   * size, mtime) so the caller can tell when its rules changed.
   */
  async refreshExcludes(): Promise<string> {
    const file = await userExcludeFile(this.workTree);
    this.excludesFile = file ?? "/dev/null";
    if (!file) return "";
    const stat = await lstat(file).catch(() => undefined);
    return stat ? `${file}:${stat.size}:${stat.mtimeMs}` : "";
  }
}

/** `.git/info/exclude` of the repository whose top is `root`, when it is a regular file. */
async function userExcludeFile(root: string): Promise<string | undefined> {
  // A worktree or submodule's `.git` file names its git folder, whose `commondir` names the shared one.
  const commonDir = readGitPointer(path.join(root, ".git"))?.commonDir;
  if (!commonDir) return undefined;
  const file = path.join(commonDir, "info", "exclude");
  return (await lstat(file).catch(() => undefined))?.isFile() ? file : undefined;
}

interface GitVersion {
  ok: boolean;
  version?: string;
  reason?: string;
}
const probes = new Map<string, Promise<GitVersion>>();

/** Whether a usable git is on PATH (once per PATH). */
export function probeGit(): Promise<GitVersion> {
  const key = process.env.PATH ?? "";
  let probe = probes.get(key);
  if (!probe) probes.set(key, (probe = probeOnce()));
  return probe;
}

/** `git --version`'s output, or why it did not run (on the spawner thread, as the checkpoints' git runs). */
async function gitVersionText(): Promise<{ stdout: string } | { reason: string }> {
  try {
    const ran = await runOffThread("git", ["--version"], { env: { ...process.env, LC_ALL: "C" }, maxOutput: 64 * 1024, timeoutMs: 10_000 });
    if (ran.code === 0) return { stdout: Buffer.from(ran.stdout).toString("utf8") };
    const why =
      Buffer.from(ran.stderr).toString("utf8").trim().split("\n")[0] || (ran.signal ? `ended by ${ran.signal}` : `exit code ${ran.code}`);
    return { reason: `git --version failed: ${why}` };
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === "ENOENT";
    return {
      reason: missing ? "git is not installed (no `git` on PATH)" : `git --version failed: ${(error as Error).message.split("\n")[0]}`,
    };
  }
}

async function probeOnce(): Promise<GitVersion> {
  const result = await gitVersionText();
  if ("reason" in result) return { ok: false, reason: result.reason };
  const version = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(result.stdout);
  if (!version) return { ok: false, reason: `git --version printed no version: ${result.stdout.slice(0, 80)}` };
  const [major, minor] = [Number(version[1]), Number(version[2])];
  // Everything used here is older than 2.25 (Ubuntu 20.04's); tested with 2.39.
  if (major < 2 || (major === 2 && minor < 25)) return { ok: false, version: version[0], reason: `git ${version[0]} is older than 2.25` };
  return { ok: true, version: version[0] };
}

/** Creates the shadow repository when it does not exist yet, and (re)writes its attributes. */
export async function initShadowRepo(git: ShadowGit): Promise<void> {
  await mkdir(git.gitDir, { recursive: true, mode: 0o700 });
  const head = await lstat(path.join(git.gitDir, "HEAD")).catch(() => undefined);
  if (!head) {
    // `init --bare` refuses GIT_WORK_TREE, so run it on the folder itself. Concurrent inits are safe: git re-inits.
    const result = await spawnGit(["init", "--quiet", "--bare", git.gitDir], {
      env: {
        PATH: process.env.PATH ?? "",
        HOME: path.dirname(git.gitDir),
        LC_ALL: "C",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_CONFIG_GLOBAL: "/dev/null",
      },
    });
    if (result.exitCode !== 0) throw new Error(`git init failed: ${result.stderr.trim()}`);
  }
  await mkdir(path.join(git.gitDir, "info"), { recursive: true });
  const attributes = path.join(git.gitDir, "info", "attributes");
  if ((await readFile(attributes, "utf8").catch(() => "")) !== ATTRIBUTES) await writeFile(attributes, ATTRIBUTES);
}
