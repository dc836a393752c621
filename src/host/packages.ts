import { readFileSync, realpathSync, statSync, writeFileSync, renameSync, mkdirSync } from "node:fs";
import path from "node:path";
import { isInside } from "../tool/paths.js";

// Tool packages (issue 26 §4): npm packages whose package.json has a `"toolhost"` field listing
// what they add (`tools`, `hooks`: extension files or folders of them; `skills`, `agents`:
// folders) and the keyword `toolhost-package`. The user's live in `~/.toolhost/packages`, a
// trusted project's in `.toolhost/packages`: each an npm prefix (`node_modules/`) with
// `toolhost-lock.json`, which pins each package's version and integrity and says what is
// switched off. `toolhost install` writes them (commands/packages.ts); discovery reads them here.
// A package that is broken, missing or not what the lock pins is reported and skipped.

export type PackageScope = "user" | "project";

/** One package in the lock. */
export interface LockedPackage {
  /** What the user asked to install (an npm spec, a path or a tarball). */
  spec: string;
  version: string;
  resolved?: string;
  integrity?: string;
  /** False: the whole package is off. */
  enabled: boolean;
  /** Its items switched off: tool ids, skill names, agent names. */
  disabled: string[];
}

export interface PackageLock {
  lockfileVersion: 1;
  packages: Record<string, LockedPackage>;
}

/** A package as discovery uses it. */
export interface InstalledPackage {
  name: string;
  version: string;
  scope: PackageScope;
  /** Its folder (node_modules/<name>), a real path. */
  root: string;
  enabled: boolean;
  disabled: ReadonlySet<string>;
  /** Extension files or folders of them (tools and in-process hooks). */
  tools: string[];
  hooks: string[];
  skills: string[];
  agents: string[];
}

export interface PackageProblem {
  file: string;
  message: string;
}

export const LOCK_FILE = "toolhost-lock.json";
export const PACKAGE_KEYWORD = "toolhost-package";

/** Where a scope's packages live. */
export function packagesDir(scope: PackageScope, home: string, cwd: string): string {
  return scope === "user" ? path.join(home, "packages") : path.join(cwd, ".toolhost", "packages");
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);
const strings = (value: unknown): string[] | null => (Array.isArray(value) && value.every((v) => typeof v === "string") ? value : null);

/** The lock of a packages folder: empty when there is none; an unreadable one is an error (nothing loads from it). */
export function readLock(dir: string): { lock: PackageLock; error?: string } {
  const file = path.join(dir, LOCK_FILE);
  const empty: PackageLock = { lockfileVersion: 1, packages: {} };
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { lock: empty };
    return { lock: empty, error: `${file} cannot be read: ${(err as Error).message}` };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { lock: empty, error: `${file} is not valid JSON (${(err as Error).message})` };
  }
  if (!isObject(json) || !isObject(json.packages)) return { lock: empty, error: `${file}: must be an object with "packages"` };
  const packages: Record<string, LockedPackage> = {};
  for (const [name, entry] of Object.entries(json.packages)) {
    if (!isObject(entry) || typeof entry.version !== "string") continue;
    packages[name] = {
      spec: typeof entry.spec === "string" ? entry.spec : name,
      version: entry.version,
      ...(typeof entry.resolved === "string" ? { resolved: entry.resolved } : {}),
      ...(typeof entry.integrity === "string" ? { integrity: entry.integrity } : {}),
      enabled: entry.enabled !== false,
      disabled: strings(entry.disabled) ?? [],
    };
  }
  return { lock: { lockfileVersion: 1, packages } };
}

/** Writes the lock (temp file and rename), its packages sorted by name. */
export function writeLock(dir: string, lock: PackageLock): void {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, LOCK_FILE);
  const sorted = Object.fromEntries(Object.entries(lock.packages).sort(([a], [b]) => a.localeCompare(b)));
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, `${JSON.stringify({ lockfileVersion: 1, packages: sorted }, null, 2)}\n`);
  renameSync(temp, file);
}

