// Issue 23 §2/§5 targets on a generated 2,000-file workspace: a checkpoint after a turn that
// changed 10 files < 150 ms, a restore of those changes < 1 s, disk per checkpoint in proportion
// to what changed. Each round changes 10 files (6 edited, 2 created, 2 deleted), snapshots, and
// restores the snapshot before the change; medians over the rounds. Beside them, the baseline: the
// same change committed by plain git in a copy of the workspace (`git add -A && git commit`, the
// user's own repository would pay that), and the floor: one `git --version`.
// Then the rewind of issue 23 §3 on the same workspace: a recorded session (its real file, its
// checkpoint entries, 20 history messages a turn) of three prompts that change 10 files each, then
// `SessionRewind.rewind(prompt 2, "both")` (files restored, the branch entry appended, the history
// rebuilt from the file), checked to leave the workspace as it was before prompt 2; medians.
// Then a session with a further root (additionalDirectories): a second generated workspace of the
// same size; the checkpoint of a turn as the session takes it (every root, side by side) for a
// session of one root and one of two on the same workspace, interleaved: 10 files changed in the
// first root only, then 10 in each; medians.
// Run after `npm run build`: node bench/checkpoints.mjs  (BENCH_ROUNDS, BENCH_FILES, BENCH_REWINDS)
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { median, timed } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const { openCheckpoints } = await import(path.join(root, "dist", "runtime", "checkpoints", "repository.js"));
const { openWorkspaceCheckpoints, WorkspaceCheckpoints } = await import(path.join(root, "dist", "runtime", "checkpoints", "roots.js"));
const { SessionRewind } = await import(path.join(root, "dist", "agent", "rewind", "rewinder.js"));
const { SessionRecorder } = await import(path.join(root, "dist", "agent", "record", "session-recorder.js"));
const { SessionStore } = await import(path.join(root, "dist", "agent", "record", "session-store.js"));
const REWINDS = Number(process.env.BENCH_REWINDS ?? 7);
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

// The rewind of both: three turns of 10 changed files each, recorded as a session records them, then back to before the second.
const store = new SessionStore(home);
const recorder = new SessionRecorder(store.writer({ id: "bench-session", cwd: ws }));
const rewinder = new SessionRewind({
  recorder,
  checkpoints: async () => ({ checkpoints: new WorkspaceCheckpoints([{ root: ws, real: ck.root, checkpoints: ck }]) }),
  moved: () => {},
});
const rewindMs = [];
const rewindDryMs = [];
const rewoundFiles = [];
let turnCount = 0;
for (let round = 0; round < REWINDS; round++) {
  const points = [];
  for (let turn = 0; turn < 3; turn++) {
    const n = ++turnCount;
    const { promptId } = recorder.turnStarted(`turn ${n}: change ten files`);
    points.push(promptId);
    const before = await ck.snapshot(`before ${n}`);
    recorder.append({ type: "checkpoint", promptId, before: before.id });
    const pick = (k) => names[(n * 131 + k * 173) % names.length];
    for (let k = 0; k < 6; k++) put(pick(k), text(2000));
    for (let k = 0; k < 2; k++) put(`turn${n}/created${k}.ts`, text(1500));
    for (let k = 6; k < 8; k++) rmSync(path.join(ws, pick(k)), { force: true });
    for (let m = 0; m < 10; m++) {
      recorder.message({ role: "assistant", content: [{ type: "text", text: text(400) }] });
      recorder.message({ role: "user", content: [{ type: "text", text: text(200) }] });
    }
    const after = await ck.snapshot(`after ${n}`);
    recorder.append({ type: "checkpoint", promptId, before: before.id, after: after.id, files: await ck.changes(before.id, after.id) });
    recorder.turnEnded("end_turn");
  }
  const target = points[1];
  rewindDryMs.push(await timed(() => rewinder.rewind(target, "both", { dryRun: true })));
  let outcome;
  rewindMs.push(await timed(async () => (outcome = await rewinder.rewind(target, "both"))));
  if (!outcome.applied || outcome.conflicts.length || outcome.failed.length) throw new Error(`rewind ${round}: ${JSON.stringify(outcome)}`);
  rewoundFiles.push(outcome.files.length);
}
const sessionFileBytes = statSync(recorder.file).size;
recorder.close();
await ck.close();

