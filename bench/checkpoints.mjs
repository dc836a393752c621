// Issue 23 §2/§5 targets on a generated 2,000-file workspace: a checkpoint after a turn that
// changed 10 files < 150 ms, a restore of those changes < 1 s, disk per checkpoint in proportion
// to what changed. Each round changes 10 files (6 edited, 2 created, 2 deleted), snapshots, and
// restores the snapshot before the change; medians over the rounds. Beside them, the floor: one
// `git --version` spawned the same way (a snapshot is four or five git processes).
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
for (let i = 0; i < FILES; i++) {
  const rel = `pkg${String(Math.floor(i / 20)).padStart(3, "0")}/src/mod${i % 20}.ts`;
  mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
  writeFileSync(path.join(ws, rel), text(200 + ((i * 7919) % 16_000)));
  names.push(rel);
}
writeFileSync(path.join(ws, ".gitignore"), "build/\n");
mkdirSync(path.join(ws, "build"));
for (let i = 0; i < 50; i++) writeFileSync(path.join(ws, "build", `out${i}.js`), text(4000));

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
let before = first.id;
for (let round = 0; round < ROUNDS; round++) {
  // The turn: 6 edits, 2 new files (one in a new folder), 2 deletions, spread over the tree.
  const pick = (k) => names[(round * 97 + k * 211) % names.length];
  let bytes = 0;
  for (let k = 0; k < 6; k++) {
    const content = text(2000);
    writeFileSync(path.join(ws, pick(k)), content);
    bytes += content.length;
  }
  for (let k = 0; k < 2; k++) {
    const rel = `new${round}/created${k}.ts`;
    mkdirSync(path.dirname(path.join(ws, rel)), { recursive: true });
    const content = text(1500);
    writeFileSync(path.join(ws, rel), content);
    bytes += content.length;
  }
  for (let k = 6; k < 8; k++) rmSync(path.join(ws, pick(k)));
  changedBytes.push(bytes);

  const diskBefore = await ck.diskBytes();
  const after = await ck.snapshot(`turn ${round}`);
  snapshotMs.push(after.ms);
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
  unchangedSnapshotMs: r(median(unchangedMs)),
  snapshotAfter10FilesMs: { median: r(median(snapshotMs)), max: r(Math.max(...snapshotMs)), target: 150 },
  planMs: r(median(planMs)),
  restore10FilesMs: { median: r(median(restoreMs)), max: r(Math.max(...restoreMs)), target: 1000 },
  gitSpawnFloorMs: r(median(gitFloorMs)),
  disk: {
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
