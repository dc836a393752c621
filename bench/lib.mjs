// Shared helpers for the benchmarks: interleaved runs, medians, child-process measurements.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Runs `a` and `b` alternately `rounds` times (noise hits both alike) and returns both series.
 * The order swaps every round: whichever runs second pays the first one's garbage collection.
 */
export async function interleave(rounds, a, b) {
  const as = [];
  const bs = [];
  for (let i = 0; i < rounds; i++) {
    if (i % 2) bs.push(await b());
    as.push(await a());
    if (!(i % 2)) bs.push(await b());
  }
  return { a: as, b: bs };
}

export async function timed(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** Spawns a process, drains its stdout, resolves with the wall time in ms. */
export function runProcess(cmd, args, options = {}) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "inherit"], ...options });
    let bytes = 0;
    let out = "";
    child.stdout.on("data", (d) => {
      bytes += d.length;
      if (options.capture) out += d.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ ms: performance.now() - start, bytes, code, out }));
  });
}

export const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : String(n));

/** A process's resident memory in MiB (Linux). */
export function rssMB(pid) {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) / 1024;
}

/** Calls `onMessage` with each JSON line a stream writes (an ACP agent's stdout). */
export function onJsonLines(stream, onMessage) {
  let buffer = "";
  stream.on("data", (d) => {
    buffer += d.toString();
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      onMessage(JSON.parse(line));
    }
  });
}
