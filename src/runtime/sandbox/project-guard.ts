import { lstatSync, readFileSync, readlinkSync, symlinkSync, watch, type FSWatcher } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { realOrUndefined } from "../../config/real-path.js";
import { PROJECT_CONTROL_PATHS } from "../../tool/project-control.js";
import { isInside } from "../../tool/paths.js";
import { fileIdentity, type GitFinding, type NestedGitCheck } from "./nested-git.js";

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
// Nested repositories anywhere in a root are found by the session's map (`nested-git.ts`): what it
// finds is bound here the same way, and what it says a command planted is moved here too.

/** A path inside a writable root that did not exist (or was a symlink) before the command. */
interface Watched {
  path: string;
  /** The workspace root it belongs to, for the note. */
  root: string;
  /** A symlink's target before the command; undefined when the path did not exist. */
  link?: string;
  /** A protected folder's identity before the command (fileIdentity): another after it was re-created. */
  id?: string;
}

export interface ProjectGuard {
  /** Real paths to bind read-only after the writable roots. */
  protect: string[];
  watched: Watched[];
}

function lstatOrUndefined(p: string) {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

/** A git config value as git reads it: quotes and escapes undone, an unquoted `#` or `;` ends it. */
function configValue(raw: string): string {
  let out = "";
  let quoted = false;
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] as string;
    if (c === '"') quoted = !quoted;
    else if (!quoted && (c === "#" || c === ";")) break;
    else if (c === "\\" && i + 1 < raw.length) {
      const next = raw[++i] as string;
      out += next === "n" ? "\n" : next === "t" ? "\t" : next;
    } else out += c;
  }
  return out.trim();
}

/**
 * What a git config file makes git read or run from elsewhere: `core.hooksPath` (against
 * `worktree`) and the files `include.path` and `includeIf.*.path` name (against the file's
 * folder), and theirs in turn (the last hooksPath wins as git reads it, but every one is kept).
 */
