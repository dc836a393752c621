/**
 * The typed capability surface a tool's `execute` receives. These are interfaces only:
 * `runtime/` implements them (local disk, memory, editor), and every call is checked
 * against the tool's effective scope there. Tools never import node:fs, child_process or
 * the network themselves.
 */

import type { HostServices } from "./services.js";

export type EntryType = "file" | "directory" | "symlink" | "other";

export interface FileInfo {
  /** Absolute, checked path. */
  path: string;
  type: EntryType;
  size: number;
  mtimeMs: number;
  /** Permission bits (0o644 …), when the backend has them. */
  mode?: number;
  /** Freshness token: changes whenever the file's content may have changed. */
  version: string;
}

/** What a write left on disk. */
export interface WrittenFile extends FileInfo {
  /** The text that landed, when the backend changed what it was given (an editor that adds a final newline). */
  landed?: Uint8Array;
}

export interface DirEntry {
  name: string;
  type: EntryType;
}

export type Access = "read" | "write";

export interface ToolFs {
  /** Resolves a model-given path (relative to the workspace, `~`, leading `@`) and checks it against the scope. */
  resolve(path: string, access: Access): Promise<string>;
  /** Stat after resolve; null when the path does not exist. */
  stat(path: string): Promise<FileInfo | null>;
  readFile(path: string): Promise<Uint8Array>;
  /** Streams a file (or a byte range of it) without reading the rest. */
  readStream(path: string, range?: { start?: number; end?: number }): AsyncIterable<Uint8Array>;
  readDir(path: string): Promise<DirEntry[]>;
  /** Atomic replace (temp file + rename in the same directory), keeping the file mode; creates parent dirs. */
  writeFile(path: string, data: Uint8Array | string): Promise<WrittenFile>;
  /**
   * Runs `fn` while holding this session's lock on the file: edits of one file are serialised.
   * Whatever the call read before is read again inside (the file may have changed while waiting).
   */
  withLock<T>(path: string, fn: () => Promise<T>): Promise<T>;
}

export interface ShellRunOptions {
  cwd?: string;
  timeoutMs?: number;
  env?: Record<string, string>;
  /** Bytes of combined stdout+stderr kept for the result; past it, head + tail are kept and the rest goes to a sidecar. */
  maxOutputBytes?: number;
  /**
   * Live output, for the editor's terminal or a progress view. Returning `false` stops the live
   * output of this run (the result and the sidecar still get everything), so a listener that has
   * seen enough costs nothing more.
   */
  onOutput?: (chunk: string, stream: "stdout" | "stderr") => unknown;
}

/** The honest result of a command (the binding's run_command shape). */
export interface ShellResult {
  stdout: string;
  stderr: string;
  exit_code: number | null;
  signal: string | null;
  timed_out: boolean;
  truncated: boolean;
  duration_ms: number;
  output_path?: string;
  /** Set when the output was shown in an editor terminal; the editor owns the live view. */
  terminal_id?: string;
  /** Set when the command ran inside the OS sandbox (read-only system, no network, secrets hidden). */
  sandboxed?: boolean;
  /** What the sandbox has to tell about the run (a protected path the command created, moved to quarantine). */
  notice?: string;
}

export interface ToolShell {
  /** Runs one shell command line (`bash -c`), stdin closed, own process group; the whole tree dies on timeout or abort. */
  run(command: string, options?: ShellRunOptions): Promise<ShellResult>;
  /** Runs an executable with argv (no shell parsing), checked against the scope's shell requirements. */
  exec(cmd: string, args: string[], options?: ShellRunOptions): Promise<ShellResult>;
}

export type ProcessStream = "stdout" | "stderr";

