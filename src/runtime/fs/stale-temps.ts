import { processAlive } from "../process-alive.js";
import * as fsp from "node:fs/promises";
import path from "node:path";

/** The temp file an atomic write renames over its target: `.NAME.toolhost-<pid>-<12 hex>.tmp`. */
const TEMP_NAME = /^\..+\.toolhost-(\d{1,10})-[0-9a-f]{12}\.tmp$/;

/** Older than this, a temp file of a dead writer is surely not being written any more. */
const STALE_AFTER_MS = 60_000;

export function tempNameFor(target: string, hex: string): string {
  return path.join(path.dirname(target), `.${path.basename(target)}.toolhost-${process.pid}-${hex}.tmp`);
}

/**
 * Removes what a write killed mid-way left in `dir`: only files of the exact temp pattern, whose
 * writer's pid is gone and which are older than a minute. Best effort: a failure here never fails
 * the write that asked for it.
 */
export async function removeStaleTemps(dir: string, now = Date.now()): Promise<string[]> {
  const removed: string[] = [];
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const match = TEMP_NAME.exec(name);
    if (!match || processAlive(Number(match[1]))) continue;
    const abs = path.join(dir, name);
    try {
      const s = await fsp.lstat(abs);
      if (!s.isFile() || now - s.mtimeMs < STALE_AFTER_MS) continue;
      await fsp.rm(abs);
      removed.push(abs);
    } catch {
      // Gone already, or not ours to remove.
    }
  }
  return removed;
}