function configLinks(configFile: string, worktree: string, depth = 0): string[] {
  let text: string;
  try {
    text = readFileSync(configFile, "utf8");
  } catch {
    return [];
  }
  const expand = (value: string, base: string) =>
    value.startsWith("~/") ? path.join(os.homedir(), value.slice(2)) : path.resolve(base, value);
  const links: string[] = [];
  let section = "";
  for (const raw of text.split("\n")) {
    let line = raw.trim();
    // `[section]`, `[section "sub"]` or `[section.sub]`, and a key may follow on the same line.
    const header = /^\[\s*([^\]\s".]+)[^\]]*\]/.exec(line);
    if (header) {
      section = (header[1] as string).toLowerCase();
      line = line.slice(header[0].length).trim();
    }
    const kv = /^([A-Za-z][\w-]*)\s*=\s*(.*)$/.exec(line);
    if (!kv) continue;
    const key = (kv[1] as string).toLowerCase();
    const value = configValue(kv[2] as string);
    if (!value) continue;
    if (section === "core" && key === "hookspath") links.push(expand(value, worktree));
    if ((section === "include" || section === "includeif") && key === "path") {
      const included = expand(value, path.dirname(configFile));
      links.push(included);
      if (depth < 4) links.push(...configLinks(included, worktree, depth + 1));
    }
  }
  return links;
}

/** A git folder's entries git reads config or runs code from. */
const GITDIR_CONTROL = ["config", "config.worktree", "hooks", "commondir"];

/**
 * What a repository whose `.git` is `git` (in `worktree`) leads git to: the git folder a `.git`
 * file points to and its common folder, and what its config files link to (`configLinks`).
 */
function guardRepo(worktree: string, git: string, guard: (p: string) => void): void {
  const configs: string[] = [];
  const stat = lstatOrUndefined(git);
  if (stat?.isFile()) {
    // A worktree or submodule: `gitdir: X`, and X/commondir names the shared folder.
    let gitdir: string | undefined;
    try {
      gitdir = /^gitdir:\s*(.+)$/m.exec(readFileSync(git, "utf8"))?.[1]?.trim();
    } catch {
      // unreadable: nothing to follow
    }
    if (!gitdir) return;
    const dir = path.resolve(worktree, gitdir);
    guard(dir);
    configs.push(path.join(dir, "config"), path.join(dir, "config.worktree"));
    let common: string | undefined;
    try {
      common = path.resolve(dir, readFileSync(path.join(dir, "commondir"), "utf8").trim());
    } catch {
      // not a worktree
    }
    if (common) {
      guard(common);
      configs.push(path.join(common, "config"));
    }
  } else if (stat) configs.push(path.join(git, "config"), path.join(git, "config.worktree"));
  for (const config of configs) for (const link of configLinks(config, worktree)) guard(link);
}

/**
 * What to protect under the workspace roots, given every writable folder of the call: each
 * `PROJECT_CONTROL_PATHS` entry; the git folder a `.git` file points to (and its common folder),
 * and a `core.hooksPath` folder or an included config file, when they lie in a writable folder.
 * And what the session's map of nested repositories found (`nested-git.ts`): each nested `.git`
 * and what it leads to, a git folder's config, hooks and commondir, a folder that cannot be listed
 * (those of them that do not exist are the map's to watch: it sees them appear).
 */
export function projectGuard(roots: readonly string[], writable: readonly string[], nested: readonly GitFinding[]): ProjectGuard {
  const protect = new Set<string>();
  const watched: Watched[] = [];
  const inWritable = (p: string) => writable.some((w) => isInside(p, w));
  /** Protects an existing path (its real path, if writable), or watches a missing one. */
  const guard = (p: string, root: string, watchMissing = true) => {
    const stat = lstatOrUndefined(p);
    if (!stat) {
      if (watchMissing && inWritable(p)) watched.push({ path: p, root });
      return;
    }
    if (stat.isSymbolicLink()) watched.push({ path: p, root, link: readlinkSync(p) });
    const real = realOrUndefined(p);
    if (real && inWritable(real)) {
      protect.add(real);
      // A folder: toolhost's own tools write inside it, never replace it; a file may be replaced by an approved write.
      if (stat.isDirectory()) watched.push({ path: p, root, id: fileIdentity(stat) });
    }
  };
  for (const root of roots) {
    for (const name of PROJECT_CONTROL_PATHS) guard(path.join(root, name), root);
    guardRepo(root, path.join(root, ".git"), (p) => guard(p, root));
  }
  for (const found of nested) {
    const { root } = found;
    if (found.kind === "gitdir") {
      for (const name of GITDIR_CONTROL) guard(path.join(found.path, name), root, false);
      for (const link of configLinks(path.join(found.path, "config"), found.path)) guard(link, root);
      continue;
    }
    guard(found.path, root, false);
    if (found.kind === "git") guardRepo(path.dirname(found.path), found.path, (p) => guard(p, root));
  }
  return { protect: [...protect], watched };
}

let quarantined = 0;

/**
 * Moves `p` (inside `root`) to a folder of its own in `quarantineDir`; undefined when it is gone.
 * A plant's folder may have been made read-only (`chmod 555 sub` after planting `sub/.git`, or the
 * plant itself, which a move to another folder must write): it is given write access for the move
 * (toolhost runs as the user who owns it) and its mode put back after.
 */
async function moveAside(p: string, root: string, quarantineDir: string): Promise<string | undefined> {
  const rel = path.relative(root, p);
  // Unique per move: a live watch settles the same call more than once.
  const dest = path.join(quarantineDir, `${path.basename(root)}-${++quarantined}`, rel);
  await fsp.mkdir(path.dirname(dest), { recursive: true, mode: 0o700 });
  const move = () => fsp.rename(p, dest);
  try {
    await move();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return undefined;
    if (code === "EXDEV") {
      await fsp.cp(p, dest, { recursive: true, verbatimSymlinks: true });
      await fsp.rm(p, { recursive: true, force: true });
    } else if (code === "EACCES" || code === "EPERM") {
      const parent = path.dirname(p);
      const parentMode = (await fsp.stat(parent)).mode & 0o7777;
      const own = await fsp.lstat(p);
      await fsp.chmod(parent, parentMode | 0o700);
      if (own.isDirectory()) await fsp.chmod(p, (own.mode & 0o7777) | 0o700);
      try {
        await move();
      } finally {
        await fsp.chmod(parent, parentMode);
      }
    } else throw err;
  }
  return dest;
}

/**
 * After the command: every watched path that appeared (or a symlink that changed) is moved to
 * `quarantineDir`, and so is what the map of nested repositories says the command planted
 * (`nested.changes()`); a changed symlink is put back. Returns the note for the call's result.
 */
export async function settleProjectGuard(
  watched: readonly Watched[],
  quarantineDir: string,
  nested: NestedGitCheck,
): Promise<string | undefined> {
  // Asked first: the map's answer is a round trip to its worker, and a moved path's note must follow its move at once.
  const plants = await nested.changes();
  const moved: string[] = [];
  const failed: string[] = [];
  for (const w of watched) {
    const stat = lstatOrUndefined(w.path);
    if (!stat) continue;
    if (w.id !== undefined && fileIdentity(stat) === w.id) continue;
    if (w.link !== undefined && stat.isSymbolicLink() && readlinkSync(w.path) === w.link) continue;
    const dest = await moveAside(w.path, w.root, quarantineDir);
    if (w.link !== undefined) symlinkSync(w.link, w.path);
    if (dest) moved.push(`${path.relative(w.root, w.path)} → ${dest}`);
  }
  const gone: string[] = [];
  for (const plant of plants) {
    // In a plant moved already (a `.git` found inside a planted folder), or in a folder swapped for a symlink since.
    if (gone.some((g) => isInside(plant.path, g)) || realOrUndefined(path.dirname(plant.path)) !== path.dirname(plant.path)) continue;
    try {
      const dest = await moveAside(plant.path, plant.root, quarantineDir);
      if (plant.link !== undefined) symlinkSync(plant.link, plant.path);
      gone.push(plant.path);
      if (dest) moved.push(`${path.relative(plant.root, plant.path)} → ${dest}`);
    } catch (err) {
      nested.failed(plant);
      failed.push(`${path.relative(plant.root, plant.path)} (${(err as Error).message})`);
    }
  }
  if (!moved.length && !failed.length) return undefined;
  return [
    `The sandbox protects files that run later as code outside it (git hooks and config, a git repository anywhere in the workspace, .toolhost, .mcp.json, .vscode, .envrc…).`,
    ...(moved.length
      ? [`This command created or replaced ${moved.length === 1 ? "one" : "some"}, moved to quarantine: ${moved.join("; ")}.`]
      : []),
    ...(failed.length
      ? [`It planted some that could not be moved, and no command runs until they are removed: ${failed.join("; ")}.`]
      : []),
    `To write there, run the command again with sandbox: "off" and a justification; the user is asked every time.`,
  ].join(" ");
}

/**
 * While a background process runs: watches the folders of its watched paths and settles as soon
 * as one of them appears or changes, so what it plants never waits in the workspace for its end;
 * and every `pollMs()` (the map of nested repositories, which a watch of every folder would not
 * keep cheaply) settles anyway. `settle` is the call's own (serialized here); what it says is
 * passed to `said`.
 */
export function watchProjectGuard(
  watched: readonly Watched[],
  settle: () => Promise<string | undefined>,
  said: (note: string) => void,
  pollMs: () => number,
): { close(): Promise<void> } {
  const byFolder = new Map<string, Set<string>>();
  for (const w of watched) {
    if (w.id !== undefined) continue; // bound read-only while it runs
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
    return chain;
  };
  const watchers: FSWatcher[] = [];
  for (const [folder, names] of byFolder) {
    try {
      const watcher = watch(folder, { persistent: false }, (_event, name) => {
        if (name === null || names.has(String(name))) void check();
      });
      watcher.on("error", () => {});
      watchers.push(watcher);
    } catch {
      // A folder that is gone cannot hold a plant; the check at the end still runs.
    }
  }
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const poll = () => {
    if (closed) return;
    timer = setTimeout(() => void check().then(poll), pollMs()).unref();
  };
  poll();
  return {
    /** Stops watching; resolves once a settle already under way has ended (the caller's last one must not overlap it). */
    close: async () => {
      closed = true;
      clearTimeout(timer);
      watchers.forEach((w) => w.close());
      await chain;
    },
  };
}
