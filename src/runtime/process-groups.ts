import * as fsp from "node:fs/promises";
import treeKill from "tree-kill";

// Process groups as the shell backends (a command, a background process) and the MCP stdio servers
// use them: each child leads a group of its own, so a whole tree can be signalled and waited for at once.

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
  const entries = await fsp.readdir("/proc").catch(() => null);
  if (!entries) return true;
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await fsp.readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // "pid (comm) state ppid pgrp …"; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (Number(fields[2]) === pgid && fields[0] !== "Z") return true;
  }
  return false;
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
  treeKill(pgid, "SIGTERM", release);
}

/** SIGKILL to the group and, while its leader lives, to descendants that left it. */
export function killTree(pgid: number, leaderAlive: boolean): void {
  signalGroup(pgid, "SIGKILL");
  if (leaderAlive) treeKill(pgid, "SIGKILL", () => undefined);
}

/** Resolves once the group has no live member, or after `limitMs`. */
export async function waitForGroupExit(pgid: number, limitMs: number): Promise<void> {
  const deadline = performance.now() + limitMs;
  while ((await groupHasLiveMembers(pgid)) && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
