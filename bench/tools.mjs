// Issue 2 targets: grep and glob through invoke vs raw rg, the 2000-line read window of a 1 GiB
// file, and bash printing 500 MB. Run after `npm run build`: node bench/tools.mjs
// With `--baseline DIR` (another built checkout) its grep and glob run interleaved too, in this
// process, and the search rows gain its ratio to raw rg. `--search-only` stops after them.
import * as fsp from "node:fs/promises";
import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, interleave, median, runProcess, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const dist = (p) => path.join(root, "dist", p);
const { builtinRegistry } = await import(dist("host/builtins.js"));
const { invoke } = await import(dist("host/invoke.js"));
const { RuntimeSession } = await import(dist("runtime/session.js"));
const { rgPath } = (await import("@vscode/ripgrep")).default ?? (await import("@vscode/ripgrep"));

const baselineAt = process.argv.indexOf("--baseline");
const baselineRoot = baselineAt > 0 ? path.resolve(process.argv[baselineAt + 1]) : null;
const searchOnly = process.argv.includes("--search-only");

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const base = process.env.BENCH_DIR ?? path.join(os.tmpdir(), "toolhost-bench");
const corpus = path.join(base, "corpus");
const bigFile = path.join(base, "big-1gib.txt");

// Outside any git repository, so no parent .gitignore hides the corpus from rg.
const words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split(" ");
function line(seed) {
  let s = seed;
  const out = [];
  for (let i = 0; i < 12; i++) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    out.push(words[s % words.length]);
  }
  if (seed % 997 === 0) out.push("NEEDLE_RARE");
  if (seed % 23 === 0) out.push("needle_common");
  return out.join(" ");
}

async function makeCorpus() {
  const marker = path.join(corpus, ".complete-v2");
  if (existsSync(marker)) return;
  await fsp.rm(corpus, { recursive: true, force: true });
  let seed = 1;
  const exts = [".ts", ".js", ".md", ".json", ".txt"];
  for (let d = 0; d < 200; d++) {
    const dir = path.join(corpus, `pkg${d}`, `src${d % 7}`);
    await fsp.mkdir(dir, { recursive: true });
    for (let f = 0; f < 101; f++) {
      const lines = [];
      for (let l = 0; l < 165; l++) lines.push(line(seed++));
      await fsp.writeFile(path.join(dir, `file${f}${exts[f % exts.length]}`), lines.join("\n") + "\n");
    }
  }
  await fsp.writeFile(marker, "");
}

async function makeBigFile() {
  const size = 1024 ** 3;
  const s = await fsp.stat(bigFile).catch(() => null);
  if (s && s.size >= size) return;
  const handle = await fsp.open(bigFile, "w");
  const block = Array.from({ length: 10000 }, (_, i) => line(i)).join("\n") + "\n";
  const buf = Buffer.from(block);
  for (let written = 0; written < size; written += buf.length) await handle.write(buf);
  await handle.close();
}

async function corpusStats() {
  let files = 0;
  let bytes = 0;
  for (const entry of await fsp.readdir(corpus, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) {
      files++;
      bytes += (await fsp.stat(path.join(entry.parentPath ?? entry.path, entry.name))).size;
    }
  }
  return { files, bytes };
}

const rows = [];
function report(name, ours, raw, unit = "ms", base = undefined) {
  const ratio = median(ours) / median(raw);
  const baseRatio = base ? median(base) / median(raw) : NaN;
  rows.push({ name, ours: median(ours), raw: median(raw), ratio, unit, baseRatio });
  const other = base ? `; baseline build ${fmt(median(base))} ${unit}, ratio ${fmt(baseRatio, 2)}×` : "";
  console.log(`${name}: toolhost ${fmt(median(ours))} ${unit}, baseline ${fmt(median(raw))} ${unit}, ratio ${fmt(ratio, 2)}×${other}`);
}

await fsp.mkdir(base, { recursive: true });
console.log(`corpus in ${corpus} …`);
await makeCorpus();
const stats = await corpusStats();
console.log(`corpus: ${stats.files} files, ${fmt(stats.bytes / 1e6)} MB`);

const session = new RuntimeSession({ workspace: corpus });
const registry = builtinRegistry();
const call = async (id, args) => {
  const env = await invoke(registry, id, args, { session });
  if (env.type !== "output") throw new Error(`${id} failed: ${env.error_text}`);
  return env;
};
// The baseline build's own modules (another path, so other module instances) and session.
let baseSession = null;
let baseCall = null;
if (baselineRoot) {
  const bdist = (p) => path.join(baselineRoot, "dist", p);
  const b = {
    registry: (await import(bdist("host/builtins.js"))).builtinRegistry(),
    invoke: (await import(bdist("host/invoke.js"))).invoke,
  };
  baseSession = new (await import(bdist("runtime/session.js"))).RuntimeSession({ workspace: corpus });
  baseCall = async (id, args) => {
    const env = await b.invoke(b.registry, id, args, { session: baseSession });
    if (env.type !== "output") throw new Error(`baseline ${id} failed: ${env.error_text}`);
    return env;
  };
  console.log(`baseline build: ${baselineRoot}`);
}
/** Interleaves this build, raw rg and (with --baseline) the baseline build. */
async function interleave3(rounds, ours, raw, base) {
  if (!baseCall) return { ...(await interleave(rounds, ours, raw)), c: undefined };
  const a = [];
  const b = [];
  const c = [];
  // The order rotates every round: whichever runs after a build pays that build's garbage collection.
  const runs = [() => ours().then((v) => a.push(v)), () => raw().then((v) => b.push(v)), () => base().then((v) => c.push(v))];
  for (let i = 0; i < rounds; i++) {
    for (let j = 0; j < 3; j++) await runs[(i + j) % 3]();
  }
  return { a, b, c };
}
// Warm the page cache and both code paths once.
await call("grep", { pattern: "NEEDLE_RARE" });
if (baseCall) await baseCall("grep", { pattern: "NEEDLE_RARE" });
await runProcess(rgPath, ["-n", "NEEDLE_RARE", "."], { cwd: corpus });

