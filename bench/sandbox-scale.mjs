// Issue 33: the sandbox costs what changed, not the size of the workspace. Over ACP (the built
// CLI, a fresh TOOLHOST_HOME), prompts of `/bash true` in a generated workspace of 30,000 folders
// (a node_modules: packages of nested folders with files, a few nested repositories) against the
// same in one of 100 folders: a session's first command (fresh agents, interleaved) and a command
// in a session (interleaved). Meanwhile a client pings the agent (an unknown method, answered at
// once) every 5 ms: the slowest answer is how long a cheap ACP request waits while commands run,
// the client's and the machine's scheduling included; the agent's own event-loop delay over the
// same prompts (`loop-delay-preload.mjs`) is how long any request could have waited for its thread.
// With `--baseline DIR` (another built checkout, e.g. the commit before) its CLI runs the same,
// side by side. The trees are made in a temp folder and removed. Run after `npm run build`:
// node bench/sandbox-scale.mjs [--baseline DIR] (BENCH_ROUNDS, default 15; BENCH_FIRST, default 5;
// BENCH_DIRS, default 30000; BENCH_PAUSE, default 3000; BENCH_CHECKPOINTS=off; BENCH_PARTS, default
// first,session,loop; BENCH_IGNORED=off: node_modules not in a .gitignore, so the checkpoints keep
// all of it — a JS project ignores it, and the default does).
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, onJsonLines } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const baselineAt = process.argv.indexOf("--baseline");
const baselineRoot = baselineAt > 0 ? path.resolve(process.argv[baselineAt + 1]) : null;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const FIRST = Number(process.env.BENCH_FIRST ?? 5);
const DIRS = Number(process.env.BENCH_DIRS ?? 30_000);
const PAUSE = Number(process.env.BENCH_PAUSE ?? 3000);
const PARTS = new Set((process.env.BENCH_PARTS ?? "first,session,loop").split(","));
const IGNORED = process.env.BENCH_IGNORED !== "off";

const { sandboxAvailable } = await import(path.join(root, "dist/runtime/sandbox/bubblewrap.js"));
const status = await sandboxAvailable();
if (!status.available) {
  console.log(`sandbox-scale bench skipped: ${status.reason}`);
  process.exit(0);
}

/** A node_modules-like tree of `dirs` folders: packages of ~50 folders, nested 4 deep, 2 files each. */
async function generate(dirs) {
  const ws = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-bench-scale-")));
  let made = 1;
  let pkg = 0;
  while (made < dirs) {
    const base = path.join(ws, "node_modules", `pkg${pkg++}`);
    const stack = [base];
    for (let i = 0; i < 50 && made < dirs; i++) {
      const parent = stack[Math.floor(i / 3)] ?? base;
      const dir = i === 0 ? base : path.join(parent, `d${i}`);
      await fsp.mkdir(dir, { recursive: true });
      await fsp.writeFile(path.join(dir, "index.js"), "module.exports = {};\n");
      await fsp.writeFile(path.join(dir, "package.json"), "{}\n");
      stack.push(dir);
      made++;
    }
  }
  for (let i = 0; i < 5; i++) execFileSync("git", ["init", "-q", path.join(ws, "node_modules", `pkg${i * 7}`)]);
  if (IGNORED) await fsp.writeFile(path.join(ws, ".gitignore"), "node_modules/\n");
  return ws;
}

function countDirs(dir) {
  return Number(
    execFileSync("sh", ["-c", `find '${dir}' -type d -not -path '*/.git/*' -not -name .git | wc -l`])
      .toString()
      .trim(),
  );
}

/** A fresh TOOLHOST_HOME (no project seen yet); BENCH_CHECKPOINTS=off turns the checkpoints off in it. */
function newHome() {
  const home = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-home-"));
  if (process.env.BENCH_CHECKPOINTS === "off") writeFileSync(path.join(home, "config.json"), '{ "checkpoints": false }\n');
  return home;
}

/** An agent over stdio (its own fresh home unless `sharedHome`), with a ping that runs while asked. */
/** Where an agent's own event-loop delay is written as it exits (`loop-delay-preload.mjs`). */
const LOOP_PRELOAD = new URL("./loop-delay-preload.mjs", import.meta.url).href;

