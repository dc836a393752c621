import { lstatSync, readFileSync, readlinkSync, symlinkSync, watch, type FSWatcher } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { realOrUndefined } from "../../config/real-path.js";
import { PROJECT_CONTROL_PATHS } from "../../tool/project-control.js";
import { isInside } from "../../tool/paths.js";

// The sandbox's side of issue 20 class 2: a sandboxed command must not plant code that runs
// later outside it (git hooks, .git/config, .toolhost, .mcp.json, .vscode, .envrc…). Entries that
// exist are bound read-only over the writable workspace. One that does not exist cannot be bound
// (bwrap would create it on the host), so it is watched: should the command create it, it is
// moved to a quarantine folder in the session's sidecar folder once the command has ended (its
// pid namespace is gone with it, so nothing inside can still race), and the call says so.
// A background process lives on, so for it the watch is live: what it creates is moved the moment
// it appears (`watchProjectGuard`), not when it ends. And an entry bound read-only may vanish
// before the command starts (another command's quarantine): the bind is then skipped
// (`--ro-bind-try`), and a folder, watched by its inode, is moved if the command re-creates it.

/** A path inside a writable root that did not exist (or was a symlink) before the command. */
interface Watched {
  path: string;
  /** The workspace root it belongs to, for the note. */
  root: string;
  /** A symlink's target before the command; undefined when the path did not exist. */
  link?: string;
  /** A protected folder's identity before the command (inode and birth time: an inode number is reused): another after it was re-created. */
  ino?: string;
}

export interface ProjectGuard {
  /** Real paths to bind read-only after the writable roots. */
  protect: string[];
  watched: Watched[];
}

/** Which file this is: the inode, and the birth time where the file system keeps one. */
function identity(stat: { ino: number; birthtimeMs: number }): string {
  return `${stat.ino}:${stat.birthtimeMs}`;
}

function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/** `core.hooksPath` of a git config file, when it sets one (the last wins, as git reads it). */
function hooksPath(configFile: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(configFile, "utf8");
  } catch {
    return undefined;
  }
  let section = "";
  let found: string | undefined;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    const header = /^\[\s*([^\]\s"]+)/.exec(line);
    if (header) {
      section = (header[1] as string).toLowerCase();
      continue;
    }
    const kv = /^hookspath\s*=\s*(.*)$/i.exec(line);
    if (section === "core" && kv) found = (kv[1] as string).replace(/^"(.*)"$/, "$1").trim();
  }
  return found;
}

/**
 * What to protect under the workspace roots, given every writable folder of the call: each
 * `PROJECT_CONTROL_PATHS` entry; the git folder a `.git` file points to (and its common folder),
 * and a `core.hooksPath` folder, when they lie in a writable folder.
 */
export function projectGuard(roots: readonly string[], writable: readonly string[]): ProjectGuard {
  const protect = new Set<string>();
  const watched: Watched[] = [];
  const inWritable = (p: string) => writable.some((w) => isInside(p, w));
  /** Protects an existing path (its real path, if writable), or watches a missing one. */
  const guard = (p: string, root: string) => {
    const stat = lstatOrUndefined(p);
    if (!stat) {
      if (inWritable(p)) watched.push({ path: p, root });
      return;
    }
    if (stat.isSymbolicLink()) watched.push({ path: p, root, link: readlinkSync(p) });
    const real = realOrUndefined(p);
    if (real && inWritable(real)) {
      protect.add(real);
      // A folder: toolhost's own tools write inside it, never replace it; a file may be replaced by an approved write.
      if (stat.isDirectory()) watched.push({ path: p, root, ino: identity(stat) });
    }
  };
  for (const root of roots) {
    const gitConfigs: string[] = [];
    for (const name of PROJECT_CONTROL_PATHS) guard(path.join(root, name), root);
    const git = path.join(root, ".git");
    const gitStat = lstatOrUndefined(git);
    if (gitStat?.isFile()) {
      // A worktree or submodule: `gitdir: X`, and X/commondir names the shared folder.
      const gitdir = /^gitdir:\s*(.+)$/m.exec(readFileSync(git, "utf8"))?.[1]?.trim();
      if (gitdir) {
        const dir = path.resolve(root, gitdir);
        guard(dir, root);
        gitConfigs.push(path.join(dir, "config"));
        let common: string | undefined;
        try {
          common = path.resolve(dir, readFileSync(path.join(dir, "commondir"), "utf8").trim());
        } catch {
          // not a worktree
        }
        if (common) {
          guard(common, root);
          gitConfigs.push(path.join(common, "config"));
        }
      }
    } else if (gitStat?.isDirectory()) gitConfigs.push(path.join(git, "config"));
    for (const config of gitConfigs) {
      const hooks = hooksPath(config);
      if (!hooks) continue;
      const dir = hooks.startsWith("~/") ? path.join(os.homedir(), hooks.slice(2)) : path.resolve(root, hooks);
      guard(dir, root);
    }
  }
  return { protect: [...protect], watched };
}

