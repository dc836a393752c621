import * as fsp from "node:fs/promises";
import path from "node:path";
import * as z from "zod";
import { NodeFs } from "../runtime/fs/node.js";
import { fileLocks } from "../runtime/locks.js";
import { toolhostHome } from "../config/paths.js";
import { readConfigTextSync, userRoots } from "../config/safe-read.js";
import type { Workspace } from "../config/workspace.js";
import { diffContents, snapshotContents, type ContentChange, type ContentSnapshot } from "./trust-contents.js";
import { diffModulePins, type ModulePins } from "./module-pins.js";

/**
 * Project trust. Importing a project's `.toolhost/tools/*.ts` runs its code, so those files (and
 * its agents, skills, MCP servers and rules: host/trust-contents.ts) load only in a project the
 * user trusted. Trust is kept per real path in `~/.toolhost/trusted.json`, with what the user
 * trusted: each of those files' sha256. Once one is added, removed or changed, the project counts
 * as not trusted until the user trusts it again. Version 1 entries (no files) read as trusting
 * none: a project's files show up as changes, asked about once. `modules`: the workspace files the
 * project's tools imported at their first trusted load (host/module-pins.ts), pinned the same way.
 */
const ProjectEntrySchema = z
  .object({
    trustedAt: z.string(),
    files: z.record(z.string(), z.string()).optional(),
    truncated: z.boolean().optional(),
    modules: z.record(z.string(), z.string()).optional(),
  })
  .loose();
const TrustFileSchema = z.object({
  version: z.union([z.literal(1), z.literal(2)]),
  projects: z.record(z.string(), ProjectEntrySchema),
});

type ProjectEntry = z.infer<typeof ProjectEntrySchema>;

export interface TrustStore {
  file: string;
  projects: Record<string, ProjectEntry>;
  /** The file exists but cannot be read or parsed: nothing counts as trusted until it is fixed. */
  error?: string;
}

export function trustFile(home = toolhostHome()): string {
  return path.join(home, "trusted.json");
}

/**
 * The real path of a project folder (trust must not follow one spelling of a symlinked path only):
 * a session's Workspace has it already (its `trustKey`); a folder named by a command is resolved.
 */
export async function projectKey(dir: string | Workspace): Promise<string> {
  if (typeof dir !== "string") return dir.trustKey;
  const abs = path.resolve(dir);
  return fsp.realpath(abs).catch(() => abs);
}

export async function readTrust(home = toolhostHome()): Promise<TrustStore> {
  const file = trustFile(home);
  // A regular file in the user's folders only, never a FIFO that would hang the session.
  const { text, error } = readConfigTextSync(file, [home, ...userRoots()]);
  if (error) return { file, projects: {}, error };
  if (text === null) return { file, projects: {} };
  try {
    const parsed = TrustFileSchema.safeParse(JSON.parse(text));
    if (parsed.success) return { file, projects: parsed.data.projects };
    return { file, projects: {}, error: `${file}: ${z.prettifyError(parsed.error)}` };
  } catch (err) {
    return { file, projects: {}, error: `${file}: not valid JSON (${(err as Error).message})` };
  }
}

/** Where a project stands: trusted as it is now, never trusted, or trusted once and changed since. */
export interface TrustCheck {
  /** The project's real path. */
  path: string;
  trusted: boolean;
  /** Trusted once, but these files differ from what was trusted (empty when trusted or never trusted). */
  changes: ContentChange[];
  /** The entry predates recorded contents (trusted.json version 1): every file counts as added. */
  legacy: boolean;
  /** The trusted contents as they are now: what trusting it again records. */
  contents: ContentSnapshot;
  /** The workspace files its tools imported, as pinned (absent: not recorded yet; the next trusted load records them). */
  modules?: ModulePins;
  /** The store cannot be read: nothing counts as trusted. */
  error?: string;
}

/** Compares a project's trusted contents with what the store recorded for it. */
export async function checkTrust(dir: string | Workspace, home = toolhostHome()): Promise<TrustCheck> {
  const [store, key] = await Promise.all([readTrust(home), projectKey(dir)]);
  const contents = await snapshotContents(key);
  const entry = Object.hasOwn(store.projects, key) ? store.projects[key] : undefined;
  const base = { path: key, contents, ...(store.error ? { error: store.error } : {}) };
  if (!entry) return { ...base, trusted: false, changes: [], legacy: false };
  const changes = await trustChanges(key, entry, contents);
  return {
    ...base,
    trusted: changes.length === 0,
    changes,
    legacy: entry.files === undefined,
    ...(entry.modules ? { modules: entry.modules } : {}),
  };
}

