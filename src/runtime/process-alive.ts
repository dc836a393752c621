import { readFileSync } from "node:fs";

// Whether a process still runs, for the stale-state sweeps (a lock's holder, a temp file's writer,
// a fence folder's watch): a signal 0 that finds no such process says it is gone; one refused
// (EPERM: another user's) says it runs. A zombie (killed, not yet reaped by its parent) answers a
// signal but is gone: its state in /proc says so.

/** Whether `pid` names a live process (this one included). */
export function processAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  try {
    // "pid (comm) S …": the state follows the last ")" (a command name may hold one).
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return true;
  }
}
