// Issue 3 target: spawn → initialize answered → session/new answered, and RSS after session/new,
// next to bare `node -e 0`, median of interleaved runs. Run after `npm run build`: node bench/acp.mjs
// With `--baseline DIR` (another built checkout, e.g. a worktree of the previous commit) its CLI
// runs interleaved too, and the table gains this build's ratio to it.
import { spawn } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, onJsonLines, rssMB, runProcess } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = path.join(root, "dist", "cli.js");
const baselineAt = process.argv.indexOf("--baseline");
const baselineCli = baselineAt > 0 ? path.join(path.resolve(process.argv[baselineAt + 1]), "dist", "cli.js") : null;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

function agentRun(entry = cli) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [entry], { stdio: ["pipe", "pipe", "inherit"] });
    const result = {};
    child.on("error", reject);
    onJsonLines(child.stdout, (msg) => {
      if (msg.id === 1) {
        result.initialize = performance.now() - start;
        child.stdin.write(
          JSON.stringify({ jsonrpc: "2.0", id: 2, method: "session/new", params: { cwd: os.tmpdir(), mcpServers: [] } }) + "\n",
        );
      } else if (msg.id === 2) {
        result.sessionNew = performance.now() - start;
        // Let the post-response work (commands update) settle before reading memory.
        setTimeout(() => {
          result.rss = rssMB(child.pid);
          child.stdin.end();
        }, 50);
      }
    });
    child.on("close", () => resolve(result));
    child.stdin.write(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } }) + "\n",
    );
  });
}

const bare = [];
const runs = [];
const baseRuns = [];
await agentRun(); // warm the OS file cache
if (baselineCli) await agentRun(baselineCli);
for (let i = 0; i < ROUNDS; i++) {
  bare.push((await runProcess(process.execPath, ["-e", "0"])).ms);
  runs.push(await agentRun());
  if (baselineCli) baseRuns.push(await agentRun(baselineCli));
}
const node = median(bare);
const stats = (list) => ({
  init: median(list.map((r) => r.initialize)),
  sessionNew: median(list.map((r) => r.sessionNew)),
  rss: median(list.map((r) => r.rss)),
});
const ours = stats(runs);
console.log(`node ${process.version}, ${ROUNDS} interleaved rounds`);
if (!baselineCli) {
  console.log("| measurement | median | vs bare node |\n|---|---|---|");
  console.log(`| bare \`node -e 0\` (spawn → exit) | ${fmt(node)} ms | 1.00× |`);
  console.log(`| spawn → initialize answered | ${fmt(ours.init)} ms | ${fmt(ours.init / node, 2)}× |`);
  console.log(`| spawn → session/new answered | ${fmt(ours.sessionNew)} ms | ${fmt(ours.sessionNew / node, 2)}× |`);
  console.log(`| RSS after session/new | ${fmt(ours.rss)} MiB | |`);
} else {
  const base = stats(baseRuns);
  console.log(`baseline: ${baselineCli}`);
  const vs = (ms) => `${fmt(ms)} ms (${fmt(ms / node, 2)}× node)`;
  console.log("| measurement | this build | baseline | this / baseline |\n|---|---|---|---|");
  console.log(`| bare \`node -e 0\` (spawn → exit) | ${fmt(node)} ms | | |`);
  console.log(`| spawn → initialize answered | ${vs(ours.init)} | ${vs(base.init)} | ${fmt(ours.init / base.init, 2)}× |`);
  console.log(
    `| spawn → session/new answered | ${vs(ours.sessionNew)} | ${vs(base.sessionNew)} | ${fmt(ours.sessionNew / base.sessionNew, 2)}× |`,
  );
  console.log(`| RSS after session/new | ${fmt(ours.rss)} MiB | ${fmt(base.rss)} MiB | ${fmt(ours.rss / base.rss, 2)}× |`);
}
