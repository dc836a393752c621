import path from "node:path";
import { toolhostHome } from "../config/paths.js";
import { selectProfileName } from "../config/profile-name.js";
import { asWorkspace, type Workspace } from "../config/workspace.js";
import { readConfigFile, type ConfigFile } from "../config/file.js";
import { parseUserConfig, type LoadedConfig } from "../config/schema.js";
import { resolveWebSearch } from "../config/web-search.js";
import type { AnyTool } from "../tool/define.js";
import type { RequirementSet } from "../tool/requirements.js";
import type { WebSearchSettings } from "../tool/services.js";
import { availabilityContext, discoverTools, toolFolders, type Discovery, type PlacedTool } from "./discovery.js";
import type { LoadFile, LoadProblem } from "./loader.js";
import { isLockedId } from "./locked.js";
import { loadProfile, type Profile } from "./profiles.js";
import { ToolRegistry } from "./registry.js";
import type { DisabledTool, ToolsetReport } from "./toolset-report.js";
import { sessionPackages, type SessionPackages } from "./packages.js";
import { discoverSkills, type SkillDiscovery } from "./skills.js";
import { checkTrust, recordTrustedModules } from "./trust.js";
import { ModuleGuard, type ModulePins } from "./module-pins.js";
import type { ContentChange, ContentSnapshot } from "./trust-contents.js";
import { loadProfileWatchdog } from "./watchdog-module.js";
import type { Watchdog } from "../policy/watchdog.js";
import { Hooks } from "./hooks/engine.js";

export interface ToolsetOptions {
  /** The session's workspace (resolved at its start; a folder is resolved here): its `.toolhost/tools/` are the project's tools. */
  cwd: string | Workspace;
  /** Imports extension files; the front end makes it (it hands in the "toolhost" API) and may keep it across rebuilds. */
  loader: LoadFile;
  /** The profile name (the client's choice); default TOOLHOST_PROFILE, then config, then `default`. */
  profile?: string;
  /** Whether the project's tools may load (true for "allow once"); default: its stored trust. */
  trusted?: boolean;
  /** `~/.toolhost` (default: TOOLHOST_HOME or the real one). */
  home?: string;
  /** The package folder with the shipped profiles (tests). */
  root?: string;
  /** The user's config file, when the caller has read it already (a session reads it once, at its start). */
  configFile?: ConfigFile;
  /** The user's home folder, for `~/.claude/skills/` (default: os.homedir()). */
  userHome?: string;
}

/** A session's tools: what the ACP layer and the CLI run calls against. */
export interface Toolset {
  registry: ToolRegistry;
  /** The profile's RequirementSet: `invoke`'s `manifest`. */
  manifest: RequirementSet;
  profile: Profile;
  report: ToolsetReport;
  /** The profile's own watchdog (`<profile dir>/watchdog.ts`), when it has one; fails closed. */
  watchdog?: Watchdog;
  /** The session's Agent Skills (host/skills.ts), with the folders read and their problems. */
  skills: SkillDiscovery;
  /** The usable web search providers (config `webSearch`, keys resolved); absent: web_search is not offered. */
  webSearch?: WebSearchSettings;
  /** The project's trusted contents as this build saw them: what "trust it always" records. */
  contents: ContentSnapshot;
  /** The user's config file this build read (the session's rules, sandbox and MCP servers read it from here)… */
  configFile: ConfigFile;
  /** …and its keys, validated. */
  config: LoadedConfig;
  /** The tool packages this build read (host/packages.ts): their agents folders serve the session's task tool. */
  packages: SessionPackages;
  /** The session's lifecycle hooks (user → profile → a trusted project's; host/hooks/). */
  hooks: Hooks;
}

/** Why the profile leaves a tool out (`enable` is an allowlist, then `disable`, then `kinds`), or null. */
export function profileVerdict(profile: Profile, tool: AnyTool): string | null {
  const { enable, disable, kinds } = profile.tools;
  if (enable && !enable.includes(tool.id)) return `not in the ${profile.name} profile's tools.enable`;
  if (disable.includes(tool.id)) return `the ${profile.name} profile disables it`;
  if (kinds && !kinds.includes(tool.kind)) return `kind ${tool.kind} is not among the ${profile.name} profile's kinds`;
  return null;
}

