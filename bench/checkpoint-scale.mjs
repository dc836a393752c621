// Issue 33 part 2: the checkpoints cost what changed, not the size of the workspace. Two generated
// JS projects, 100 folders and 30,000 folders (a third in src/, the rest in an ignored
// node_modules/, two small files each), in temp folders removed at the end.
// 1. A prompt's checkpoint listing, side by side on the same shadow index after each change (3
//    files: one edited, one created in a new deep folder, one deleted): before, `ls-files -m -d -o`
//    (the listing up to issue 33, which reads every folder); after, `git status` with the index's
//    untracked cache (workspace-tree.ts); then the whole snapshot as a prompt takes it. Medians.
// 2. A new session's first snapshot: a fresh index (every file hashed) vs one seeded from the
//    project's newest index (repository.ts).
// 3. A real ACP session (dist/cli.js over stdio) in each project: `/bash sleep 30`, then
//    `session/cancel` once the command runs; the time until the prompt is answered `cancelled`.
// Run after `npm run build`: node bench/checkpoint-scale.mjs  (BENCH_ROUNDS, BENCH_FOLDERS)
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median, onJsonLines } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const { openCheckpoints } = await import(path.join(root, "dist", "runtime", "checkpoints", "repository.js"));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const SIZES = [100, Number(process.env.BENCH_FOLDERS ?? 30_000)];
const temps = [];
const temp = (name) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), `toolhost-bench-scale-${name}-`));
  temps.push(dir);
  return dir;
};

/** A JS project of `folders` folders: a third under src/, the rest under an ignored node_modules/. */
function project(folders) {
  const ws = temp(`ws${folders}`);
  writeFileSync(path.join(ws, ".gitignore"), "node_modules/\n");
  writeFileSync(path.join(ws, "package.json"), '{ "name": "bench" }\n');
  const src = Math.ceil(folders / 3);
  const deep = [];
  for (let i = 0; i < folders; i++) {
    const j = i - src;
    const dir =
      i < src
        ? path.join(ws, "src", `p${Math.floor(i / 100)}`, `m${i % 100}`)
        : path.join(ws, "node_modules", `pkg${Math.floor(j / 50)}`, `d${j % 50}`);
    mkdirSync(dir, { recursive: true });
    for (let k = 0; k < 2; k++) writeFileSync(path.join(dir, `f${k}.js`), `export const v${i}_${k} = ${i};\n`);
    if (i < src) deep.push(path.relative(ws, dir));
  }
  return { ws, deep };
}

const timedMs = async (fn) => {
  const start = performance.now();
  const value = await fn();
  return { ms: performance.now() - start, value };
};

async function checkpointCost(folders) {
  const { ws, deep } = project(folders);
  const home = temp(`home${folders}`);
  const open = async (session) => {
    const opened = await openCheckpoints({ root: ws, project: "bench", session, home });
    if (!opened.available) throw new Error(opened.reason);
    return opened.checkpoints;
  };
  const ck = await open("first");
  const fresh = await timedMs(() => ck.snapshot("first"));
  const git = ck.git;
  const rows = { before: [], after: [], snapshot: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const pick = (k) => deep[(round * 37 + k * 101) % deep.length];
    writeFileSync(path.join(ws, pick(0), "f0.js"), `export const edited = ${round};\n`);
    mkdirSync(path.join(ws, pick(1), `new${round}`, "x", "y"), { recursive: true });
    writeFileSync(path.join(ws, pick(1), `new${round}`, "x", "y", "made.js"), "made\n");
    rmSync(path.join(ws, pick(2), "f1.js"), { force: true });
    const order = round % 2 ? ["after", "before"] : ["before", "after"];
    for (const which of order) {
      const args =
        which === "before"
          ? ["ls-files", "-z", "-m", "-d", "-o", "--exclude-standard"]
          : ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=all"];
      rows[which].push((await timedMs(() => git.run(args))).ms);
    }
    const taken = await ck.snapshot(`turn ${round}`);
    if (taken.unchanged) throw new Error(`round ${round}: the change was not seen`);
    rows.snapshot.push(taken.ms);
  }
  const seeded = await open("second");
  const seededFirst = await timedMs(() => seeded.snapshot("first"));
  await ck.close();
  await seeded.close();
  return {
    folders,
    listingBeforeMs: median(rows.before),
    listingAfterMs: median(rows.after),
    snapshotMs: median(rows.snapshot),
    firstFreshMs: fresh.ms,
    firstSeededMs: seededFirst.ms,
    ws,
  };
}

