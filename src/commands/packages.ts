import { execFile } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { toolhostHome } from "../config/paths.js";
import { PACKAGE_KEYWORD, packagesDir, readLock, readManifest, readPackages, writeLock, type PackageScope } from "../host/packages.js";

// `toolhost install`, `uninstall`, `packages [list]`, `packages enable|disable` (issue 26 §4): tool
// packages in `~/.toolhost/packages` (user) or a project's `.toolhost/packages` (--project), each
// an npm prefix. npm installs them with `--ignore-scripts` (a package's install scripts never
// run); `toolhost-lock.json` (host/packages.ts) pins each one's version and integrity.

const run = promisify(execFile);

export interface PackagesOptions {
  cwd?: string;
  project?: boolean;
  json?: boolean;
  out: (text: string) => void;
  err: (text: string) => void;
}

const scopeOf = (options: PackagesOptions): PackageScope => (options.project ? "project" : "user");
const dirOf = (scope: PackageScope, options: PackagesOptions) =>
  packagesDir(scope, toolhostHome(), path.resolve(options.cwd ?? process.cwd()));

/** `npm <args>` in the packages folder; npm's own error text when it fails. */
async function npm(dir: string, args: string[]): Promise<void> {
  try {
    await run("npm", [...args, "--ignore-scripts", "--no-audit", "--no-fund", "--prefix", dir], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`npm ${args[0]} failed: ${(e.stderr ?? e.message).trim().split("\n").slice(-6).join("\n")}`, { cause: err });
  }
}

/** The packages folder as an npm prefix of its own (never the project's package.json). */
function ensurePrefix(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const pkg = path.join(dir, "package.json");
  if (!existsSync(pkg))
    writeFileSync(pkg, `${JSON.stringify({ private: true, description: "toolhost packages (toolhost install)" }, null, 2)}\n`);
}

/** The package name an npm spec names (`name`, `name@range`, `@scope/name@range`). */
function specName(spec: string): string {
  const at = spec.startsWith("@") ? spec.indexOf("@", 1) : spec.indexOf("@");
  return at > 0 ? spec.slice(0, at) : spec;
}

/** A tarball's package.json name, read with tar (every npm tarball has `package/package.json`). */
async function tarballName(file: string): Promise<string> {
  const { stdout } = await run("tar", ["-xzOf", file, "package/package.json"], { maxBuffer: 4 * 1024 * 1024 });
  return (JSON.parse(stdout) as { name: string }).name;
}

/** `toolhost install <npm-spec | path | tarball> [--project]`. */
export async function runInstall(spec: string, options: PackagesOptions): Promise<number> {
  const scope = scopeOf(options);
  const dir = dirOf(scope, options);
  ensurePrefix(dir);
  // A lockfile that cannot be read is not written over: its other entries would be lost.
  const opened = openLock(options);
  if (!opened) return 1;
  const { lock } = opened;
  let target = spec;
  let name: string;
  try {
    const local = path.resolve(spec);
    if (existsSync(local)) {
      // A folder or a tarball is installed from a tarball kept in the packages folder, so the
      // install does not depend on where it came from, and npm records its integrity.
      const tarballs = path.join(dir, "tarballs");
      mkdirSync(tarballs, { recursive: true });
      if (statSync(local).isDirectory()) {
        const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--json", "--pack-destination", tarballs, local], { cwd: dir });
        target = path.join(tarballs, (JSON.parse(stdout) as { filename: string }[])[0]!.filename);
      } else {
        target = path.join(tarballs, path.basename(local));
        if (path.resolve(target) !== local) copyFileSync(local, target);
      }
      name = await tarballName(target);
    } else name = specName(spec);
    await npm(dir, ["install", "--save", target]);
  } catch (err) {
    options.err(`toolhost: cannot install ${spec}: ${(err as Error).message}`);
    return 1;
  }
  const root = path.join(dir, "node_modules", name);
  const manifest = readManifest(root);
  if ("error" in manifest) {
    await npm(dir, ["uninstall", name]).catch(() => {});
    options.err(
      `toolhost: ${manifest.error}; it was not kept. A toolhost package has a "toolhost" field and the keyword "${PACKAGE_KEYWORD}".`,
    );
    return 1;
  }
  const npmLock = JSON.parse(readFileSync(path.join(dir, "package-lock.json"), "utf8")) as {
    packages?: Record<string, { version?: string; resolved?: string; integrity?: string }>;
  };
  const locked = npmLock.packages?.[`node_modules/${name}`] ?? {};
  const before = lock.packages[name];
  lock.packages[name] = {
    spec,
    version: manifest.version,
    ...(locked.resolved ? { resolved: locked.resolved } : {}),
    ...(locked.integrity ? { integrity: locked.integrity } : {}),
    enabled: before?.enabled ?? true,
    disabled: before?.disabled ?? [],
  };
  writeLock(dir, lock);
  const items = Object.entries(manifest.lists)
    .filter(([, list]) => list.length)
    .map(([key, list]) => `${key}: ${list.join(", ")}`);
  options.out(`Installed ${name}@${manifest.version} (${scope}, ${dir}); no install scripts ran.`);
  if (items.length) options.out(`  ${items.join("; ")}`);
  options.out(
    scope === "project"
      ? "It loads in new sessions of this project once the project is trusted (toolhost trust): installing changed what trust covers."
      : "It loads in new sessions (and on /reload).",
  );
  return 0;
}

