// Start-up over real stdio, next to bare `node -e 0`, median of interleaved runs: spawn →
// initialize answered → session/new answered → the session ready (its commands listed: its tools
// and runtime loaded), RSS then; and a fresh process's `session/load` of a one-turn session (what
// any first load pays: the SDK, the session's modules and toolset). Run after `npm run build`:
// node bench/acp.mjs. Each build runs on a toolhost home of its own (a temporary folder). Then one more
// session/load per build under the module probe (test/fixtures/module-probe.mjs): the bytes of code
// its module loader read, from spawn until it exits (stdin closed at the answer).
// With `--baseline DIR` (another built checkout, e.g. a worktree of the previous commit) its CLI
// runs interleaved too (the order rotates every round), and the table gains this build's ratio to it.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, onJsonLines, rssMB, runProcess } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = path.join(root, "dist", "cli.js");
const baselineAt = process.argv.indexOf("--baseline");
const baselineCli = baselineAt > 0 ? path.join(path.resolve(process.argv[baselineAt + 1]), "dist", "cli.js") : null;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

const cwd = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-acp-ws-"));
const builds = baselineCli ? [cli, baselineCli] : [cli];
/** Each build's own toolhost home, holding a one-turn session written by that build's store (its format). */
const envs = new Map();
for (const b of builds) {
  const home = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-acp-"));
  envs.set(b, { ...process.env, TOOLHOST_HOME: home });
  const dist = path.dirname(b);
  const store = ["agent/record/session-store.js", "agent/session-store.js"].map((p) => path.join(dist, p)).find((p) => existsSync(p));
  if (!store) throw new Error(`${dist}: no session store to write the one-turn session with (agent/record/session-store.js)`);
  const { SessionStore } = await import(store);
  const at = new Date().toISOString();
  const small = new SessionStore(home).writer({ id: "one-turn", cwd });
  const assistant = { role: "assistant", content: [{ type: "text", text: "hello" }] };
  // Format 2 (a tree: ids and parents) since sessions became trees; issue 21's store wrote format 1.
  const turn = store.endsWith(path.join("record", "session-store.js"))
    ? [
        { type: "title", title: "A short session" },
        { type: "user", text: "hi" },
        { type: "message", message: { role: "user", content: "hi" } },
        { type: "agent_text", text: "hello" },
        { type: "message", message: assistant },
        { type: "turn_end", stopReason: "end_turn" },
      ].map((data, i) => ({ ...data, id: `e${i + 1}`, parentId: i ? `e${i}` : null }))
    : [
        { type: "title", title: "A short session" },
        { type: "turn", phase: "start", prompt: "hi" },
        { type: "message", message: { role: "user", content: "hi" } },
        { type: "view", call: { method: "text", args: ["hello"] } },
        { type: "message", message: assistant },
      ];
  for (const entry of turn) small.append({ ...entry, at });
  small.close();
}

const request = (id, method, params) => `${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`;

/** One fresh agent: initialize, then `method` (session/new or session/load); times from spawn. */
function agentRun(entry, method, nodeArgs = []) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [...nodeArgs, entry], {
      stdio: ["pipe", "pipe", nodeArgs.length ? "pipe" : "inherit"],
      env: envs.get(entry),
    });
    const result = { stderr: "" };
    child.stderr?.on("data", (d) => (result.stderr += d));
    let answered = false;
    child.on("error", reject);
    const done = () => {
      result.rss = rssMB(child.pid);
      child.stdin.end();
    };
    onJsonLines(child.stdout, (msg) => {
      if (msg.id === 1) {
        result.initialize = performance.now() - start;
        const params = method === "session/new" ? { cwd, mcpServers: [] } : { sessionId: "one-turn", cwd, mcpServers: [] };
        child.stdin.write(request(2, method, params));
      } else if (msg.id === 2) {
        if (msg.error) reject(new Error(JSON.stringify(msg.error)));
        result.answered = performance.now() - start;
        answered = true;
        // A loaded session is measured to its answer (issue 21's build lists no commands after a load).
        if (result.ready !== undefined || method === "session/load") done();
      } else if (msg.params?.update?.sessionUpdate === "available_commands_update" && result.ready === undefined) {
        // Sent once the session has started (its tools and runtime loaded), after the answer or before it.
        result.ready = performance.now() - start;
        if (answered && method === "session/new") done();
      }
    });
    child.on("close", () => resolve(result));
    child.stdin.write(request(1, "initialize", { protocolVersion: 1, clientCapabilities: {} }));
  });
}

