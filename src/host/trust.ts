import * as fsp from "node:fs/promises";
import path from "node:path";
import * as z from "zod";
import { NodeFs } from "../runtime/fs/node.js";
import { fileLocks } from "../runtime/locks.js";
import { toolhostHome } from "../config/paths.js";
import { readConfigTextSync, userRoots } from "../config/safe-read.js";

/**
 * Project trust. Importing a project's `.toolhost/tools/*.ts` runs its code, so those files load
 * only in a project the user trusted. Trust is kept per real path in `~/.toolhost/trusted.json`.
 */
const TrustFileSchema = z.object({
  version: z.literal(1),
  projects: z.record(z.string(), z.object({ trustedAt: z.string() }).loose()),
});

export interface TrustStore {
  file: string;
  projects: Record<string, { trustedAt: string }>;
  /** The file exists but cannot be read or parsed: nothing counts as trusted until it is fixed. */
  error?: string;
}

export function trustFile(home = toolhostHome()): string {
  return path.join(home, "trusted.json");
}

/** The real path of a project folder (trust must not follow one spelling of a symlinked path only). */
export async function projectKey(dir: string): Promise<string> {
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

export async function isTrusted(dir: string, home = toolhostHome()): Promise<boolean> {
  const [store, key] = await Promise.all([readTrust(home), projectKey(dir)]);
  return Object.hasOwn(store.projects, key);
}

const disk = new NodeFs();

/** Read-modify-write of the store, one at a time, replaced atomically: a crash never leaves half a file. */
async function update(home: string, change: (projects: TrustStore["projects"]) => void): Promise<void> {
  await fileLocks.run(trustFile(home), async () => {
    const store = await readTrust(home);
    if (store.error) throw new Error(`${store.error}\nFix or delete the file, then try again.`);
    change(store.projects);
    const text = `${JSON.stringify({ version: 1, projects: store.projects }, null, 2)}\n`;
    await disk.writeFileAtomic(store.file, Buffer.from(text), { newFileMode: 0o600 });
  });
}

/** Trusts a project folder (by its real path). `already` says it was trusted before. */
export async function trust(dir: string, home = toolhostHome()): Promise<{ path: string; already: boolean }> {
  const key = await projectKey(dir);
  let already = false;
  await update(home, (projects) => {
    already = Object.hasOwn(projects, key);
    if (!already) projects[key] = { trustedAt: new Date().toISOString() };
  });
  return { path: key, already };
}

/** Withdraws trust from a project folder. `was` says it had been trusted. */
export async function untrust(dir: string, home = toolhostHome()): Promise<{ path: string; was: boolean }> {
  const key = await projectKey(dir);
  let was = false;
  await update(home, (projects) => {
    was = Object.hasOwn(projects, key);
    delete projects[key];
  });
  return { path: key, was };
}
