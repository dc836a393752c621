// Issue 20 class 2, nested git repositories: what the session's map of the workspace's folders
// (`runtime/sandbox/nested-git.ts`) costs, on a generated workspace of 5,000 folders and 50,000
// files holding 20 nested repositories. In process: the first walk against a bare recursive
// readdir of the same tree, and the check a command pays twice (before: bring the map current;
// after: look for plants) against a bare lstat of every folder. End to end: a sandboxed `true` in
// that workspace against one in a workspace of one file (the same build), and with `--baseline DIR`
// (another built checkout, e.g. the commit before the map) against that build in the same
// workspace. Interleaved; medians. Run after `npm run build`: node bench/nested-git.mjs
// [--baseline DIR] (BENCH_ROUNDS, default 15; BENCH_DIRS / BENCH_FILES / BENCH_REPOS, default 5000 / 50000 / 20).
import { execFileSync } from "node:child_process";
import { lstatSync, readdirSync, statSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, interleave, median, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const baselineAt = process.argv.indexOf("--baseline");
const baselineRoot = baselineAt > 0 ? path.resolve(process.argv[baselineAt + 1]) : null;
const load = (dir) => async (p) => import(path.join(dir, "dist", p));
const ours = load(root);
const { NestedGitMap } = await ours("runtime/sandbox/nested-git.js");
const { sandboxAvailable } = await ours("runtime/sandbox/bubblewrap.js");

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const DIRS = Number(process.env.BENCH_DIRS ?? 5000);
const FILES = Number(process.env.BENCH_FILES ?? 50_000);
const REPOS = Number(process.env.BENCH_REPOS ?? 20);

/** A random tree: each folder under one made before it, files spread over all; repositories in some. */
async function generate() {
  const ws = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-bench-nested-")));
  const dirs = [ws];
  let seed = 7;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let i = 1; i < DIRS; i++) {
    const dir = path.join(dirs[Math.floor(random() * dirs.length)], `d${i}`);
    await fsp.mkdir(dir);
    dirs.push(dir);
  }
  for (let i = 0; i < FILES; i++) await fsp.writeFile(path.join(dirs[i % dirs.length], `f${i}.ts`), "export {};\n");
  for (let i = 0; i < REPOS; i++) execFileSync("git", ["init", "-q", dirs[Math.floor(random() * dirs.length)]]);
  return { ws, dirs };
}

function rawWalk(dir) {
  let n = 1;
  for (const d of readdirSync(dir, { withFileTypes: true })) if (d.isDirectory() && d.name !== ".git") n += rawWalk(path.join(dir, d.name));
  return n;
}

function rawStat(dirs) {
  let sum = 0;
  for (const d of dirs) sum += lstatSync(d).ctimeMs;
  return sum;
}

const small = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-bench-nested-small-")));
await fsp.writeFile(path.join(small, "a.ts"), "export {};\n");
const { ws, dirs } = await generate();
// The map lists again every folder stamped within 2 s of its pass (the kernel's clock is coarse):
// a workspace is measured as it usually is, older than that.
const made = Math.max(...dirs.map((d) => statSync(d).ctimeMs));
while (Date.now() - made < 2500) await new Promise((r) => setTimeout(r, 100));
const walked = rawWalk(ws);
console.log(`workspace: ${walked} folders (${REPOS} nested repositories, their .git not walked), ${FILES} files`);

const rows = [];
function row(name, a, b, unit = "ms") {
  rows.push({ name, a: median(a), b: median(b), unit });
}

try {
  const walk = await interleave(
    ROUNDS,
    () => timed(() => new NestedGitMap().scan([ws])),
    () => timed(() => rawWalk(ws)),
  );
  row("first walk (once per session), against a bare readdir walk", walk.a, walk.b);
  const map = new NestedGitMap();
  map.scan([ws]);
  const check = await interleave(
    ROUNDS,
    () => timed(() => map.scan([ws]).changes()),
    () => timed(() => (rawStat(dirs), rawStat(dirs))),
  );
  row("per command: the scan before and the check after, against two bare lstat passes", check.a, check.b);

  const status = await sandboxAvailable();
  if (!status.available) {
    console.log(`end to end skipped: ${status.reason}`);
  } else {
    const requires = { shell: [{ cmd: "true" }], fs: { read: ["{workspace}/**"] } };
    const shellFor = async (modules, workspace) => {
      const { RuntimeSession } = await modules("runtime/session.js");
      const { createToolContext } = await modules("runtime/context.js");
      const { bubblewrapSandbox } = await modules("runtime/sandbox/bubblewrap.js");
      const session = new RuntimeSession({ workspace, spawnTransform: bubblewrapSandbox() });
      const shell = createToolContext({ session, toolId: "bench", callId: "c", requires, signal: new AbortController().signal }).shell;
      await shell.exec("true", []); // the first walk, execa's import, the page cache for bwrap
      return { session, run: () => shell.exec("true", []) };
    };
    const big = await shellFor(ours, ws);
    const tiny = await shellFor(ours, small);
    const e2e = await interleave(
      ROUNDS,
      () => timed(big.run),
      () => timed(tiny.run),
    );
    row(`sandboxed \`true\` in ${walked} folders, against in 1 folder`, e2e.a, e2e.b);
    if (baselineRoot) {
      const base = await shellFor(load(baselineRoot), ws);
      const ab = await interleave(
        ROUNDS,
        () => timed(big.run),
        () => timed(base.run),
      );
      row(`sandboxed \`true\` in ${walked} folders, against the baseline build`, ab.a, ab.b);
      await base.session.close();
    }
    await big.session.close();
    await tiny.session.close();
  }
  console.log("\n| measurement | this | baseline | ratio | cost |\n|---|---|---|---|---|");
  for (const r of rows)
    console.log(`| ${r.name} | ${fmt(r.a)} ${r.unit} | ${fmt(r.b)} ${r.unit} | ${fmt(r.a / r.b, 2)}× | +${fmt(r.a - r.b)} ${r.unit} |`);
} finally {
  await fsp.rm(ws, { recursive: true, force: true });
  await fsp.rm(small, { recursive: true, force: true });
}
