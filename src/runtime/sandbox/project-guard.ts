import { lstatSync, readFileSync, readlinkSync, watch, type FSWatcher } from "node:fs";
import os from "node:os";
import path from "node:path";
import { readGitPointer } from "../../config/git-pointer.js";
import { realOrUndefined } from "../../config/real-path.js";
import { PROJECT_CONTROL_PATHS } from "../../tool/project-control.js";
import { isInside } from "../../tool/paths.js";
import { fileIdentity, type GitFinding, type NestedGitCheck, type Plant } from "./nested-git.js";
import { removePlant, type QuarantineFor } from "./quarantine.js";

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
  /** The writable folder it lies in (a real path): from there down, nothing is followed when it is taken out. */
  base: string;
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
  const pointer = readGitPointer(git);
  if (!pointer) return;
  const { gitDir, commonDir } = pointer;
  const configs = [path.join(gitDir, "config"), path.join(gitDir, "config.worktree")];
  // The `.git` entry itself is guarded by the caller; what it points to is guarded here.
  if (gitDir !== git) guard(gitDir);
  if (commonDir !== gitDir) {
    guard(commonDir);
    configs.push(path.join(commonDir, "config"));
  }
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
  /** The deepest writable folder `p` lies in, as written. */
  const baseOf = (p: string) =>
    writable.filter((w) => isInside(p, w) && p !== w).reduce<string | undefined>((a, w) => (a && a.length >= w.length ? a : w), undefined);
  /** Protects an existing path (its real path, if writable), or watches a missing one. */
  const guard = (p: string, root: string, watchMissing = true) => {
    const stat = lstatOrUndefined(p);
    const base = baseOf(p);
    if (!stat) {
      if (watchMissing && base) watched.push({ path: p, root, base });
      return;
    }
    if (stat.isSymbolicLink() && base) watched.push({ path: p, root, base, link: readlinkSync(p) });
    const real = realOrUndefined(p);
    if (real && writable.some((w) => isInside(real, w))) {
      protect.add(real);
      // A folder: toolhost's own tools write inside it, never replace it; a file may be replaced by an approved write.
      const realBase = baseOf(real);
      if (stat.isDirectory() && realBase) watched.push({ path: real, root, base: realBase, id: fileIdentity(stat) });
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

/**
 * After the command: every watched path that appeared (or a symlink that changed) is taken out of
 * the workspace (`quarantine.ts`: moved to the call's quarantine, or deleted when it cannot be),
 * and so is what the map of nested repositories says the command planted (`nested.changes()`); a
 * changed symlink is put back. One that could be neither moved nor deleted is the map's to refuse
 * commands for (`nested.failed`). Returns the note for the call's result.
 */
export async function settleProjectGuard(
  watched: readonly Watched[],
  into: (root: string) => QuarantineFor,
  nested: NestedGitCheck,
): Promise<string | undefined> {
  // Asked first: the map's answer is a round trip to its worker, and a moved path's note must follow its move at once.
  const plants = await nested.changes();
  const moved: string[] = [];
  const deleted: string[] = [];
  const failed: string[] = [];
  const take = (plant: Plant, base: string) => {
    const where = path.relative(plant.root, plant.path);
    try {
      const removal = removePlant(plant.path, base, into(plant.root), plant.link);
      if (removal && "moved" in removal) moved.push(`${where} → ${removal.moved}`);
      else if (removal) deleted.push(`${where} (${removal.deleted})`);
      return true;
    } catch (err) {
      nested.failed(plant);
      failed.push(`${where} (${(err as Error).message})`);
      return false;
    }
  };
  for (const w of watched) {
    const stat = lstatOrUndefined(w.path);
    if (!stat) continue;
    if (w.id !== undefined && fileIdentity(stat) === w.id) continue;
    if (w.link !== undefined && stat.isSymbolicLink() && readlinkSync(w.path) === w.link) continue;
    take({ path: w.path, root: w.root, ...(w.link !== undefined ? { link: w.link } : {}) }, w.base);
  }
  const gone: string[] = [];
  for (const plant of plants) {
    // In a plant taken already (a `.git` found inside a planted folder).
    if (gone.some((g) => isInside(plant.path, g))) continue;
    if (take(plant, plant.root)) gone.push(plant.path);
  }
  if (!moved.length && !deleted.length && !failed.length) return undefined;
  const notes = [
    `The sandbox protects files that run later as code outside it (git hooks and config, a git repository anywhere in the workspace, .toolhost, .mcp.json, .vscode, .envrc…).`,
    ...(moved.length
      ? [`This command created or replaced ${moved.length === 1 ? "one" : "some"}, moved to quarantine: ${moved.join("; ")}.`]
      : []),
    ...(deleted.length
      ? [
          `It created or replaced ${deleted.length === 1 ? "one" : "some"} that could not be moved to quarantine, deleted: ${deleted.join("; ")}.`,
        ]
      : []),
    ...(failed.length
      ? [`It planted some that could be neither moved nor deleted, and no command runs until they are removed: ${failed.join("; ")}.`]
      : []),
    `To write there, run the command again with sandbox: "off" and a justification; the user is asked every time.`,
  ];
  // The user's log hears of what was deleted or left too, not only the model.
  if (deleted.length || failed.length) console.error(`toolhost: sandbox: ${notes.slice(1, -1).join(" ")}`);
  return notes.join(" ");
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
