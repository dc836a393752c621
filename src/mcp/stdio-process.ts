import { PassThrough } from "node:stream";
import type { StdioServerParameters } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { groupHasLiveMembers, guardedCommand, killAtExitOf, releaseAtExit } from "../runtime/process-groups.js";
import type { RemoteProcess } from "../runtime/shell/remote-process.js";
import { startOffThread, treeKillOffThread } from "../runtime/shell/spawn-thread.js";

// A stdio MCP server's process, from spawn to the end of its whole tree. The SDK's
// StdioClientTransport spawns the server in toolhost's own process group and hands out its pid
// only while it runs, so a server that missed the start-up timeout was never killed (its pid was
// unknown by then), and a child it left behind when it exited on SIGTERM was an orphan no walk
// from its pid could find. Here the server leads a process group of its own, tracked from spawn:
// closing signals the group (SIGTERM, SIGKILL after the grace period) plus any descendant that
// left it, an `exit` hook SIGKILLs every group still running when toolhost exits, and the group
// guard (process-groups.ts) SIGKILLs it when toolhost ends without running any code (SIGKILL, a
// crash), or once the server itself has exited.

const GROUPS = process.platform !== "win32";

/** Signals the server's process group (its pid), or the process alone where there are no groups. */
function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(GROUPS ? -pid : pid, sig);
  } catch {
    // ESRCH: already gone.
  }
}

/** Whether the server's group (or, where there are no groups, the server) still has a live member. */
async function groupAlive(pid: number): Promise<boolean> {
  if (GROUPS) return groupHasLiveMembers(pid);
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Ends a server's whole tree: the group is frozen while tree-kill walks the tree for descendants
 * that left it (none can exit or be re-parented meanwhile), then the group gets SIGTERM and runs
 * again; SIGKILL to both once `graceMs` pass with a member still alive. Resolves when none is.
 */
async function stopTree(pid: number, leaderRunning: boolean, graceMs: number): Promise<void> {
  if (leaderRunning && GROUPS) {
    signal(pid, "SIGSTOP");
    await new Promise<void>((resolve) => {
      // If the walk (ps) hangs, the group must not stay frozen.
      const fallback = setTimeout(resolve, 1000);
      void treeKillOffThread(pid, "SIGTERM").then(() => (clearTimeout(fallback), resolve()));
    });
    signal(pid, "SIGTERM");
    signal(pid, "SIGCONT");
  } else if (leaderRunning) {
    await treeKillOffThread(pid, "SIGTERM");
  } else {
    signal(pid, "SIGTERM");
  }
  // Timers not unref'd: a CLI waiting only on this (toolhost mcp list) must not exit before the tree is gone.
  const deadline = performance.now() + graceMs;
  while ((await groupAlive(pid)) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
  if (!(await groupAlive(pid))) return;
  signal(pid, "SIGKILL");
  if (leaderRunning) await treeKillOffThread(pid, "SIGKILL");
  const killed = performance.now() + 2000;
  while ((await groupAlive(pid)) && performance.now() < killed) await new Promise((resolve) => setTimeout(resolve, 25));
}

/** The MCP client transport for a stdio server: the SDK's StdioClientTransport, with the process handled as above. */
export class StdioProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: RemoteProcess | undefined;
  private readonly buffer = new ReadBuffer();
  private readonly stderrStream = new PassThrough();
  private stopping: Promise<void> | undefined;
  /** The server's pid (its process group's id), from spawn on. */
  pid: number | null = null;

  constructor(
    private readonly params: StdioServerParameters,
    private readonly graceMs = 1500,
  ) {}

  /** The server's stderr, available before `start()`. */
  get stderr(): PassThrough {
    return this.stderrStream;
  }

  start(): Promise<void> {
    if (this.child) throw new Error("the stdio transport is already started");
    return new Promise((resolve, reject) => {
      const { command, args = [], env, cwd } = this.params;
      // Behind the group guard, on fd 3 (stdin and stdout stay the protocol's), never released.
      const run = GROUPS ? guardedCommand("toolhost-mcp", command, args, { env, cwd }) : { file: command, args };
      // On the spawner thread: its fork would hold the agent's thread (spawn-thread.ts).
      const child = startOffThread(run.file, run.args, {
        env: env ?? { ...process.env },
        cwd,
        stdin: true,
        detached: GROUPS,
        guard: GROUPS,
      });
      this.child = child;
      // The server is gone: so is what it left in its group (the guard's EOF), and then comes `close`.
      child.once("exit", () => child.closeGuard());
      child.on("error", (error) => {
        reject(error);
        this.onerror?.(error);
      });
      child.on("spawn", () => {
        const pid = child.pid!;
        this.pid = pid;
        killAtExitOf(pid, () => signal(pid, "SIGKILL"));
        resolve();
      });
      child.on("close", () => {
        this.child = undefined;
        this.onclose?.();
      });
      child.stdin?.on("error", (error) => this.onerror?.(error));
      child.stdout?.on("data", (chunk: Buffer) => {
        this.buffer.append(chunk);
        for (;;) {
          let message: JSONRPCMessage | null;
          try {
            message = this.buffer.readMessage();
          } catch (error) {
            this.onerror?.(error as Error);
            continue;
          }
          if (message === null) break;
          this.onmessage?.(message);
        }
      });
      child.stdout?.on("error", (error) => this.onerror?.(error));
      child.stderr?.pipe(this.stderrStream);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      const stdin = this.child?.stdin;
      if (!stdin) throw new Error("Not connected");
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Stops the server with its whole process tree (see stopTree); resolves once it is gone. */
  close(): Promise<void> {
    return (this.stopping ??= this.stop());
  }

  private async stop(): Promise<void> {
    const child = this.child;
    const pid = this.pid;
    this.buffer.clear();
    if (pid === null) return;
    try {
      child?.stdin?.end();
    } catch {}
    await stopTree(pid, child !== undefined && child.exitCode === null && child.signalCode === null, this.graceMs);
    releaseAtExit(pid);
  }
}
