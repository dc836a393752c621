import path from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import type { AnyTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";

// What extension code may not do to the process that hosts it (docs/architecture.md, "Extension
// code and the process"):
// - `process.exit()` from a loaded extension's folder throws instead: the call (or the import)
//   fails with a clear error, and the agent goes on. toolhost's own exits are told apart by the
//   stack: no frame of theirs lies in an extension folder.
// - A synchronous endless loop cannot be interrupted on the thread it holds: no timer, cancel or
//   signal handler runs. A watchdog thread sees the main thread's heartbeat stop while an
//   extension call runs; past the call's timeout plus a grace period it writes why to stderr and
//   ends the process with SIGKILL, so an editor restarts the agent instead of waiting forever on
//   a frozen one. (Isolating each extension in a worker would let the process live on, but
//   changes what an extension is: its context, its closures, its shared state.)

/** Folders whose code is extension code. */
const extensionDirs = new Set<string>();
let exitGuarded = false;

/** Whether a stack frame runs code from an extension folder. */
function inExtension(stack: string): string | undefined {
  for (const line of stack.split("\n").slice(1)) {
    const at = /\(?((?:file:\/\/)?\/[^():]+)(?::\d+){0,2}\)?\s*$/.exec(line)?.[1];
    if (!at) continue;
    const file = at.startsWith("file://") ? fileURLToPath(at) : at;
    for (const dir of extensionDirs) if (file.startsWith(dir + path.sep)) return file;
  }
  return undefined;
}

/** Makes `process.exit` called from extension code (a file in `file`'s folder) throw instead. */
export function guardProcessExit(file: string): void {
  extensionDirs.add(path.dirname(file));
  if (exitGuarded) return;
  exitGuarded = true;
  const exit = process.exit.bind(process);
  process.exit = ((code?: number | string | null) => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = Infinity;
    const stack = new Error().stack ?? "";
    Error.stackTraceLimit = limit;
    const culprit = inExtension(stack);
    if (culprit) {
      throw new ToolError(
        "execution_failed",
        `process.exit(${code ?? ""}) was called by extension code (${culprit}): extension code cannot end toolhost, so the call fails instead`,
      );
    }
    return exit(code);
  }) as typeof process.exit;
}

/** How long past its timeout a call may hold the main thread before the watchdog ends the process. */
export const STALL_GRACE_MS = 5_000;
/** How often the main thread beats while it is free. */
const HEARTBEAT_MS = 200;

// The watchdog thread (eval'd: no file to find in dist/). shared: [beats, armed calls, limit ms].
const WATCHDOG = `
const { workerData } = require("node:worker_threads");
const fs = require("node:fs");
const shared = new Int32Array(workerData.buffer);
let seen = Atomics.load(shared, 0);
let since = Date.now();
setInterval(() => {
  const beats = Atomics.load(shared, 0);
  const now = Date.now();
  if (beats !== seen || Atomics.load(shared, 1) === 0) { seen = beats; since = now; return; }
  const limit = Atomics.load(shared, 2);
  if (now - since < limit) return;
  const text = Buffer.from(new Uint8Array(workerData.names)).toString("utf8").replace(/\\0+$/, "");
  fs.writeSync(2, "toolhost: the extension tool " + (text || "?") + " has held the main thread for " + Math.round((now - since) / 1000) +
    " s, past its timeout (a synchronous endless loop?): nothing can interrupt it, so toolhost ends now (SIGKILL). Restart the agent; fix or remove the tool.\\n");
  process.kill(process.pid, "SIGKILL");
}, 100);
`;

interface Watchdog {
  shared: Int32Array;
  name: Uint8Array;
  active: Map<number, { id: string; limit: number }>;
  next: number;
}

let watchdog: Watchdog | undefined;

function startWatchdog(): Watchdog {
  if (watchdog) return watchdog;
  const shared = new Int32Array(new SharedArrayBuffer(3 * 4));
  const name = new Uint8Array(new SharedArrayBuffer(256));
  const worker = new Worker(WATCHDOG, { eval: true, workerData: { buffer: shared.buffer, names: name.buffer } });
  worker.unref();
  worker.on("error", () => {});
  setInterval(() => Atomics.add(shared, 0, 1), HEARTBEAT_MS).unref();
  return (watchdog = { shared, name, active: new Map(), next: 1 });
}

function publish(w: Watchdog): void {
  const calls = [...w.active.values()];
  Atomics.store(w.shared, 1, calls.length);
  Atomics.store(w.shared, 2, Math.max(0, ...calls.map((c) => c.limit)));
  w.name.fill(0);
  w.name.set(Buffer.from(calls.map((c) => c.id).join(", ")).subarray(0, w.name.length - 1));
}

/** An extension tool whose execute is watched: a main thread held past its timeout ends the process. */
export function watchStalls(tool: AnyTool): AnyTool {
  const execute = tool.execute;
  const limit = (tool.timeoutMs ?? 0) + STALL_GRACE_MS;
  return {
    ...tool,
    execute: (async (...args: Parameters<typeof execute>) => {
      const w = startWatchdog();
      const key = w.next++;
      w.active.set(key, { id: tool.id, limit });
      publish(w);
      try {
        return await execute.apply(tool, args);
      } finally {
        w.active.delete(key);
        publish(w);
      }
    }) as typeof execute,
  };
}