/** The registry of the tools the profile keeps; the rest are reported as disabled. */
function applyProfile(profile: Profile, placed: Iterable<PlacedTool>): { registry: ToolRegistry; disabled: DisabledTool[] } {
  const registry = new ToolRegistry();
  const disabled: DisabledTool[] = [];
  for (const { tool, source } of placed) {
    const reason = profileVerdict(profile, tool);
    if (reason) disabled.push({ id: tool.id, kind: tool.kind, source, reason });
    else registry.register(tool, source);
  }
  return { registry, disabled };
}

/** Ids in the profile's enable/disable lists that no folder offers: a typo or a failed load. */
function unknownProfileIds(profile: Profile, offeredIds: ReadonlySet<string>): LoadProblem[] {
  const file = profile.dir ? path.join(profile.dir, "profile.json") : "(profile)";
  const problems: LoadProblem[] = [];
  for (const [list, ids] of [
    ["enable", profile.tools.enable ?? []],
    ["disable", profile.tools.disable],
  ] as const) {
    for (const id of ids) {
      // A locked id this build does not implement yet is fine.
      if (offeredIds.has(id) || isLockedId(id)) continue;
      problems.push({ file, message: `tools.${list} names "${id}", which no tool folder provides (or it failed to load)` });
    }
  }
  return problems;
}

/**
 * Whether the project's tools may load: the caller's answer, else the trust store, for the
 * contents it recorded (a broken store trusts nothing); what changed since, when it did.
 */
async function projectTrust(
  cwd: Workspace,
  home: string,
  answer: boolean | undefined,
  errors: LoadProblem[],
): Promise<{
  trusted: boolean;
  /** Trusted by the store as the project is now (not only by the caller's answer). */
  stored: boolean;
  changes: ContentChange[];
  legacy: boolean;
  contents: ContentSnapshot;
  modules?: ModulePins;
}> {
  const check = await checkTrust(cwd, home);
  if (check.error)
    errors.push({ file: path.join(home, "trusted.json"), message: `${check.error} (no project counts as trusted until it is fixed)` });
  const trusted = answer ?? check.trusted;
  return {
    trusted,
    stored: check.trusted,
    changes: trusted ? [] : check.changes,
    legacy: check.legacy,
    contents: check.contents,
    ...(check.trusted && check.modules ? { modules: check.modules } : {}),
  };
}

function toolsetReport(
  head: Pick<ToolsetReport, "cwd" | "profile" | "trusted" | "trustChanges" | "trustLegacy">,
  registry: ToolRegistry,
  found: Discovery,
  late: Pick<ToolsetReport, "errors" | "disabled">,
): ToolsetReport {
  return {
    ...head,
    folders: found.folders,
    tools: registry.list().map(({ tool, source }) => ({ id: tool.id, kind: tool.kind, source })),
    shadowed: found.shadowed,
    errors: late.errors,
    skipped: found.skipped,
    disabled: late.disabled,
    unavailable: found.unavailable,
  };
}

const fileId = (file: string) => path.basename(file).replace(/\.[^.]+$/, "");
const sentence = (text: string) => (/[.!?]$/.test(text.trimEnd()) ? text.trimEnd() : `${text.trimEnd()}.`);

/**
 * Tells the registry why tools that something defines are missing, for the unknown_tool error:
 * a load failure (by id, or a failed file named after the id), the profile, availability, and
 * an untrusted project's file named after the id.
 */
function noteAbsentTools(registry: ToolRegistry, report: ToolsetReport): void {
  const failed = (id: string, problem: LoadProblem) =>
    registry.noteAbsent(
      id,
      `The tool "${id}" failed to load from ${problem.file}: ${sentence(problem.message)} Tell the user; once the file is fixed, /reload loads it.`,
    );
  for (const problem of report.errors) if (problem.id) failed(problem.id, problem);
  for (const tool of report.disabled) {
    registry.noteAbsent(
      tool.id,
      `The tool "${tool.id}" is disabled in this session: ${sentence(tool.reason)} Use one of the available tools.`,
    );
  }
  for (const tool of report.unavailable) {
    registry.noteAbsent(tool.id, `The tool "${tool.id}" is not available in this workspace (its isAvailable check said no).`);
  }
  for (const problem of report.errors) if (!problem.id) failed(fileId(problem.file), problem);
  for (const { file, reason } of report.skipped) {
    const id = fileId(file);
    registry.noteAbsent(id, `The tool "${id}" may be defined in ${file}, which was not loaded: ${sentence(reason)}`);
  }
}

