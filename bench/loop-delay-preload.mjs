// Loaded into an agent by bench/sandbox-scale.mjs (`node --import`): the agent's own event-loop
// delay, the longest any request could have waited for its thread, and how often it was held over
// 30 ms (a timer every 2 ms, late by more than that). Reset by SIGUSR2 (the bench sends it once the
// session has started), written to BENCH_LOOP_FILE as the agent exits. Workers get the same flags:
// only the main thread measures.
//
// A late timer is either the thread held (running JavaScript or GC, or blocked in a system call)
// or the thread ready but not given a core (two cores shared with bwrap, the workers, the client).
// Linux tells the two apart: /proc/self/task/<tid>/schedstat's second field is the time the thread
// waited on a run queue. Each gap is split so: `heldMax` is the longest part of one that was not
// that wait, `heldOver30` how many gaps had over 30 ms of it, `waitMax` the longest wait.
import { readFileSync, writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

const file = process.env.BENCH_LOOP_FILE;
if (file && isMainThread) {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  // The main thread's tid is the pid.
  const schedstat = `/proc/self/task/${process.pid}/schedstat`;
  const waited = () => {
    try {
      return Number(readFileSync(schedstat, "utf8").split(" ")[1]) / 1e6;
    } catch {
      return NaN;
    }
  };
  let over30 = 0;
  let heldOver30 = 0;
  let heldMax = 0;
  let waitMax = 0;
  let last = performance.now();
  let lastWaited = waited();
  setInterval(() => {
    const now = performance.now();
    const nowWaited = waited();
    const gap = now - last - 2;
    const wait = nowWaited - lastWaited;
    const held = gap - wait;
    heldMax = Math.max(heldMax, held);
    waitMax = Math.max(waitMax, wait);
    if (gap > 30) over30++;
    if (held > 30) heldOver30++;
    last = now;
    lastWaited = nowWaited;
  }, 2).unref();
  process.on("SIGUSR2", () => {
    delay.reset();
    over30 = heldOver30 = heldMax = waitMax = 0;
  });
  process.on("exit", () =>
    writeFileSync(file, JSON.stringify({ max: delay.max / 1e6, p99: delay.percentile(99) / 1e6, over30, heldOver30, heldMax, waitMax })),
  );
}
