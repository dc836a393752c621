import { existsSync } from "node:fs";
import type { ShellResult, ShellRunOptions, ToolShell, ToolFs, Sidecars, ToolEvent } from "../../tool/context.js";
import { ToolError } from "../../tool/errors.js";
import { shellAllowed, type CompiledScope } from "../scope.js";
import type { ShellBackend } from "./backend.js";

export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
export const DEFAULT_SHELL_OUTPUT_BYTES = 200 * 1024;

let cachedShell: string | undefined;
/** bash when the machine has it (the tool is called bash), else POSIX sh. */
export function shellPath(): string {
  cachedShell ??= ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"].find((p) => existsSync(p)) ?? "/bin/sh";
  return cachedShell;
}

export interface ScopedShellOptions {
  scope: CompiledScope;
  backend: ShellBackend;
  fs: ToolFs;
  workspace: string;
  signal: AbortSignal;
  sidecars: Sidecars;
  toolId: string;
  emit?: (event: ToolEvent) => void;
}

/** The shell a tool sees: argv checked against the scope's shell requirements, cwd inside the read scope. */
export class ScopedShell implements ToolShell {
  constructor(private readonly options: ScopedShellOptions) {}

  run(command: string, options: ShellRunOptions = {}): Promise<ShellResult> {
    return this.spawn(shellPath(), ["-c", command], options, command);
  }

  exec(cmd: string, args: string[], options: ShellRunOptions = {}): Promise<ShellResult> {
    return this.spawn(cmd, args, options);
  }

  private async spawn(file: string, args: string[], options: ShellRunOptions, shellLine?: string): Promise<ShellResult> {
    const { scope, backend, fs, workspace, signal, sidecars, toolId, emit } = this.options;
    // A command line is checked as `bash -c <line>` whichever shell runs it.
    const checked = shellLine !== undefined ? "bash" : file;
    if (!shellAllowed(scope, checked, args)) {
      const shown = shellLine !== undefined ? `bash -c ${JSON.stringify(shellLine)}` : [file, ...args].join(" ");
      throw new ToolError("capability_denied", `Running \`${shown}\` is outside this tool's shell requirements`);
    }
    const cwd = await fs.resolve(options.cwd ?? workspace, "read");
    return backend.spawn(file, args, {
      cwd,
      env: options.env,
      timeoutMs: options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_SHELL_OUTPUT_BYTES,
      signal,
      onOutput: options.onOutput,
      openSidecar: () => sidecars.create(toolId),
      emit,
      shellLine,
    });
  }
}
