import type { SessionFrontEnd } from "./front-end.js";
import type { TurnStopReason } from "../turn/turn-types.js";

// A session's turns, one after another (AgentSession's): every turn received and not yet ended,
// running or waiting its turn, so a cancel stops them all, and one that arrives before a turn's
// first await (its setup, the turn before it) is never lost.

export class TurnQueue {
  private readonly turns = new Set<AbortController>();
  private done: Promise<unknown> = Promise.resolve();

  /** @param before what a queued turn waits for after the one before it (a cancelled turn's closing checkpoint). */
  constructor(private readonly before: () => Promise<void> | undefined) {}

  /** A turn's controller, from the moment it is received: cancel() reaches it before it starts. */
  received(): AbortController {
    const controller = new AbortController();
    this.turns.add(controller);
    return controller;
  }

  /** The turn of `controller` ended: a cancel no longer reaches it. */
  ended(controller: AbortController): void {
    this.turns.delete(controller);
  }

  /** Runs `fn` after the turns (and rewinds) queued before it. */
  queued<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.done.then(() => this.before()).then(fn);
    this.done = run.catch(() => {});
    return run;
  }

  /** Resolves when nothing queued so far runs. */
  idle(): Promise<unknown> {
    return this.done;
  }

  /** Aborts every turn received and not yet ended; each ends `cancelled`. */
  cancel(): void {
    for (const turn of this.turns) turn.abort(new Error("Cancelled by the user"));
  }
}

/** What a turn of the agent's own (background answers) needs of its session. */
export interface OwnTurnHost {
  turns: TurnQueue;
  frontEnd: SessionFrontEnd;
  /** The answers not delivered yet (marked delivered), or none; asked when the turn's place in the queue comes. */
  take(): { message: string; summary: string } | undefined;
  /** The answers as the turn's prompt, recorded as one. */
  run(text: string, controller: AbortController): Promise<TurnStopReason>;
}

/**
 * A background task ended: its answer goes with the next model request of the running turn, or,
 * queued after it, starts a turn of its own when nothing took it.
 */
export function queueOwnTurn(host: OwnTurnHost): void {
  const { turns, frontEnd } = host;
  void turns.queued(async () => {
    const finished = host.take();
    if (!finished) return;
    // Registered as it starts (a cancel of the turn before it must not drop the answers), before the front end hears of it.
    const controller = turns.received();
    // The person sees why the agent speaks up unasked; the model gets the answers as the turn's prompt.
    let stopReason: TurnStopReason | "error" = "error";
    try {
      await frontEnd.ownTurn?.("running");
      await frontEnd.say(`${finished.summary}: the answer goes to the model.\n\n`);
      stopReason = await host.run(finished.message, controller);
    } finally {
      turns.ended(controller);
      await frontEnd.ownTurn?.("idle", stopReason);
    }
  });
}
