import { randomUUID } from "node:crypto";
import { ToolError } from "../tool/errors.js";
import { isReadOnlyKind } from "../tool/kinds.js";
import type { Subagents, SubagentRequest, SubagentResult } from "../tool/services.js";
import type { ModeId } from "../policy/modes.js";
import type { ToolRegistry } from "../host/registry.js";
import type { AgentCatalog, AgentDefinition } from "./agents.js";
import type { SessionFrontEnd, PromptInput, SubagentView } from "./front-end.js";
import type { History } from "./turn/history.js";
import type { ToolCallInfo } from "./turn/tool-runner.js";
import type { CostMeter, TurnObserver, TurnResult, UsageReport } from "./turn/turn-types.js";

const SUBAGENT_NOTE =
  "# Subagent\nYou are a subagent: another agent gave you one task through the task tool. Nobody else reads this conversation: do the task, then answer with one final message that holds everything the other agent needs (findings with file paths, what you changed).";

/** How deep subagents may nest (a subagent's own subagents count one more). */
export const MAX_SUBAGENT_DEPTH = 3;

/** What a child session is made of, besides what it shares with its parent (runtime, rules, call ids, meter). */
export interface ChildSpec {
  frontEnd: SessionFrontEnd;
  model: string | undefined;
  allowedTools: ReadonlySet<string>;
  wired: string[];
  instructions: string;
  depth: number;
  /** The agent's mode: the child's mode is the parent's, narrowed by it. */
  agentMode: ModeId | undefined;
  /** Its task id: the child's hooks are told it as `agentId`. */
  agentId: string;
}

/** A child session as its parent runs it: its history and a model turn with its own front end. */
export interface ChildSession {
  history: History;
  ask(input: PromptInput, signal: AbortSignal, observer: TurnObserver): Promise<TurnResult>;
}

/** What the subagents of a session need of it. */
export interface SubagentHost {
  registry(): ToolRegistry;
  frontEnd: SessionFrontEnd;
  /** The parent's narrower tool set (a subagent's own); a child's is never wider. */
  allowedTools: ReadonlySet<string> | undefined;
  model(): string | undefined;
  /** The parent's wired deferred tools. */
  wired(): Iterable<string>;
  agentCatalog(): AgentCatalog;
  /** The parent's last usage report (undefined before its first request, or after a compaction). */
  usage(): UsageReport | undefined;
  /** The parent's cost meter, which its children add to. */
  meter: CostMeter;
  /** A new child session sharing the parent's runtime and rules (an AgentSession: handed in, so no cycle). */
  createChild(spec: ChildSpec): ChildSession;
}

interface ChildState {
  text: string;
  description: string;
  parentCallId?: string;
  progress?: (lines: string[]) => void;
}

interface SubagentEntry {
  taskId: string;
  child: ChildSession;
  busy: boolean;
  /** The child as a session of its own, when the front end shows it so. */
  view?: SubagentView;
  state: ChildState;
  frontEnd: SessionFrontEnd;
}

/** A subagent's approval request reaches the same person, saying which subagent asks. */
function askedBy(approve: SessionFrontEnd["approve"], state: ChildState, agentName: string): SessionFrontEnd["approve"] {
  return (
    approve && ((req, sig) => approve({ ...req, why: `${req.why}; asked by the subagent "${state.description}" (${agentName})` }, sig))
  );
}

/** The front end of a child shown as its own session: the child's calls, text and approvals go there; its text is also the result. */
function ownSessionFrontEnd(
  own: SessionFrontEnd,
  parentEnd: SessionFrontEnd,
  state: ChildState,
  agentName: string,
  reportUsage: () => void | Promise<void>,
): SessionFrontEnd {
  return {
    ...own,
    text: (delta) => {
      state.text += delta;
      return own.text(delta);
    },
    usage: () => reportUsage(),
    approve: askedBy(own.approve && ((req, sig) => own.approve!(req, sig)), state, agentName),
    questions: own.questions ?? parentEnd.questions,
  };
}

/** The front end of a child shown nested: its calls show in the parent's view under the task's call; its text becomes the result. */
function nestedFrontEnd(
  parentEnd: SessionFrontEnd,
  state: ChildState,
  agentName: string,
  reportUsage: () => void | Promise<void>,
): SessionFrontEnd {
  const lines = new Map<string, string>();
  const show = (info: ToolCallInfo, status: string) => {
    lines.set(info.callId, `${info.title} — ${status}`);
    state.progress?.([...lines.values()]);
  };
  const nested = (info: ToolCallInfo): ToolCallInfo => (state.parentCallId ? { ...info, parentCallId: state.parentCallId } : info);
  return {
    pending: (info) => {
      show(info, "pending");
      return parentEnd.pending(nested(info));
    },
    describe: (info) => {
      show(info, "pending");
      return parentEnd.describe?.(nested(info));
    },
    event: (callId, event) => parentEnd.event(callId, event),
    running: (callId) => {
      const line = lines.get(callId);
      if (line !== undefined) {
        lines.set(callId, line.replace(/ — [a-z_]+$/, " — in progress"));
        state.progress?.([...lines.values()]);
      }
      return parentEnd.running(callId);
    },
    done: (callId, envelope, info, display) => {
      show(info, envelope.type === "output" && !display?.failed ? "completed" : "failed");
      return parentEnd.done(callId, envelope, nested(info), display);
    },
    text: (delta) => {
      state.text += delta;
    },
    thought: () => {},
    // A child's cost adds to the parent's meter (shared): the parent's usage shows it.
    usage: () => reportUsage(),
    say: () => {},
    approve: askedBy(parentEnd.approve, state, agentName),
    questions: parentEnd.questions,
  };
}

