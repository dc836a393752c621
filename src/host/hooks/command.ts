import { guardedCommand, releaseGuard } from "../../runtime/process-groups.js";
import { shellPath } from "../../runtime/shell/scoped.js";
import { spawnOffThread } from "../../runtime/shell/spawn-thread.js";
import { fromHookInput, type HookDialect, type HookEventName } from "./events.js";

// One hook command: the payload on stdin, its own process group (killed whole when it outlives its
// timeout or the caller gives up), and its answer read the way Claude Code reads it.

/** Each stream keeps at most this much; a longer answer is garbage. */
const MAX_OUTPUT_BYTES = 1024 * 1024;
/** How long the pipes may stay open after the command exited (a background child holding them). */
const DRAIN_MS = 250;

export interface CommandRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  /** An output stream passed MAX_OUTPUT_BYTES. */
  overflow: boolean;
  /** The command could not start. */
  error?: string;
}

export interface CommandOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  signal?: AbortSignal;
  /** What runs in place of `<shell> -c command`: the command wrapped in the session's sandbox. */
  spawn?: { file: string; args: string[]; env?: Record<string, string>; cwd: string };
}

/**
 * Runs `command` with the shell (bash where there is one), `stdin` written to it, in a process
 * group of its own. Started on the spawner thread (`runtime/shell/spawn-thread.ts`), as commands
 * are: a fork on the agent's thread held it 15–45 ms, at every hook of every call.
 */
export async function runHookCommand(command: string, stdin: string, options: CommandOptions): Promise<CommandRun> {
  const how = options.spawn ?? { file: shellPath(), args: ["-c", command], env: options.env, cwd: options.cwd };
  const run: CommandRun = { code: null, signal: null, stdout: "", stderr: "", timedOut: false, aborted: false, overflow: false };
  const env = how.env ?? process.env;
  // Behind the group guard (process-groups.ts): a hook's group ends with toolhost, however it ends.
  const guarded = guardedCommand("toolhost-hook", how.file, how.args, { env, cwd: how.cwd });
  const started = await spawnOffThread(guarded.file, guarded.args, { cwd: how.cwd, env, input: Buffer.from(stdin) });
  if ("failed" in started) return { ...run, error: started.failed.message };
  const { child } = started;
  const guard = guarded.guarded ? child.guard : undefined;
  return new Promise((resolve) => {
    const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
    const sizes = { stdout: 0, stderr: 0 };
    let done = false;
    let exited = false;
    let drain: NodeJS.Timeout | undefined;
    const killGroup = () => {
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    };
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(drain);
      options.signal?.removeEventListener("abort", onAbort);
      run.stdout = Buffer.concat(chunks.stdout).toString("utf8");
      run.stderr = Buffer.concat(chunks.stderr).toString("utf8");
      child.stdout.destroy();
      child.stderr.destroy();
      // Whatever the hook left running in its group was killed above or goes with toolhost; the guard of an ended one goes now.
      if (exited) releaseGuard(guard);
      resolve(run);
    };
    const timer = setTimeout(() => {
      run.timedOut = true;
      killGroup();
    }, options.timeoutMs);
    const onAbort = () => {
      run.aborted = true;
      killGroup();
    };
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener("abort", onAbort, { once: true });
    for (const name of ["stdout", "stderr"] as const) {
      child[name].on("data", (chunk: Buffer) => {
        if (sizes[name] + chunk.length > MAX_OUTPUT_BYTES) {
          run.overflow = true;
          killGroup();
          return;
        }
        sizes[name] += chunk.length;
        chunks[name].push(chunk);
      });
    }
    child.on("exit", (code: number | null, signal: NodeJS.Signals | null) => {
      exited = true;
      run.code = code;
      run.signal = signal;
      drain = setTimeout(finish, DRAIN_MS);
    });
    // Exited, and both pipes closed.
    void Promise.resolve(child).then(finish);
  });
}

/** What one hook said, in toolhost's terms. `block`: exit 2, `"decision": "block"`, or a deny. */
export interface HookReply {
  decision?: "allow" | "deny" | "ask" | "block";
  reason?: string;
  /** Changed arguments, in toolhost's names (null removes one). */
  changes?: Record<string, unknown>;
  context?: string[];
  /** What the model sees instead of the result; `withheld`: a failClosed hook failed, nothing of the result goes through. */
  replace?: { value: unknown; withheld?: boolean };
  /** `"continue": false`: end the turn, with this reason. */
  halt?: string;
  message?: string;
}

/** `unsandboxed`: a project's hook that did not run, since no sandbox can run it (the failure says why). */
export type HookResult =
  { reply: HookReply } | { failure: string; kind: "timeout" | "exit" | "garbage" | "error" | "unsandboxed" } | { aborted: true };

