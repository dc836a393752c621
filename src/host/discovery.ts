import { statSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { LoadedConfig } from "../config/schema.js";
import type { AnyTool, AvailabilityContext } from "../tool/define.js";
import type { WebSearchSettings } from "../tool/services.js";
import { BUILTIN_TOOLS } from "./builtins.js";
import type { ExtensionHook } from "./hooks/extension.js";
import { listToolFiles, type LoadFile, type LoadProblem } from "./loader.js";
import { isLockedId } from "./locked.js";
import type { Profile } from "./profiles.js";
import type { InstalledPackage } from "./packages.js";
import type { ModuleGuard } from "./module-pins.js";
import { formatContentChanges } from "./trust-contents.js";
import type { DisabledTool, FolderOrigin, FolderReport, ShadowEntry, SkippedFile, ToolEntry } from "./toolset-report.js";

/** Where a project keeps its own tools. */
export function projectToolDir(cwd: string): string {
  return path.join(cwd, ".toolhost", "tools");
}

export interface ToolFolder {
  dir: string;
  origin: FolderOrigin;
  /** Only these files of the folder (a package that lists files, not a folder). */
  files?: string[];
  /** The package the folder belongs to: its tools switched off are not placed. */
  package?: { name: string; disabled: ReadonlySet<string> };
}

/** A package's extension files and folders (`tools`, then `hooks`) as tool folders. */
function packageFolders(pkg: InstalledPackage, origin: "user-package" | "project-package"): ToolFolder[] {
  const own = { name: pkg.name, disabled: pkg.disabled };
  return [...pkg.tools, ...pkg.hooks].map((entry) =>
    statSync(entry).isDirectory()
      ? { dir: entry, origin, package: own }
      : { dir: path.dirname(entry), origin, files: [entry], package: own },
  );
}

function expandHome(dir: string, base: string): string {
  if (dir === "~" || dir.startsWith("~/")) return path.join(os.homedir(), dir.slice(1));
  return path.resolve(base, dir);
}

/**
 * The folders to scan, in discovery order, each once (by real path): the profile's, the user's
 * packages, config `toolDirs` (the user's tool folders), the project's packages, the project's
 * `.toolhost/tools/`. Builtins come before all of them (`discoverTools`); the first found wins.
 */
export async function toolFolders(
  profile: Profile,
  cwd: string,
  config: LoadedConfig,
  packages: { user: readonly InstalledPackage[]; project: readonly InstalledPackage[] } = { user: [], project: [] },
): Promise<ToolFolder[]> {
  const candidates: ToolFolder[] = [
    ...profile.toolDirs.map((dir) => ({ dir, origin: "profile" as const })),
    ...packages.user.filter((p) => p.enabled).flatMap((p) => packageFolders(p, "user-package")),
    ...(config.config.toolDirs ?? []).map((dir) => ({ dir: expandHome(dir, path.dirname(config.path)), origin: "config" as const })),
    ...packages.project.filter((p) => p.enabled).flatMap((p) => packageFolders(p, "project-package")),
    { dir: projectToolDir(cwd), origin: "project" },
  ];
  const seen = new Set<string>();
  const folders: ToolFolder[] = [];
  for (const folder of candidates) {
    const real = await fsp.realpath(folder.dir).catch(() => path.resolve(folder.dir));
    const key = folder.files ? `${real}\0${folder.files.join("\0")}` : real;
    if (seen.has(key)) continue;
    seen.add(key);
    folders.push(folder);
  }
  return folders;
}

const AVAILABILITY_TIMEOUT_MS = 2000;

/** What `isAvailable` is asked with: the workspace, the profile, a file check inside the workspace, the web search setup. */
export function availabilityContext(cwd: string, profile: Profile, webSearch?: WebSearchSettings): AvailabilityContext {
  return {
    workspace: cwd,
    profile: profile.name,
    ...(webSearch ? { webSearch } : {}),
    exists: (p) =>
      fsp.access(path.resolve(cwd, p)).then(
        () => true,
        () => false,
      ),
  };
}

/** Asks a tool whether it fits this workspace; a throw or a hang is a problem, not a crash. */
async function availability(tool: AnyTool, context: AvailabilityContext): Promise<boolean | Error> {
  if (!tool.isAvailable) return true;
  let timer: NodeJS.Timeout | undefined;
  try {
    const answer = await Promise.race([
      Promise.resolve(tool.isAvailable(context)),
      new Promise<never>((_, reject) => {
        const late = () => reject(new Error(`isAvailable did not answer within ${AVAILABILITY_TIMEOUT_MS / 1000} s`));
        timer = setTimeout(late, AVAILABILITY_TIMEOUT_MS);
      }),
    ]);
    return answer !== false;
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  } finally {
    clearTimeout(timer);
  }
}

/** A tool that won its id, and where it came from (`builtin` or its file). */
export interface PlacedTool {
  tool: AnyTool;
  source: string;
}

/** What discovery found, before the profile has its say. */
export interface Discovery {
  /** The winners by id, in discovery order (builtins first). */
  placed: Map<string, PlacedTool>;
  /** Every id some file offered, loaded or not: the profile's lists may name any of them. */
  offeredIds: Set<string>;
  shadowed: ShadowEntry[];
  skipped: SkippedFile[];
  unavailable: ToolEntry[];
  folders: FolderReport[];
  errors: LoadProblem[];
  /** The in-process hooks of the files imported, in discovery order, with the folder each came from. */
  hooks: { file: string; origin: FolderOrigin; hooks: ExtensionHook[] }[];
  /** Tools their package switches off. */
  packageDisabled: DisabledTool[];
}

export interface DiscoveryOptions {
  /** Whether the project folder's files may be imported. */
  trusted: boolean;
  /** Why not, for each skipped file (default: the project is not trusted). */
  untrustedReason?: string;
  loader: LoadFile;
  context: AvailabilityContext;
  /** The trusted project's module pins: its files import only the workspace files trusted with it. */
  guard?: ModuleGuard;
}

const fromProject = (origin: FolderOrigin) => origin === "project" || origin === "project-package";

/**
 * Builtins, then each folder's tool files in order: first found wins by id, every loser is
 * reported, locked ids are refused, an unavailable tool leaves its id to the next definition,
 * and an untrusted project's files are listed, never imported. Nothing here throws for a bad file.
 */
export async function discoverTools(folders: ToolFolder[], options: DiscoveryOptions): Promise<Discovery> {
  const found: Discovery = {
    placed: new Map(),
    offeredIds: new Set(BUILTIN_TOOLS.map((tool) => tool.id)),
    shadowed: [],
    skipped: [],
    unavailable: [],
    folders: [],
    errors: [],
    hooks: [],
    packageDisabled: [],
  };
  // A builtin may need what the user configures (web_search: a search provider).
  for (const tool of BUILTIN_TOOLS) {
    const answer = await availability(tool, options.context);
    if (answer === true) found.placed.set(tool.id, { tool, source: "builtin" });
    else {
      found.unavailable.push({ id: tool.id, kind: tool.kind, source: "builtin" });
      if (answer instanceof Error) found.errors.push({ file: "builtin", id: tool.id, message: `tool "${tool.id}": ${answer.message}` });
    }
  }
  for (const folder of folders) {
    const files = await scanFolder(folder, options, found);
    for (const file of files) await placeFile(file, folder, options, found);
  }
  return found;
}

/** The folder's files to import (none when unreadable or untrusted), with its report entry added. */
async function scanFolder(
  folder: ToolFolder,
  { trusted, untrustedReason }: Pick<DiscoveryOptions, "trusted" | "untrustedReason">,
  found: Discovery,
): Promise<string[]> {
  let files: string[];
  try {
    files = folder.files ?? (await listToolFiles(folder.dir));
  } catch (err) {
    found.errors.push({ file: folder.dir, message: `cannot list the folder: ${(err as Error).message}` });
    found.folders.push({ dir: folder.dir, origin: folder.origin, status: "unreadable", files: 0 });
    return [];
  }
  const exists =
    files.length > 0 ||
    (await fsp.stat(folder.dir).then(
      (s) => s.isDirectory(),
      () => false,
    ));
  if (fromProject(folder.origin) && !trusted) {
    const reason = untrustedReason ?? "the project is not trusted (toolhost trust)";
    for (const file of files) found.skipped.push({ file, reason });
    found.folders.push({ dir: folder.dir, origin: folder.origin, status: exists ? "untrusted" : "missing", files: files.length });
    return [];
  }
  found.folders.push({ dir: folder.dir, origin: folder.origin, status: exists ? "loaded" : "missing", files: files.length });
  return files;
}

/** Imports one file and gives each of its tools the id it asks for, unless it is taken, locked or unavailable. */
async function placeFile(file: string, folder: ToolFolder, options: DiscoveryOptions, found: Discovery): Promise<void> {
  const guard = fromProject(folder.origin) ? options.guard : undefined;
  guard?.begin();
  const loaded = await options.loader(file, guard ? { guard } : undefined);
  const untrusted = guard?.end() ?? [];
  if (untrusted.length) {
    // Caught before it ran (the module may have caught the throw itself): none of the file's tools or hooks load.
    found.errors.push({
      file,
      untrusted,
      message: `not loaded: it imports workspace files that are not the ones trusted with the project:\n${formatContentChanges(untrusted)}\nRun \`toolhost trust\` in the project to review and trust them.`,
    });
    return;
  }
  found.errors.push(...loaded.problems);
  if (loaded.hooks?.length) found.hooks.push({ file, origin: folder.origin, hooks: loaded.hooks });
  for (const problem of loaded.problems) if (problem.id) found.offeredIds.add(problem.id);
  for (const tool of loaded.tools) {
    found.offeredIds.add(tool.id);
    // Switched off in its package (`toolhost packages disable NAME/ID`): it claims no id.
    if (folder.package?.disabled.has(tool.id)) {
      found.packageDisabled.push({ id: tool.id, kind: tool.kind, source: file, reason: `disabled in package ${folder.package.name}` });
      continue;
    }
    if (isLockedId(tool.id)) {
      found.errors.push({ file, id: tool.id, message: `"${tool.id}" is a locked tool id: an extension cannot take it` });
      continue;
    }
    const winner = found.placed.get(tool.id);
    if (winner) {
      found.shadowed.push({ id: tool.id, file, winner: winner.source });
      continue;
    }
    const answer = await availability(tool, options.context);
    if (answer instanceof Error) found.errors.push({ file, id: tool.id, message: `tool "${tool.id}": ${answer.message}` });
    else if (!answer) found.unavailable.push({ id: tool.id, kind: tool.kind, source: file });
    else found.placed.set(tool.id, { tool, source: file });
  }
}
