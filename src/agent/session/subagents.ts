import { randomUUID } from "node:crypto";
import { ToolError } from "../../tool/errors.js";
import { isReadOnlyKind } from "../../tool/kinds.js";
import type { Subagents, SubagentRequest, SubagentResult } from "../../tool/services.js";
import type { ModeId } from "../../policy/modes.js";
import type { ToolRegistry } from "../../host/registry.js";
import type { AgentCatalog, AgentDefinition } from "../agents.js";
import type { SessionFrontEnd, PromptInput, SubagentView } from "./front-end.js";
import type { History } from "../turn/history.js";
import type { ToolCallInfo } from "../turn/tool-runner.js";
import type { CostMeter, TurnObserver, TurnResult, UsageReport } from "../turn/turn-types.js";

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
  /** A background task ended with an answer for the model: the session delivers it (now, if it is idle). */
  backgroundFinished(): void;
}

/** A task running (or run) in the background: its own abort, its end, its answer until delivered. */
interface BackgroundRun {
  controller: AbortController;
  done: Promise<void>;
  startedAt: number;
  /** Tool calls the child made so far, and the last one's title. */
  calls: number;
  lastCall?: string;
  result?: SubagentResult;
  /** The answer reached the model (by delivery or by `status`), or the model cancelled it. */
  delivered: boolean;
}

/** The most of a background answer delivered into the parent's conversation (the task tool's own cap). */
const MAX_DELIVERED_CHARS = 50 * 1024;

interface ChildState {
  text: string;
  description: string;
  parentCallId?: string;
  progress?: (lines: string[]) => void;
  /** Each new call of the child, by its title (a background run counts them for `status`). */
  called?: (title: string) => void;
}