/** A background process of the session (started through `ctx.processes.start`), as it is now. */
export interface ProcessInfo {
  /** The session's id for it (`p1`, `p2`…). */
  id: string;
  /** The name given at start, if any: calls may use it in place of the id. */
  name?: string;
  /** The command line as asked. */
  command: string;
  cwd: string;
  /** The process toolhost started (the leader of its process group; the sandbox's, when sandboxed). */
  pid: number;
  /** `stopped`: ended by `stop` or the session's end; `exited`: ended on its own. */
  status: "running" | "exited" | "stopped";
  exit_code: number | null;
  signal: string | null;
  started_at: string;
  ended_at?: string;
  /** Bytes written so far to each stream (the rings keep the last of them). */
  stdout_bytes: number;
  stderr_bytes: number;
  /** Set when it runs inside the OS sandbox. */
  sandboxed?: boolean;
  /** What the sandbox had to say once it ended (a protected path moved to quarantine). */
  notice?: string;
}

/** A stretch of one stream's output. */
export interface ProcessOutput {
  text: string;
  /** The offset (bytes since the process started) of the first byte read. */
  offset: number;
  /** Where reading goes on from: the next call's `offset`. A character cut by the bounds is left for it. */
  next_offset: number;
  /** Bytes before `offset` that were asked for but are gone from the ring (it keeps the last ones only). */
  dropped?: number;
  /** Bytes already written after `next_offset` (more than one read returns). */
  more?: number;
}

export interface ProcessStartOptions {
  /** Directory to run in (default: the workspace root); checked against the read scope. */
  cwd?: string;
  /** A name to refer to it by; unique among the running processes. */
  name?: string;
  env?: Record<string, string>;
}

export interface ProcessWaitOptions {
  streams: readonly ProcessStream[];
  /** Wait until this matches output past `offsets` (default: what the rings hold); without it, until the process ends. */
  pattern?: RegExp;
  offsets?: Partial<Record<ProcessStream, number>>;
  timeoutMs: number;
  /** New output while waiting, as it comes (live output for the editor). */
  onOutput?: (chunk: string, stream: ProcessStream) => void;
}

/**
 * The session's background processes: each in a process group of its own (sandboxed like any
 * command), stdin a pipe, each stream's output kept in a bounded ring file; at most a few run at
 * once, and all end with the session. `ref` is an id or a name (the newest process of that name).
 */
export interface ToolProcesses {
  /** Starts a command line (`bash -c`) in the background, checked like `shell.run`; returns once it runs. */
  start(command: string, options?: ProcessStartOptions): Promise<ProcessInfo>;
  list(): ProcessInfo[];
  /** Throws `not_found` for an unknown ref. */
  get(ref: string): ProcessInfo;
  /** From `offset`, or the last `tail` bytes (default: from the oldest byte held), at most `maxBytes`. */
  read(ref: string, stream: ProcessStream, range: { offset?: number; tail?: number; maxBytes: number }): ProcessOutput;
  /** Waits (bounded, cancelled with the call) for the pattern or the process's end. */
  wait(ref: string, options: ProcessWaitOptions): Promise<"matched" | "ended" | "timeout">;
  /** Writes to its stdin (`end`: then closes it); returns the bytes written. */
  write(ref: string, data: string, options?: { end?: boolean }): Promise<number>;
  /** SIGTERM to its whole tree, SIGKILL after `graceMs` (default 2 s); returns once it has ended. */
  stop(ref: string, options?: { graceMs?: number }): Promise<ProcessInfo>;
}

export interface GrepQuery {
  pattern: string;
  /** Directory or file to search, already accepted by `fs.resolve(…, "read")` or relative to the workspace. */
  path?: string;
  glob?: string;
  literal?: boolean;
  ignoreCase?: boolean;
  context?: number;
  mode: "content" | "files" | "count";
  /** Stop after this many results (matches, files or counts). */
  maxResults: number;
  timeoutMs: number;
}

export type GrepHit =
  | { type: "match"; path: string; line: number; text: string }
  | { type: "context"; path: string; line: number; text: string }
  | { type: "file"; path: string }
  | { type: "count"; path: string; count: number };

export interface GrepOutcome {
  hits: GrepHit[];
  /** True when the search stopped at maxResults (more results exist). */
  limited: boolean;
  /** Files searched, when the engine says. */
  searched?: number;
}

