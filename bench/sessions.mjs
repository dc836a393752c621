// Issue 15 targets: session/load of a 2,000-message session and session/list over 1,000 sessions,
// both under 200 ms, measured over real stdio against the built agent; each next to session/new in
// the same agent process (the baseline: what any request costs on this machine right now), median
// of interleaved rounds. Run after `npm run build`: node bench/sessions.mjs
// With `--baseline DIR` (another built checkout) its CLI loads the long session fresh too, in the
// same rounds, and the table gains the ratio to it.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, onJsonLines, rssMB } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = path.join(root, "dist", "cli.js");
const { SessionStore } = await import(path.join(root, "dist", "agent", "record", "session-store.js"));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
const baselineAt = process.argv.indexOf("--baseline");
const baselineCli = baselineAt > 0 ? path.join(path.resolve(process.argv[baselineAt + 1]), "dist", "cli.js") : null;

const home = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-sessions-"));
const cwd = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-ws-"));
const at = new Date().toISOString();

/** 1,000 sessions over 20 projects (a few prompts each), and one of 2,000 messages in `cwd`. */
function populate() {
  const store = new SessionStore(home);
  for (let i = 0; i < 1000; i++) {
    const project = path.join(os.tmpdir(), `bench-project-${i % 20}`);
    const w = store.writer({ id: `s${String(i).padStart(4, "0")}`, cwd: project });
    w.append({ type: "title", at, title: `Session ${i}: fix the thing in module ${i % 37}` });
    for (let j = 0; j < 5; j++) {
      w.append({ type: "turn", at, phase: "start", prompt: `prompt ${j}` });
      w.append({ type: "message", at, message: { role: "user", content: `prompt ${j}` } });
      w.append({ type: "view", at, call: { method: "text", args: [`answer ${j} `.repeat(20)] } });
      w.append({ type: "message", at, message: { role: "assistant", content: [{ type: "text", text: `answer ${j} `.repeat(20) }] } });
      w.append({ type: "turn", at, phase: "end", stopReason: "end_turn" });
    }
    w.close();
  }
  const big = store.writer({ id: "big", cwd });
  big.append({ type: "title", at, title: "A long session" });
  for (let j = 0; j < 1000; j++) {
    const prompt = `Question ${j}: what does function f${j} in src/module${j % 50}.ts do, and is it tested?`;
    const answer = `Function f${j} parses the input and returns a normalized record. ${"It is covered by the unit tests. ".repeat(6)}`;
    big.append({ type: "turn", at, phase: "start", prompt });
    big.append({ type: "message", at, message: { role: "user", content: prompt } });
    big.append({ type: "view", at, call: { method: "text", args: [answer] } });
    big.append({ type: "message", at, message: { role: "assistant", content: [{ type: "text", text: answer }] } });
    big.append({ type: "turn", at, phase: "end", stopReason: "end_turn" });
  }
  big.close();
  // The same load with one turn: what loading a session costs whatever its length (its tools, its runtime).
  const small = store.writer({ id: "small", cwd });
  small.append({ type: "title", at, title: "A short session" });
  small.append({ type: "turn", at, phase: "start", prompt: "hi" });
  small.append({ type: "message", at, message: { role: "user", content: "hi" } });
  small.append({ type: "view", at, call: { method: "text", args: ["hello"] } });
  small.append({ type: "message", at, message: { role: "assistant", content: [{ type: "text", text: "hello" }] } });
  small.close();
  return store.fileFor("big", cwd);
}