function agent(cli, sharedHome) {
  const home = sharedHome ?? newHome();
  const loopFile = path.join(home, "bench-loop-delay.json");
  const env = { ...process.env, TOOLHOST_HOME: home, BENCH_LOOP_FILE: loopFile };
  for (const name of Object.keys(env)) if (/^(ANTHROPIC|OPENAI|TOOLHOST_MODEL|TOOLHOST_PROVIDER)/.test(name)) delete env[name];
  const child = spawn(process.execPath, ["--import", LOOP_PRELOAD, cli], { stdio: ["pipe", "pipe", "inherit"], env });
  const waiting = new Map();
  let next = 1;
  onJsonLines(child.stdout, (msg) => {
    if (msg.id !== undefined && waiting.has(msg.id)) {
      waiting.get(msg.id)(msg);
      waiting.delete(msg.id);
    } else if (msg.method === "session/request_permission") {
      child.stdin.write(
        JSON.stringify({ jsonrpc: "2.0", id: msg.id, result: { outcome: { outcome: "selected", optionId: "allow_once" } } }) + "\n",
      );
    }
  });
  const request = (method, params) =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, resolve);
      child.stdin.write(JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n");
    });
  let sessionId;
  return {
    async open(cwd) {
      await request("initialize", { protocolVersion: 1, clientCapabilities: {} });
      sessionId = (await request("session/new", { cwd, mcpServers: [] })).result.sessionId;
      await request("session/set_mode", { sessionId, modeId: "full" });
    },
    async prompt(text) {
      const start = performance.now();
      const reply = await request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
      if (reply.error) throw new Error(`prompt failed: ${JSON.stringify(reply.error)}`);
      return performance.now() - start;
    },
    /** Pings every 5 ms (one at a time) until stopped; the answers' waits. */
    pinging() {
      const waits = [];
      let on = true;
      const loop = (async () => {
        while (on) {
          const start = performance.now();
          await request("bench/ping", {});
          waits.push(performance.now() - start);
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      return async () => {
        on = false;
        await loop;
        return waits;
      };
    },
    /** The agent's event-loop delay is measured from now on. */
    measureLoop() {
      child.kill("SIGUSR2");
    },
    /** Ends the agent; its event-loop delay since `measureLoop` (ms: max, p99). */
    async close() {
      child.stdin.end();
      await new Promise((r) => child.on("close", r));
      const loop = JSON.parse(await fsp.readFile(loopFile, "utf8").catch(() => "null"));
      await fsp.rm(loopFile, { force: true });
      if (!sharedHome) await fsp.rm(home, { recursive: true, force: true });
      return loop;
    },
  };
}

const builds = [{ name: "this build", cli: path.join(root, "dist/cli.js") }];
if (baselineRoot) builds.push({ name: "baseline", cli: path.join(baselineRoot, "dist/cli.js") });

const small = await generate(100);
const big = await generate(DIRS);
try {
  // The map lists again every folder stamped within 2 s of a pass: a workspace is measured as it usually is, older.
  const newest = statSync(path.join(big, "node_modules")).ctimeMs;
  while (Date.now() - newest < 2500) await new Promise((r) => setTimeout(r, 100));
  const sizes = { small: countDirs(small), big: countDirs(big) };
  console.log(
    `node ${process.version}, ${os.cpus().length} cores; workspaces: ${sizes.small} and ${sizes.big} folders, node_modules ${IGNORED ? "ignored (.gitignore)" : "not ignored"}`,
  );
  const results = new Map();
  const record = (key, value) => results.set(key, [...(results.get(key) ?? []), ...[value].flat()]);

  // A session's first command: fresh agents, one after another, interleaved across builds and sizes.
  // Three cases: a project never seen (a fresh home: its checkpoints hash every file once); one seen
  // before (a home a session of it used: the index is seeded from that session's); and one seen
  // before, the command sent PAUSE ms after session/new, as a person types (the session's start
  // work, the first walk and the index check, runs in the background meanwhile).
  const seen = new Map();
  for (const b of PARTS.has("first") ? builds : []) {
    for (const [size, ws] of [
      ["small", small],
      ["big", big],
    ]) {
      const home = newHome();
      const a = agent(b.cli, home);
      await a.open(ws);
      await a.prompt("/bash true");
      await a.close();
      seen.set(`${b.name} ${size}`, home);
    }
  }
  for (let i = 0; i < (PARTS.has("first") ? FIRST : 0); i++) {
    for (const b of builds) {
      for (const [size, ws] of [
        ["small", small],
        ["big", big],
      ]) {
        for (const [kind, home, pause] of [
          ["new", undefined, 0],
          ["seen", seen.get(`${b.name} ${size}`), 0],
          ["typed", seen.get(`${b.name} ${size}`), PAUSE],
        ]) {
          const a = agent(b.cli, home);
          await a.open(ws);
          a.measureLoop();
          if (pause) await new Promise((r) => setTimeout(r, pause));
          record(`${b.name} first ${kind} ${size}`, await a.prompt("/bash true"));
          const loop = await a.close();
          if (loop) {
            record(`${b.name} first loop max`, loop.max);
            record(`${b.name} first held max`, loop.heldMax);
          }
        }
      }
    }
  }
  for (const home of seen.values()) await fsp.rm(home, { recursive: true, force: true });

  // A command in a session: one agent per build and size, prompts interleaved, pings meanwhile.
  const sessions = [];
  for (const b of PARTS.has("session") ? builds : []) {
    for (const [size, ws] of [
      ["small", small],
      ["big", big],
    ]) {
      const a = agent(b.cli);
      await a.open(ws);
      await a.prompt("/bash true");
      a.measureLoop();
      sessions.push({ key: `${b.name} ${size}`, a });
    }
  }
  for (let i = 0; i < ROUNDS; i++) {
    for (const s of i % 2 ? [...sessions].reverse() : sessions) {
      const stop = s.a.pinging();
      const ms = await s.a.prompt("/bash true");
      const waits = await stop();
      record(`${s.key} prompt`, ms);
      record(`${s.key} ping`, Math.max(...waits));
    }
  }
  for (const s of sessions) {
    const loop = await s.a.close();
    if (loop) {
      record(`${s.key} agent loop max`, loop.max);
      record(`${s.key} agent loop over30`, loop.over30);
      record(`${s.key} agent held max`, loop.heldMax);
      record(`${s.key} agent held over30`, loop.heldOver30);
      record(`${s.key} agent wait max`, loop.waitMax);
    }
  }

  // In process: the event loop's delay (its slowest stall) over a sequence of commands in the big
  // workspace, the first walk included, each build's RuntimeSession and sandbox in turn.
  const requires = { shell: [{ cmd: "true" }], fs: { read: ["{workspace}/**"] } };
  for (const b of PARTS.has("loop") ? builds : []) {
    const dist = (p) => import(path.join(path.dirname(b.cli), p));
    const { RuntimeSession } = await dist("runtime/session.js");
    const { createToolContext } = await dist("runtime/context.js");
    const { bubblewrapSandbox } = await dist("runtime/sandbox/bubblewrap.js");
    for (const [size, ws] of [
      ["small", small],
      ["big", big],
    ]) {
      const session = new RuntimeSession({ workspace: ws, spawnTransform: bubblewrapSandbox() });
      const shell = createToolContext({ session, toolId: "bench", callId: "c", requires, signal: new AbortController().signal }).shell;
      const delay = monitorEventLoopDelay({ resolution: 1 });
      // And from the second command on: the session started (its first walk, its lazy imports).
      const steady = monitorEventLoopDelay({ resolution: 1 });
      delay.enable();
      for (let i = 0; i < ROUNDS; i++) {
        await shell.exec("true", []);
        if (i === 0) steady.enable();
      }
      delay.disable();
      steady.disable();
      record(`${b.name} ${size} steady max`, steady.max / 1e6);
      record(`${b.name} ${size} steady p99`, steady.percentile(99) / 1e6);
      record(`${b.name} ${size} loop max`, delay.max / 1e6);
      record(`${b.name} ${size} loop p99`, delay.percentile(99) / 1e6);
      await session.close();
    }
  }

  const m = (key) => (results.has(key) ? median(results.get(key)) : NaN);
  const max = (key) => (results.has(key) ? Math.max(...results.get(key)) : NaN);
  console.log(`\n${FIRST} first commands, ${ROUNDS} prompts each; medians (ping: the slowest answer over all prompts)`);
  console.log(`| measurement | ${builds.map((b) => b.name).join(" | ")} |\n|---|${builds.map(() => "---|").join("")}`);
  const line = (label, f) => {
    const cells = builds.map((b) => f(b.name));
    if (!cells.some((c) => c.includes("NaN"))) console.log(`| ${label} | ${cells.join(" | ")} |`);
  };
  for (const [kind, label] of [
    ["new", "a project never seen"],
    ["seen", "a project seen before"],
    ["typed", `a project seen before, sent ${PAUSE} ms after session/new`],
  ]) {
    line(`first command, ${label}, ${sizes.small} folders`, (n) => `${fmt(m(`${n} first ${kind} small`))} ms`);
    line(`first command, ${label}, ${sizes.big} folders`, (n) => `${fmt(m(`${n} first ${kind} big`))} ms`);
    line(`first command, ${label}, ratio`, (n) => `${fmt(m(`${n} first ${kind} big`) / m(`${n} first ${kind} small`), 2)}×`);
  }
  line(
    "from session/new through the first command (every kind and size): the agent's slowest event-loop stall / longest time held",
    (n) => `${fmt(max(`${n} first loop max`))} / ${fmt(max(`${n} first held max`))} ms`,
  );
  line(`\`/bash true\` in a session, ${sizes.small} folders`, (n) => `${fmt(m(`${n} small prompt`))} ms`);
  line(`\`/bash true\` in a session, ${sizes.big} folders`, (n) => `${fmt(m(`${n} big prompt`))} ms`);
  line("in a session, ratio", (n) => `${fmt(m(`${n} big prompt`) / m(`${n} small prompt`), 2)}×`);
  line(`slowest ping while commands run, ${sizes.small} folders`, (n) => `${fmt(max(`${n} small ping`))} ms`);
  line(`slowest ping while commands run, ${sizes.big} folders`, (n) => `${fmt(max(`${n} big ping`))} ms`);
  line(
    `the agent's own slowest event-loop stall while commands run, ${sizes.small} / ${sizes.big} folders`,
    (n) => `${fmt(max(`${n} small agent loop max`))} / ${fmt(max(`${n} big agent loop max`))} ms`,
  );
  line(
    `times its event loop was over 30 ms late in ${ROUNDS} prompts, ${sizes.small} / ${sizes.big} folders`,
    (n) => `${max(`${n} small agent loop over30`)} / ${max(`${n} big agent loop over30`)}`,
  );
  line(
    `of the stalls, the longest time the agent's thread was held (not waiting for a core), ${sizes.small} / ${sizes.big} folders`,
    (n) => `${fmt(max(`${n} small agent held max`))} / ${fmt(max(`${n} big agent held max`))} ms`,
  );
  line(
    `times the thread was held over 30 ms, ${sizes.small} / ${sizes.big} folders`,
    (n) => `${max(`${n} small agent held over30`)} / ${max(`${n} big agent held over30`)}`,
  );
  line(
    `the longest wait for a core, ${sizes.small} / ${sizes.big} folders`,
    (n) => `${fmt(max(`${n} small agent wait max`))} / ${fmt(max(`${n} big agent wait max`))} ms`,
  );
  for (const size of ["small", "big"]) {
    line(
      `event-loop delay over ${ROUNDS} commands in process (first walk included), ${sizes[size]} folders: max / p99`,
      (n) => `${fmt(m(`${n} ${size} loop max`))} / ${fmt(m(`${n} ${size} loop p99`))} ms`,
    );
    line(
      `event-loop delay from the second command on, ${sizes[size]} folders: max / p99`,
      (n) => `${fmt(m(`${n} ${size} steady max`))} / ${fmt(m(`${n} ${size} steady p99`))} ms`,
    );
  }
} finally {
  await fsp.rm(big, { recursive: true, force: true });
  await fsp.rm(small, { recursive: true, force: true });
}
