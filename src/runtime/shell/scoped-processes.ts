import type {
  ProcessInfo,
  ProcessOutput,
  ProcessStartOptions,
  ProcessStream,
  ProcessWaitOptions,
  ToolProcesses,
} from "../../tool/context.js";
import { ToolError } from "../../tool/errors.js";
import type { CompiledScope } from "../scope.js";
import type { SessionProcesses } from "./processes.js";
import type { ScopedShell } from "./scoped.js";

/**
 * The session's background processes as one call sees them (`ctx.processes`). Starting one is
 * checked like any command line (the call's ScopedShell: scope, cwd, the sandbox); the rest —
 * reading, writing to stdin, stopping — needs a scope that may run any command line (`bash` or
 * `*` without argument patterns), since writing to a shell's stdin is running commands.
 */
export class ScopedProcesses implements ToolProcesses {
  constructor(
    private readonly options: { scope: CompiledScope; table: SessionProcesses; shell: ScopedShell; signal: AbortSignal; toolId: string },
  ) {}

  private table(): SessionProcesses {
    const { scope, table, toolId } = this.options;
    if (!scope.shell.some((req) => (req.cmd === "*" || req.cmd === "bash") && !req.args)) {
      throw new ToolError(
        "capability_denied",
        `The ${toolId} tool's shell requirements do not cover any command line, which background processes need`,
      );
    }
    return table;
  }

  start(command: string, options?: ProcessStartOptions): Promise<ProcessInfo> {
    return this.options.shell.start(command, options);
  }

  list(): ProcessInfo[] {
    return this.table().list();
  }

  get(ref: string): ProcessInfo {
    return this.table().find(ref).info();
  }

  read(ref: string, stream: ProcessStream, range: { offset?: number; tail?: number; maxBytes: number }): ProcessOutput {
    return this.table().find(ref).read(stream, range);
  }

  wait(ref: string, options: ProcessWaitOptions): Promise<"matched" | "ended" | "timeout"> {
    return this.table().find(ref).wait(options, this.options.signal);
  }

  write(ref: string, data: string, options: { end?: boolean } = {}): Promise<number> {
    return this.table()
      .find(ref)
      .write(data, options.end === true);
  }

  stop(ref: string, options: { graceMs?: number } = {}): Promise<ProcessInfo> {
    return this.table().stop(ref, options.graceMs);
  }
}