/** One agent: initialize, then the requests in order, each timed from write to answer. */
function agent(requests, entry = cli) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [entry], {
      stdio: ["pipe", "pipe", "inherit"],
      env: { ...process.env, TOOLHOST_HOME: home, TOOLHOST_MODEL: "", TOOLHOST_SANDBOX: "off" },
    });
    const times = [];
    const rss = [];
    let next = 0;
    let sentAt = 0;
    let updates = 0;
    const send = (id, method, params) => {
      sentAt = performance.now();
      child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
    };
    child.on("error", reject);
    onJsonLines(child.stdout, (msg) => {
      if (msg.method === "session/update") updates++;
      if (msg.id === undefined || msg.method) return;
      if (msg.error) reject(new Error(JSON.stringify(msg.error)));
      if (msg.id > 0) {
        times.push(performance.now() - sentAt);
        rss.push(rssMB(child.pid));
      }
      if (next < requests.length) {
        const [method, params] = requests[next];
        next++;
        send(next, method, params);
      } else child.stdin.end();
    });
    child.on("close", () => resolve({ times, rss, updates }));
    send(0, "initialize", { protocolVersion: 1, clientCapabilities: {} });
  });
}

const bigFile = populate();
const lines = readFileSync(bigFile, "utf8").trim().split("\n").length;
const newSession = ["session/new", { cwd, mcpServers: [] }];
const rows = { new: [], list: [], listCwd: [], load: [], loadSmall: [], loadWarm: [], rssNew: [], rssLoad: [], baseLoad: [] };
let replayed = 0;
for (let i = 0; i < ROUNDS; i++) {
  // As an editor opens its thread list: before any session of this process.
  const a = await agent([["session/list", {}], ["session/list", { cwd: path.join(os.tmpdir(), "bench-project-3") }], newSession]);
  rows.list.push(a.times[0]);
  rows.listCwd.push(a.times[1]);
  rows.new.push(a.times[2]);
  rows.rssNew.push(a.rss[2]);
  const b = await agent([["session/load", { sessionId: "big", cwd, mcpServers: [] }]]);
  rows.load.push(b.times[0]);
  rows.rssLoad.push(b.rss[0]);
  replayed = b.updates;
  // As an editor does once its agent runs: a thread opened after another.
  const c = await agent([
    ["session/load", { sessionId: "small", cwd, mcpServers: [] }],
    ["session/load", { sessionId: "big", cwd, mcpServers: [] }],
  ]);
  rows.loadSmall.push(c.times[0]);
  rows.loadWarm.push(c.times[1]);
  if (baselineCli) rows.baseLoad.push((await agent([["session/load", { sessionId: "big", cwd, mcpServers: [] }]], baselineCli)).times[0]);
}
rmSync(home, { recursive: true, force: true });
rmSync(cwd, { recursive: true, force: true });

console.log(`${ROUNDS} interleaved rounds; the long session: 2,000 messages, ${lines} lines, ${replayed} updates replayed`);
console.log("| request | median | target |");
console.log("|---|---|---|");
console.log(`| session/new (answered before its tools load) | ${fmt(median(rows.new))} ms | |`);
console.log(`| session/list, 1,000 sessions (first page of 50) | ${fmt(median(rows.list))} ms | < 200 ms |`);
console.log(`| session/list, one project's 50 | ${fmt(median(rows.listCwd))} ms | |`);
console.log(`| session/load, one turn (baseline: the session's tools and runtime) | ${fmt(median(rows.loadSmall))} ms | |`);
console.log(`| session/load, 2,000 messages, replayed | ${fmt(median(rows.load))} ms | < 200 ms |`);
console.log(`| the 2,000 messages' own cost (load − baseline) | ${fmt(median(rows.load) - median(rows.loadSmall))} ms | |`);
console.log(`| session/load, 2,000 messages, in an agent that has loaded a session before | ${fmt(median(rows.loadWarm))} ms | < 200 ms |`);
if (baselineCli) {
  const ratio = median(rows.load) / median(rows.baseLoad);
  console.log(
    `| session/load, 2,000 messages, fresh, baseline build (${baselineCli}) | ${fmt(median(rows.baseLoad))} ms | this / baseline: ${fmt(ratio, 2)}× |`,
  );
}
console.log(`| RSS after session/new | ${fmt(median(rows.rssNew))} MiB | |`);
console.log(`| RSS after session/load of the long session | ${fmt(median(rows.rssLoad))} MiB | |`);
