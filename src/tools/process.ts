import * as z from "zod";
import type { ProcessInfo, ProcessOutput, ProcessStream, ToolContext } from "../tool/context.js";
import { defineTool, type ToolDisplay } from "../tool/define.js";
import { bashTitle, commandTargets } from "./command-line.js";

// process: long-running commands in the background (dev servers, watchers), as seed 004 shapes it.
// A start is judged as a bash call (the same targets: rules, the watchdog, the mode and the sandbox
// apply); list, get and output only read toolhost's own processes and say so (`readOnly`), so no
// mode asks about them; write and stop ask as commands do. The runtime (`ctx.processes`) owns the
// processes: their groups, rings, cap and end with the session.

/** Bytes an output read returns by default, and at most. */
export const PROCESS_OUTPUT_BYTES = 16 * 1024;
export const PROCESS_MAX_OUTPUT_BYTES = 256 * 1024;
const DEFAULT_WAIT_MS = 30_000;
const MAX_WAIT_MS = 600_000;

const ACTIONS = ["start", "list", "get", "output", "write", "stop"] as const;
type Action = (typeof ACTIONS)[number];
/** The actions that name a process. */
const NAMES_ONE: ReadonlySet<Action> = new Set(["get", "output", "write", "stop"]);

const parameters = z
  .object({
    action: z.enum(ACTIONS),
    command: z.string().optional().describe("start: the command line (bash -c)"),
    cwd: z.string().optional().describe("start: directory (default: the workspace root)"),
    name: z.string().min(1).max(64).optional().describe("start: a name for it; other actions: the process, instead of id"),
    id: z.string().optional().describe("get, output, write, stop: the process"),
    stream: z.enum(["stdout", "stderr", "both"]).optional().describe('output (default "both")'),
    offset: z.number().int().min(0).optional().describe("output, one stream: read from this offset; default: the last max_bytes"),
    max_bytes: z
      .number()
      .int()
      .positive()
      .max(PROCESS_MAX_OUTPUT_BYTES)
      .optional()
      .describe(`output: bytes per stream (default ${PROCESS_OUTPUT_BYTES})`),
    wait_for: z.string().optional().describe("output: first wait until this regex matches (past offset, if given), or the process ends"),
    timeout_ms: z.number().int().positive().max(MAX_WAIT_MS).optional().describe(`output with wait_for (default ${DEFAULT_WAIT_MS})`),
    input: z.string().optional().describe("write: text for stdin (end a line with \\n)"),
    eof: z.boolean().optional().describe("write: then close stdin"),
    sandbox: z.enum(["on", "off"]).optional().describe('start: "off" only after a command failed because of the sandbox'),
    justification: z.string().optional().describe('start with sandbox "off": a short question for the user saying why'),
  })
  .superRefine((args, ctx) => {
    const problem = (message: string, path: string) => ctx.addIssue({ code: "custom", message, path: [path] });
    if (args.action === "start" && (args.command ?? "").trim() === "") problem("start needs a command", "command");
    if (args.action === "start" && args.sandbox === "off" && (args.justification ?? "").trim() === "") {
      problem('sandbox "off" needs a justification: one short question for the user saying why', "justification");
    }
    if (NAMES_ONE.has(args.action) && args.id === undefined && args.name === undefined)
      problem(`${args.action} needs an id or a name`, "id");
    if (args.action === "write" && args.input === undefined && args.eof !== true) problem("write needs an input (or eof: true)", "input");
    if (args.offset !== undefined && args.stream !== "stdout" && args.stream !== "stderr") {
      problem('an offset belongs to one stream: pass stream "stdout" or "stderr" with it', "offset");
    }
    if (args.wait_for !== undefined) {
      try {
        new RegExp(args.wait_for);
      } catch (err) {
        problem(`wait_for is not a regular expression: ${err instanceof Error ? err.message : String(err)}`, "wait_for");
      }
    }
  });

type Args = z.output<typeof parameters>;

interface OutputResult {
  process: ProcessInfo;
  stdout?: ProcessOutput;
  stderr?: ProcessOutput;
  /** With wait_for: what ended the wait. */
  waited?: "matched" | "ended" | "timeout";
}

type ProcessResult =
  | { action: "start" | "get" | "stop"; process: ProcessInfo }
  | { action: "list"; processes: ProcessInfo[] }
  | ({ action: "output" } & OutputResult)
  | { action: "write"; process: ProcessInfo; bytes: number; stdin_closed?: boolean };

/** The process a call names: its id, else its name. */
const refOf = (args: Args): string => (args.id ?? args.name) as string;

/** `/process start npm run dev`, `/process output dev`, `/process write p1 yes`, `/process list`. */
function shorthand(text: string): Record<string, unknown> {
  const match = /^(\S+)(?:\s+([\s\S]*))?$/.exec(text.trim());
  const action = match?.[1] as Action | undefined;
  const rest = (match?.[2] ?? "").trim();
  if (!action || !(ACTIONS as readonly string[]).includes(action)) {
    throw new Error(`/process takes an action first: ${ACTIONS.join(", ")} (e.g. /process start npm run dev, /process output p1)`);
  }
  if (action === "start") return { action, command: rest };
  if (action === "list") return { action };
  const ref = rest.split(/\s+/)[0] ?? "";
  const target = /^p\d+$/.test(ref) ? { id: ref } : ref ? { name: ref } : {};
  if (action === "write") return { action, ...target, input: `${rest.slice(ref.length).trim()}\n` };
  return { action, ...target };
}

