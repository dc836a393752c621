// The messages between the agent's thread (spawn-thread.ts, remote-process.ts) and the spawner
// thread (spawn-worker.ts).

export type SpawnRequest =
  | { id: number; op: "spawn"; file: string; args: string[]; cwd: string; env: Record<string, string | undefined>; input?: Uint8Array }
  | {
      id: number;
      op: "run";
      file: string;
      args: string[];
      cwd?: string;
      env: Record<string, string | undefined>;
      input: Uint8Array;
      maxOutput: number;
      timeoutMs?: number;
    }
  | {
      id: number;
      op: "open";
      file: string;
      args: string[];
      cwd?: string;
      env: Record<string, string | undefined>;
      detached: boolean;
      stdin: boolean;
      guard: boolean;
    }
  | { id: number; op: "pause" | "resume"; stream: StreamName }
  | { id: number; op: "destroy"; stream: StreamName | "stdin" }
  | { id: number; op: "write"; chunk: Uint8Array }
  | { id: number; op: "end" | "release" | "closeGuard" }
  | { id: number; op: "kill"; signal: NodeJS.Signals }
  | { id: number; op: "treeKill"; pid: number; signal: NodeJS.Signals };

export type SpawnReply =
  | { id: number; type: "spawned"; pid: number }
  | { id: number; type: "failed"; code?: string; message: string }
  | { id: number; type: "data"; stream: StreamName | "guard"; chunk: Uint8Array }
  | { id: number; type: "end" | "close"; stream: StreamName }
  | { id: number; type: "exit"; code: number | null; signal: string | null }
  | { id: number; type: "written"; error?: string }
  | { id: number; type: "settled" }
  | { id: number; type: "ran"; result: RunResult }
  | { id: number; type: "treeKilled" };

/** A helper program run to its end off the agent's thread (`runOffThread`). */
export interface RunResult {
  /** Its exit code; null when a signal ended it (`signal`). */
  code: number | null;
  signal: string | null;
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** It printed more than `maxOutput` bytes and was killed. */
  overflow: boolean;
  /** It ran past `timeoutMs` and was killed. */
  timedOut: boolean;
}

export type StreamName = "stdout" | "stderr";

export type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