export interface FileQuery {
  /** Directory to list, relative to the workspace or absolute. */
  path?: string;
  /** Stop after this many files (the engine may be killed early). */
  maxResults?: number;
  /**
   * The glob the caller filters the listed files with (`src/**\/*.ts`). The engine may derive a
   * file-name pre-filter from it (`*.ts`) so it lists less; that never overrides .gitignore and
   * never drops a file the glob could match. The caller still filters exactly.
   */
  glob?: string;
  timeoutMs: number;
}

export interface ToolSearch {
  /** Lists files below a directory, respecting .gitignore and skipping .git; paths relative to that directory. */
  files(query: FileQuery): Promise<{ root: string; files: string[]; limited: boolean }>;
  /** Regex or literal content search (ripgrep on disk). Paths are relative to the workspace when inside it. */
  grep(query: GrepQuery): Promise<GrepOutcome>;
}

/** fetch()'s options, plus how many redirects to follow (default 20, the fetch standard's). */
export interface NetFetchInit extends RequestInit {
  maxRedirects?: number;
}

export interface ToolNet {
  /**
   * fetch(), refused unless the URL's host matches the scope's net.hosts, and refused for a
   * private, loopback or link-local address (checked on the resolved address, on every redirect)
   * unless a net.fetch allow rule names the host.
   */
  fetch(url: string | URL, init?: NetFetchInit): Promise<Response>;
}

/** Writes a large output to a file under the session's working directory. */
export interface SidecarWriter {
  readonly path: string;
  /** Bytes a size cap kept out of the file (the file then ends with a line saying so); read after close. */
  readonly dropped?: number;
  /** Writes land in call order, so several may be issued before awaiting them. */
  write(chunk: string | Uint8Array): Promise<void>;
  close(): Promise<void>;
}

export interface Sidecars {
  create(toolId: string): Promise<SidecarWriter>;
  /** Writes a whole text at once and returns its path. */
  writeText(toolId: string, text: string): Promise<string>;
}

/** Session-scoped state shared by the tools of one session. */
export interface SessionState {
  readonly id: string;
  /** The freshness token recorded at the session's last read (or write) of each absolute path. */
  readonly readStamps: Map<string, string>;
  /** Free-form per-tool storage (todo keeps its list here). */
  readonly store: Map<string, unknown>;
}

export interface PlanEntry {
  content: string;
  activeForm?: string;
  status: "pending" | "in_progress" | "completed";
  priority: "high" | "medium" | "low";
}

/** Out-of-band events a tool emits for the editor; the ACP layer maps them to session updates. */
export type ToolEvent =
  | { type: "plan"; entries: PlanEntry[] }
  | { type: "diff"; path: string; oldText: string | null; newText: string }
  | { type: "terminal"; terminalId: string }
  /** Live output of a running command (bash), for a progress view when there is no editor terminal. */
  | { type: "output"; stream: "stdout" | "stderr"; chunk: string }
  /** A running call's progress as a whole (a subagent's calls, one line each): replaces the previous. */
  | { type: "progress"; lines: string[] };

/** What a call's preview produced: the events the editor was shown, and the tool's own plan. */
export interface ToolPreview {
  events: ToolEvent[];
  plan?: unknown;
}

export interface ToolContext {
  readonly toolId: string;
  readonly callId: string;
  /**
   * Stable for this (session, call): the same after the session is loaded again, different for
   * every other call. Pass it to APIs that de-duplicate retries (an Idempotency-Key header).
   */
  readonly idempotencyKey: string;
  /** Workspace roots; the first is the primary root that relative paths resolve against. */
  readonly workspace: string;
  readonly roots: readonly string[];
  readonly session: SessionState;
  readonly signal: AbortSignal;
  readonly fs: ToolFs;
  readonly shell: ToolShell;
  /** The session's background processes (needs the same shell access as running a command line). */
  readonly processes: ToolProcesses;
  readonly search: ToolSearch;
  readonly net: ToolNet;
  readonly sidecars: Sidecars;
  /** The agent's services (questions to the user, subagents, the tool and skill indexes). */
  readonly host: HostServices;
  /** In `execute`: what this call's `preview` returned, when the tool has one. */
  readonly preview?: ToolPreview;
  emit(event: ToolEvent): void;
}