const runs = new Map(builds.map((b) => [b, { new: [], load: [] }]));
const bare = [];
for (const b of builds) await agentRun(b, "session/new"); // warm the OS file cache
for (let i = 0; i < ROUNDS; i++) {
  // Rotated every round: whichever runs right after another pays for its garbage and its exit.
  const order = [() => runProcess(process.execPath, ["-e", "0"]).then((r) => bare.push(r.ms))];
  for (const b of builds) {
    order.push(async () => runs.get(b).new.push(await agentRun(b, "session/new")));
    order.push(async () => runs.get(b).load.push(await agentRun(b, "session/load")));
  }
  for (let j = 0; j < order.length; j++) await order[(i + j) % order.length]();
}
const probe = path.join(root, "test", "fixtures", "module-probe.mjs");
const codeLoaded = new Map();
for (const b of builds) {
  const { stderr } = await agentRun(b, "session/load", ["--import", probe]);
  const files = new Set(stderr.split("\n").flatMap((line) => (line.startsWith("module-probe: ") ? [line.slice(14)] : [])));
  codeLoaded.set(b, [...files].reduce((sum, url) => sum + statSync(fileURLToPath(url)).size, 0) / 1e6);
}
for (const { TOOLHOST_HOME } of envs.values()) rmSync(TOOLHOST_HOME, { recursive: true, force: true });
rmSync(cwd, { recursive: true, force: true });

const node = median(bare);
const stats = (b) => {
  const { new: fresh, load } = runs.get(b);
  return {
    init: median(fresh.map((r) => r.initialize)),
    sessionNew: median(fresh.map((r) => r.answered)),
    ready: median(fresh.map((r) => r.ready)),
    rss: median(fresh.map((r) => r.rss)),
    load: median(load.map((r) => r.answered - r.initialize)),
  };
};
const ours = stats(cli);
const rows = [
  ["spawn → initialize answered", "init", true],
  ["spawn → session/new answered", "sessionNew", true],
  ["spawn → the new session ready (available_commands_update)", "ready", true],
  ["fresh `session/load` of a one-turn session (request → answer)", "load", false],
];
console.log(`node ${process.version}, ${ROUNDS} interleaved rounds (load average ${os.loadavg()[0].toFixed(1)} at the end)`);
if (!baselineCli) {
  console.log("| measurement | median | vs bare node |\n|---|---|---|");
  console.log(`| bare \`node -e 0\` (spawn → exit) | ${fmt(node)} ms | 1.00× |`);
  for (const [label, key, vsNode] of rows)
    console.log(`| ${label} | ${fmt(ours[key])} ms | ${vsNode ? `${fmt(ours[key] / node, 2)}×` : ""} |`);
  console.log(`| RSS when the new session is ready | ${fmt(ours.rss)} MiB | |`);
  console.log(`| code loaded by a fresh \`session/load\` | ${fmt(codeLoaded.get(cli), 2)} MB | |`);
} else {
  const base = stats(baselineCli);
  console.log(`baseline: ${baselineCli}`);
  const cell = (ms, vsNode) => `${fmt(ms)} ms${vsNode ? ` (${fmt(ms / node, 2)}× node)` : ""}`;
  console.log("| measurement | this build | baseline | this / baseline |\n|---|---|---|---|");
  console.log(`| bare \`node -e 0\` (spawn → exit) | ${fmt(node)} ms | | |`);
  for (const [label, key, vsNode] of rows)
    console.log(`| ${label} | ${cell(ours[key], vsNode)} | ${cell(base[key], vsNode)} | ${fmt(ours[key] / base[key], 2)}× |`);
  console.log(`| RSS when the new session is ready | ${fmt(ours.rss)} MiB | ${fmt(base.rss)} MiB | ${fmt(ours.rss / base.rss, 2)}× |`);
  const [mine, theirs] = [codeLoaded.get(cli), codeLoaded.get(baselineCli)];
  console.log(`| code loaded by a fresh \`session/load\` | ${fmt(mine, 2)} MB | ${fmt(theirs, 2)} MB | ${fmt(mine / theirs, 2)}× |`);
}
