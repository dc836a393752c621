import { createHash } from "node:crypto";
import { constants } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";

// What trusting a project covers: its files that toolhost loads only in a trusted project (tools,
// agents, skills, config with MCP servers and permission rules), each recorded as the user saw
// it (path → sha256; a symlink as its target). A later change to any of them (a sandboxed command
// or an unapproved edit writing there) makes the project untrusted until the user trusts it again.

/** Paths, relative to the project, whose contents a trusted project loads. */
export const TRUSTED_CONTENT_PATHS: readonly string[] = [
  ".toolhost/tools", // imported: runs code
  ".toolhost/packages", // tool packages: their lock (versions, integrity), tarballs, manifests
  ".toolhost/agents",
  ".toolhost/skills",
  ".toolhost/config.json", // MCP servers (programs that run), permission rules
  ".mcp.json", // MCP servers
  ".claude/settings.json", // hooks (programs that run)
  ".claude/settings.local.json", // hooks too, the user's own
  ".claude/agents",
  ".claude/skills",
  ".agents/skills",
];

/** Bounds of one snapshot: past them the rest is left out and the snapshot says so. */
const MAX_ENTRIES = 5000;
const MAX_DEPTH = 12;
/** A file larger than this is recorded by size and modification time, not read. */
const MAX_HASHED_BYTES = 32 * 1024 * 1024;
/** Folders not walked (dependencies, history): recorded as present, their contents left out. */
const SKIPPED_DIRS = new Set(["node_modules", ".git"]);

export interface ContentSnapshot {
  /** Relative path (`/`-separated) → `sha256:<hex>`, `symlink:<target>[ sha256:<hex>]`, `dir-not-walked`, `large:<size>:<mtime>` or `other`. */
  files: Record<string, string>;
  /** The bounds were reached: entries past them are not recorded. */
  truncated?: boolean;
}

export interface ContentChange {
  path: string;
  change: "added" | "modified" | "removed";
}

const FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

/** sha256 of a regular file, read without following a link or blocking; null when it is not one. */
async function hashFile(abs: string): Promise<string | null> {
  let handle: fsp.FileHandle;
  try {
    handle = await fsp.open(abs, FLAGS);
  } catch {
    return null;
  }
  try {
    const s = await handle.stat();
    if (!s.isFile()) return null;
    if (s.size > MAX_HASHED_BYTES) return `large:${s.size}:${Math.trunc(s.mtimeMs)}`;
    const hash = createHash("sha256");
    const buffer = Buffer.alloc(64 * 1024);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) break;
      hash.update(buffer.subarray(0, bytesRead));
    }
    return `sha256:${hash.digest("hex")}`;
  } finally {
    await handle.close();
  }
}

const inside = (abs: string, root: string) => abs === root || abs.startsWith(root + path.sep);

/**
 * Records the trusted content of a project: regular files by sha256, symlinks as links (followed
 * only when they stay inside the project), bounded in entries and depth. `root`: the project's
 * real path, its trust key (trust.ts's `projectKey`), not resolved again here.
 */
export async function snapshotContents(root: string): Promise<ContentSnapshot> {
  const files: Record<string, string> = {};
  let truncated = false;
  const walkedDirs = new Set<string>();
  const full = () => Object.keys(files).length >= MAX_ENTRIES;

  /** Records `rel` (and what lies under it), following links only inside the project. */
  const visit = async (rel: string, depth: number): Promise<void> => {
    if (full()) {
      truncated = true;
      return;
    }
    const abs = path.join(root, rel);
    const s = await fsp.lstat(abs).catch(() => null);
    if (!s) return;
    let target = abs;
    let prefix = "";
    if (s.isSymbolicLink()) {
      prefix = `symlink:${await fsp.readlink(abs).catch(() => "?")}`;
      const real = await fsp.realpath(abs).catch(() => null);
      if (!real || !inside(real, root)) {
        files[rel] = prefix;
        return;
      }
      target = real;
    }
    const t = prefix ? await fsp.stat(target).catch(() => null) : s;
    if (t?.isDirectory()) {
      if (prefix) files[rel] = prefix;
      if (SKIPPED_DIRS.has(path.basename(rel))) {
        files[rel] = prefix || "dir-not-walked";
        return;
      }
      if (depth >= MAX_DEPTH || walkedDirs.has(target)) {
        truncated ||= depth >= MAX_DEPTH;
        return;
      }
      walkedDirs.add(target);
      const names = (await fsp.readdir(target).catch(() => [] as string[])).sort();
      for (const name of names) await visit(`${rel}/${name}`, depth + 1);
      return;
    }
    const hashed = t?.isFile() ? await hashFile(target) : null;
    files[rel] = [prefix, hashed ?? (prefix ? "" : "other")].filter(Boolean).join(" ");
  };

  for (const rel of TRUSTED_CONTENT_PATHS) {
    // A link on the way (`.toolhost -> elsewhere`) is recorded, and not followed out of the project.
    const first = rel.split("/")[0] as string;
    if (first !== rel) {
      const s = await fsp.lstat(path.join(root, first)).catch(() => null);
      if (s?.isSymbolicLink()) {
        files[first] ??= `symlink:${await fsp.readlink(path.join(root, first)).catch(() => "?")}`;
        const real = await fsp.realpath(path.join(root, first)).catch(() => null);
        if (!real || !inside(real, root)) continue;
      }
    }
    await visit(rel, 0);
  }
  return truncated ? { files, truncated } : { files };
}

/** What changed from `before` to `after`, sorted by path. */
export function diffContents(before: Record<string, string>, after: Record<string, string>): ContentChange[] {
  const changes: ContentChange[] = [];
  for (const [file, value] of Object.entries(after)) {
    if (!Object.hasOwn(before, file)) changes.push({ path: file, change: "added" });
    else if (before[file] !== value) changes.push({ path: file, change: "modified" });
  }
  for (const file of Object.keys(before)) if (!Object.hasOwn(after, file)) changes.push({ path: file, change: "removed" });
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The changes as lines (`- modified: .toolhost/tools/x.ts`), at most `max`, then how many more. */
export function formatContentChanges(changes: readonly ContentChange[], max = 20): string {
  const lines = changes.slice(0, max).map((c) => `- ${c.change}: ${c.path}`);
  if (changes.length > max) lines.push(`- … and ${changes.length - max} more`);
  return lines.join("\n");
}
