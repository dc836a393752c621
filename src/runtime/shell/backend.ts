import type { ShellResult, SidecarWriter, ToolEvent } from "../../tool/context.js";

export interface ShellSpawnOptions {
  cwd: string;
  env?: Record<string, string>;
  timeoutMs: number;
  /** Combined stdout+stderr bytes kept in the result (head + tail past it). */
  maxOutputBytes: number;
  signal: AbortSignal;
  /** Live output; returning `false` stops it for this run (see ShellRunOptions.onOutput). */
  onOutput?: (chunk: string, stream: "stdout" | "stderr") => unknown;
  /** Opens the sidecar the full output is written to, once it passes the cap. */
  openSidecar: () => Promise<SidecarWriter>;
  /** Reports events of the call (an editor terminal announces its id here). */
  emit?: (event: ToolEvent) => void;
}

/** Runs processes for the shell tools. The local one uses execa + tree-kill; the editor one, ACP terminals. */
export interface ShellBackend {
  readonly kind: string;
  /**
   * `shellLine` is set when argv is `<shell> -c <line>`: an editor terminal runs the line as typed.
   * `commandAt` is set when a sandbox wrapped the command: `args.slice(commandAt)` is the command as
   * asked, what an editor terminal shows (see SpawnRequest.commandAt).
   */
  spawn(file: string, args: string[], options: ShellSpawnOptions & { shellLine?: string; commandAt?: number }): Promise<ShellResult>;
}