let quarantined = 0;

/**
 * After the command: every watched path that appeared (or a symlink that changed) is moved to
 * `quarantineDir`; a changed symlink is put back. Returns the note for the call's result.
 */
export async function settleProjectGuard(watched: readonly Watched[], quarantineDir: string): Promise<string | undefined> {
  const moved: string[] = [];
  for (const w of watched) {
    const stat = lstatOrUndefined(w.path);
    if (!stat) continue;
    if (w.ino !== undefined && identity(stat) === w.ino) continue;
    if (w.link !== undefined && stat.isSymbolicLink() && readlinkSync(w.path) === w.link) continue;
    const rel = path.relative(w.root, w.path);
    // Unique per move: a live watch settles the same call more than once.
    const dest = path.join(quarantineDir, `${path.basename(w.root)}-${++quarantined}`, rel);
    await fsp.mkdir(path.dirname(dest), { recursive: true, mode: 0o700 });
    await fsp.rename(w.path, dest).catch(async (err: NodeJS.ErrnoException) => {
      if (err.code !== "EXDEV") throw err;
      await fsp.cp(w.path, dest, { recursive: true, verbatimSymlinks: true });
      await fsp.rm(w.path, { recursive: true, force: true });
    });
    if (w.link !== undefined) symlinkSync(w.link, w.path);
    moved.push(`${rel} → ${dest}`);
  }
  if (!moved.length) return undefined;
  return [
    `The sandbox protects files that run later as code outside it (git hooks and config, .toolhost, .mcp.json, .vscode, .envrc…).`,
    `This command created or replaced ${moved.length === 1 ? "one" : "some"}, moved to quarantine: ${moved.join("; ")}.`,
    `To write there, run the command again with sandbox: "off" and a justification; the user is asked every time.`,
  ].join(" ");
}

/**
 * While a background process runs: watches the folders of its watched paths and settles as soon
 * as one of them appears or changes, so what it plants never waits in the workspace for its end.
 * `settle` is the call's own (serialized here); what it says is passed to `said`.
 */
export function watchProjectGuard(
  watched: readonly Watched[],
  settle: () => Promise<string | undefined>,
  said: (note: string) => void,
): { close(): void } {
  const byFolder = new Map<string, Set<string>>();
  for (const w of watched) {
    if (w.ino !== undefined) continue; // bound read-only while it runs
    const names = byFolder.get(path.dirname(w.path)) ?? new Set<string>();
    names.add(path.basename(w.path));
    byFolder.set(path.dirname(w.path), names);
  }
  let chain: Promise<unknown> = Promise.resolve();
  const check = () => {
    chain = chain.then(settle).then(
      (note) => note && said(note),
      () => {},
    );
  };
  const watchers: FSWatcher[] = [];
  for (const [folder, names] of byFolder) {
    try {
      const watcher = watch(folder, { persistent: false }, (_event, name) => {
        if (name === null || names.has(String(name))) check();
      });
      watcher.on("error", () => {});
      watchers.push(watcher);
    } catch {
      // A folder that is gone cannot hold a plant; the check at the end still runs.
    }
  }
  return { close: () => watchers.forEach((w) => w.close()) };
}