/** Subagents: child sessions sharing their parent's runtime and rules, with their own history; kept by task id (a later call continues one). */
export class SessionSubagents implements Subagents {
  private readonly children = new Map<string, SubagentEntry>();

  constructor(
    private readonly host: SubagentHost,
    /** How deep the parent is (0: a top session). */
    private readonly depth: number,
  ) {}

  agents(): { name: string; description: string }[] {
    return this.host.agentCatalog().agents.map(({ name, description }) => ({ name, description }));
  }

  async run(request: SubagentRequest, signal: AbortSignal): Promise<SubagentResult> {
    let entry = request.taskId ? this.children.get(request.taskId) : undefined;
    if (request.taskId && !entry)
      throw new ToolError(
        "invalid_arguments",
        `There is no task ${request.taskId} in this session${this.children.size ? ` (tasks: ${[...this.children.keys()].join(", ")})` : ""}; leave task_id out to start a new one.`,
      );
    if (entry?.busy)
      throw new ToolError("invalid_arguments", `Task ${request.taskId} is still running; wait for its answer before continuing it.`);
    if (!entry) {
      entry = this.newChild(request);
      this.children.set(entry.taskId, entry);
    }
    const { child, state } = entry;
    entry.busy = true;
    state.parentCallId = request.parentCallId;
    state.progress = request.progress;
    state.text = "";
    state.description = request.description;
    const historyLength = child.history.length;
    let ended: TurnResult = { stopReason: "cancelled", error: "the subagent failed" };
    try {
      // Shown as its own session, the child can be cancelled alone: the task call then ends, the parent's turn goes on.
      const own = entry.view ? await entry.view.started(request.description) : undefined;
      const runSignal = own ? AbortSignal.any([signal, own]) : signal;
      const result = await child.ask({ text: request.prompt, content: () => request.prompt }, runSignal, entry.frontEnd);
      // A subagent's turn ends with its last message: text of earlier requests was narration.
      const last = child.history.length > historyLength ? child.history.lastAssistantText() : undefined;
      const stopReason = runSignal.aborted ? "cancelled" : result.stopReason;
      ended = { stopReason, ...(result.error ? { error: result.error } : {}) };
      return {
        text: last ?? state.text,
        stopReason,
        ...(result.error ? { error: result.error } : {}),
        taskId: entry.taskId,
      };
    } finally {
      entry.busy = false;
      await entry.view?.finished(ended.stopReason, ended.error).catch(() => {});
    }
  }

  /** The parent's last usage, with the cost its children added since. */
  private reportUsage(): void | Promise<void> {
    const last = this.host.usage();
    const meter = this.host.meter;
    // Without a price there is no cost to add (the context size is the parent's own).
    if (!last || meter.amount === 0) return;
    return this.host.frontEnd.usage({ ...last, cost: { amount: Math.round(meter.amount * 1e6) / 1e6, currency: "USD" } });
  }

  /** A child session for a request: its agent's tools (never wider than this session's), model and stricter mode. */
  private newChild(request: SubagentRequest): SubagentEntry {
    const host = this.host;
    let agent: AgentDefinition | undefined;
    if (request.agent !== undefined) {
      const { agents } = host.agentCatalog();
      agent = agents.find((a) => a.name === request.agent);
      if (!agent)
        throw new ToolError(
          "invalid_arguments",
          `Unknown agent ${JSON.stringify(request.agent)}. Valid agents: ${agents.map((a) => a.name).join(", ")}.`,
        );
    }
    const registry = host.registry();
    const ids = registry.list().map(({ tool }) => tool);
    const wanted =
      request.tools ??
      agent?.tools ??
      (agent ? ids : ids.filter((t) => isReadOnlyKind(t.kind))).map((t) => t.id).filter((id) => id !== "task");
    const parentAllowed = host.allowedTools;
    const allowed = new Set(wanted.filter((id) => registry.has(id) && (!parentAllowed || parentAllowed.has(id))));
    const parentEnd = host.frontEnd;
    const state: ChildState = { text: "", description: request.description };
    const agentName = agent ? `agent ${agent.name}` : "read-only tools";
    const view = parentEnd.subagent?.({ description: request.description, agent: agentName });
    const reportUsage = () => this.reportUsage();
    const frontEnd = view
      ? ownSessionFrontEnd(view.frontEnd, parentEnd, state, agentName, reportUsage)
      : nestedFrontEnd(parentEnd, state, agentName, reportUsage);
    const taskId = `task_${randomUUID().slice(0, 8)}`;
    const child = host.createChild({
      agentId: taskId,
      frontEnd,
      model: agent?.model ?? host.model(),
      allowedTools: allowed,
      // What the parent wired, and the tools the task names, are declared to the child from its first request.
      wired: [...host.wired(), ...(request.tools ?? agent?.tools ?? [])],
      // The system prompt adds the subagent's situation, then its agent's own instructions.
      instructions: [SUBAGENT_NOTE, agent?.prompt].filter(Boolean).join("\n\n"),
      depth: this.depth + 1,
      agentMode: agent?.mode,
    });
    return { taskId, child, busy: false, state, frontEnd, ...(view ? { view } : {}) };
  }
}
