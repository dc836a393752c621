import { parseSlash } from "../agent/commands.js";
import type { SessionFrontEnd } from "../agent/session/agent-session.js";
import type { TurnStopReason } from "../agent/turn/turn-types.js";
import type { BudgetLimits } from "../config/budget.js";
import type { Workspace } from "../config/workspace.js";
import { envelopeToText, type Envelope } from "../tool/envelope.js";
import { sweepStale } from "../runtime/sidecars.js";
import { recordingEnabled } from "../agent/record/session-store.js";
import { headlessSession } from "./headless.js";
import { resumeSession, type ResumeChoice, type ResumedSession } from "./run-resume.js";
import { RUN_EVENTS_VERSION, runTotals, type RunEvent } from "./run-events.js";
import { version } from "../config/paths.js";
import { defaultModelId } from "../agent/model/model-config.js";
import { EXIT_STDOUT_CLOSED } from "./stdout.js";

export interface RunOptions {
  prompt: string;
  /** Where the session works, resolved once (cli.ts's checkWorkspace). */
  workspace: Workspace;
  profile?: string;
  /** The session's model (`provider/model`), over env and config file. */
  model?: string;
  /** The session mode (default `ask`: headless, every call that needs approval is refused). */
  mode?: string;
  /** The run's caps (--max-turns …), over the config's budget. */
  budget?: BudgetLimits;
  /** One JSON event per line on stdout instead of text. */
  json: boolean;
  /** The real stdout (the CLI sends every other write to stdout to stderr). */
  out: (text: string) => Promise<void>;
  /** Settles when stdout's reader goes away (`| head`): the run stops as an interrupt does, and ends 141. */
  outClosed?: Promise<void>;
  /** Go on with a saved session of the workspace (`--continue`, `--resume ID`) instead of a new one. */
  resume?: ResumeChoice;
}

/**
 * Exit codes: 0 the turn ended normally with no failure, 1 otherwise, 2 bad usage, 130 interrupted,
 * 141 stdout's reader went away (what a shell reports for SIGPIPE; the turn is cancelled).
 */
const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_INTERRUPTED = 130;

/**
 * The hint a refused call gets on stderr, naming only a mode that would let it run: a refusal of
 * the mode's own (policy/decide.ts's mode layer: "ask mode asks before …", "not available in
 * read-only mode"). A rule's, a hook's, the watchdog's or the sandbox's holds in every mode.
 */
function modeHint(reason: string, mode: string): string {
  const modeAsked = /nobody can answer here/.test(reason) && /\b(?:ask|accept-edits) mode asks before/.test(reason);
  const modeRefused = /is not available in read-only mode/.test(reason);
  if (mode === "full" || (!modeAsked && !modeRefused) || /outside the workspace/.test(reason)) return "";
  const edits = mode === "ask" && /mode asks before changing files/.test(reason);
  return ` (toolhost run is headless: ${edits ? "--mode accept-edits or --mode full" : "--mode full"} allows it)`;
}

/**
 * `toolhost run`: one prompt without an editor, on the same session machinery — a model turn
 * (text streamed on stdout, one line per tool call on stderr) or a slash command (its result
 * on stdout). With `--json`, stdout carries one event per line and nothing else.
 */