function title(args: Args): string {
  const who = args.id ?? args.name ?? "";
  switch (args.action) {
    case "start":
      return `${bashTitle(args.command ?? "")} (in the background)`;
    case "list":
      return "Background processes";
    case "get":
      return `Process ${who}`;
    case "output":
      return args.wait_for !== undefined ? `Output of ${who}, waiting for /${args.wait_for}/` : `Output of ${who}`;
    case "write":
      return `Write to ${who}: ${bashTitle(args.input ?? "")}`;
    case "stop":
      return `Stop ${who}`;
  }
}

async function readOutput(args: Args, ctx: ToolContext): Promise<OutputResult> {
  const ref = refOf(args);
  const streams: ProcessStream[] = args.stream === "stdout" || args.stream === "stderr" ? [args.stream] : ["stdout", "stderr"];
  const maxBytes = args.max_bytes ?? PROCESS_OUTPUT_BYTES;
  let waited: OutputResult["waited"];
  if (args.wait_for !== undefined) {
    waited = await ctx.processes.wait(ref, {
      streams,
      pattern: new RegExp(args.wait_for),
      ...(args.offset !== undefined ? { offsets: { [streams[0] as ProcessStream]: args.offset } } : {}),
      timeoutMs: args.timeout_ms ?? DEFAULT_WAIT_MS,
      onOutput: (chunk, stream) => ctx.emit({ type: "output", stream, chunk }),
    });
  }
  const result: OutputResult = { process: ctx.processes.get(ref), ...(waited ? { waited } : {}) };
  for (const stream of streams) {
    result[stream] = ctx.processes.read(
      ref,
      stream,
      args.offset !== undefined ? { offset: args.offset, maxBytes } : { tail: maxBytes, maxBytes },
    );
  }
  return result;
}

function statusLine(p: ProcessInfo): string {
  const who = p.name ? `${p.id} (${p.name})` : p.id;
  const how =
    p.status === "running"
      ? "running"
      : `${p.status}${p.exit_code !== null ? `, exit code ${p.exit_code}` : ""}${p.signal ? `, ${p.signal}` : ""}`;
  return `${who}: ${how}, pid ${p.pid}${p.sandboxed ? ", sandboxed" : ""} — ${p.command}`;
}

function outputText(result: OutputResult): string {
  const parts: string[] = [];
  for (const stream of ["stdout", "stderr"] as const) {
    const out = result[stream];
    if (!out) continue;
    const lost = out.dropped ? ` (${out.dropped} earlier bytes are gone from the ring)` : "";
    parts.push(
      `[${stream} ${out.offset}–${out.next_offset}${lost}]`,
      out.text.endsWith("\n") || out.text === "" ? out.text : `${out.text}\n`,
    );
  }
  return parts.join("\n");
}

export default defineTool({
  id: "process",
  kind: "execute",
  description: [
    "Long-lived commands in the background (dev servers, watchers); for a command that finishes, use bash.",
    "start returns an id at once; output reads the last bytes of stdout/stderr, or one stream from an offset (pass back next_offset),",
    'optionally first waiting until wait_for (a regex: "listening|error") matches or the process ends; write feeds stdin; stop ends its whole tree.',
    "At most 8 run at once; each stream keeps its last 1 MB; all end with the session.",
    'Sandboxed like bash (a server is reachable only from inside its sandbox); if that is in the way, start with sandbox: "off" and a justification: the user is asked.',
  ].join(" "),
  parameters,
  requires: { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } },
  output: { maxBytes: 2 * PROCESS_MAX_OUTPUT_BYTES + 16 * 1024 },
  title,
  shorthand,
  shorthandHint: "start <command line>, list, get|output|stop <id or name>, write <id or name> <text>",
  async targets(args, ctx) {
    switch (args.action) {
      case "start":
        return commandTargets(args.command ?? "", args.cwd, ctx, args.sandbox);
      case "list":
      case "get":
      case "output":
        // Reads of toolhost's own processes: nothing runs, nothing changes.
        return { readOnly: true };
      case "write": {
        // What a process reads from stdin may be commands (a shell, a REPL): judged as a command line.
        const { pid } = ctx.processes.get(refOf(args));
        if (args.input?.trim()) return { commands: [args.input] };
        // Only closing stdin: still a command target, so an "always" answer covers this and not every process call.
        return { commands: [`: close the stdin of process ${pid}`] };
      }
      case "stop": {
        // Judged as the kill it amounts to.
        const { pid } = ctx.processes.get(refOf(args));
        return { commands: [`kill -TERM -- -${pid}`] };
      }
    }
  },
  async execute(args, ctx): Promise<ProcessResult> {
    switch (args.action) {
      case "start": {
        const process = await ctx.processes.start(args.command ?? "", { cwd: args.cwd, name: args.name });
        return { action: "start", process };
      }
      case "list":
        return { action: "list", processes: ctx.processes.list() };
      case "get":
        return { action: "get", process: ctx.processes.get(refOf(args)) };
      case "output":
        return { action: "output", ...(await readOutput(args, ctx)) };
      case "write": {
        const ref = refOf(args);
        const bytes = await ctx.processes.write(ref, args.input ?? "", { end: args.eof === true });
        return { action: "write", process: ctx.processes.get(ref), bytes, ...(args.eof ? { stdin_closed: true } : {}) };
      }
      case "stop":
        return { action: "stop", process: await ctx.processes.stop(refOf(args)) };
    }
  },
  display(data): ToolDisplay {
    switch (data.action) {
      case "list":
        return { text: data.processes.length ? data.processes.map(statusLine).join("\n") : "No background processes", language: "console" };
      case "output":
        return { text: `${statusLine(data.process)}\n${outputText(data)}`, language: "console" };
      case "write":
        return { text: `${data.bytes} bytes written to ${data.process.id}${data.stdin_closed ? ", stdin closed" : ""}` };
      default:
        return { text: statusLine(data.process) };
    }
  },
});
