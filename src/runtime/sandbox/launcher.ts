import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

// An editor shows a terminal's command line as terminal/create gives it: `command` and `args`.
// A sandboxed command is `/bin/sh -c <wrapper> bwrap <40 flags> -- <the command>`, which buries
// the user's command at the end of a wall of flags. A launcher script holds everything before the
// command and runs what it is given after it, so the terminal is created as
// `…/toolhost-sandbox <the command>`: the command the user asked for, said to run sandboxed, and
// exactly what runs (the launcher execs its arguments as they are).

/** `'…'` for the shell: the text as one word, whatever it holds. */
const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

/** The script that runs `file prefix… "$@"`. */
export function launcherScript(file: string, prefix: readonly string[]): string {
  return [
    "#!/bin/sh",
    "# toolhost: runs its arguments (the command) inside the sandbox; written for one call and removed after it.",
    `exec ${[file, ...prefix].map(quote).join(" ")} "$@"`,
    "",
  ].join("\n");
}

/**
 * Writes a launcher for one call in a fresh private folder (0700) of the system's temporary
 * folder: outside every sandbox (their /tmp is their own), like the seccomp filter the wrapper
 * reads. `remove()` deletes it once the call has ended.
 */
export async function writeLauncher(file: string, prefix: readonly string[]): Promise<{ path: string; remove(): Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "toolhost-run-"));
  const script = path.join(dir, "toolhost-sandbox");
  await writeFile(script, launcherScript(file, prefix), { mode: 0o700, flag: "wx" });
  await chmod(script, 0o700);
  return { path: script, remove: () => rm(dir, { recursive: true, force: true }) };
}
