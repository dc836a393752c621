import * as fsp from "node:fs/promises";
import { ToolError } from "../../tool/errors.js";
import { guardedCommand, killAtExitOf, releaseAtExit } from "../process-groups.js";
import type { RemoteProcess } from "./remote-process.js";
import { startOffThread } from "./spawn-thread.js";

// Spawning a background process (the `process` tool's): a process group of its own, stdin a pipe,
// and three ways it ends with toolhost: the session's close (a tree kill, `processes.ts`), this
// process's exit (a synchronous SIGKILL of every live group, below), and the group's own guard for
// an end that runs no code at all (SIGKILL, a crash): process-groups.ts' GROUP_GUARD, never
// released, so it kills whatever of the group is left when toolhost goes.

/** Forgets a group once it has ended (its guard went with it). */
export function groupEnded(pgid: number): void {
  releaseAtExit(pgid);
}

export interface SpawnedGroup {
  child: RemoteProcess;
  /** The leader's pid, which is the group's id. */
  pid: number;
}

/**
 * Starts `file args…` as the leader of a new process group (a new session, no terminal) behind
 * GROUP_GUARD, with stdin, stdout and stderr as pipes. None of its handles keeps this process
 * alive: what ends toolhost ends it. Resolves once it runs; a missing cwd is `not_found`.
 */
export async function spawnGroup(
  file: string,
  args: readonly string[],
  options: { cwd: string; env?: Record<string, string> },
): Promise<SpawnedGroup> {
  const cwdStat = await fsp.stat(options.cwd).catch(() => null);
  if (!cwdStat) throw new ToolError("not_found", `The working directory does not exist: ${options.cwd}`);
  if (!cwdStat.isDirectory()) throw new ToolError("not_found", `The working directory is not a directory: ${options.cwd}`);
  const command = guardedCommand("toolhost-process", file, args, { env: { ...process.env, ...options.env }, cwd: options.cwd });
  // On the spawner thread: its fork would hold the agent's thread (spawn-thread.ts).
  const child = startOffThread(command.file, command.args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    detached: true,
    stdin: true,
    guard: true,
  });
  // Errors on the pipes (EPIPE on a stdin the process closed) are the process's business, not ours.
  for (const stream of child.stdio) stream?.on("error", () => undefined);
  await new Promise<void>((resolve, reject) => {
    child.once("spawn", resolve);
    child.once("error", (err: NodeJS.ErrnoException) =>
      reject(new ToolError("execution_failed", `Could not start the background process: ${err.message}`)),
    );
  });
  const pid = child.pid as number;
  // On exit (process.exit, the end of the event loop, an uncaught error) a live group is killed at once.
  killAtExitOf(pid);
  child.unref();
  return { child, pid };
}