/** What differs from an entry: its recorded contents, then the pinned imports not already among them. */
async function trustChanges(key: string, entry: ProjectEntry, contents: ContentSnapshot): Promise<ContentChange[]> {
  const changes = diffContents(entry.files ?? {}, contents.files);
  const named = new Set(changes.map((c) => c.path));
  const moved = entry.modules ? await diffModulePins(key, entry.modules) : [];
  return [...changes, ...moved.filter((c) => !named.has(c.path))].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** Whether the project is trusted with its contents as they are now. */
export async function isTrusted(dir: string | Workspace, home = toolhostHome()): Promise<boolean> {
  return (await checkTrust(dir, home)).trusted;
}

const disk = new NodeFs();

/** Read-modify-write of the store, one at a time, replaced atomically: a crash never leaves half a file. */
async function update(home: string, change: (projects: TrustStore["projects"]) => void): Promise<void> {
  await fileLocks.run(trustFile(home), async () => {
    const store = await readTrust(home);
    if (store.error) throw new Error(`${store.error}\nFix or delete the file, then try again.`);
    change(store.projects);
    const text = `${JSON.stringify({ version: 2, projects: store.projects }, null, 2)}\n`;
    await disk.writeFileAtomic(store.file, Buffer.from(text), { newFileMode: 0o600 });
  });
}

/**
 * Trusts a project folder (by its real path) with its contents: `contents` as the user was shown
 * them, or as they are now. `already`: it was trusted with these contents; `changes`: it was
 * trusted with others, and these differ; `legacy`: it was trusted before contents were recorded.
 */
export async function trust(
  dir: string | Workspace,
  home = toolhostHome(),
  contents?: ContentSnapshot,
): Promise<{ path: string; already: boolean; changes?: ContentChange[]; legacy?: true }> {
  const key = await projectKey(dir);
  const snapshot = contents ?? (await snapshotContents(key));
  // The pinned imports as they are now, read before the store's lock (the check there is synchronous).
  const stored = (await readTrust(home)).projects;
  const pinned = Object.hasOwn(stored, key) ? stored[key]?.modules : undefined;
  const movedImports = pinned ? await diffModulePins(key, pinned) : [];
  let already = false;
  let changes: ContentChange[] | undefined;
  let legacy = false;
  await update(home, (projects) => {
    const before = Object.hasOwn(projects, key) ? projects[key] : undefined;
    if (before) {
      // Pins recorded between the read above and the lock: judged as changed, so they are recorded anew.
      const samePins = JSON.stringify(before.modules) === JSON.stringify(pinned);
      const moved = samePins ? movedImports : [{ path: "(the files its tools import)", change: "modified" as const }];
      const diff = [...diffContents(before.files ?? {}, snapshot.files), ...moved];
      already = before.files !== undefined && diff.length === 0;
      if (!already) changes = diff;
      legacy = before.files === undefined;
    }
    // Trusted anew: what its tools import is recorded again at their next load.
    if (!already) {
      projects[key] = {
        trustedAt: new Date().toISOString(),
        files: snapshot.files,
        ...(snapshot.truncated ? { truncated: true } : {}),
      };
    }
  });
  return { path: key, already, ...(changes ? { changes } : {}), ...(legacy ? { legacy: true as const } : {}) };
}

/**
 * Records one trusted file anew after toolhost itself wrote it (a permission rule saved "for this
 * project" to `.toolhost/config.json`), so its own write does not count as a change. Nothing
 * happens for a project without recorded contents.
 */
export async function recordTrustedFile(dir: string | Workspace, rel: string, home = toolhostHome()): Promise<void> {
  const key = await projectKey(dir);
  const current = (await snapshotContents(key)).files;
  await update(home, (projects) => {
    const files = Object.hasOwn(projects, key) ? projects[key]?.files : undefined;
    if (!files) return;
    if (Object.hasOwn(current, rel)) files[rel] = current[rel] as string;
    else delete files[rel];
  });
}

/**
 * Records what a trusted project's tools imported at their first load after it was trusted
 * (host/module-pins.ts): only when the entry still holds `contents` and no pins yet, so a project
 * changed or trusted anew meanwhile keeps what its own entry says.
 */
export async function recordTrustedModules(
  dir: string | Workspace,
  contents: ContentSnapshot,
  modules: ModulePins,
  home = toolhostHome(),
): Promise<void> {
  const key = await projectKey(dir);
  await update(home, (projects) => {
    const entry = Object.hasOwn(projects, key) ? projects[key] : undefined;
    if (!entry?.files || entry.modules || diffContents(entry.files, contents.files).length) return;
    entry.modules = modules;
  });
}

/** Withdraws trust from a project folder. `was` says it had been trusted. */
export async function untrust(dir: string | Workspace, home = toolhostHome()): Promise<{ path: string; was: boolean }> {
  const key = await projectKey(dir);
  let was = false;
  await update(home, (projects) => {
    was = Object.hasOwn(projects, key);
    delete projects[key];
  });
  return { path: key, was };
}
