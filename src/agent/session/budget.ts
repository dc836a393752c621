import path from "node:path";
import {
  BUDGET_FLAGS,
  mergeBudget,
  readProjectBudget,
  type BudgetLimit,
  type BudgetLimits,
  type SessionLimits,
} from "../../config/budget.js";
import type { ModeId } from "../../policy/modes.js";
import type { SessionFrontEnd } from "./front-end.js";
import type { SessionTools } from "./tools.js";
import type { BudgetStop, CostMeter, TurnBudget } from "../turn/turn-types.js";

// A session's budget (issue 24 §2): the caps the loop asks about before each model request and
// each tool call, over the meter the loop counts on (a subagent's on its parent's, so children
// count against their parent). At a cap, in ask mode with someone to ask, the user decides whether
// to go on (yes raises that cap by its amount again); otherwise the turn stops, saying which cap,
// how much, and how to raise it.

/** The caps a session stops at (`warnAtUsd` only warns). */
type Cap = "maxTurns" | "maxToolCalls" | "maxCostUsd" | "maxTokens";

/** Checked before each model request; `maxToolCalls` before each call. */
const REQUEST_CAPS: readonly Cap[] = ["maxTurns", "maxCostUsd", "maxTokens"];

/** What a session's budget needs of it. */
export interface BudgetHost {
  /** The meter the loop counts on (shared with the session's subagents). */
  meter: CostMeter;
  /** The limits in force, and lines to say once about them (a project's value that was ignored). */
  limits(): { limits: SessionLimits; warnings: string[] };
  /** The session's mode: only `ask` asks at a cap. */
  mode(): ModeId;
  /** The top session's front end: its notices, and `confirm` (absent headless: a cap stops). */
  frontEnd: Pick<SessionFrontEnd, "say" | "confirm">;
}

/** Dollars for a message: cents, or four places below a cent. */
export function usd(amount: number): string {
  return `$${amount >= 0.01 || amount === 0 ? amount.toFixed(2) : amount.toFixed(4)}`;
}