/**
 * Builds a session's tools: builtins → the profile's tools/ → the user's packages → config
 * `toolDirs` → the project's packages → the project's .toolhost/tools/ (the project's: trusted
 * projects only; otherwise listed as skipped, never imported).
 * First found wins by id (host/discovery.ts), then the profile keeps what it wants; every
 * problem is reported with its file, and nothing here throws for a bad file.
 */
export async function buildToolset(options: ToolsetOptions): Promise<Toolset> {
  const workspace = asWorkspace(options.cwd);
  const cwd = workspace.cwd;
  const home = options.home ?? toolhostHome();
  const configFile = options.configFile ?? readConfigFile(home);
  const config = parseUserConfig(configFile);
  const errors: LoadProblem[] = config.problems.map((message) => ({ file: config.path, message }));

  const profileName = selectProfileName({ requested: options.profile, config: config.config });
  const { profile, problems } = await loadProfile(profileName, { home, root: options.root });
  errors.push(...problems);
  const { trusted, stored, changes, legacy, contents, modules } = await projectTrust(workspace, home, options.trusted, errors);
  // Pinned imports enforced when the store has them; otherwise this load records them (module-pins.ts).
  const guard = trusted ? new ModuleGuard(workspace, modules) : undefined;
  const watched = await loadProfileWatchdog(profile, options.loader.importModule);
  errors.push(...watched.problems);

  const webSearch = resolveWebSearch(config.config.webSearch);
  errors.push(...webSearch.problems.map((message) => ({ file: config.path, message })));
  // Tool packages (host/packages.ts): a broken one is a problem, and skipped.
  const packages = sessionPackages(home, cwd);
  errors.push(...packages.problems);
  const found = await discoverTools(await toolFolders(profile, cwd, config, packages), {
    trusted,
    untrustedReason: changes.length ? "the project's trusted files changed since it was trusted (toolhost trust)" : undefined,
    loader: options.loader,
    context: availabilityContext(cwd, profile, webSearch.settings),
    guard,
  });
  errors.push(...found.errors);
  guard?.freeze();
  if (guard?.recorded && stored) await recordTrustedModules(workspace, contents, guard.snapshot(), home).catch(() => {});
  const { registry, disabled } = applyProfile(profile, found.placed.values());
  disabled.push(...found.packageDisabled);
  errors.push(...unknownProfileIds(profile, found.offeredIds));

  const levels = { config: "user", "user-package": "user", profile: "profile", project: "project", "project-package": "project" } as const;
  const hooks = Hooks.load(workspace, {
    config,
    configFile,
    profile: { hooks: profile.hooks, ...(profile.dir ? { file: path.join(profile.dir, "profile.json") } : {}) },
    trusted,
    ...(changes.length ? { stale: changes.map((c) => c.path) } : {}),
    userHome: options.userHome,
    extensions: found.hooks.map((h) => ({ file: h.file, level: levels[h.origin], hooks: h.hooks })),
  });
  errors.push(...hooks.problems);

  const skills = await discoverSkills({
    cwd: workspace,
    profileDirs: profile.skillDirs,
    home,
    userHome: options.userHome,
    trusted,
    packages: [...packages.user, ...packages.project].filter((p) => p.enabled),
  });

  const head = {
    cwd,
    profile: profile.name,
    trusted,
    ...(changes.length ? { trustChanges: changes, ...(legacy ? { trustLegacy: true as const } : {}) } : {}),
  };
  const report = toolsetReport(head, registry, found, { errors, disabled });
  noteAbsentTools(registry, report);
  return {
    registry,
    manifest: profile.requires,
    profile,
    report,
    watchdog: watched.watchdog,
    skills,
    webSearch: webSearch.settings,
    contents,
    configFile,
    config,
    hooks,
    packages,
  };
}
