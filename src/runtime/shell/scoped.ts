import { existsSync } from "node:fs";
import type {
  ProcessInfo,
  ProcessStartOptions,
  ShellResult,
  ShellRunOptions,
  ToolShell,
  ToolFs,
  Sidecars,
  ToolEvent,
} from "../../tool/context.js";
import { ToolError } from "../../tool/errors.js";
import { shellAllowed, type CompiledScope } from "../scope.js";
import type { ShellBackend } from "./backend.js";
import type { SessionProcesses } from "./processes.js";

export const DEFAULT_SHELL_TIMEOUT_MS = 120_000;
export const DEFAULT_SHELL_OUTPUT_BYTES = 200 * 1024;

let cachedShell: string | undefined;
/** bash when the machine has it (the tool is called bash), else POSIX sh. */
export function shellPath(): string {
  cachedShell ??= ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"].find((p) => existsSync(p)) ?? "/bin/sh";
  return cachedShell;
}

/** What a shell call is about to run, after the scope check. */
export interface SpawnRequest {
  file: string;
  args: string[];
  /** Absolute, inside the read scope. */
  cwd: string;
  /** Added to the environment the backend starts from. */
  env?: Record<string, string>;
  /**
   * Set when argv is `<shell> -c <line>`: an editor terminal may run the line as typed. A
   * transform that changes argv drops it (or sets the line that now runs).
   */
  shellLine?: string;
  /** Set by a transform that wrapped the command in an OS sandbox: the result says so. */
  sandboxed?: boolean;
  /**
   * Set by a transform that wrapped the command: `args` from this index on are the command as
   * asked (its argv[0] first), everything before it the wrapper. An editor terminal shows those.
   */
  commandAt?: number;
  /**
   * Called once the command has ended (or failed to start): the sandbox's check of what the
   * command left behind. What it returns is the result's `notice`.
   */
  settle?: () => Promise<string | undefined>;
  /**
   * For a command that lives on (a background process): checks what it leaves behind as it runs,
   * not only at its end; `said` gets each note. Closed before the final `settle`.
   */
  watch?: (said: (note: string) => void) => { close(): Promise<void> };
}

/** What a sandbox needs to know about the call, besides the command. */
export interface SpawnContext {
  /** The call's compiled scope: read and write roots (`read.roots`, `write.roots`), net hosts (`hostPatterns`). */
  scope: CompiledScope;
  /** The session's workspace roots. */
  roots: readonly string[];
  /** The session's sidecar folder, where a truncated output is kept. */
  sidecarDir: string;
  toolId: string;
  /** The backend that will run it: "local", "editor-terminal" … */
  backend: string;
  /** The user approved this call to run outside the sandbox: a sandbox transform leaves it alone. */
  unsandboxed: boolean;
  /** It reaches only its scope's hosts, not those the session allows every command (an MCP server: its entry's). */
  scopeHostsOnly?: boolean;
  /**
   * A launch that may change nothing of the workspace and reach nothing (a language server): the
   * roots read-only, `writable` (real paths outside them) its only writable folders, no network
   * whatever the session allows, and so no project guard.
   */
  confined?: { writable: readonly string[] };
}

/**
 * What the policy granted one call, filled in after it was approved and read when its commands
 * start. Held by the host, never reachable from the tool's context.
 */
export interface CallGrant {
  /** The user approved running this call's commands outside the sandbox. */
  unsandboxed: boolean;
}

/**
 * Rewrites what a shell call runs, between the scope check and the backend (local or editor
 * terminal): where an OS sandbox wraps the command. The scope check has seen the original.
 */
export type SpawnTransform = ((request: SpawnRequest, context: SpawnContext) => SpawnRequest | Promise<SpawnRequest>) & {
  /** Ends what the transform keeps for the session (the sandbox's network proxies); called when the session closes. */
  close?: () => Promise<void>;
};

export interface ScopedShellOptions {
  scope: CompiledScope;
  backend: ShellBackend;
  fs: ToolFs;
  workspace: string;
  /** The session's roots and sidecar folder, for the transform. */
  roots: readonly string[];
  sidecarDir: string;
  signal: AbortSignal;
  sidecars: Sidecars;
  toolId: string;
  emit?: (event: ToolEvent) => void;
  transform?: SpawnTransform;
  /** The call's grant (default: nothing granted). */
  grant?: CallGrant;
  /** The session's background processes (`start`). */
  processes?: SessionProcesses;
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

  /**
   * A command line started in the background (the session's `processes`): the same checks and
   * transform as `run` (the sandbox as the local backend runs it: background processes always run
   * here, whatever the session's backend), then the backend may show it (an editor terminal).
   */
  async start(command: string, options: ProcessStartOptions = {}): Promise<ProcessInfo> {
    const { processes, backend, emit } = this.options;
    if (!processes) throw new ToolError("unavailable", "This session runs no background processes");
    processes.checkRoom(options.name);
    const run = await this.prepare(shellPath(), ["-c", command], options, command, "local");
    const started = await processes.start({
      file: run.file,
      args: run.args,
      cwd: run.cwd,
      env: run.env,
      command,
      name: options.name,
      sandboxed: run.sandboxed,
      settle: run.settle,
      watch: run.watch,
    });
    // Before anything else can run: the viewer sees the process's output from its first byte.
    await backend.show?.(started, { emit }).catch(() => undefined);
    return started.info();
  }

  /** The scope check (argv, cwd), then the session's transform. */
  private async prepare(file: string, args: string[], options: ShellRunOptions, shellLine: string | undefined, backendKind: string) {
    const { scope, fs, workspace, transform } = this.options;
    // A command line is checked as `bash -c <line>` whichever shell runs it.
    const checked = shellLine !== undefined ? "bash" : file;
    if (!shellAllowed(scope, checked, args)) {
      const shown = shellLine !== undefined ? `bash -c ${JSON.stringify(shellLine)}` : [file, ...args].join(" ");
      throw new ToolError("capability_denied", `Running \`${shown}\` is outside this tool's shell requirements`);
    }
    const cwd = await fs.resolve(options.cwd ?? workspace, "read");
    const request: SpawnRequest = { file, args, cwd, env: options.env, shellLine };
    return transform ? await transform(request, this.spawnContext(backendKind)) : request;
  }

  private async spawn(file: string, args: string[], options: ShellRunOptions, shellLine?: string): Promise<ShellResult> {
    const { backend, signal, sidecars, toolId, emit } = this.options;
    const run = await this.prepare(file, args, options, shellLine, backend.kind);
    let result: ShellResult;
    try {
      result = await backend.spawn(run.file, run.args, {
        cwd: run.cwd,
        env: run.env,
        timeoutMs: options.timeoutMs ?? DEFAULT_SHELL_TIMEOUT_MS,
        maxOutputBytes: options.maxOutputBytes ?? DEFAULT_SHELL_OUTPUT_BYTES,
        signal,
        onOutput: options.onOutput,
        openSidecar: () => sidecars.create(toolId),
        emit,
        shellLine: run.shellLine,
        ...(run.commandAt !== undefined ? { commandAt: run.commandAt } : {}),
      });
    } catch (err) {
      await run.settle?.();
      throw err;
    }
    const notice = await run.settle?.();
    return { ...result, ...(run.sandboxed ? { sandboxed: true } : {}), ...(notice ? { notice } : {}) };
  }

  private spawnContext(backend: string): SpawnContext {
    const { scope, roots, sidecarDir, toolId, grant } = this.options;
    return { scope, roots, sidecarDir, toolId, backend, unsandboxed: grant?.unsandboxed === true };
  }
}
