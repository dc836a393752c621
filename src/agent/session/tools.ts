import path from "node:path";
import type { ConfigFile } from "../../config/file.js";
import type { Workspace } from "../../config/workspace.js";
import type { LoadFile } from "../../host/loader.js";
import type { ToolRegistry } from "../../host/registry.js";
import { buildToolset, profileVerdict, type Toolset } from "../../host/toolset.js";
import type { AnyTool } from "../../tool/define.js";
import { formatSkillProblems } from "../../host/skills.js";
import { diffToolsets, formatDiff, formatLoadProblems } from "../../host/toolset-report.js";
import { recordTrustedFile, trust } from "../../host/trust.js";
import { appendProjectRules } from "../../config/project-permissions.js";
import type { PermissionRule } from "../../policy/rules.js";
import type { RequirementSet } from "../../tool/requirements.js";
import { extensionLoader } from "../extension-loader.js";

/** The user's answer about an untrusted project's tools. */
export type TrustAnswer = "session" | "always" | "reject";

/**
 * A session's tool set over time: built at session start, rebuilt on /reload, on a profile
 * change and when the user lets an untrusted project's tools load. One extension loader serves
 * every build (jiti stays loaded; its imports stay fresh). Knows nothing of ACP.
 */
export class SessionTools {
  /** Tools that arrive at run time (MCP servers), by source: applied to every build. */
  private readonly dynamic = new Map<string, AnyTool[]>();
  private trustDecided = false;
  private trustedForSession: boolean | undefined;

  private constructor(
    /** The session's workspace, resolved at its start: every build, the session and its runtime take it from here. */
    readonly workspace: Workspace,
    private readonly loader: LoadFile,
    private current: Toolset,
  ) {}

  /**
   * The tools of a session in `workspace`. `configFile`: the user's config as the session's start
   * read it (default: read now).
   */
  static async create(
    workspace: Workspace,
    options: { profile?: string; loader?: LoadFile; configFile?: ConfigFile } = {},
  ): Promise<SessionTools> {
    const { profile, loader = extensionLoader(), configFile } = options;
    return new SessionTools(workspace, loader, await buildToolset({ cwd: workspace, profile, loader, configFile }));
  }

  get registry(): ToolRegistry {
    return this.current.registry;
  }

  get manifest(): RequirementSet {
    return this.current.manifest;
  }

  get toolset(): Toolset {
    return this.current;
  }

  /**
   * Sets the tools of one run-time source (`mcp:<server>`; none removes it), now and after every
   * rebuild. The profile's enable/disable/kinds apply to them as to any tool. Returns problems
   * (an id another source holds) for a message.
   */
  setSourceTools(source: string, tools: readonly AnyTool[]): string[] {
    if (tools.length) this.dynamic.set(source, [...tools]);
    else this.dynamic.delete(source);
    return this.applySource(source, tools);
  }

  private applySource(source: string, tools: readonly AnyTool[]): string[] {
    const profile = this.current.profile;
    return this.current.registry.replaceSource(
      source,
      tools.filter((tool) => profileVerdict(profile, tool) === null),
    );
  }

  /** Load problems worth one message at session start (untrusted files are asked about instead). */
  startMessage(): string | null {
    const parts = [
      formatLoadProblems({ ...this.current.report, skipped: [], trustChanges: undefined }),
      formatSkillProblems(this.current.skills),
    ];
    return parts.filter((p) => p !== null).join("\n\n") || null;
  }

  /**
   * What waits for the user's trust, empty once asked: the project's tool files, and (a project
   * trusted once whose files changed since) the changed files.
   */
  pendingTrust(): string[] {
    if (this.trustDecided || !this.hasUntrustedContent()) return [];
    const changed = (this.current.report.trustChanges ?? []).map((c) => path.join(this.workspace.cwd, c.path));
    return [...new Set([...this.current.report.skipped.map((s) => s.file), ...changed])];
  }

  /** The project is not trusted (as it is now) and has tool files, or changed files, that would load. */
  hasUntrustedContent(): boolean {
    const { report } = this.current;
    return !report.trusted && (report.skipped.length > 0 || (report.trustChanges?.length ?? 0) > 0);
  }

  /** Rebuilds from disk (fresh imports) and says what changed. */
  async reload(changes: { profile?: string } = {}): Promise<string> {
    const before = this.current;
    this.current = await buildToolset({
      cwd: this.workspace,
      profile: changes.profile ?? before.profile.name,
      trusted: this.trustedForSession,
      loader: this.loader,
    });
    for (const [source, tools] of this.dynamic) this.applySource(source, tools);
    const skills = formatSkillProblems(this.current.skills);
    return [formatDiff(diffToolsets(before.report, this.current.report)), skills].filter((p) => p !== null).join("\n");
  }

  /**
   * "Always, for this project": appends the rules to the project's config (config/project-permissions.ts)
   * and records the file anew in the project's trust, so toolhost's own write is not a change.
   */
  async saveProjectRules(rules: readonly PermissionRule[]): Promise<{ file: string; error?: string }> {
    const { cwd } = this.workspace;
    const saved = await appendProjectRules(cwd, rules);
    if (!saved.error && this.current.report.trusted) {
      await recordTrustedFile(this.workspace, path.relative(cwd, saved.file).split(path.sep).join("/")).catch(() => {});
    }
    return saved;
  }

  /** Applies the user's answer about the project's tools; returns what changed, or null. */
  async decideTrust(answer: TrustAnswer): Promise<string | null> {
    this.trustDecided = true;
    if (answer === "reject") return null;
    // The contents as the question showed them: a file changed meanwhile is asked about next time.
    if (answer === "always") await trust(this.workspace, undefined, this.current.contents);
    this.trustedForSession = true;
    return this.reload();
  }
}