/** What a package.json's `toolhost` field lists, or why it is not a toolhost package. */
export function readManifest(
  root: string,
): { name: string; version: string; lists: Record<"tools" | "hooks" | "skills" | "agents", string[]> } | { error: string } {
  const file = path.join(root, "package.json");
  let pkg: unknown;
  try {
    pkg = JSON.parse(readFileSync(file, "utf8"));
  } catch (err) {
    return { error: `${file} cannot be read: ${(err as Error).message}` };
  }
  if (!isObject(pkg) || typeof pkg.name !== "string" || typeof pkg.version !== "string")
    return { error: `${file} has no name and version` };
  const keywords = strings(pkg.keywords) ?? [];
  if (!isObject(pkg.toolhost)) return { error: `${pkg.name} is not a toolhost package: its package.json has no "toolhost" field` };
  if (!keywords.includes(PACKAGE_KEYWORD))
    return { error: `${pkg.name} is not a toolhost package: its keywords lack "${PACKAGE_KEYWORD}"` };
  const lists = { tools: [] as string[], hooks: [] as string[], skills: [] as string[], agents: [] as string[] };
  for (const key of ["tools", "hooks", "skills", "agents"] as const) {
    const value = pkg.toolhost[key];
    if (value === undefined) continue;
    const list = strings(value);
    if (!list) return { error: `${file}: "toolhost.${key}" must be a list of paths inside the package` };
    lists[key] = list;
  }
  const unknown = Object.keys(pkg.toolhost).filter((k) => !["tools", "hooks", "skills", "agents"].includes(k));
  if (unknown.length) return { error: `${file}: "toolhost" has unknown keys: ${unknown.join(", ")}` };
  return { name: pkg.name, version: pkg.version, lists };
}

/** A listed path as a real path inside the package, or why not. */
function inside(root: string, rel: string): string | { error: string } {
  const abs = path.resolve(root, rel);
  let real: string;
  try {
    real = realpathSync(abs);
  } catch {
    return { error: `"${rel}" does not exist in the package` };
  }
  if (!isInside(real, root)) return { error: `"${rel}" leads outside the package (${real})` };
  return real;
}

/**
 * The packages of one folder, as the lock pins them: each installed one whose version is the
 * lock's, its listed paths inside it. Every other case (not installed, another version, not a
 * toolhost package, a path outside it) is a problem and the package is skipped.
 */
export function readPackages(dir: string, scope: PackageScope): { packages: InstalledPackage[]; problems: PackageProblem[] } {
  const { lock, error } = readLock(dir);
  const problems: PackageProblem[] = error ? [{ file: path.join(dir, LOCK_FILE), message: error }] : [];
  const packages: InstalledPackage[] = [];
  for (const [name, entry] of Object.entries(lock.packages)) {
    const folder = path.join(dir, "node_modules", name);
    const skip = (message: string) => problems.push({ file: folder, message: `package ${name} is skipped: ${message}` });
    let root: string;
    try {
      root = realpathSync(folder);
      if (!statSync(root).isDirectory()) throw new Error("not a folder");
    } catch {
      skip(`it is in ${LOCK_FILE} but not installed (toolhost install ${entry.spec}${scope === "project" ? " --project" : ""})`);
      continue;
    }
    const manifest = readManifest(root);
    if ("error" in manifest) {
      skip(manifest.error);
      continue;
    }
    if (manifest.name !== name || manifest.version !== entry.version) {
      skip(`installed is ${manifest.name}@${manifest.version}, the lock pins ${name}@${entry.version}`);
      continue;
    }
    const resolved: Record<"tools" | "hooks" | "skills" | "agents", string[]> = { tools: [], hooks: [], skills: [], agents: [] };
    let bad = false;
    for (const key of ["tools", "hooks", "skills", "agents"] as const) {
      for (const rel of manifest.lists[key]) {
        const real = inside(root, rel);
        if (typeof real === "string") resolved[key].push(real);
        else {
          skip(`toolhost.${key}: ${real.error}`);
          bad = true;
        }
      }
    }
    if (bad) continue;
    packages.push({ name, version: entry.version, scope, root, enabled: entry.enabled, disabled: new Set(entry.disabled), ...resolved });
  }
  return { packages, problems };
}

/** The user's and the project's packages (the project's load only in a trusted project: discovery decides). */
/** A session's packages, read once at its start: the user's and the project's, and their problems. */
export interface SessionPackages {
  user: InstalledPackage[];
  project: InstalledPackage[];
  problems: PackageProblem[];
}

export function sessionPackages(home: string, cwd: string): SessionPackages {
  const user = readPackages(packagesDir("user", home, cwd), "user");
  const project = readPackages(packagesDir("project", home, cwd), "project");
  return { user: user.packages, project: project.packages, problems: [...user.problems, ...project.problems] };
}
