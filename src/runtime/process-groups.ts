import { accessSync, constants, statSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import type { Readable, Writable } from "node:stream";
import { treeKillOffThread } from "./shell/spawn-thread.js";

// Process groups as the shell backends (a command, a background process), hooks' commands and the
// language and MCP stdio servers use them: each child leads a group of its own, so a whole tree can
// be signalled and waited for at once, and each group runs behind GROUP_GUARD, so it ends with
// toolhost however toolhost ends.

/**
 * The first thing every group toolhost starts runs: a subshell that blocks reading fd 3 — one end
 * of a socket pair whose other end only toolhost holds — and SIGKILLs its own group at EOF:
 * toolhost is gone, however it went (SIGKILL, a crash, the end of its event loop), since the
 * kernel closes its end. A line read instead releases the guard (`releaseGuard`: the command ended
 * and left nothing running). Then the command replaces the shell, without fd 3, as the group's
 * leader; bwrap and everything in its pid namespace are in the group, so they go too. The guard's
 * pid is written to fd 3 first, so toolhost can tell it from the rest of the group. `$0` names it
 * in `ps`.
 */
export const GROUP_GUARD = [
  // A shell of its own, so `ps` shows the guard as toolhost-guard and not as the command's line.
  `/bin/sh -c 'read -r _ <&3 || kill -9 0' toolhost-guard </dev/null >/dev/null 2>&1 &`,
  'echo "$!" >&3',
  'exec "$@" 3<&-',
].join("\n");

/** Whether execvp would find `file` (searched on `pathEnv` when it holds no slash) and may run it. */
function runnable(file: string, pathEnv: string | undefined, cwd: string | undefined): boolean {
  const candidates = file.includes("/")
    ? [path.resolve(cwd ?? process.cwd(), file)]
    : (pathEnv ?? "/usr/local/bin:/usr/bin:/bin").split(path.delimiter).map((dir) => path.resolve(cwd ?? process.cwd(), dir || ".", file));
  return candidates.some((candidate) => {
    try {
      accessSync(candidate, constants.X_OK);
      return statSync(candidate).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * `file args…` behind GROUP_GUARD: spawn the result detached (a group of its own) with a socket
 * pair (`"pipe"`) as fd 3, and `unrefGuard` it. A file that cannot run is returned as it is, so
 * spawn fails the way it always does (ENOENT, EACCES) and nothing starts that needs a guard.
 */
export function guardedCommand(
  name: string,
  file: string,
  args: readonly string[],
  options: { env?: Record<string, string | undefined>; cwd?: string } = {},
): { file: string; args: string[]; guarded: boolean } {
  if (!runnable(file, (options.env ?? process.env).PATH, options.cwd)) return { file, args: [...args], guarded: false };
  return { file: "/bin/sh", args: ["-c", GROUP_GUARD, name, file, ...args], guarded: true };
}

type GuardEnd = (Readable & Writable & { unref?: () => void }) | null | undefined;

/** toolhost's end of a guard's socket pair must not keep toolhost alive. */
export function unrefGuard(end: GuardEnd): void {
  end?.on("error", () => undefined);
  end?.unref?.();
}

/** Lets the guard end without killing: nothing of its group is left but the guard. */
export function releaseGuard(end: GuardEnd): void {
  if (end && !end.destroyed && end.writable) end.end("\n");
}

/** Whether any process of the group exists (zombies included). */
export function groupExists(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the group still has a member that is not a zombie. kill(-pgid, 0) alone also sees
 * zombies, which stay around under an init that does not reap; on Linux /proc tells them apart.
 */
export async function groupHasLiveMembers(pgid: number): Promise<boolean> {
  if (!groupExists(pgid)) return false;
  if (process.platform !== "linux") return true;
  return (await groupLiveMembers(pgid, true)).length > 0;
}

/**
 * The pids of the group's members that are not zombies (Linux; elsewhere the leader while the
 * group exists). `first`: stop at the first one found.
 */
export async function groupLiveMembers(pgid: number, first = false): Promise<number[]> {
  if (!groupExists(pgid)) return [];
  const entries = process.platform === "linux" ? await fsp.readdir("/proc").catch(() => null) : null;
  if (!entries) return [pgid];
  const found: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fsp.readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z") {
      found.push(Number(entry));
      if (first) break;
    }
  }
  return found;
}

/** Sends `signal` to every process of the group; a group that is gone is not an error. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/** Groups SIGKILLed if toolhost exits before they were stopped, each with how it is killed. */
const killAtExit = new Map<number, () => void>();
let exitHook = false;

/**
 * Kills the group (SIGKILL, or `kill`) when toolhost exits with it still running: servers
 * (language, MCP) never outlive toolhost. `releaseAtExit` once it is stopped.
 */
export function killAtExitOf(pgid: number, kill: () => void = () => signalGroup(pgid, "SIGKILL")): void {
  killAtExit.set(pgid, kill);
  if (exitHook) return;
  exitHook = true;
  process.once("exit", () => {
    for (const kill of killAtExit.values()) kill();
  });
}

export function releaseAtExit(pgid: number): void {
  killAtExit.delete(pgid);
}

/**
 * SIGTERM to the group of a live leader and, through tree-kill, to descendants that left it. The
 * group is frozen first: while tree-kill walks the tree from the leader nobody can exit or reap,
 * so descendants that left the group are still linked to it; then the whole group gets SIGTERM at
 * once, before the leader can see its children die and exit 0.
 */
export function terminateTree(pgid: number): void {
  signalGroup(pgid, "SIGSTOP");
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    clearTimeout(fallback);
    signalGroup(pgid, "SIGTERM");
    signalGroup(pgid, "SIGCONT");
  };
  // If the walk (ps) hangs, the group must not stay frozen.
  const fallback = setTimeout(release, 1000);
  void treeKillOffThread(pgid, "SIGTERM").then(release);
}

/** SIGKILL to the group and, while its leader lives, to descendants that left it. */
export function killTree(pgid: number, leaderAlive: boolean): void {
  signalGroup(pgid, "SIGKILL");
  if (leaderAlive) void treeKillOffThread(pgid, "SIGKILL");
}

/** Resolves once the group has no live member, or after `limitMs`. */
export async function waitForGroupExit(pgid: number, limitMs: number): Promise<void> {
  const deadline = performance.now() + limitMs;
  while ((await groupHasLiveMembers(pgid)) && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
