import { closeSync, constants, fstatSync, openSync, readSync, realpathSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { realOrUndefined } from "./real-path.js";
import { packageInfo, toolhostHome } from "./paths.js";

// The one way toolhost reads a file it feeds itself (AGENTS.md, SKILL.md, agent files, config
// files, profiles): only a regular file whose real path lies in one of the caller's roots, opened
// without blocking (a FIFO or a device named AGENTS.md must not hang a session) and without
// following a last symlink, checked on the opened handle, and read up to a cap. A symlink
// `AGENTS.md -> /proc/self/environ` or `-> ~/.ssh/id_rsa` never reaches the model.

export interface ConfinedReadOptions {
  /** Folders the file's real path must lie in (their real paths are compared). */
  roots: readonly string[];
  /** Bytes read at most; `size` says how large the file is. */
  maxBytes: number;
}

export type ConfinedRead =
  /** `data`: the first `maxBytes` bytes at most; `size`: the file's whole size. */
  | { ok: true; data: Buffer; size: number }
  /** The file is not there (or a folder on its way is not). */
  | { ok: false; missing: true }
  /** The file is there but is not read: why, in a sentence fragment that names it. */
  | { ok: false; missing: false; reason: string };

const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** Roots for a file of the user's own (config, profiles, user-level skills and agents): their config home, home and toolhost's package. */
export function userRoots(): string[] {
  const pkg = packageInfo()?.dir;
  return [toolhostHome(), process.env.HOME || os.homedir(), ...(pkg ? [pkg] : [])];
}

const realOrNull = (p: string): string | null => realOrUndefined(p) ?? null;

const inside = (file: string, root: string) => file === root || file.startsWith(root.endsWith(path.sep) ? root : root + path.sep);

function missing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException).code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** The real path to open, or why the file is refused. */
function confine(file: string, real: string, roots: readonly string[]): string | null {
  const realRoots = roots.map(realOrNull).filter((r): r is string => r !== null);
  if (realRoots.some((root) => inside(real, root))) return null;
  return `${file} is not read: it leads to ${real}, outside ${roots.join(", ")}`;
}

const notRegular = (file: string) => `${file} is not read: it is not a regular file`;
const failed = (file: string, err: unknown) => `${file} cannot be read: ${err instanceof Error ? err.message : String(err)}`;

/** Reads `file` as the module comment says, synchronously. Never throws. */
export function readConfinedFileSync(file: string, options: ConfinedReadOptions): ConfinedRead {
  let real: string;
  try {
    real = realpathSync(file);
  } catch (err) {
    return missing(err) ? { ok: false, missing: true } : { ok: false, missing: false, reason: failed(file, err) };
  }
  const refused = confine(file, real, options.roots);
  if (refused) return { ok: false, missing: false, reason: refused };
  let fd: number;
  try {
    fd = openSync(real, FLAGS);
  } catch (err) {
    return missing(err) ? { ok: false, missing: true } : { ok: false, missing: false, reason: failed(file, err) };
  }
  try {
    const s = fstatSync(fd);
    if (!s.isFile()) return { ok: false, missing: false, reason: notRegular(file) };
    const buffer = Buffer.alloc(Math.min(s.size, options.maxBytes));
    let got = 0;
    while (got < buffer.length) {
      const n = readSync(fd, buffer, got, buffer.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return { ok: true, data: buffer.subarray(0, got), size: s.size };
  } catch (err) {
    return { ok: false, missing: false, reason: failed(file, err) };
  } finally {
    closeSync(fd);
  }
}

/** Reads `file` as the module comment says. Never throws. */
export async function readConfinedFile(file: string, options: ConfinedReadOptions): Promise<ConfinedRead> {
  let real: string;
  try {
    real = await fsp.realpath(file);
  } catch (err) {
    return missing(err) ? { ok: false, missing: true } : { ok: false, missing: false, reason: failed(file, err) };
  }
  const refused = confine(file, real, options.roots);
  if (refused) return { ok: false, missing: false, reason: refused };
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(real, FLAGS);
  } catch (err) {
    return missing(err) ? { ok: false, missing: true } : { ok: false, missing: false, reason: failed(file, err) };
  }
  try {
    const s = await handle.stat();
    if (!s.isFile()) return { ok: false, missing: false, reason: notRegular(file) };
    const buffer = Buffer.alloc(Math.min(s.size, options.maxBytes));
    let got = 0;
    while (got < buffer.length) {
      const { bytesRead } = await handle.read(buffer, got, buffer.length - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return { ok: true, data: buffer.subarray(0, got), size: s.size };
  } catch (err) {
    return { ok: false, missing: false, reason: failed(file, err) };
  } finally {
    await handle.close();
  }
}

/** Config files (JSON) are read up to this; a larger one is refused. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;

/**
 * A config file's text: null when missing; `error` when refused or over the cap (the caller
 * reports it as it reports a file that is not valid JSON).
 */
export function readConfigTextSync(file: string, roots: readonly string[]): { text: string | null; error?: string } {
  const read = readConfinedFileSync(file, { roots, maxBytes: MAX_CONFIG_BYTES + 1 });
  if (!read.ok) return read.missing ? { text: null } : { text: null, error: read.reason };
  if (read.size > MAX_CONFIG_BYTES) return { text: null, error: `${file} is not read: it is ${read.size} bytes, over ${MAX_CONFIG_BYTES}` };
  return { text: read.data.toString("utf8") };
}
