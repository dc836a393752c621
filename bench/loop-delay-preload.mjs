// Loaded into an agent by bench/sandbox-scale.mjs (`node --import`): the agent's own event-loop
// delay, the longest any request could have waited for its thread, and how often it was held over
// 30 ms (a timer every 2 ms, late by more than that). Reset by SIGUSR2 (the bench sends it once the
// session has started), written to BENCH_LOOP_FILE as the agent exits. Workers get the same flags:
// only the main thread measures.
import { writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

const file = process.env.BENCH_LOOP_FILE;
if (file && isMainThread) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let over30 = 0;
  let last = performance.now();
  setInterval(() => {
    const now = performance.now();
    if (now - last - 2 > 30) over30++;
    last = now;
  }, 2).unref();
  process.on("SIGUSR2", () => {
    delay.reset();
    over30 = 0;
  });
  process.on("exit", () => writeFileSync(file, JSON.stringify({ max: delay.max / 1e6, p99: delay.percentile(99) / 1e6, over30 })));
}
