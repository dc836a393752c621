import * as fsp from "node:fs/promises";

// Process groups as the shell backend and the MCP stdio servers use them: each child leads a
// group of its own, so a whole tree can be signalled and waited for at once.

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
