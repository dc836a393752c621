import { spawn, type ChildProcess } from "node:child_process";
import * as fsp from "node:fs/promises";
import type { Socket } from "node:net";
import { ToolError } from "../../tool/errors.js";
import { killAtExitOf, releaseAtExit } from "../process-groups.js";

// Spawning a background process (the `process` tool's): a process group of its own, stdin a pipe,
// and three ways it ends with toolhost: the session's close (a tree kill, `processes.ts`), this
// process's exit (a synchronous SIGKILL of every live group, below), and the group's own guard for
// an end that runs no code at all (SIGKILL, a crash): see GROUP_GUARD.

/**
 * The first thing a background process's group runs: a subshell that blocks reading fd 3 — one
 * end of a socket pair whose other end only toolhost holds — and SIGKILLs its own group when the
 * read returns (toolhost never writes, so only at EOF: toolhost is gone, however it went). Then
 * the command replaces the shell, without fd 3, as the group's leader. `$0` names it in `ps`.
 */
export const GROUP_GUARD = ["{ read -r _ <&3; kill -9 0; } </dev/null >/dev/null 2>&1 &", 'exec "$@" 3<&-'].join("\n");

/** Forgets a group once it has ended (its guard went with it). */
export function groupEnded(pgid: number): void {
  releaseAtExit(pgid);
}

export interface SpawnedGroup {
  child: ChildProcess;
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
  const child = spawn("/bin/sh", ["-c", GROUP_GUARD, "toolhost-process", file, ...args], {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    detached: true,
    stdio: ["pipe", "pipe", "pipe", "pipe"],
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
  for (const stream of child.stdio) (stream as Socket | null)?.unref?.();
  return { child, pid };
}
