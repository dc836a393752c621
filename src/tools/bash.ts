import * as z from "zod";
import type { ShellResult, ToolContext } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { selfTruncated } from "../tool/envelope.js";
import { bashTitle, commandTargets } from "./command-line.js";

export const BASH_DEFAULT_TIMEOUT_MS = 120_000;
export const BASH_MAX_TIMEOUT_MS = 600_000;
export const BASH_OUTPUT_BYTES = 200 * 1024;
/** Live output forwarded to the editor per call; the result keeps head + tail, the sidecar all of it. */
export const BASH_LIVE_OUTPUT_CHARS = 1024 * 1024;

const parameters = z
  .object({
    command: z
      .string()
      .refine((c) => c.trim() !== "", "The command is empty")
      .describe("The command line"),
    description: z.string().optional().describe("What it does, in 5-10 words, for the user"),
    workdir: z.string().optional().describe("Directory to run in (default: the workspace root)"),
    timeout_ms: z
      .number()
      .int()
      .positive()
      .max(BASH_MAX_TIMEOUT_MS)
      .optional()
      .describe(`Default ${BASH_DEFAULT_TIMEOUT_MS}, max ${BASH_MAX_TIMEOUT_MS}`),
    sandbox: z.enum(["on", "off"]).optional().describe('"off" only after a command failed because of the sandbox'),
    justification: z.string().optional().describe('With sandbox "off": a short question for the user saying why'),
  })
  .refine((args) => args.sandbox !== "off" || (args.justification ?? "").trim() !== "", {
    message: 'sandbox "off" needs a justification: one short question for the user saying why the command must run outside the sandbox',
    path: ["justification"],
  });

export type BashResult = ShellResult & { notice?: string };

/** Failures that look like the sandbox's walls: a read-only file system, no network, a hidden secret. */
const SANDBOX_FAILURE =
  /Read-only file system|Network is unreachable|Could not resolve host|Temporary failure in name resolution|Permission denied/i;

export const SANDBOX_NOTICE =
  'The command ran in a sandbox: only the workspace (but .git, .toolhost, .vscode and other config that runs later) and /tmp (private to the call) are writable, there is no network (except hosts the user allowed), and secrets in the home folder are hidden. If it failed because of that and it must run as it is, call bash again with sandbox: "off" and a justification; the user will be asked to approve running it outside the sandbox.';

/** Forwards live output until the budget is spent, then says so once and asks for no more. */
function liveOutput(ctx: ToolContext): (chunk: string, stream: "stdout" | "stderr") => boolean {
  let left = BASH_LIVE_OUTPUT_CHARS;
  return (chunk, stream) => {
    if (chunk.length <= left) {
      left -= chunk.length;
      ctx.emit({ type: "output", stream, chunk });
      return true;
    }
    // Do not cut a surrogate pair in half.
    const end = left > 0 && /[\uD800-\uDBFF]/.test(chunk[left - 1]!) ? left - 1 : left;
    if (end > 0) ctx.emit({ type: "output", stream, chunk: chunk.slice(0, end) });
    ctx.emit({
      type: "output",
      stream: "stderr",
      chunk: "\n… [live output stops here; the result keeps the head and tail of the output] …\n",
    });
    return false;
  };
}

/** bash: one command line in its own process group, stdin closed; the whole tree dies on timeout or abort. */
export default defineTool({
  id: "bash",
  kind: "execute",
  description: [
    "Run one command line with bash -c; returns stdout, stderr, exit_code (non-zero is a normal result: read stderr).",
    "Each call is a fresh shell (no cd or variables carry over; use workdir). stdin is closed: pass non-interactive flags",
    "(--yes, --no-pager, CI=1), never start an editor or pager. Do not read, write, edit or search files with it: use those tools.",
    "Output past 200 KB keeps head and tail; the full output is saved to output_path. Killed with its children after timeout_ms.",
    "Commands run sandboxed (workspace and /tmp writable but .git and editor/agent config, no network, secrets hidden); if one fails because of that",
    '(git commit too), retry with sandbox: "off" and a justification: the user is asked.',
  ].join(" "),
  parameters,
  requires: { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } },
  // The tool keeps head + tail itself; this only guards against a backend that does not.
  output: { field: "stdout", maxBytes: BASH_OUTPUT_BYTES, keep: "head_tail" },
  title: (args) => bashTitle(args.command),
  shorthand: (text) => ({ command: text }),
  shorthandHint: "a command line",
  // The command line, and the directory it runs in, resolved as the shell will resolve it.
  targets: (args, ctx) => commandTargets(args.command, args.workdir, ctx, args.sandbox),
  async execute(args, ctx) {
    const timeoutMs = args.timeout_ms ?? BASH_DEFAULT_TIMEOUT_MS;
    const { sandboxed, notice, ...ran } = await ctx.shell.run(args.command, {
      cwd: args.workdir,
      timeoutMs,
      maxOutputBytes: BASH_OUTPUT_BYTES,
      onOutput: liveOutput(ctx),
    });
    const result: BashResult = ran;
    if (sandboxed && !result.timed_out && result.exit_code !== 0 && SANDBOX_FAILURE.test(`${result.stderr}\n${result.stdout}`)) {
      result.notice = SANDBOX_NOTICE;
    } else if (result.timed_out) {
      const seconds = Math.round(timeoutMs / 100) / 10;
      result.notice = `Command timed out after ${seconds} s and was killed; if it was not waiting for input, run it again with a larger timeout_ms (max ${BASH_MAX_TIMEOUT_MS})`;
    } else if (ctx.signal.aborted) {
      result.notice = "Command was cancelled and killed; its output is incomplete";
    }
    // The sandbox's own word (a protected path the command created, moved to quarantine) comes first.
    if (notice) result.notice = result.notice ? `${notice}\n${result.notice}` : notice;
    return selfTruncated(result, { truncated: result.truncated, output_path: result.output_path });
  },
  display(data) {
    // stdout, stderr and how the command ended, each starting on its own line.
    const status = data.timed_out ? "timed out" : data.signal ? `killed by ${data.signal}` : `exit code ${data.exit_code}`;
    const parts = [data.stdout, data.stderr, `[${status}]`].filter(Boolean);
    const text = parts.reduce((shown, part) => (shown === "" || shown.endsWith("\n") ? shown + part : `${shown}\n${part}`), "");
    // A non-zero exit, a signal (a cancel kills with one), a timeout: the editor marks the call failed.
    const failed = data.timed_out || data.signal !== null || data.exit_code !== 0;
    if (!failed) return { text, language: "console" };
    return {
      text,
      language: "console",
      failed,
      failure: status,
      ...(data.exit_code !== null && !data.timed_out && !data.signal ? { exitCode: data.exit_code } : {}),
    };
  },
});
