import path from "node:path";
import type { ToolKind } from "../../tool/kinds.js";
import { sessionAuthorizer, type AskUser, type PermissionOptions, type SessionAuthorize } from "../../policy/authorizer.js";
import { isKindVisible, type ModeId } from "../../policy/modes.js";
import { deniedPrograms } from "../../policy/denied-programs.js";
import { netFetchHosts } from "../../policy/net-hosts.js";
import type { PermissionRule } from "../../policy/rules.js";
import { loadRules, type SourcedRule } from "../../policy/ruleset.js";
import type { SessionRules } from "../../policy/session-rules.js";
import { composeWatchdogs, type Watchdog } from "../../policy/watchdog.js";
import { builtinWatchdog } from "../../policy/watchdog/builtin.js";
import type { Toolset } from "../../host/toolset.js";
import { peekConfig } from "../../config/file.js";
import { SessionSandbox, sandboxSettingOf } from "../../runtime/sandbox/session-sandbox.js";
import type { SessionTools } from "./tools.js";

/** What a session's policy needs of its session. */
export interface SessionPolicyHost {
  tools: SessionTools;
  /** The session's remembered answers (a subagent shares its parent's). */
  rules: SessionRules;
  mode(): ModeId;
  /** Tool ids the session may use (a subagent's narrower set); undefined: all. */
  allowedTools: ReadonlySet<string> | undefined;
  /** A subagent: "always, for this project" is its parent's to save, not its own. */
  subagent: boolean;
  /** The workspace roots ("accept edits" allows edits inside them). */
  roots(): readonly string[];
  /** The session's OS sandbox, if any. */
  sandbox(): SessionSandbox | undefined;
  say(text: string): void | Promise<void>;
}

/** Permission rules that could not be read, for a message (empty when all were read). */
const noted = new Set<string>();

/** Settings toolhost does not use (of Claude Code's files): named on stderr, once a process. */
function noteOnce(notes: readonly string[]): void {
  for (const note of notes) {
    if (noted.has(note)) continue;
    noted.add(note);
    console.error(`toolhost: ${note}`);
  }
}

export function rulesNote(problems: readonly string[]): string {
  return problems.length ? `\nPermission rules left out:\n${problems.map((p) => `- ${p}`).join("\n")}` : "";
}

/**
 * A session's policy wiring: the permission rules (read again when the toolset changes), the
 * authorizer (rules, mode, remembered answers, the watchdog, the sandbox), the default sandbox,
 * and which tools the session sees.
 */
export class SessionPolicy {
  private permissionRules: { toolset: Toolset; rules: SourcedRule[]; problems: string[] } | null = null;

  constructor(private readonly host: SessionPolicyHost) {}

  /**
   * Bubblewrap per the user's setting. Its network: the hosts a call's tool declares, plus those
   * the net.fetch rules allow (the rules' deny and ask patterns are refused at its proxy). A
   * program a bash deny rule denies whole cannot run inside it (a refusing stub over its file).
   */
  defaultSandbox(): SessionSandbox {
    const hosts = () => netFetchHosts(this.loadPermissionRules().rules);
    return new SessionSandbox({
      setting: sandboxSettingOf(peekConfig(this.host.tools.toolset.configFile)),
      // A host an allow rule names exactly may be on a private address, as for the tools' own fetches.
      bubblewrap: {
        allowedHosts: () => hosts().allowed,
        deniedHosts: () => hosts().denied,
        privateHostsFor: () => hosts().private,
        deniedPrograms: () => deniedPrograms(this.loadPermissionRules().rules),
      },
    });
  }

  /** The hosts a net.fetch allow rule names exactly: the tools' fetch may reach them on a private address. */
  privateHosts(): string[] {
    return netFetchHosts(this.loadPermissionRules().rules).private;
  }

