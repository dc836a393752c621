import type { LoadFile } from "../host/loader.js";
import type { ToolRegistry } from "../host/registry.js";
import { buildToolset, type Toolset } from "../host/toolset.js";
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