/** The scope's folder and its lockfile, or undefined when the lockfile cannot be read (said on stderr). */
function openLock(options: PackagesOptions) {
  const scope = scopeOf(options);
  const dir = dirOf(scope, options);
  const { lock, error } = readLock(dir);
  if (error) {
    options.err(`toolhost: ${error}`);
    return undefined;
  }
  return { scope, dir, lock };
}

/** `toolhost uninstall NAME [--project]`. */
export async function runUninstall(name: string, options: PackagesOptions): Promise<number> {
  const opened = openLock(options);
  if (!opened) return 1;
  const { scope, dir, lock } = opened;
  if (!lock.packages[name]) {
    options.err(`toolhost: no ${scope} package named ${name} (toolhost packages lists them)`);
    return 1;
  }
  try {
    await npm(dir, ["uninstall", name]);
  } catch (err) {
    options.err(`toolhost: ${(err as Error).message}`);
    return 1;
  }
  delete lock.packages[name];
  writeLock(dir, lock);
  options.out(`Uninstalled ${name} (${scope}).`);
  return 0;
}

/** `toolhost packages [list] [--json]`: both scopes, what each package adds, what is off, problems. */
export function runPackagesList(options: PackagesOptions): number {
  const rows = (["user", "project"] as const).map((scope) => {
    const dir = dirOf(scope, options);
    const { lock } = readLock(dir);
    const { packages, problems } = readPackages(dir, scope);
    return {
      scope,
      dir,
      packages: Object.entries(lock.packages).map(([name, entry]) => {
        const found = packages.find((p) => p.name === name);
        return {
          name,
          version: entry.version,
          integrity: entry.integrity,
          enabled: entry.enabled,
          disabled: entry.disabled,
          loadable: Boolean(found),
          ...(found ? { tools: found.tools, hooks: found.hooks, skills: found.skills, agents: found.agents } : {}),
        };
      }),
      problems,
    };
  });
  if (options.json) {
    options.out(JSON.stringify(rows, null, 2));
    return 0;
  }
  for (const row of rows) {
    options.out(`${row.scope} packages (${row.dir}):`);
    if (!row.packages.length) options.out("  (none)");
    for (const p of row.packages) {
      const state = !p.enabled ? "disabled" : p.loadable ? "enabled" : "not loadable";
      const off = p.disabled.length ? `; off: ${p.disabled.join(", ")}` : "";
      options.out(`  ${p.name}@${p.version}  ${state}${off}`);
    }
    for (const problem of row.problems) options.out(`  problem: ${problem.message}`);
  }
  return 0;
}

/** `toolhost packages enable|disable NAME[/ITEM] [--project]`: the whole package, or one tool, skill or agent of it. */
export function runPackagesToggle(action: "enable" | "disable", target: string, options: PackagesOptions): number {
  const opened = openLock(options);
  if (!opened) return 1;
  const { scope, dir, lock } = opened;
  // A scoped name has a slash of its own: the item is what follows the name.
  const name = Object.keys(lock.packages).find((n) => target === n || target.startsWith(`${n}/`));
  if (!name) {
    options.err(`toolhost: no ${scope} package for ${target} (toolhost packages lists them)`);
    return 1;
  }
  const entry = lock.packages[name]!;
  const item = target.slice(name.length + 1);
  if (!item) entry.enabled = action === "enable";
  else if (action === "disable") entry.disabled = [...new Set([...entry.disabled, item])];
  else entry.disabled = entry.disabled.filter((d) => d !== item);
  writeLock(dir, lock);
  options.out(`${action === "enable" ? "Enabled" : "Disabled"} ${target} (${scope}); new sessions (and /reload) follow.`);
  return 0;
}
