import type { Envelope } from "../../tool/envelope.js";
import type { HostServices, SkillIndex, Subagents, ToolIndex } from "../../tool/services.js";
import { webSearchHosts } from "../../config/web-search.js";
import { loadSkill } from "../../host/skills.js";
import type { RuntimeSession } from "../../runtime/session.js";
import { builtinAgents, loadAgents, type AgentCatalog } from "../agents.js";
import { deferredCallResult, planOffer } from "../turn/deferral.js";
import type { SessionFrontEnd } from "./front-end.js";
import type { SessionPolicy } from "./policy.js";
import type { SessionRecorder } from "../record/session-recorder.js";
import type { SessionTools } from "./tools.js";
import { registryIndex } from "../tool-index.js";
import type { LspManager } from "../../runtime/lsp/manager.js";
import { editDiagnostics } from "./lsp.js";
import type { CallHooks, ToolRunContext } from "../turn/tool-runner.js";
import type { ToolDeclaration, ToolOffer } from "../turn/turn-types.js";

/** What a session's services need of their session. */
export interface SessionServicesHost {
  /** The session's tools, and its workspace (`tools.workspace`: its agent files, for a task's agents). */
  tools: SessionTools;
  runtime: RuntimeSession;
  frontEnd: SessionFrontEnd;
  /** Which tools the session sees, and its authorizer. */
  policy: Pick<SessionPolicy, "isVisible" | "authorizer">;
  /** The session's tool_call and tool_result hooks. */
  hooks?: CallHooks;
  /** The task tool's subagents; undefined past the depth limit. */
  subagents(): Subagents | undefined;
  recorder: SessionRecorder | undefined;
  /** The session's language servers: the lsp tool's, and the diagnostics after an edit. */
  lsp?: LspManager;
  /** Awaited before a call that may change files runs: the turn's checkpoint (agent/rewind/checkpoints.ts). */
  beforeChange(): Promise<void>;
}

/**
 * What a session offers its tools and its model (codex's `SessionServices`): the host services
 * tools reach through `ctx.host` (questions, the tool index, subagents, skills, web search), the
 * declarations and the offer of each model request, the deferred tools wired so far, and the
 * tool context of a turn.
 */
export class SessionServices {
  /** Deferred tools that tool_search (or a direct call) wired: declared for the rest of the session. */
  readonly wired: Set<string>;
  /** The session's calls that have not ended, each with its own abort (AgentSession.cancelCall). */
  readonly running = new Map<string, AbortController>();
  /** The agent files as read last (`readAgents`). */
  private agents: AgentCatalog | undefined;

  constructor(
    private readonly host: SessionServicesHost,
    wired: readonly string[] = [],
  ) {
    this.wired = new Set(wired);
  }

  /** The services tools reach through `ctx.host`. */
  services(): HostServices {
    const { frontEnd, tools } = this.host;
    return {
      questions: frontEnd.questions,
      tools: this.toolIndex(),
      subagents: this.host.subagents(),
      skills: this.skillIndex(),
      webSearch: tools.toolset.webSearch,
      lsp: this.host.lsp,
    };
  }

  /** The tools the model is offered: the mode's visible kinds, this session's allowed ids, each tool's own description. */
  declarations(): ToolDeclaration[] {
    const host = this.services();
    return (
      this.host.tools.registry
        .list()
        .filter(({ tool }) => this.host.policy.isVisible(tool))
        // No task where no subagent can start (the depth limit).
        .filter(({ tool }) => tool.id !== "task" || host.subagents !== undefined)
        // No lsp where language servers are off (`"lsp": false`).
        .filter(({ tool }) => tool.id !== "lsp" || host.lsp !== undefined)
        .map(({ tool }) => {
          let description = tool.description;
          try {
            description = tool.describe?.({ host }) ?? tool.description;
          } catch (err) {
            process.stderr.write(`toolhost: ${tool.id}'s describe failed: ${String(err)}\n`);
          }
          return { id: tool.id, description, inputSchema: tool.inputSchema };
        })
    );
  }

  /** What the model is offered for one request: the declarations, the non-locked tools deferred when too many (agent/turn/deferral.ts). */
  async offer(contextWindow: number): Promise<ToolOffer> {
    await this.readAgents();
    const sources = new Map(this.host.tools.registry.list().map(({ tool, source }) => [tool.id, source]));
    const tools = this.declarations().map((declaration) => ({ declaration, source: sources.get(declaration.id) ?? "builtin" }));
    return planOffer(tools, this.wired, contextWindow);
  }

  /** A call's result as the model sees it: a deferred tool called directly is wired from then on. */
  afterCall(toolId: string, envelope: Envelope, offer: ToolOffer): Envelope {
    return offer.deferred.includes(toolId) ? deferredCallResult(toolId, envelope, (ids) => this.wire(ids)) : envelope;
  }

  private wire(ids: readonly string[]): void {
    const added = ids.filter((id) => !this.wired.has(id));
    for (const id of added) this.wired.add(id);
    // A loaded session declares them again from its first request.
    if (added.length) this.host.recorder?.wired(added);
  }

  /** Tools, runtime, services and approvals for one turn (approvals: the front end's). */
  toolContext(signal: AbortSignal): ToolRunContext {
    const { tools, runtime, policy, frontEnd } = this.host;
    // web_search's `{web-search}` hosts follow the toolset (a reload reads the config again).
    runtime.setVariable("web-search", webSearchHosts(tools.toolset.webSearch));
    return {
      registry: tools.registry,
      manifest: tools.manifest,
      session: runtime,
      host: this.services(),
      signal,
      calls: this.running,
      authorize: policy.authorizer(frontEnd.approve),
      hooks: this.host.hooks,
      beforeChange: () => this.host.beforeChange(),
      diagnostics: this.host.lsp ? editDiagnostics(this.host.lsp) : undefined,
    };
  }

  /**
   * Reads the agent files again: before each model request (`offer`), a turn's declarations and a
   * call made outside a turn, so what `task` offers and accepts is the files as they are then.
   */
  async readAgents(): Promise<AgentCatalog> {
    const { workspace, toolset } = this.host.tools;
    // The packages the toolset read at its build: not read again for each model request.
    this.agents = await loadAgents(workspace, toolset.report.trusted, toolset.packages);
    return this.agents;
  }

  /** The agents a task may run (agent files of a trusted project only), as `readAgents` read them last. */
  agentCatalog(): AgentCatalog {
    return this.agents ?? builtinAgents();
  }

  /** The toolset's skills; loading one makes its folder readable for the whole session (subagents share the runtime). */
  private skillIndex(): SkillIndex {
    const skills = () => this.host.tools.toolset.skills.skills;
    return {
      list: () => skills().map(({ name, description, path }) => ({ name, description, path })),
      load: async (name) => {
        const skill = skills().find((s) => s.name === name);
        if (!skill) return undefined;
        const loaded = await loadSkill(skill);
        this.host.runtime.allowRead(skill.dir);
        return loaded;
      },
    };
  }

  private toolIndex(): ToolIndex {
    return registryIndex(
      this.host.tools.registry,
      (tool) => this.host.policy.isVisible(tool),
      (ids) => this.wire(ids),
    );
  }
}
