import { randomUUID } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import * as z from "zod";
import { toolhostHome } from "./home.js";

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
  let text: string;
  try {
    text = await fsp.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { file, projects: {} };
    return { file, projects: {}, error: `${file}: ${(err as Error).message}` };
  }
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

// Read-modify-write of the store, one at a time within this process.
let queue: Promise<unknown> = Promise.resolve();

async function update(home: string, change: (projects: TrustStore["projects"]) => void): Promise<void> {
  const run = queue.then(async () => {
    const store = await readTrust(home);
    if (store.error) throw new Error(`${store.error}\nFix or delete the file, then try again.`);
    change(store.projects);
    await fsp.mkdir(home, { recursive: true });
    // Write a temporary file and rename it over the store: a crash never leaves half a file.
    const temp = `${store.file}.${process.pid}.${randomUUID()}.tmp`;
    await fsp.writeFile(temp, `${JSON.stringify({ version: 1, projects: store.projects }, null, 2)}\n`, { mode: 0o600 });
    await fsp.rename(temp, store.file).catch(async (err: unknown) => {
      await fsp.rm(temp, { force: true });
      throw err;
    });
  });
  queue = run.catch(() => {});
  return run;
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
