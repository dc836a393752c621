import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { AnyTool, AvailabilityContext } from "../tool/define.js";
import type { RequirementSet } from "../tool/requirements.js";
import { toolhostHome } from "../config/paths.js";
import { selectProfileName } from "../config/profile-name.js";
import { loadUserConfig, type LoadedConfig } from "../config/schema.js";
import { BUILTIN_TOOLS } from "./builtins.js";
import { createExtensionLoader, listToolFiles, type LoadFile, type LoadProblem } from "./loader.js";
import { isLockedId } from "./locked.js";
import { loadProfile, type Profile } from "./profiles.js";
import { ToolRegistry } from "./registry.js";
import type { DisabledTool, FolderOrigin, FolderReport, ShadowEntry, SkippedFile, ToolEntry, ToolsetReport } from "./toolset-report.js";
import { projectKey, readTrust } from "./trust.js";

export interface ToolsetOptions {
  /** The session's workspace: its `.toolhost/tools/` are the project's tools. */
  cwd: string;
  /** The profile name (the client's choice); default TOOLHOST_PROFILE, then config, then `default`. */
  profile?: string;
  /** Whether the project's tools may load (true for "allow once"); default: its stored trust. */
  trusted?: boolean;
  /** `~/.toolhost` (default: TOOLHOST_HOME or the real one). */
  home?: string;
  /** The package folder with the shipped profiles (tests). */
  root?: string;
  /** The user config, when the caller has read it already. */
  config?: LoadedConfig;
  /** A loader to reuse (it keeps jiti loaded between reloads). */
  loader?: LoadFile;
}

/** A session's tools: what the ACP layer and the CLI run calls against. */
export interface Toolset {
  registry: ToolRegistry;
  /** The profile's RequirementSet: `invoke`'s `manifest`. */
  manifest: RequirementSet;
  profile: Profile;
  report: ToolsetReport;
}

/** Where a project keeps its own tools. */
export function projectToolDir(cwd: string): string {
  return path.join(cwd, ".toolhost", "tools");
}

const AVAILABILITY_TIMEOUT_MS = 2000;