/** What the command was sent about a tool call, to read `updatedInput` against. */
export interface SentCall {
  toolId: string;
  toolInput: Record<string, unknown>;
}

const firstLine = (text: string) => {
  const line = text.trim().split("\n")[0] ?? "";
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
};

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Events where plain text on stdout (exit 0) is context for the model, as in Claude Code. */
const TEXT_IS_CONTEXT: ReadonlySet<HookEventName> = new Set(["prompt", "session_start"]);

/** Reads a finished command the way Claude Code does: exit 0 (+ JSON), exit 2 (block, stderr the reason), anything else a failure. */
export function readCommandRun(run: CommandRun, event: HookEventName, dialect: HookDialect, sent?: SentCall): HookResult {
  if (run.aborted) return { aborted: true };
  if (run.error) return { failure: `could not start (${run.error})`, kind: "error" };
  if (run.timedOut) return { failure: "did not finish in time (its process group was killed)", kind: "timeout" };
  if (run.overflow) return { failure: `wrote more than ${MAX_OUTPUT_BYTES} bytes`, kind: "garbage" };
  if (run.code === 2) return { reply: { decision: "block", reason: run.stderr.trim() || "(the hook gave no reason)" } };
  if (run.code !== 0) {
    const how = run.code === null ? `was killed by ${run.signal ?? "a signal"}` : `exited with ${run.code}`;
    const said = firstLine(run.stderr);
    return { failure: `${how}${said ? `: ${said}` : ""}`, kind: "exit" };
  }
  const text = run.stdout.trim();
  if (text === "") return { reply: {} };
  if (!text.startsWith("{")) {
    if (TEXT_IS_CONTEXT.has(event)) return { reply: { context: [text] } };
    return { failure: `printed text that is not JSON (${JSON.stringify(firstLine(text))})`, kind: "garbage" };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return { failure: `printed JSON that does not parse (${(err as Error).message})`, kind: "garbage" };
  }
  const reply = readJsonReply(json, dialect, sent);
  return typeof reply === "string" ? { failure: `printed ${reply}`, kind: "garbage" } : { reply };
}

const DECISIONS: Record<string, HookReply["decision"]> = { approve: "allow", allow: "allow", block: "block", deny: "deny", ask: "ask" };

/** Claude Code's JSON answer as a reply, or what is wrong with it. */
function readJsonReply(json: unknown, dialect: HookDialect, sent?: SentCall): HookReply | string {
  if (!isRecord(json)) return "JSON that is not an object";
  const reply: HookReply = {};
  const str = (key: string, v: unknown): string | undefined | Error =>
    v === undefined || typeof v === "string" ? v : new Error(`"${key}" that is not a string`);
  const reason = str("reason", json.reason);
  const message = str("systemMessage", json.systemMessage);
  const stopReason = str("stopReason", json.stopReason);
  for (const v of [reason, message, stopReason]) if (v instanceof Error) return v.message;
  if (json.continue !== undefined && typeof json.continue !== "boolean") return '"continue" that is not true or false';
  if (json.continue === false) reply.halt = (stopReason as string | undefined) ?? "a hook ended the turn";
  if (message) reply.message = message as string;
  if (json.decision !== undefined) {
    const decision = typeof json.decision === "string" ? DECISIONS[json.decision] : undefined;
    if (!decision) return `an unknown "decision" (${JSON.stringify(json.decision)})`;
    reply.decision = decision;
  }
  if (reason) reply.reason = reason as string;
  const specific = json.hookSpecificOutput;
  if (specific !== undefined) {
    if (!isRecord(specific)) return '"hookSpecificOutput" that is not an object';
    const p = specific.permissionDecision;
    if (p !== undefined) {
      if (p !== "allow" && p !== "deny" && p !== "ask" && p !== "defer") return `an unknown "permissionDecision" (${JSON.stringify(p)})`;
      if (p !== "defer") reply.decision = p;
    }
    const why = str("permissionDecisionReason", specific.permissionDecisionReason);
    const context = str("additionalContext", specific.additionalContext);
    if (why instanceof Error) return why.message;
    if (context instanceof Error) return context.message;
    if (why) reply.reason = why;
    if (context) reply.context = [context];
    const updated = specific.updatedInput;
    if (updated !== undefined) {
      if (!isRecord(updated)) return '"updatedInput" that is not an object';
      if (sent) {
        const changes = fromHookInput(dialect, sent.toolId, updated, sent.toolInput);
        if (Object.keys(changes).length) reply.changes = changes;
      }
    }
    for (const key of ["updatedToolOutput", "updatedMCPToolOutput"]) {
      if (specific[key] !== undefined) reply.replace ??= { value: specific[key] };
    }
  }
  return reply;
}