interface SubagentEntry {
  taskId: string;
  child: ChildSession;
  busy: boolean;
  /** The child as a session of its own, when the front end shows it so. */
  view?: SubagentView;
  state: ChildState;
  frontEnd: SessionFrontEnd;
  /** The latest background run of this task (a synchronous run clears it). */
  background?: BackgroundRun;
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
    pending: (info) => {
      state.called?.(info.title);
      return own.pending(info);
    },
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
    if (!lines.has(info.callId)) state.called?.(info.title);
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
    const entry = this.entryFor(request);
    entry.background = undefined;
    entry.state.progress = request.progress;
    entry.state.called = undefined;
    return this.runEntry(entry, request, signal);
  }

  start(request: SubagentRequest): { taskId: string } {
    // A subagent's turn ends with its answer: nothing would take a background answer after it.
    if (this.depth > 0)
      throw new ToolError(
        "invalid_arguments",
        "A subagent cannot start background tasks: run the task without background (it waits for the answer).",
      );
    const entry = this.entryFor(request);
    const controller = new AbortController();
    const run: BackgroundRun = { controller, done: Promise.resolve(), startedAt: Date.now(), calls: 0, delivered: false };
    entry.background = run;
    // The calling call is over once this returns: the child's calls still nest under it, without progress lines.
    entry.state.progress = undefined;
    entry.state.called = (title) => {
      run.calls += 1;
      run.lastCall = title;
    };
    run.done = this.runEntry(entry, request, controller.signal).then(
      (result) => this.backgroundEnded(run, result),
      (err: unknown) =>
        this.backgroundEnded(run, {
          text: "",
          stopReason: "end_turn",
          error: err instanceof Error ? err.message : String(err),
          taskId: entry.taskId,
        }),
    );
    return { taskId: entry.taskId };
  }

  status(taskId: string): string {
    const entry = this.known(taskId);
    const run = entry.background;
    if (entry.busy && run) {
      const seconds = Math.round((Date.now() - run.startedAt) / 1000);
      const last = run.lastCall ? `; the last: ${run.lastCall}` : "";
      return `Task ${taskId} ("${entry.state.description}") is running in the background: ${seconds} s, ${run.calls} tool call${run.calls === 1 ? "" : "s"} so far${last}. Its answer comes to you as a message when it ends.`;
    }
    if (entry.busy) return `Task ${taskId} ("${entry.state.description}") is running (not in the background).`;
    if (!run?.result)
      return `Task ${taskId} ("${entry.state.description}") is idle: its last answer was returned by its task call. Give task_id with a new prompt to continue it.`;
    run.delivered = true;
    return backgroundReport(entry.state.description, run.result);
  }

  async cancel(taskId: string): Promise<string> {
    const entry = this.known(taskId);
    const run = entry.background;
    if (!entry.busy || !run) return `Task ${taskId} is not running in the background: nothing to cancel.`;
    run.delivered = true;
    run.controller.abort(new Error("Cancelled by the model"));
    await run.done;
    return `Task ${taskId} ("${entry.state.description}") was cancelled. Give task_id with a new prompt to continue its conversation.`;
  }

  /**
   * The answers of background tasks that ended and were not delivered yet, as one message for the
   * model, and a line for the person (all marked delivered).
   */
  takeFinished(): { message: string; summary: string } | undefined {
    const reports: string[] = [];
    const ended: string[] = [];
    for (const entry of this.children.values()) {
      const run = entry.background;
      if (!run?.result || run.delivered) continue;
      run.delivered = true;
      reports.push(backgroundReport(entry.state.description, run.result));
      ended.push(`"${entry.state.description}" (${entry.taskId}) ${howItEnded(run.result)}`);
    }
    return reports.length ? { message: reports.join("\n\n"), summary: `Background task ${ended.join("; ")}` } : undefined;
  }

  /** Whether a background task is still running. */
  get running(): boolean {
    return this.backgroundRuns().length > 0;
  }

  /** Resolves once no background task runs (one that ends may have started another). */
  async settled(): Promise<void> {
    for (let runs = this.backgroundRuns(); runs.length; runs = this.backgroundRuns()) await Promise.all(runs.map((r) => r.done));
  }

  /** Ends every background task (the session closes). */
  async close(): Promise<void> {
    for (const run of this.backgroundRuns()) {
      run.delivered = true;
      run.controller.abort(new Error("The session closed"));
    }
    await this.settled();
  }

  private backgroundRuns(): BackgroundRun[] {
    return [...this.children.values()].flatMap((e) => (e.busy && e.background ? [e.background] : []));
  }

  private backgroundEnded(run: BackgroundRun, result: SubagentResult): void {
    run.result = result;
    if (!run.delivered) this.host.backgroundFinished();
  }

  private known(taskId: string): SubagentEntry {
    const entry = this.children.get(taskId);
    if (!entry)
      throw new ToolError(
        "invalid_arguments",
        `There is no task ${taskId} in this session${this.children.size ? ` (tasks: ${[...this.children.keys()].join(", ")})` : ""}.`,
      );
    return entry;
  }

  /** The child a request continues (by task id) or a new one; refused while it runs. */
  private entryFor(request: SubagentRequest): SubagentEntry {
    let entry = request.taskId ? this.children.get(request.taskId) : undefined;
    if (request.taskId && !entry)
      throw new ToolError(
        "invalid_arguments",
        `There is no task ${request.taskId} in this session${this.children.size ? ` (tasks: ${[...this.children.keys()].join(", ")})` : ""}; leave task_id out to start a new one.`,
      );
    if (entry?.busy)
      throw new ToolError(
        "invalid_arguments",
        `Task ${request.taskId} is still running; ${entry.background ? 'ask for its action "status", or wait for its answer,' : "wait for its answer"} before continuing it.`,
      );
    if (!entry) {
      entry = this.newChild(request);
      this.children.set(entry.taskId, entry);
    }
    return entry;
  }

  private async runEntry(entry: SubagentEntry, request: SubagentRequest, signal: AbortSignal): Promise<SubagentResult> {
    const { child, state } = entry;
    entry.busy = true;
    state.parentCallId = request.parentCallId;
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

/** How a background run ended, in a few words. */
function howItEnded(result: SubagentResult): string {
  if (result.error) return `failed: ${result.error}`;
  if (result.stopReason === "cancelled") return "was cancelled";
  return result.stopReason === "end_turn" ? "finished" : `stopped early (${result.stopReason})`;
}

/** A background task's end, as the message the parent's model gets. */
function backgroundReport(description: string, result: SubagentResult): string {
  let answer = result.text || "(The subagent gave no answer.)";
  if (answer.length > MAX_DELIVERED_CHARS)
    answer = `${answer.slice(0, MAX_DELIVERED_CHARS)}\n[The answer was cut at ${MAX_DELIVERED_CHARS} characters.]`;
  return `[Background task ${result.taskId} ("${description}") ${howItEnded(result)}. task_id: ${result.taskId}]\n\n${answer}`;
}