function expandHome(dir: string, base: string): string {
  if (dir === "~" || dir.startsWith("~/")) return path.join(os.homedir(), dir.slice(1));
  return path.resolve(base, dir);
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

interface Folder {
  dir: string;
  origin: FolderOrigin;
}

/** The folders to scan, in discovery order, each once (by real path). */
async function toolFolders(profile: Profile, cwd: string, config: LoadedConfig): Promise<Folder[]> {
  const candidates: Folder[] = [
    ...profile.toolDirs.map((dir) => ({ dir, origin: "profile" as const })),
    { dir: projectToolDir(cwd), origin: "project" },
    ...(config.config.toolDirs ?? []).map((dir) => ({ dir: expandHome(dir, path.dirname(config.path)), origin: "config" as const })),
  ];
  const seen = new Set<string>();
  const folders: Folder[] = [];
  for (const folder of candidates) {
    const key = await fsp.realpath(folder.dir).catch(() => path.resolve(folder.dir));
    if (seen.has(key)) continue;
    seen.add(key);
    folders.push(folder);
  }
  return folders;
}

/** Leaves out what the profile does not want: `enable` (allowlist), `disable`, `kinds`. */
function profileVerdict(profile: Profile, tool: AnyTool): string | null {
  const { enable, disable, kinds } = profile.tools;
  if (enable && !enable.includes(tool.id)) return `not in the ${profile.name} profile's tools.enable`;
  if (disable.includes(tool.id)) return `the ${profile.name} profile disables it`;
  if (kinds && !kinds.includes(tool.kind)) return `kind ${tool.kind} is not among the ${profile.name} profile's kinds`;
  return null;
}

/**
 * Builds a session's tools: builtins → the profile's tools/ → the project's .toolhost/tools/
 * (trusted projects only; otherwise listed as skipped, never imported) → config `toolDirs`.
 * First found wins by id, every loser is reported, locked ids are refused, and every problem is
 * reported with its file; nothing here throws for a bad file.
 */
export async function buildToolset(options: ToolsetOptions): Promise<Toolset> {
  const cwd = path.resolve(options.cwd);
  const home = options.home ?? toolhostHome();
  const config = options.config ?? loadUserConfig(home);
  const errors: LoadProblem[] = [];
  if (config.error) errors.push({ file: config.path, message: config.error });

  const profileName = selectProfileName({ requested: options.profile, config: config.config });
  const { profile, problems } = await loadProfile(profileName, { home, root: options.root });
  errors.push(...problems);

  const [store, key] = await Promise.all([readTrust(home), projectKey(cwd)]);
  if (store.error) errors.push({ file: store.file, message: `${store.error} (no project counts as trusted until it is fixed)` });
  const trusted = options.trusted ?? Object.hasOwn(store.projects, key);

  const placed = new Map<string, { tool: AnyTool; source: string }>();
  for (const tool of BUILTIN_TOOLS) placed.set(tool.id, { tool, source: "builtin" });
  const shadowed: ShadowEntry[] = [];
  const skipped: SkippedFile[] = [];
  const unavailable: ToolEntry[] = [];
  const folders: FolderReport[] = [];
  const seenIds = new Set<string>(placed.keys());
  const context: AvailabilityContext = {
    workspace: cwd,
    profile: profile.name,
    exists: (p) => fsp.access(path.resolve(cwd, p)).then(() => true, () => false),
  };
  let loader = options.loader;

  for (const folder of await toolFolders(profile, cwd, config)) {
    let files: string[];
    try {
      files = await listToolFiles(folder.dir);
    } catch (err) {
      errors.push({ file: folder.dir, message: `cannot list the folder: ${(err as Error).message}` });
      folders.push({ ...folder, status: "unreadable", files: 0 });
      continue;
    }
    const exists = files.length > 0 || (await fsp.stat(folder.dir).then((s) => s.isDirectory(), () => false));
    if (folder.origin === "project" && !trusted) {
      for (const file of files) skipped.push({ file, reason: "the project is not trusted (toolhost trust)" });
      folders.push({ ...folder, status: exists ? "untrusted" : "missing", files: files.length });
      continue;
    }
    folders.push({ ...folder, status: exists ? "loaded" : "missing", files: files.length });
    for (const file of files) {
      loader ??= await createExtensionLoader();
      const loaded = await loader(file);
      errors.push(...loaded.problems);
      for (const problem of loaded.problems) if (problem.id) seenIds.add(problem.id);
      for (const tool of loaded.tools) {
        seenIds.add(tool.id);
        if (isLockedId(tool.id)) {
          errors.push({ file, id: tool.id, message: `"${tool.id}" is a locked tool id: an extension cannot take it` });
          continue;
        }
        const winner = placed.get(tool.id);
        if (winner) {
          shadowed.push({ id: tool.id, file, winner: winner.source });
          continue;
        }
        const answer = await availability(tool, context);
        if (answer instanceof Error) errors.push({ file, id: tool.id, message: `tool "${tool.id}": ${answer.message}` });
        else if (!answer) unavailable.push({ id: tool.id, kind: tool.kind, source: file });
        else placed.set(tool.id, { tool, source: file });
      }
    }
  }

  const registry = new ToolRegistry();
  const disabled: DisabledTool[] = [];
  for (const { tool, source } of placed.values()) {
    const reason = profileVerdict(profile, tool);
    if (reason) disabled.push({ id: tool.id, kind: tool.kind, source, reason });
    else registry.register(tool, source);
  }
  const profileFile = profile.dir ? path.join(profile.dir, "profile.json") : "(profile)";
  for (const [list, ids] of [["enable", profile.tools.enable ?? []], ["disable", profile.tools.disable]] as const) {
    for (const id of ids) {
      // A locked id this build does not implement yet is fine; an unknown extension id is a typo or a failed load.
      if (seenIds.has(id) || isLockedId(id)) continue;
      errors.push({ file: profileFile, message: `tools.${list} names "${id}", which no tool folder provides (or it failed to load)` });
    }
  }

  const report: ToolsetReport = {
    cwd,
    profile: profile.name,
    trusted,
    folders,
    tools: registry.list().map(({ tool, source }) => ({ id: tool.id, kind: tool.kind, source })),
    shadowed,
    errors,
    skipped,
    disabled,
    unavailable,
  };
  return { registry, manifest: profile.requires, profile, report };
}