const count = (n: number, one: string, many = `${one}s`) => `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;

/** A cap's amount, in words. */
function amountOf(cap: Cap, value: number): string {
  switch (cap) {
    case "maxTurns":
      return count(value, "model request");
    case "maxToolCalls":
      return count(value, "tool call");
    case "maxCostUsd":
      return usd(value);
    case "maxTokens":
      return count(value, "token");
  }
}

function declinedMessage(cap: Cap, limit: BudgetLimit, value: number): string {
  return `Stopped: the session reached its budget of ${amountOf(cap, value)} (${limit.source}), and you chose to stop. The next prompt asks again.`;
}

/** The limits of a session: the user's config and profile as its toolset read them, the flags, a trusted project's; read again when the toolset is rebuilt. */
export function sessionLimits(tools: Pick<SessionTools, "toolset" | "workspace">, flags?: BudgetLimits): BudgetHost["limits"] {
  let cached: { toolset: unknown; limits: SessionLimits; warnings: string[] } | undefined;
  return () => {
    const toolset = tools.toolset;
    if (cached?.toolset !== toolset) {
      const { config, profile, report } = toolset;
      const project = report.trusted ? readProjectBudget(tools.workspace.cwd) : undefined;
      const merged = mergeBudget({
        user: { limits: config.config.budget, file: config.path },
        profile: profile.budget && profile.dir ? { limits: profile.budget, file: path.join(profile.dir, "profile.json") } : undefined,
        flags,
        project: project?.source,
      });
      cached = { toolset, limits: merged.limits, warnings: [...(project?.problem ? [project.problem] : []), ...merged.warnings] };
    }
    return { limits: cached.limits, warnings: cached.warnings };
  };
}

/** The session's caps, as the loop asks about them (`TurnBudget`). One per session, shared with its subagents. */
export class SessionBudget implements TurnBudget {
  /** How many times the user let each cap be passed: the cap is its amount times one more than this. */
  private readonly raises: Partial<Record<Cap, number>> = {};
  /** A question about a cap in flight: another call at the same cap waits for its answer instead of asking again. */
  private readonly asking = new Map<Cap, Promise<boolean>>();
  /** Notices said once per session. */
  private readonly said = new Set<string>();
  /** Caps the user chose to stop at in this prompt's turn: not asked again until the next prompt. */
  private readonly declined = new Set<Cap>();

  constructor(private readonly host: BudgetHost) {}

  /** A prompt's turn starts (the top session's, not a subagent's): a cap declined in the last one is asked about again. */
  turnStarted(): void {
    this.declined.clear();
  }

  async beforeRequest(model: { modelId: string; priced: boolean }, signal: AbortSignal): Promise<BudgetStop | null> {
    const limits = await this.limits();
    const cost = limits.maxCostUsd;
    if (cost && !model.priced) {
      const tokens = limits.maxTokens;
      await this.sayOnce(
        tokens
          ? `No price is known for ${model.modelId}: capped by tokens instead (${amountOf("maxTokens", tokens.value)}, ${tokens.source}).`
          : `No price is known for ${model.modelId}: its cost is not counted, so ${cost.source} cannot stop it; set budget.maxTokens to cap it by tokens.`,
      );
    }
    for (const cap of REQUEST_CAPS) {
      const stop = await this.check(cap, signal);
      if (stop) return stop;
    }
    return null;
  }

  async beforeCall(signal: AbortSignal): Promise<BudgetStop | null> {
    await this.limits();
    return this.check("maxToolCalls", signal);
  }

  /** The warning line: said once, when the cost reaches it. */
  async afterRequest(): Promise<void> {
    const warn = (await this.limits()).warnAtUsd;
    const amount = this.host.meter.amount;
    if (warn && amount >= warn.value)
      await this.sayOnce(`The session has cost ${usd(amount)}, past its warning line of ${usd(warn.value)} (${warn.source}).`, "warnAtUsd");
  }

  /** The limits in force; the first time each, their warnings said. */
  private async limits(): Promise<SessionLimits> {
    const { limits, warnings } = this.host.limits();
    for (const line of warnings) await this.sayOnce(line);
    return limits;
  }

  private async sayOnce(text: string, key = text): Promise<void> {
    if (this.said.has(key)) return;
    this.said.add(key);
    await this.host.frontEnd.say(text);
  }

  private used(cap: Cap): number {
    const meter = this.host.meter;
    switch (cap) {
      case "maxTurns":
        return meter.requests;
      case "maxToolCalls":
        return meter.toolCalls;
      case "maxCostUsd":
        return meter.amount;
      case "maxTokens":
        return meter.tokens;
    }
  }

  /** Null while the cap is not reached, or once the user lets it be passed; else why the turn stops. */
  private async check(cap: Cap, signal: AbortSignal): Promise<BudgetStop | null> {
    for (;;) {
      const limit = this.host.limits().limits[cap];
      if (!limit) return null;
      const value = limit.value * (1 + (this.raises[cap] ?? 0));
      if (this.used(cap) < value) return null;
      const confirm = this.host.frontEnd.confirm;
      if (this.host.mode() !== "ask" || !confirm) return { message: this.stopMessage(cap, limit, value, !!confirm) };
      if (this.declined.has(cap)) return { message: declinedMessage(cap, limit, value) };
      // One question at a time: a call that reaches the cap while it is asked waits for the same answer.
      let asked = this.asking.get(cap);
      if (!asked) {
        // The answer is applied once, by the question itself, before anyone waiting on it goes on.
        asked = this.ask(confirm, cap, limit, value, signal).then((yes) => {
          this.asking.delete(cap);
          if (yes) this.raises[cap] = (this.raises[cap] ?? 0) + 1;
          else this.declined.add(cap);
          return yes;
        });
        this.asking.set(cap, asked);
      }
      if (!(await asked)) return { message: declinedMessage(cap, limit, value) };
    }
  }

  private async ask(
    confirm: NonNullable<SessionFrontEnd["confirm"]>,
    cap: Cap,
    limit: BudgetLimit,
    value: number,
    signal: AbortSignal,
  ): Promise<boolean> {
    const next = amountOf(cap, value + limit.value);
    return confirm(
      {
        title: `The session reached its budget of ${amountOf(cap, value)}: go on?`,
        text: `${this.usedText(cap)} (${limit.source}). Going on raises this cap by ${amountOf(cap, limit.value)}, to ${next}; stopping ends the turn.`,
        yes: `Go on (up to ${next})`,
        no: "Stop",
      },
      signal,
    ).catch(() => false);
  }

  /** What the session has used of a cap, as a sentence. */
  private usedText(cap: Cap): string {
    const used = this.used(cap);
    switch (cap) {
      case "maxTurns":
        return `The session has made ${amountOf(cap, used)}`;
      case "maxToolCalls":
        return `The session has made ${amountOf(cap, used)}`;
      case "maxCostUsd":
        return `The session has cost ${usd(used)}`;
      case "maxTokens":
        return `The session has used ${amountOf(cap, used)}`;
    }
  }

  /** The message at a cap that nobody is asked about: which cap, the amount, how to raise it. */
  private stopMessage(cap: Cap, limit: BudgetLimit, value: number, canAsk: boolean): string {
    const reached = `Stopped: the session reached its budget of ${amountOf(cap, value)} (${limit.source}). ${this.usedText(cap)}.`;
    if (limit.flag) return `${reached} Run it again with a higher ${limit.source} to go on.`;
    const flag = BUDGET_FLAGS[cap];
    return canAsk
      ? `${reached} In ask mode you are asked whether to go on past it; or raise budget.${cap} for new sessions.`
      : `${reached} Raise budget.${cap} to go on${flag ? ` (toolhost run: ${flag})` : ""}.`;
  }
}
