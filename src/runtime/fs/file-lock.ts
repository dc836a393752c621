import { processAlive } from "../process-alive.js";
import { randomBytes } from "node:crypto";
import * as fsp from "node:fs/promises";
import { hostname } from "node:os";
import path from "node:path";
import { ToolError } from "../../tool/errors.js";

// An advisory lock between processes, for one file: `.<name>.toolhost-lock` next to it, created
// with O_CREAT|O_EXCL.
// It holds the holder's pid, host and a nonce. The in-process `KeyedLock` orders the calls of one
// process; this one orders processes, so "re-stat, compare version, write, rename" is one step.

/** A lock whose holder is alive is never taken over before this; past it, the pid may be reused. */
const MAX_HOLD_MS = 10 * 60 * 1000;
/** How long a caller waits for a live holder before the call fails. */
const DEFAULT_WAIT_MS = 60 * 1000;

interface LockBody {
  pid: number;
  host: string;
  nonce: string;
  at: number;
}

/** The lock file of a path: next to it, or next to its first missing folder (a new file in a new folder). */
export async function lockPathFor(abs: string): Promise<string> {
  let existing = abs;
  let child = abs;
  for (;;) {
    const parent = path.dirname(existing);
    try {
      const real = await fsp.realpath(parent);
      // Through a symlink to its target, so two spellings of one file share the lock.
      const file = await fsp.realpath(existing).catch(() => path.join(real, path.basename(child)));
      return path.join(path.dirname(file), `.${path.basename(file)}.toolhost-lock`);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== "ENOENT" && code !== "ENOTDIR") || parent === existing) throw err;
      child = existing = parent;
    }
  }
}

async function readBody(lock: string): Promise<{ body: LockBody | null; mtimeMs: number } | null> {
  try {
    const [text, stat] = await Promise.all([fsp.readFile(lock, "utf8"), fsp.stat(lock)]);
    try {
      return { body: JSON.parse(text) as LockBody, mtimeMs: stat.mtimeMs };
    } catch {
      return { body: null, mtimeMs: stat.mtimeMs };
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
}

/** Stale: its holder's process is gone (same host), or it was held longer than anyone holds a lock. */
function isStale(found: { body: LockBody | null; mtimeMs: number }, now: number): boolean {
  if (now - found.mtimeMs > MAX_HOLD_MS) return true;
  const { body } = found;
  if (!body || typeof body.pid !== "number") return now - found.mtimeMs > 5000;
  return body.host === hostname() && !processAlive(body.pid);
}

/** Takes a stale lock away: renamed aside first, so of two processes that both saw it stale, one removes it. */
async function breakStale(lock: string, seen: LockBody | null): Promise<void> {
  const aside = `${lock}.${randomBytes(6).toString("hex")}.stale`;
  try {
    await fsp.rename(lock, aside);
  } catch {
    return;
  }
  const moved = await readBody(aside).catch(() => null);
  if (seen && moved?.body && moved.body.nonce !== seen.nonce) {
    // Someone took the lock between our look and the rename: put theirs back.
    await fsp.link(aside, lock).catch(() => {});
  }
  await fsp.rm(aside, { force: true });
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Holds `.<name>.toolhost-lock` next to `abs` while `fn` runs. A folder where no lock can be
 * made (read-only) runs `fn` without one: the write there fails on its own.
 */
export async function withFileLock<T>(abs: string, fn: () => Promise<T>, waitMs = DEFAULT_WAIT_MS): Promise<T> {
  let lock: string;
  try {
    lock = await lockPathFor(abs);
  } catch {
    return fn();
  }
  const body: LockBody = { pid: process.pid, host: hostname(), nonce: randomBytes(8).toString("hex"), at: Date.now() };
  const deadline = Date.now() + waitMs;
  let delay = 2;
  for (;;) {
    try {
      // O_CREAT|O_EXCL: one process creates it. A reader that finds it still empty waits (see isStale).
      await fsp.writeFile(lock, JSON.stringify(body), { flag: "wx", mode: 0o600 });
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") return fn();
    }
    const found = await readBody(lock);
    if (found && isStale(found, Date.now())) {
      await breakStale(lock, found.body);
      continue;
    }
    if (Date.now() > deadline) {
      const holder = found?.body ? `process ${found.body.pid}` : "another process";
      throw new ToolError("unavailable", `${abs} is being changed by ${holder} (lock ${lock}); try again once it is done.`);
    }
    await pause(delay);
    delay = Math.min(delay * 2, 50);
  }
  try {
    return await fn();
  } finally {
    // Only our own lock: never one a stale-lock breaker put in its place.
    const mine = await readBody(lock).catch(() => null);
    if (mine?.body?.nonce === body.nonce) await fsp.rm(lock, { force: true });
  }
}
