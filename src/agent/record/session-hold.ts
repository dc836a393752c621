import * as fs from "node:fs";
import { hostname } from "node:os";

// A session is held by one process at a time: `<id>.hold` next to its file, created with
// O_CREAT|O_EXCL, holding the holder's pid, host and process start. Taken on session/load and
// session/resume (before anything is replayed) and on a new session's first write; released when
// the session closes or the process exits. A hold whose process is gone is taken over.

interface HoldBody {
  pid: number;
  host: string;
  /** The holder's start (Linux: clock ticks since boot), so a reused pid is not taken for it. */
  start?: string;
  /** ISO time it was taken. */
  at: string;
}

/** The session is held by another live process. */
export class SessionHeldError extends Error {
  constructor(
    readonly sessionId: string,
    readonly pid: number,
    readonly since: string,
  ) {
    super(
      `Session ${sessionId} is open in another toolhost process (pid ${pid}, since ${since}). ` +
        "Close it there (or end that process) and open it again; two processes appending to one session would mix their turns.",
    );
    this.name = "SessionHeldError";
  }
}

export function holdPathFor(file: string): string {
  return file.replace(/\.jsonl$/, "") + ".hold";
}

/** A process's state and start time, from /proc (Linux); undefined elsewhere. */
function processStat(pid: number): { state?: string; start?: string } {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the command name (which may hold spaces and parentheses): the 3rd is the state, the 22nd starttime.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { state: fields[0], start: fields[19] };
  } catch {
    return {};
  }
}

const processStart = (pid: number) => processStat(pid).start;

function alive(body: HoldBody): boolean {
  if (body.host !== hostname()) return true;
  try {
    process.kill(body.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  const { state, start } = processStat(body.pid);
  // A killed holder its parent (the editor) has not reaped yet is a zombie: its pid answers, but it is gone.
  if (state === "Z" || state === "X") return false;
  return body.start === undefined || start === undefined || start === body.start;
}

function readHold(path: string): HoldBody | null | undefined {
  try {
    return JSON.parse(fs.readFileSync(path, "utf8")) as HoldBody;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ENOENT" ? undefined : null;
  }
}

const held = new Set<string>();
let exitHook = false;

/** The hold of one session file, taken. `release` is idempotent. */
export interface SessionHold {
  readonly path: string;
  release(): void;
}

/**
 * Takes the hold of a session's file, or throws SessionHeldError naming the live holder. Ours
 * already (this process: a session closed and loaded again) is taken again.
 */
export function takeHold(file: string, sessionId: string): SessionHold {
  const path = holdPathFor(file);
  const body: HoldBody = { pid: process.pid, host: hostname(), start: processStart(process.pid), at: new Date().toISOString() };
  for (let attempt = 0; ; attempt++) {
    try {
      fs.writeFileSync(path, JSON.stringify(body), { flag: "wx", mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST" || attempt > 5) throw err;
    }
    const found = readHold(path);
    if (found === undefined) continue;
    // An unreadable hold is a crash between create and write: taken over.
    if (found && found.pid !== process.pid && alive(found)) throw new SessionHeldError(sessionId, found.pid, found.at);
    fs.rmSync(path, { force: true });
  }
  held.add(path);
  if (!exitHook) {
    exitHook = true;
    process.once("exit", () => {
      for (const p of held) releasePath(p);
    });
  }
  let released = false;
  return {
    path,
    release() {
      if (released) return;
      released = true;
      held.delete(path);
      releasePath(path);
    },
  };
}

/** Removes a hold file if it is this process's (a later holder's stays). */
function releasePath(path: string): void {
  const found = readHold(path);
  if (found && found.pid === process.pid && found.host === hostname()) fs.rmSync(path, { force: true });
}
