// One measured call in a fresh process: prints {ms, rssGrowthMB} as JSON on stdout.
// Usage: node bench/probe.mjs read <file> | node bench/probe.mjs bash <command>
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = (p) => path.join(root, "dist", p);
const { builtinRegistry } = await import(dist("host/builtins.js"));
const { invoke } = await import(dist("host/invoke.js"));
const { RuntimeSession } = await import(dist("runtime/session.js"));

const [mode, arg] = process.argv.slice(2);
const cold = mode === "read-cold";
const kind = cold ? "read" : mode;
const workspace = kind === "read" ? path.dirname(arg) : process.cwd();
const session = new RuntimeSession({ workspace });
const registry = builtinRegistry();
// Warm-up on small calls (another file, a trivial command): a session's first call pays one-time
// compilation (~25 ms) whatever the file size; the measurement is of the call itself.
const warm =
  kind === "read" && !cold
    ? await invoke(registry, "read", { path: path.join(root, "package.json") }, { session: new RuntimeSession({ workspace: root }) })
    : null;
if (warm && warm.type !== "output") throw new Error(warm.error_text);
if (!cold) await invoke(registry, "bash", { command: "true" }, { session });
global.gc?.();
// Linux: writing 5 to clear_refs resets the peak RSS (VmHWM), so the peak below is the call's own.
const hwm = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"))?.[1] ?? 0) * 1024;
let exactPeak = false;
try {
  writeFileSync("/proc/self/clear_refs", "5");
  exactPeak = true;
} catch {}
const before = process.memoryUsage().rss;
let peak = before;
const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
const start = performance.now();
const env =
  kind === "read"
    ? await invoke(registry, "read", { path: arg, offset: 1, limit: 2000 }, { session })
    : await invoke(registry, "bash", { command: arg, timeout_ms: 600000 }, { session });
const ms = performance.now() - start;
clearInterval(sampler);
peak = Math.max(peak, process.memoryUsage().rss, exactPeak ? hwm() : 0);
if (env.type !== "output") throw new Error(env.error_text);
await session.close();
process.stdout.write(JSON.stringify({ ms, rssGrowthMB: (peak - before) / 1e6 })); // stdout-ok