// A further root: a second workspace of the same size; a session of one root and one of two roots.
const ws2 = mkdtempSync(path.join(os.tmpdir(), "toolhost-bench-ckpt-ws2-"));
const names2 = [];
for (let i = 0; i < FILES; i++) {
  const rel = `lib${String(Math.floor(i / 20)).padStart(3, "0")}/mod${i % 20}.ts`;
  mkdirSync(path.dirname(path.join(ws2, rel)), { recursive: true });
  writeFileSync(path.join(ws2, rel), text(200 + ((i * 7919) % 16_000)));
  names2.push(rel);
}
const openRoots = async (roots, session) => {
  const o = await openWorkspaceCheckpoints({ roots, project: "bench", session, home });
  if (!o.available) throw new Error(o.reason);
  return o.checkpoints;
};
const oneRoot = await openRoots([ws], "bench-one-root");
const twoRoots = await openRoots([ws, ws2], "bench-two-roots");
const firstTwoStart = performance.now();
await Promise.all([oneRoot.snapshot("first"), twoRoots.snapshot("first")]);
const firstTwoMs = performance.now() - firstTwoStart;
/** The turn's change in one root: 6 edits, 2 new files, 2 deletions. */
let changeCount = 0;
const change = (dir, list) => {
  const n = ++changeCount;
  const pick = (k) => list[(n * 131 + k * 173) % list.length];
  for (let k = 0; k < 6; k++) writeFileSync(path.join(dir, pick(k)), text(2000));
  mkdirSync(path.join(dir, `roots${n}`), { recursive: true });
  for (let k = 0; k < 2; k++) writeFileSync(path.join(dir, `roots${n}/created${k}.ts`), text(1500));
  for (let k = 6; k < 8; k++) rmSync(path.join(dir, pick(k)), { force: true });
};
/** A session's checkpoint of all its roots; checked that each root took its snapshot. */
const checkpoint = async (handle, label) => {
  const start = performance.now();
  const taken = await handle.snapshot(label);
  const ms = performance.now() - start;
  if (taken.some((t) => !t.snapshot)) throw new Error(`${label}: ${taken.map((t) => String(t.error)).join("; ")}`);
  return ms;
};
const primaryOnly = { one: [], two: [] };
const eachRoot = { one: [], two: [] };
/** Both sessions' checkpoints, in an order that swaps every round (the second finds the page cache warm). */
const both = async (round, label, into) => {
  if (round % 2) into.two.push(await checkpoint(twoRoots, `two ${label}`));
  into.one.push(await checkpoint(oneRoot, `one ${label}`));
  if (!(round % 2)) into.two.push(await checkpoint(twoRoots, `two ${label}`));
};
for (let round = 0; round < ROUNDS; round++) {
  // 10 files changed in the first root only (the second root untouched, as a turn that does not go there).
  change(ws, names);
  await both(round, `${round}`, primaryOnly);
  // 10 files changed in each root (the one-root session sees the first root's).
  change(ws, names);
  change(ws2, names2);
  await both(round, `${round} b`, eachRoot);
}
await oneRoot.close();
await twoRoots.close();

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
  rewindBothMs: { median: r(median(rewindMs)), max: r(Math.max(...rewindMs)), target: 1000, filesPerRewind: median(rewoundFiles) },
  rewindDryRunMs: r(median(rewindDryMs)),
  sessionFileBytesAfterRewinds: sessionFileBytes,
  furtherRoot: {
    firstSnapshotsBothSessionsMs: r(firstTwoMs),
    changedInFirstRootOnly: {
      oneRootMs: r(median(primaryOnly.one)),
      twoRootsMs: r(median(primaryOnly.two)),
      ratio: r(median(primaryOnly.two) / median(primaryOnly.one)),
    },
    changedInEachRoot: {
      oneRootMs: r(median(eachRoot.one)),
      twoRootsMs: r(median(eachRoot.two)),
      ratio: r(median(eachRoot.two) / median(eachRoot.one)),
    },
  },
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
await rm(ws2, { recursive: true, force: true });
await rm(base, { recursive: true, force: true });
