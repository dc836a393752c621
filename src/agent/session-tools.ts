import type { LoadFile } from "../host/loader.js";
import type { ToolRegistry } from "../host/registry.js";
import { buildToolset, profileVerdict, type Toolset } from "../host/toolset.js";
import type { AnyTool } from "../tool/define.js";
import { formatSkillProblems } from "../host/skills.js";
import { diffToolsets, formatDiff, formatLoadProblems } from "../host/toolset-report.js";
import { trust } from "../host/trust.js";
import type { RequirementSet } from "../tool/requirements.js";
import { extensionLoader } from "./extension-loader.js";

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
    private readonly cwd: string,
    private readonly loader: LoadFile,
    private current: Toolset,
  ) {}

  static async create(cwd: string, profile?: string, loader: LoadFile = extensionLoader()): Promise<SessionTools> {
    return new SessionTools(cwd, loader, await buildToolset({ cwd, profile, loader }));
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
    const parts = [formatLoadProblems({ ...this.current.report, skipped: [] }), formatSkillProblems(this.current.skills)];
    return parts.filter((p) => p !== null).join("\n\n") || null;
  }

  /** Project tool files that wait for the user's trust; empty once asked. */
  pendingTrust(): string[] {
    if (this.trustDecided || this.current.report.trusted) return [];
    return this.current.report.skipped.map((s) => s.file);
  }

  /** Rebuilds from disk (fresh imports) and says what changed. */
  async reload(changes: { profile?: string } = {}): Promise<string> {
    const before = this.current;
    this.current = await buildToolset({
      cwd: this.cwd,
      profile: changes.profile ?? before.profile.name,
      trusted: this.trustedForSession,
      loader: this.loader,
    });
    for (const [source, tools] of this.dynamic) this.applySource(source, tools);
    const skills = formatSkillProblems(this.current.skills);
    return [formatDiff(diffToolsets(before.report, this.current.report)), skills].filter((p) => p !== null).join("\n");
  }

  /** Applies the user's answer about the project's tools; returns what changed, or null. */
  async decideTrust(answer: TrustAnswer): Promise<string | null> {
    this.trustDecided = true;
    if (answer === "reject") return null;
    if (answer === "always") await trust(this.cwd);
    this.trustedForSession = true;
    return this.reload();
  }
}