// Baselines are rg doing the same job: hidden files searched, .gitignore honoured without a
// git repo, .git skipped; output read by Node, as any consumer of rg must.
const SAME_SEARCH = ["--hidden", "--no-require-git", "--glob", "!.git"];
for (const [label, pattern] of [
  ["grep rare (3.4k matches)", "NEEDLE_RARE"],
  ["grep common (stops at 10k)", "needle_common"],
  ["grep regex (stops at 10k)", "lambda \\w+ omicron"],
]) {
  const { a, b, c } = await interleave3(
    ROUNDS,
    () => timed(() => call("grep", { pattern })),
    async () => (await runProcess(rgPath, [...SAME_SEARCH, "-n", pattern, "."], { cwd: corpus })).ms,
    () => timed(() => baseCall("grep", { pattern })),
  );
  report(label, a, b, "ms", c);
}
{
  // A name filter that keeps .gitignore in force (a positive rg --glob would list ignored files).
  const { a, b, c } = await interleave3(
    ROUNDS,
    () => timed(() => call("glob", { pattern: "**/*.ts" })),
    async () => (await runProcess(rgPath, [...SAME_SEARCH, "--type-add", "t:*.ts", "--type", "t", "--files"], { cwd: corpus })).ms,
    () => timed(() => baseCall("glob", { pattern: "**/*.ts" })),
  );
  report("glob **/*.ts (4k files)", a, b, "ms", c);
}
{
  const { a, b, c } = await interleave3(
    ROUNDS,
    () => timed(() => call("glob", { pattern: "pkg1*/**/file1*" })),
    async () => (await runProcess(rgPath, [...SAME_SEARCH, "--files", "."], { cwd: corpus })).ms,
    () => timed(() => baseCall("glob", { pattern: "pkg1*/**/file1*" })),
  );
  report("glob pkg1*/**/file1* (vs rg --files)", a, b, "ms", c);
}
await session.close();
await baseSession?.close();

function printTable() {
  const base = baselineRoot !== null;
  console.log(`\n| measurement | toolhost | baseline | ratio |${base ? " baseline build ratio |" : ""} memory |`);
  console.log(`|---|---|---|---|${base ? "---|" : ""}---|`);
  for (const r of rows) {
    const cells = [
      r.name,
      `${fmt(r.ours)} ms`,
      Number.isFinite(r.raw) ? `${fmt(r.raw)} ms` : "—",
      Number.isFinite(r.ratio) ? `${fmt(r.ratio, 2)}×` : "—",
      ...(base ? [Number.isFinite(r.baseRatio) ? `${fmt(r.baseRatio, 2)}×` : "—"] : []),
      r.extra ?? "",
    ];
    console.log(`| ${cells.join(" | ")} |`);
  }
}
if (searchOnly) {
  printTable();
  process.exit(0);
}

// Read window and bash output: in fresh child processes, so RSS growth is the call's own.
console.log(`1 GiB file in ${bigFile} …`);
await makeBigFile();
const probe = path.join(root, "bench", "probe.mjs");
async function probeRun(kind, arg) {
  const r = await runProcess(process.execPath, [probe, kind, arg], { capture: true, cwd: base });
  return JSON.parse(r.out);
}
const readRuns = [];
for (let i = 0; i < ROUNDS; i++) readRuns.push(await probeRun("read", bigFile));
const coldRuns = [];
for (let i = 0; i < ROUNDS; i++) coldRuns.push(await probeRun("read-cold", bigFile));
console.log(`read, first call of a fresh process (one-time compilation included): ${fmt(median(coldRuns.map((r) => r.ms)), 2)} ms`);
const readMs = median(readRuns.map((r) => r.ms));
const readRss = median(readRuns.map((r) => r.rssGrowthMB));
console.log(`read lines 1-2000 of 1 GiB: ${fmt(readMs, 2)} ms, RSS growth ${fmt(readRss)} MB`);
rows.push({ name: "read 1-2000 of 1 GiB", ours: readMs, raw: NaN, ratio: NaN, unit: "ms", extra: `RSS +${fmt(readRss)} MB` });

const BASH_BYTES = 500_000_000;
const cmd = `yes 'the quick brown fox jumps over the lazy dog 0123456789' | head -c ${BASH_BYTES}`;
const bashRuns = [];
const rawRuns = [];
for (let i = 0; i < Math.min(ROUNDS, 5); i++) {
  bashRuns.push(await probeRun("bash", cmd));
  rawRuns.push((await runProcess("bash", ["-c", `${cmd} > ${path.join(base, "raw-out.txt")}`])).ms);
}
await fsp.rm(path.join(base, "raw-out.txt"), { force: true });
report(
  "bash printing 500 MB (vs > file)",
  bashRuns.map((r) => r.ms),
  rawRuns,
);
const bashRss = median(bashRuns.map((r) => r.rssGrowthMB));
console.log(`bash 500 MB peak RSS growth: ${fmt(bashRss)} MB`);
rows[rows.length - 1].extra = `peak RSS +${fmt(bashRss)} MB`;

printTable();
