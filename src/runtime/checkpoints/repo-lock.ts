import { processAlive } from "../process-alive.js";
import { mkdir, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

// Who may use the shadow repository at once. Sessions (in this process or another) write objects
// side by side: each has its own index and its own refs, and git writes objects and single refs
// safely in parallel. Only packing is exclusive: `git gc --prune=now` would delete the objects of a
// snapshot that is being written but not yet named by a ref. So every operation holds a shared
// marker file, and packing holds `pack.lock` once no marker is left:
//   shared:    create marker; if pack.lock exists, remove the marker, wait for pack.lock to go, retry.
//   exclusive: create pack.lock (O_EXCL); wait until no marker is left; pack; remove pack.lock.
// A marker made after pack.lock sees it and backs off; one made before it is waited for. Files of
// a process that is gone, or older than STALE_MS, are stale and removed.

const POLL_MS = 20;
const STALE_MS = 10 * 60_000;
const WAIT_MS = 120_000;
let counter = 0;

/** Whether a lock file named `<kind>-<pid>-…` (pid also for pack.lock's content) is stale. */
async function stale(file: string, pid: number): Promise<boolean> {
  if (!processAlive(pid)) return true;
  const info = await stat(file).catch(() => undefined);
  return !info || Date.now() - info.mtimeMs > STALE_MS;
}

const pidOf = (name: string): number => Number(/^active-(\d+)-/.exec(name)?.[1] ?? NaN);

export class RepoLock {
  private readonly packLock: string;

  constructor(private readonly dir: string) {
    this.packLock = path.join(dir, "pack.lock");
  }

  /** Whether pack.lock is held by a live process (a stale one is removed). */
  private async packing(): Promise<boolean> {
    const info = await stat(this.packLock).catch(() => undefined);
    if (!info) return false;
    const pid = Number((await readFile(this.packLock, "utf8").catch(() => "")).trim());
    if (Number.isFinite(pid) && pid > 0 && !(await stale(this.packLock, pid))) return true;
    await rm(this.packLock, { force: true });
    return false;
  }

  async shared<T>(fn: () => Promise<T>): Promise<T> {
    await mkdir(this.dir, { recursive: true });
    const marker = path.join(this.dir, `active-${process.pid}-${++counter}`);
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      await writeFile(marker, "", { flag: "wx" });
      if (!(await this.packing())) break;
      await rm(marker, { force: true });
      while (await this.packing()) {
        if (Date.now() > deadline) throw new Error(`checkpoints: ${this.packLock} is held too long`);
        await sleep(POLL_MS);
      }
    }
    try {
      return await fn();
    } finally {
      await rm(marker, { force: true });
    }
  }

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await mkdir(this.dir, { recursive: true });
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      try {
        await writeFile(this.packLock, String(process.pid), { flag: "wx" });
        break;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
        if (Date.now() > deadline) throw new Error(`checkpoints: ${this.packLock} is held too long`, { cause: error });
        if (!(await this.packing())) continue;
        await sleep(POLL_MS);
      }
    }
    try {
      for (;;) {
        const markers = (await readdir(this.dir)).filter((name) => name.startsWith("active-"));
        let live = 0;
        for (const name of markers) {
          const file = path.join(this.dir, name);
          if (await stale(file, pidOf(name))) await rm(file, { force: true });
          else live++;
        }
        if (!live) break;
        if (Date.now() > deadline) throw new Error("checkpoints: other sessions keep the repository busy");
        await sleep(POLL_MS);
      }
      return await fn();
    } finally {
      await rm(this.packLock, { force: true });
    }
  }
}
