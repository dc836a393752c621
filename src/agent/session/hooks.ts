import type { HookSandbox, Hooks } from "../../host/hooks/engine.js";
import type { HookEventName, HookInputs, HookOutcome, HookSession } from "../../host/hooks/events.js";
import type { Envelope } from "../../tool/envelope.js";
import type { History } from "../turn/history.js";
import type { CompactionEvent } from "../turn/turn-types.js";
import type { CallHooks, HookedCall } from "../turn/tool-runner.js";

// A session's lifecycle hooks at their sites (the engine is host/hooks/): what each event is told
// of the session, and what each outcome does besides its event's own effect — problems (once) and
// messages go to the user. A subagent runs its parent's hooks, with its task id as `agentId`.

/** How often in a row the stop hooks may keep a turn going. */
export const MAX_STOP_CONTINUES = 3;

export interface SessionHooksHost {
  /** The session's tools: their toolset's hooks (a reload reads them again). */
  tools: { readonly toolset: { readonly hooks: Hooks } };
  session: { readonly id: string; readonly mode: string; transcriptPath?(): string | undefined };
  cwd: string;
  /** A subagent's task id. */
  agentId?: string;
  frontEnd: { say(text: string): void | Promise<void> };
  /** Where the project's command hooks run: the session's sandbox (without it they do not run). */
  sandbox?: HookSandbox;
}

export class SessionHooks implements CallHooks {
  private started = false;
  /** What the `clear` session_start hooks said, for the next model prompt. */
  private clearContext: string | undefined;
  private readonly compactions = new Set<string>();
  /** A tool_call or tool_result hook's `"continue": false`, until the turn's loop takes it. */
  private halt: string | undefined;

  constructor(private readonly host: SessionHooksHost) {}

  get subagent(): boolean {
    return this.host.agentId !== undefined;
  }

  /** Runs an event's hooks (none listening: undefined) and tells the user their problems and messages. */
  async run<E extends HookEventName>(event: E, input: HookInputs[E], signal?: AbortSignal): Promise<HookOutcome<E> | undefined> {
    const hooks = this.host.tools.toolset.hooks;
    if (!hooks.has(event)) return undefined;
    const { host } = this;
    const transcriptPath = host.session.transcriptPath?.();
    const session: HookSession = {
      sessionId: host.session.id,
      cwd: host.cwd,
      ...(transcriptPath ? { transcriptPath } : {}),
      mode: host.session.mode,
      ...(host.agentId ? { agentId: host.agentId } : {}),
    };
    const outcome = await hooks.run(event, { ...input, ...session }, { signal, sandbox: host.sandbox });
    for (const text of [...outcome.problems, ...outcome.messages]) await host.frontEnd.say(text);
    if (outcome.halt && (event === "tool_call" || event === "tool_result")) this.halt ??= outcome.halt.reason;
    return outcome;
  }

  toolCall(call: HookedCall, signal: AbortSignal): Promise<HookOutcome<"tool_call"> | undefined> {
    return this.run("tool_call", call, signal);
  }

  toolResult(call: HookedCall, result: Envelope, signal: AbortSignal): Promise<HookOutcome<"tool_result"> | undefined> {
    return this.run("tool_result", { ...call, result }, signal);
  }

  takeHalt(): string | undefined {
    const halt = this.halt;
    this.halt = undefined;
    return halt;
  }

  /**
   * Before the session's first model prompt: session_start (a session with history is resumed).
   * Its context goes with that first prompt (not the system prompt, which stays the same for every
   * request and so stays cached).
   */
  async start(history: History, signal: AbortSignal): Promise<string | undefined> {
    const cleared = this.clearContext;
    this.clearContext = undefined;
    if (this.started || this.subagent) return cleared;
    this.started = true;
    const outcome = await this.run("session_start", { source: history.messages.length ? "resume" : "startup" }, signal);
    return outcome?.addContext?.join("\n\n") || undefined;
  }

  /** Before a user prompt reaches the model: a block's reason ends the turn, context goes with the prompt. */
  async prompt(text: string, signal: AbortSignal): Promise<{ block: string } | { context?: string }> {
    if (this.subagent) return {};
    const outcome = await this.run("prompt", { prompt: text }, signal);
    if (outcome?.block) return { block: `The prompt was blocked by the hook ${outcome.source ?? ""}: ${outcome.reason ?? ""}` };
    return { context: outcome?.addContext?.join("\n\n") || undefined };
  }

  /** At the end of a turn: what the model is told to go on with (a subagent's: subagent_stop), if a hook asks. */
  async stop(continued: boolean, history: History, signal: AbortSignal): Promise<string | undefined> {
    const input = { stopHookActive: continued, lastMessage: lastText(history) };
    const outcome = await this.run(this.subagent ? "subagent_stop" : "stop", input, signal);
    return outcome?.continue;
  }

  /** Before a compaction (its first event): the compact hooks, told whether the user asked for it. */
  async compacting(event: CompactionEvent, trigger: "manual" | "auto"): Promise<void> {
    if (event.status !== "in_progress" || this.compactions.has(event.id)) return;
    this.compactions.add(event.id);
    await this.run("compact", { trigger });
  }

  /** `/clear` (as Claude Code's): the history emptied, session_end with reason `clear`, then session_start with source `clear`; its context goes with the next prompt. */
  async cleared(signal: AbortSignal, history: History): Promise<void> {
    history.replace([]);
    if (this.subagent) return;
    this.started = true;
    await this.run("session_end", { reason: "clear" }, signal);
    const outcome = await this.run("session_start", { source: "clear" }, signal);
    this.clearContext = outcome?.addContext?.join("\n\n") || undefined;
  }

  /** The session ends (closed). */
  async end(reason: string): Promise<void> {
    if (!this.subagent) await this.run("session_end", { reason });
  }
}

/** The text of the history's last assistant message. */
function lastText(history: History): string | undefined {
  const last = [...history.messages].reverse().find((m) => m.role === "assistant");
  if (!last) return undefined;
  if (typeof last.content === "string") return last.content;
  return last.content.map((p) => (p.type === "text" ? p.text : "")).join("") || undefined;
}
