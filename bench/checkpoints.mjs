// Issue 23 §2/§5 targets on a generated 2,000-file workspace: a checkpoint after a turn that
// changed 10 files < 150 ms, a restore of those changes < 1 s, disk per checkpoint in proportion
// to what changed. Each round changes 10 files (6 edited, 2 created, 2 deleted), snapshots, and
// restores the snapshot before the change; medians over the rounds. Beside them, the baseline: the
// same change committed by plain git in a copy of the workspace (`git add -A && git commit`, the
// user's own repository would pay that), and the floor: one `git --version`.
// Run after `npm run build`: node bench/checkpoints.mjs  (BENCH_ROUNDS, BENCH_FILES)
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const { openCheckpoints } = await import(path.join(root, "dist", "runtime", "checkpoints", "checkpoints.js"));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const FILES = Number(process.env.BENCH_FILES ?? 2000);

const home = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-ckpt-home-"));
const ws = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-ckpt-ws-"));
const base = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-ckpt-base-"));
const gitEnv = {
  ...process.env,
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_AUTHOR_NAME: "b",
  GIT_AUTHOR_EMAIL: "b@b",
  GIT_COMMITTER_NAME: "b",
  GIT_COMMITTER_EMAIL: "b@b",
};
const baseGit = (...args) => {
  const result = spawnSync("git", ["-C", base, ...args], { env: gitEnv, stdio: ["ignore", "ignore", "inherit"] });
  if (result.status !== 0) throw new Error(`git ${args.join(" ")} failed`);
};
/** Writes a file in the workspace and in the baseline's copy. */
const put = (rel, content) => {
  for (const dir of [ws, base]) {
    mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    writeFileSync(path.join(dir, rel), content);
  }
};

/** Source-like text of about `bytes` bytes. */
const text = (bytes) => {
  const words =
    randomBytes(Math.ceil(bytes / 2))
      .toString("base64")
      .match(/.{1,9}/g) ?? [];
  let out = "";
  for (let i = 0; out.length < bytes; i++) out += i % 8 === 7 ? `${words[i % words.length]};\n` : `${words[i % words.length]} `;
  return out;
};

// 100 folders of 20 files, 200 B – 16 kB (most small, a few larger), a .gitignore'd build folder.
const names = [];
let workspaceBytes = 0;
for (let i = 0; i < FILES; i++) {
  const rel = `pkg${String(Math.floor(i / 20)).padStart(3, "0")}/src/mod${i % 20}.ts`;
  const content = text(200 + ((i * 7919) % 16_000));
  put(rel, content);
  workspaceBytes += content.length;
  names.push(rel);
}
put(".gitignore", "build/\n");
for (let i = 0; i < 50; i++) put(`build/out${i}.js`, text(4000));
baseGit("init", "-q");
const baselineFirstMs = await timed(async () => (baseGit("add", "-A"), baseGit("commit", "-q", "-m", "first")));

const opened = await openCheckpoints({ root: ws, project: "bench", session: "bench-session", home });
if (!opened.available) throw new Error(opened.reason);
const ck = opened.checkpoints;

const firstStart = performance.now();
const first = await ck.snapshot("first");
const firstMs = performance.now() - firstStart;
const firstDisk = await ck.diskBytes();
const unchangedMs = [];
for (let i = 0; i < 5; i++) unchangedMs.push((await ck.snapshot("unchanged")).ms);

const snapshotMs = [];
const restoreMs = [];
const planMs = [];
const diskPerCheckpoint = [];
const changedBytes = [];
const gitFloorMs = [];
const baselineMs = [];
let before = first.id;
for (let round = 0; round < ROUNDS; round++) {
  // The turn: 6 edits, 2 new files (one in a new folder), 2 deletions, spread over the tree.
  const pick = (k) => names[(round * 97 + k * 211) % names.length];
  let bytes = 0;
  for (let k = 0; k < 6; k++) {
    const content = text(2000);
    put(pick(k), content);
    bytes += content.length;
  }
  for (let k = 0; k < 2; k++) {
    const content = text(1500);
    put(`new${round}/created${k}.ts`, content);
    bytes += content.length;
  }
  for (let k = 6; k < 8; k++) for (const dir of [ws, base]) rmSync(path.join(dir, pick(k)), { force: true });
  changedBytes.push(bytes);
  // Baseline and ours in alternating order (whichever runs second finds the page cache warm).
  if (round % 2) baselineMs.push(await timed(async () => (baseGit("add", "-A"), baseGit("commit", "-q", "-m", `turn ${round}`))));

  const diskBefore = await ck.diskBytes();
  const after = await ck.snapshot(`turn ${round}`);
  snapshotMs.push(after.ms);
  if (!(round % 2)) baselineMs.push(await timed(async () => (baseGit("add", "-A"), baseGit("commit", "-q", "-m", `turn ${round}`))));
  diskPerCheckpoint.push((await ck.diskBytes()) - diskBefore);

  planMs.push(await timed(() => ck.plan(before, { knownId: after.id })));
  let result;
  restoreMs.push(await timed(async () => (result = await ck.restore(before, { knownId: after.id }))));
  if (result.files.length !== 10 || result.conflicts.length || result.failed.length)
    throw new Error(`round ${round}: ${JSON.stringify(result)}`);
  const left = await ck.changes(before, "workspace");
  if (left.length) throw new Error(`round ${round}: the restore left ${JSON.stringify(left)}`);
  gitFloorMs.push(await timed(async () => spawnSync("git", ["--version"])));
}

const loose = await ck.diskBytes();
const packStart = performance.now();
const packed = await ck.pack();
const packMs = performance.now() - packStart;
await ck.close();

const r = (n) => Math.round(n * 10) / 10;
const result = {
  files: FILES,
  rounds: ROUNDS,
  firstSnapshotMs: r(firstMs),
  baselineFirstAddCommitMs: r(baselineFirstMs),
  unchangedSnapshotMs: r(median(unchangedMs)),
  snapshotAfter10FilesMs: { median: r(median(snapshotMs)), max: r(Math.max(...snapshotMs)), target: 150 },
  baselineGitAddCommitMs: r(median(baselineMs)),
  snapshotVsBaseline: r(median(snapshotMs) / median(baselineMs)),
  planMs: r(median(planMs)),
  restore10FilesMs: { median: r(median(restoreMs)), max: r(Math.max(...restoreMs)), target: 1000 },
  gitSpawnFloorMs: r(median(gitFloorMs)),
  disk: {
    workspaceBytes,
    firstSnapshotBytes: firstDisk,
    perCheckpointLooseBytes: median(diskPerCheckpoint),
    changedBytesPerTurn: median(changedBytes),
    looseTotalBytes: loose,
    packedTotalBytes: packed.bytes,
    packMs: r(packMs),
  },
};
console.log(JSON.stringify(result, null, 2));
await rm(home, { recursive: true, force: true });
await rm(ws, { recursive: true, force: true });
await rm(base, { recursive: true, force: true });