/** A real ACP session: `/bash sleep 30`, cancelled once it runs; ms from session/cancel to the `cancelled` answer. */
function cancelRounds(ws, rounds) {
  return new Promise((resolve, reject) => {
    const home = temp("acp-home");
    const child = spawn(process.execPath, [path.join(root, "dist", "cli.js")], {
      stdio: ["pipe", "pipe", "inherit"],
      env: { ...process.env, TOOLHOST_HOME: home },
    });
    const send = (msg) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...msg })}\n`);
    let sessionId;
    let cancelledAt = 0;
    let round = 0;
    const times = [];
    const next = () => {
      if (round++ >= rounds) return child.stdin.end();
      cancelledAt = 0;
      send({ id: 100 + round, method: "session/prompt", params: { sessionId, prompt: [{ type: "text", text: "/bash sleep 30" }] } });
    };
    child.on("error", reject);
    child.on("close", () => resolve(times));
    onJsonLines(child.stdout, (msg) => {
      if (msg.id === 1) send({ id: 2, method: "session/new", params: { cwd: ws, mcpServers: [] } });
      else if (msg.id === 2) {
        sessionId = msg.result.sessionId;
        send({ id: 3, method: "session/set_mode", params: { sessionId, modeId: "full" } });
      } else if (msg.id === 3) next();
      else if (msg.method === "session/update" && !cancelledAt) {
        const u = msg.params.update;
        if (u.sessionUpdate === "tool_call_update" && u.status === "in_progress") {
          cancelledAt = performance.now();
          send({ method: "session/cancel", params: { sessionId } });
        }
      } else if (msg.id > 100 && msg.result) {
        if (msg.result.stopReason !== "cancelled") return reject(new Error(`answered ${msg.result.stopReason}`));
        times.push(performance.now() - cancelledAt);
        next();
      } else if (msg.id && msg.error) reject(new Error(JSON.stringify(msg.error)));
    });
    send({ id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
  });
}

try {
  const results = [];
  for (const folders of SIZES) results.push(await checkpointCost(folders));
  const cancels = [];
  for (const r of results) cancels.push(median(await cancelRounds(r.ws, ROUNDS)));
  const [small, large] = results;
  console.log(
    `${ROUNDS} rounds; load average ${os
      .loadavg()
      .map((l) => fmt(l))
      .join(" ")}`,
  );
  console.log(`| measurement | ${small.folders} folders | ${large.folders} folders | ratio |\n|---|---|---|---|`);
  const row = (name, key) => console.log(`| ${name} | ${fmt(small[key])} ms | ${fmt(large[key])} ms | ${fmt(large[key] / small[key])}× |`);
  row("listing, before: `ls-files -m -d -o`", "listingBeforeMs");
  row("listing, after: `status` with the untracked cache", "listingAfterMs");
  row("a prompt's snapshot (3 files changed)", "snapshotMs");
  row("a new session's first snapshot, fresh index", "firstFreshMs");
  row("a new session's first snapshot, seeded index", "firstSeededMs");
  console.log(
    `| after / before listing | ${fmt(small.listingAfterMs / small.listingBeforeMs, 2)}× | ${fmt(large.listingAfterMs / large.listingBeforeMs, 2)}× | |`,
  );
  console.log(`| session/cancel → answered \`cancelled\` (/bash sleep) | ${fmt(cancels[0])} ms | ${fmt(cancels[1])} ms | target ≤ 60 ms |`);
} finally {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
}