export async function runPrompt(options: RunOptions): Promise<number> {
  // Set once the session exists: a slash command's call is the run's whole answer.
  let slash = false;
  let failed = false;
  // Calls run outside the model's loop (a slash command's): the meter counts only the model's.
  let ownCalls = 0;
  let midLine = false; // stdout has text with no newline yet
  const emit = (event: RunEvent) => options.out(`${JSON.stringify(event)}\n`);
  const print = async (text: string) => {
    if (!text) return;
    await options.out(text);
    midLine = !text.endsWith("\n");
  };
  const endLine = () => (midLine ? print("\n") : Promise.resolve());

  const frontEnd: SessionFrontEnd = {
    pending: (info) => (options.json ? emit({ type: "tool_call_start", id: info.callId, tool: info.toolId, kind: info.kind }) : undefined),
    event: () => {},
    running: () => {},
    done: async (callId, envelope: Envelope, info, display) => {
      const error = envelope.type === "error" ? envelope : undefined;
      // Data that reports a failure (a command that exited non-zero, was killed, timed out) failed too, as the editor shows it.
      const failedOutput = !error && display?.failed === true;
      if (slash) ownCalls += 1;
      // A slash command's call is the prompt's whole answer: it fails the run as `call` would.
      if (slash && (error || failedOutput)) failed = true;
      if (options.json) {
        await emit({
          type: "tool_call_end",
          id: callId,
          tool: info.toolId,
          title: info.title,
          status: error || failedOutput ? "failed" : "completed",
          ...(error ? { error_code: error.metadata.error_code, error: error.error_text } : {}),
          ...(failedOutput
            ? { error: display.failure ?? "failed", ...(display.exitCode !== undefined ? { exit_code: display.exitCode } : {}) }
            : {}),
        });
        if (slash && !error) await emit({ type: "tool_result", id: callId, text: envelopeToText(envelope) });
        return;
      }
      await endLine();
      const code = error?.metadata.error_code;
      const why = error
        ? `: ${code ? `${code} ` : ""}${error.error_text}${code === "permission_denied" ? modeHint(error.error_text, options.mode ?? "ask") : ""}`
        : failedOutput
          ? `: ${display.failure ?? "failed"}`
          : "";
      process.stderr.write(`${error || failedOutput ? "✗" : "✓"} ${info.title}${why}\n`);
      if (slash && !error) await print(`${envelopeToText(envelope)}\n`); // an error is the line above
    },
    text: (delta) => (options.json ? emit({ type: "text", delta }) : print(delta)),
    thought: (delta) => (options.json ? emit({ type: "thought", delta }) : undefined),
    usage: (report) => (options.json ? emit({ type: "usage", ...report }) : undefined),
    say: async (text) => {
      if (slash) {
        // A slash command's own answer (help, usage, the tool list).
        if (options.json) await emit({ type: "message", text });
        else await print(`${text}\n`);
        return;
      }
      // Anything else the session says during a model turn is a note for the person at the terminal.
      if (options.json) await emit({ type: "message", text });
      else await endLine();
      process.stderr.write(`${text.trimEnd()}\n`);
    },
    failed: async (text) => {
      // No model, a provider error, a crash: the run failed, whatever the stop reason.
      failed = true;
      if (options.json) await emit({ type: "error", message: text });
      else await endLine();
      process.stderr.write(`${text}\n`);
    },
  };

  let resumed: ResumedSession | undefined;
  if (options.resume) {
    const found = await resumeSession(options.resume, options.workspace);
    if ("error" in found) {
      process.stderr.write(`toolhost: ${found.error}\n`);
      return EXIT_USAGE;
    }
    resumed = found;
  }
  const session = await headlessSession({
    workspace: resumed?.workspace ?? options.workspace,
    resume: resumed,
    profile: options.profile,
    mode: options.mode ?? "ask",
    budget: options.budget,
    frontEnd,
    record: true,
  });
  // The user's MCP servers (and a trusted project's) take part, as in the editor; the turn waits for them.
  await session.mcp.start([]);
  slash = parseSlash(options.prompt, session.registry) !== null;
  if (options.model) {
    const problem = session.setModel(options.model);
    if (problem) {
      process.stderr.write(`toolhost: --model: ${problem}\n`);
      return EXIT_USAGE;
    }
  }
  // The run's own totals: a resumed session's meter starts at what it used before.
  const before = { ...session.meter };
  if (options.json) {
    const { id: session_id, workspace, mode } = session;
    // The session's own choice (--model, a resumed session's), else the environment's or the config's.
    const model = session.model ?? defaultModelId()?.id;
    await emit({
      type: "start",
      v: RUN_EVENTS_VERSION,
      session_id,
      cwd: workspace.cwd,
      ...(model ? { model } : {}),
      mode,
      toolhost: version,
    });
  }
  let interrupted = false;
  let onInterrupt = () => {};
  const interruptedWait = new Promise<void>((resolve) => (onInterrupt = resolve));
  const onSignal = () => {
    interrupted = true;
    onInterrupt();
    session.cancel(); // aborts the model request and the running tools (their processes are killed)
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  // Nobody reads the answer any more: stop the model and the tools rather than pay for them.
  let readerGone = false;
  void options.outClosed?.then(() => {
    readerGone = true;
    if (!interrupted) onSignal();
  });
  const swept = sweepStale().catch(() => {});
  let stopReason: TurnStopReason;
  try {
    stopReason = await session.prompt({ text: options.prompt, content: () => options.prompt });
    // Background tasks run to their end, their answers to the model; an interrupt stops waiting (close ends them).
    if (!interrupted) await Promise.race([session.settled(), interruptedWait]);
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await session.close();
    await swept;
  }
  const code = readerGone
    ? EXIT_STDOUT_CLOSED
    : interrupted
      ? EXIT_INTERRUPTED
      : stopReason === "end_turn" && !failed
        ? EXIT_OK
        : EXIT_FAILED;
  if (options.json)
    await emit({
      type: "stop",
      stop_reason: stopReason,
      exit_code: code,
      session_id: session.id,
      totals: runTotals(session.meter, before, ownCalls),
    });
  else {
    await endLine();
    if (readerGone) process.stderr.write("toolhost: stdout was closed, so the turn was cancelled\n");
    else if (stopReason !== "end_turn") process.stderr.write(`toolhost: the turn ended: ${stopReason}\n`);
  }
  // A cap (or the request limit) stopped the turn: the session is saved, and this goes on with it.
  if (stopReason === "max_turn_requests" && (resumed !== undefined || recordingEnabled()))
    process.stderr.write(`toolhost: go on with: toolhost run --resume ${session.id} "…" (with a higher cap, as said above)\n`);
  return code;
}
