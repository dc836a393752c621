import type { AgentContext } from "@agentclientprotocol/sdk";
import type { ShellResult } from "../tool/context.js";
import { ToolError } from "../tool/errors.js";
import type { ShellBackend, ShellSpawnOptions } from "../runtime/shell/backend.js";
import { writeLauncher } from "../runtime/sandbox/launcher.js";
import type { ProcessFeed } from "../runtime/shell/processes.js";
import type { ToolEvent } from "../tool/context.js";
import { showProcessInTerminal } from "./process-terminal.js";

/**
 * Commands in editor terminals (terminal/create): the user watches the output live in the
 * tool call. Timeout and cancel race terminal/wait_for_exit; every terminal is released.
 */
export class TerminalShell implements ShellBackend {
  readonly kind = "editor-terminal";

  constructor(
    private readonly client: AgentContext,
    private readonly sessionId: string,
  ) {}

  /**
   * A wrapped command (`commandAt`: the sandbox's) starts through a launcher that holds the
   * wrapper, so the editor shows `…/toolhost-sandbox <the command>`, not the wrapper's flags.
   */
  async spawn(file: string, args: string[], options: ShellSpawnOptions & { shellLine?: string; commandAt?: number }): Promise<ShellResult> {
    if (options.signal.aborted) throw new ToolError("aborted", "The command was cancelled before it started");
    const at = options.commandAt;
    if (at === undefined || at <= 0 || at >= args.length) return this.run(file, args, options);
    const launcher = await writeLauncher(file, args.slice(0, at));
    try {
      return await this.run(launcher.path, args.slice(at), options);
    } finally {
      await launcher.remove().catch(() => {});
    }
  }

  /** A background process (it runs here, not in the terminal): a terminal that follows its output (`process-terminal.ts`). */
  show(process: ProcessFeed, options: { emit?: (event: ToolEvent) => void }): Promise<void> {
    return showProcessInTerminal(this.client, this.sessionId, process, options.emit);
  }

  private async run(file: string, args: string[], options: ShellSpawnOptions): Promise<ShellResult> {
    const started = performance.now();
    if (options.signal.aborted) throw new ToolError("aborted", "The command was cancelled before it started");
    const env = Object.entries(options.env ?? {}).map(([name, value]) => ({ name, value }));
    const terminal = await this.client.createTerminal({
      sessionId: this.sessionId,
      command: file,
      args,
      cwd: options.cwd,
      env,
      outputByteLimit: options.maxOutputBytes,
    });
    options.emit?.({ type: "terminal", terminalId: terminal.id });
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    try {
      const stopped = new Promise<"timeout" | "aborted">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), options.timeoutMs);
        onAbort = () => resolve("aborted");
        options.signal.addEventListener("abort", onAbort, { once: true });
      });
      const outcome = await Promise.race([terminal.waitForExit().then((exit) => ({ exit })), stopped]);
      let exit: { exitCode?: number | null; signal?: string | null } | null = null;
      if (typeof outcome === "object") exit = outcome.exit;
      else await terminal.kill().catch(() => {});
      const output = await terminal.currentOutput();
      exit ??= output.exitStatus ?? null;
      return {
        stdout: output.output,
        stderr: "",
        exit_code: exit?.exitCode ?? null,
        signal: exit?.signal ?? (outcome === "timeout" || outcome === "aborted" ? "SIGKILL" : null),
        timed_out: outcome === "timeout",
        truncated: output.truncated,
        duration_ms: Math.round(performance.now() - started),
        terminal_id: terminal.id,
      };
    } finally {
      if (timer) clearTimeout(timer);
      if (onAbort) options.signal.removeEventListener("abort", onAbort);
      await terminal.release().catch(() => {});
    }
  }
}