  /**
   * The permission rules (manifest, user, trusted project; a stale one's deny and ask rules), read at session start and again
   * whenever the tool set is rebuilt (/reload, a profile change, trusting the project).
   */
  loadPermissionRules(): { rules: SourcedRule[]; problems: string[] } {
    const toolset = this.host.tools.toolset;
    if (this.permissionRules?.toolset !== toolset) {
      const { profile, report } = toolset;
      const loaded = loadRules({
        manifest: { rules: profile.permissions, file: profile.dir ? path.join(profile.dir, "profile.json") : undefined },
        // The config file the toolset was built from: read once per build, not once per reader.
        user: toolset.config,
        // A project trusted once and changed since keeps its deny and ask rules (fail closed).
        project: { dir: this.host.tools.workspace, trusted: report.trusted, stale: !report.trusted && !!report.trustChanges?.length },
      });
      this.permissionRules = { toolset, rules: loaded.rules, problems: loaded.problems };
      noteOnce(loaded.notes);
    }
    return this.permissionRules as { rules: SourcedRule[]; problems: string[] };
  }

  /** The permission rules in force (manifest, user, trusted project), then the session's remembered answers. */
  get rulesInForce(): readonly SourcedRule[] {
    return [...this.loadPermissionRules().rules, ...this.host.rules.list()];
  }

  /** Rules that could not be read (each names its file and rule); the others hold. */
  get problems(): readonly string[] {
    return this.loadPermissionRules().problems;
  }

  /**
   * "Always, for this project": appends the rules to the project's config and reads the rules
   * again. False when they could not be saved; the user is told why (the answer then holds for
   * this session only).
   */
  private async saveProjectRules(rules: PermissionRule[]): Promise<boolean> {
    const { error, file } = await this.host.tools.saveProjectRules(rules);
    this.permissionRules = null;
    if (error) {
      await this.host.say(`The rule was not saved to ${file} (${error}); it holds for this session only.`);
      return false;
    }
    return true;
  }

  /** Whether the session sees a tool: the mode's visible kinds, and the session's allowed ids. */
  isVisible(tool: { id: string; kind: ToolKind }): boolean {
    const allowed = this.host.allowedTools;
    return isKindVisible(this.host.mode(), tool.kind, tool.id) && (!allowed || allowed.has(tool.id));
  }

  /**
   * The session's policy for one call: rules, mode, remembered answers, then `ask`. `toolhost
   * policy explain` passes an ask that only records.
   */
  authorizer(ask: AskUser | undefined): SessionAuthorize {
    const authorize = sessionAuthorizer(this.permissionOptions(ask));
    const allowed = this.host.allowedTools;
    // A subagent's narrower tool set is enforced here too, not only by what it is offered.
    if (!allowed) return authorize;
    return async (call, s, extra) =>
      allowed.has(call.tool.id)
        ? authorize(call, s, extra)
        : { outcome: "deny", code: "permission_denied", reason: `The ${call.tool.id} tool is not available to this subagent.` };
  }

  /** What the policy decides with, for this session (`toolhost policy explain` decides with it too). */
  permissionOptions(ask?: AskUser): PermissionOptions {
    const host = this.host;
    const sandbox = host.sandbox();
    return {
      roots: host.roots(),
      mode: () => host.mode(),
      rules: host.rules,
      ruleset: () => this.loadPermissionRules().rules,
      ask,
      project: host.subagent
        ? undefined
        : { trusted: () => host.tools.toolset.report.trusted, save: (rules) => this.saveProjectRules(rules) },
      sandbox: sandbox && (() => sandbox.state()),
      watchdog: this.watchdog(),
      manifest: () => {
        const { profile } = host.tools.toolset;
        return { profile: profile.name, requires: profile.requires, permissions: profile.permissions };
      },
    };
  }

  /** The built-in checks and the profile's own watchdog (read on each call: a rebuild may change it). */
  private watchdog(): Watchdog {
    const builtin = builtinWatchdog();
    return (call, signal) => composeWatchdogs(builtin, this.host.tools.toolset.watchdog)(call, signal);
  }
}
