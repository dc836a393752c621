import type { ShellResult, SidecarWriter, ToolEvent } from "../../tool/context.js";
import type { ProcessFeed } from "./processes.js";

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

/** Runs processes for the shell tools. The local one starts them on the spawner thread (spawn-thread.ts); the editor one, in ACP terminals. */
export interface ShellBackend {
  readonly kind: string;
  /**
   * `shellLine` is set when argv is `<shell> -c <line>`: an editor terminal runs the line as typed.
   * `commandAt` is set when a sandbox wrapped the command: `args.slice(commandAt)` is the command as
   * asked, what an editor terminal shows (see SpawnRequest.commandAt).
   */
  spawn(file: string, args: string[], options: ShellSpawnOptions & { shellLine?: string; commandAt?: number }): Promise<ShellResult>;
  /**
   * Shows a background process the session started (it runs on this machine whatever the backend):
   * an editor terminal following its output, announced with `emit` as the starting call's
   * terminal. Subscribes before it first awaits, so the view misses none of the output; resolves
   * once it is shown. Optional: the local backend shows nothing.
   */
  show?(process: ProcessFeed, options: { emit?: (event: ToolEvent) => void }): Promise<void>;
}
