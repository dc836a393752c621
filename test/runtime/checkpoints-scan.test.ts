import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Checkpoints } from "../../src/runtime/checkpoints/checkpoints.js";
import { openCheckpoints, type CheckpointsOptions } from "../../src/runtime/checkpoints/repository.js";
import { useCleanup } from "./cleanup.js";

// Issue 33: a snapshot lists what changed through the index's untracked cache (git skips folders
// whose stat data did not move), and a new session's index is seeded from the project's newest.
// A command can set a folder's mtime back (`touch -d`); git's check of a folder includes its ctime,
// which nothing but the clock sets, so a file created there is still caught. The control runs git
// on a copy of the same index with ctime not trusted: the trick then hides the file.

const { handles, folder } = useCleanup<Checkpoints>();

let sessionCount = 0;
async function open(root: string, options: Partial<CheckpointsOptions> = {}): Promise<Checkpoints> {
  const opened = await openCheckpoints({ root, project: "proj", session: `scan${++sessionCount}`, home: await folder(), ...options });
  if (!opened.available) throw new Error(opened.reason);
  handles.push(opened.checkpoints);
  return opened.checkpoints;
}

const PAST = new Date("2020-01-01T00:00:00Z");

/** Every folder under `root` (and itself), its mtime set to PAST, as `touch -d` would. */
async function setFoldersBack(root: string): Promise<void> {
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true })) if (entry.isDirectory()) await walk(path.join(dir, entry.name));
    await fsp.utimes(dir, PAST, PAST);
  };
  await walk(root);
}

/** Resolves once the clock is in a later whole second than when called. */
async function nextSecond(): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  while (Math.floor(Date.now() / 1000) <= now) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** A tree of 200 folders, the last four levels deep. */
function largeTree(): Record<string, string> {
  const files: Record<string, string> = { "deep/a/b/c/keep.txt": "keep\n", "deep/a/b/c/old.txt": "old\n", "deep/a/b/c/move.txt": "move\n" };
  for (let i = 0; i < 200; i++) files[`src/p${Math.floor(i / 20)}/m${i % 20}/f.js`] = `export const v = ${i};\n`;
  return files;
}

describe("the snapshot's scan", () => {
  it("catches a deep file created, modified, deleted and renamed under a large tree, though every folder's mtime is set back", async () => {
    const root = await folder(largeTree());
    const ck = await open(root);
    await setFoldersBack(root);
    const first = await ck.snapshot("first");
    expect((await ck.snapshot("again")).unchanged).toBe(true);
    // git keeps a folder's times in whole seconds: a folder changed twice within one second, its mtime
    // set back, looks the same (shadow-git.ts); the changes below come in a later second than the scan.
    await nextSecond();

    const deep = path.join(root, "deep/a/b/c");
    await fsp.writeFile(path.join(deep, "made.txt"), "made\n");
    await fsp.mkdir(path.join(deep, "newdir/x"), { recursive: true });
    await fsp.writeFile(path.join(deep, "newdir/x/inner.txt"), "inner\n");
    await fsp.writeFile(path.join(deep, "keep.txt"), "KEPT\n");
    await fsp.rm(path.join(deep, "old.txt"));
    await fsp.rename(path.join(deep, "move.txt"), path.join(deep, "moved.txt"));
    await setFoldersBack(root);

    // Control: git trusting mtime alone (a copy of the session's index, not written) misses the new files.
    const index = path.join(ck.gitDir, "toolhost", "index", ck.session);
    const copy = `${index}-control`;
    await fsp.copyFile(index, copy);
    const env = { PATH: process.env.PATH ?? "", GIT_DIR: ck.gitDir, GIT_WORK_TREE: root, GIT_INDEX_FILE: copy, GIT_OPTIONAL_LOCKS: "0" };
    const untracked = (trustctime: boolean) =>
      execFileSync(
        "git",
        [
          ...[
            "core.untrackedCache=true",
            "core.excludesFile=/dev/null",
            "status.showUntrackedFiles=all",
            `core.trustctime=${trustctime}`,
          ].flatMap((setting) => ["-c", setting]),
          ...["status", "--porcelain", "-uall"],
        ],
        {
          cwd: root,
          env: { ...env, GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_GLOBAL: "/dev/null" },
          encoding: "utf8",
        },
      )
        .split("\n")
        .filter((line) => line.startsWith("??"));
    expect(untracked(false)).toEqual([]);
    await fsp.copyFile(index, copy);
    expect(untracked(true)).toHaveLength(3);
    await fsp.rm(copy);

    const second = await ck.snapshot("second");
    const changes = (await ck.changes(first.id, second.id)).sort((a, b) => (a.path < b.path ? -1 : 1));
    expect(changes).toEqual([
      { path: "deep/a/b/c/keep.txt", action: "modify" },
      { path: "deep/a/b/c/made.txt", action: "create" },
      { path: "deep/a/b/c/move.txt", action: "delete" },
      { path: "deep/a/b/c/moved.txt", action: "create" },
      { path: "deep/a/b/c/newdir/x/inner.txt", action: "create" },
      { path: "deep/a/b/c/old.txt", action: "delete" },
    ]);
    // And a restore takes them all back.
    const back = await ck.restore(first.id, { knownId: second.id });
    expect(back.conflicts).toEqual([]);
    expect(await ck.changes(first.id, "workspace")).toEqual([]);
  });

  it("a new session's index starts from the project's newest: its first snapshot is the workspace as it is now", async () => {
    const root = await folder(largeTree());
    const home = await folder();
    const one = await open(root, { home });
    const before = await one.snapshot("one");
    await fsp.writeFile(path.join(root, "deep/a/b/c/keep.txt"), "changed\n");
    await fsp.writeFile(path.join(root, "src/p0/m0/new.js"), "new\n");
    await fsp.rm(path.join(root, "deep/a/b/c/old.txt"));

    const two = await open(root, { home });
    const seeded = path.join(two.gitDir, "toolhost", "index", two.session);
    expect((await fsp.lstat(seeded)).isFile()).toBe(true);
    const first = await two.snapshot("two");
    expect((await one.changes(before.id, first.id)).sort((a, b) => (a.path < b.path ? -1 : 1))).toEqual([
      { path: "deep/a/b/c/keep.txt", action: "modify" },
      { path: "deep/a/b/c/old.txt", action: "delete" },
      { path: "src/p0/m0/new.js", action: "create" },
    ]);
    // The seeded index agrees with a fresh one (another home: nothing to seed from).
    const fresh = await open(root);
    expect((await fresh.snapshot("fresh")).id).not.toBe(first.id); // a commit of its own…
    expect(await fresh.changes((await fresh.snapshot("again")).id, "workspace")).toEqual([]);
    const tree = (ck: Checkpoints, id: string) =>
      execFileSync("git", ["--git-dir", ck.gitDir, "rev-parse", `${id}^{tree}`], { encoding: "utf8" });
    expect(tree(two, first.id)).toBe(tree(fresh, (await fresh.snapshot("again")).id));
  });
});
