import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { Checkpoints } from "../../src/runtime/checkpoints/checkpoints.js";
import type { ChangeFeed } from "../../src/runtime/checkpoints/change-feed.js";
import { openCheckpoints } from "../../src/runtime/checkpoints/repository.js";
import { ShadowGit } from "../../src/runtime/checkpoints/shadow-git.js";
import { FolderWatch } from "../../src/runtime/sandbox/folder-watch.js";
import { NestedGitWorker } from "../../src/runtime/sandbox/nested-git-client.js";
import { useCleanup } from "./cleanup.js";

// Issue 33 part 2: a snapshot costs what changed. The sandbox's watch of the workspace's folders
// (in the map's worker) tells the checkpoints which paths changed; git, through its fsmonitor hook,
// looks at those alone, and when nothing changed no git runs. Judged by effect: after each kind of
// change, the snapshot's tree holds exactly the files on disk, byte for byte. The control hands the
// same checkpoints a feed that says "nothing changed" after a change: the snapshot then misses it,
// so the comparison sees a miss. Run `npm run build` first (the worker is the built one).

const { handles, folder } = useCleanup<Checkpoints>();
const workers: NestedGitWorker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close()));
  vi.restoreAllMocks();
});

async function open(root: string, changes: ChangeFeed): Promise<Checkpoints> {
  const opened = await openCheckpoints({ root, project: "proj", session: "feed1", home: await folder(), changes });
  if (!opened.available) throw new Error(opened.reason);
  handles.push(opened.checkpoints);
  return opened.checkpoints;
}

const blob = (bytes: Buffer) => createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");

/** Every file under `root` (`.git` folders aside) → its blob id. */
async function onDisk(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.name === ".git") continue;
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) out[path.relative(root, p)] = blob(await fsp.readFile(p));
    }
  };
  await walk(root);
  return out;
}

/** A snapshot's files → blob ids. */
function inSnapshot(ck: Checkpoints, id: string): Record<string, string> {
  const out: Record<string, string> = {};
  const listed = execFileSync("git", ["ls-tree", "-r", "-z", id], { env: { PATH: process.env.PATH ?? "", GIT_DIR: ck.gitDir } });
  for (const line of listed.toString("utf8").split("\0").filter(Boolean)) {
    const [meta, file] = line.split("\t") as [string, string];
    out[file] = meta.split(" ")[2] as string;
  }
  return out;
}

function statusRuns(): { count: () => number } {
  const raw = vi.spyOn(ShadowGit.prototype, "raw");
  return { count: () => raw.mock.calls.filter(([args]) => args[0] === "status").length };
}

const tree = (): Record<string, string> => {
  const files: Record<string, string> = { "keep.txt": "keep\n", "gone/a.txt": "a\n", "gone/deep/b.txt": "b\n", "old/c.txt": "c\n" };
  for (let i = 0; i < 60; i++) files[`src/p${i % 6}/m${i}/f.js`] = `export const v = ${i};\n`;
  files["swap/inner.txt"] = "inner\n";
  files["flip"] = "a file\n";
  return files;
};

const CHANGES: [string, (root: string) => Promise<void>][] = [
  ["a file written in place", (r) => fsp.appendFile(path.join(r, "src/p3/m3/f.js"), "// more\n")],
  ["a file made", (r) => fsp.writeFile(path.join(r, "src/p1/m7/new.js"), "new\n")],
  [
    "a folder made with files below",
    async (r) => {
      await fsp.mkdir(path.join(r, "made/x/y"), { recursive: true });
      await fsp.writeFile(path.join(r, "made/x/y/z.txt"), "z\n");
    },
  ],
  ["a file removed", (r) => fsp.rm(path.join(r, "keep.txt"))],
  ["a folder removed with files below", (r) => fsp.rm(path.join(r, "gone"), { recursive: true })],
  ["a folder renamed", (r) => fsp.rename(path.join(r, "old"), path.join(r, "renamed"))],
  [
    "a folder replaced by a file",
    async (r) => {
      await fsp.rm(path.join(r, "swap"), { recursive: true });
      await fsp.writeFile(path.join(r, "swap"), "now a file\n");
    },
  ],
  [
    "a file replaced by a folder",
    async (r) => {
      await fsp.rm(path.join(r, "flip"));
      await fsp.mkdir(path.join(r, "flip"));
      await fsp.writeFile(path.join(r, "flip/inside.txt"), "inside\n");
    },
  ],
  ["a file in a folder renamed a moment ago", (r) => fsp.writeFile(path.join(r, "renamed/c.txt"), "changed after the move\n")],
];

describe("snapshots fed by the watch", () => {
  it("hold exactly the files on disk after every kind of change, and run no git when nothing changed", async () => {
    const root = await fsp.realpath(await folder(tree()));
    const map = new NestedGitWorker();
    workers.push(map);
    const ck = await open(root, (r) => map.changedSince(r));
    const first = await ck.snapshot("first");
    expect(inSnapshot(ck, first.id)).toEqual(await onDisk(root));

    const runs = statusRuns();
    const same = await ck.snapshot("same");
    expect(same.unchanged).toBe(true);
    expect(runs.count()).toBe(0);

    for (const [what, change] of CHANGES) {
      await change(root);
      const snap = await ck.snapshot(what);
      expect(inSnapshot(ck, snap.id), what).toEqual(await onDisk(root));
    }
    // Each change made git look (at what changed); nothing since: no git again.
    expect(runs.count()).toBe(CHANGES.length);
    expect((await ck.snapshot("still")).unchanged).toBe(true);
    expect(runs.count()).toBe(CHANGES.length);
  });

  it("control: a feed that says nothing changed makes the snapshot miss a change (the comparison sees it)", async () => {
    const root = await fsp.realpath(await folder(tree()));
    let calls = 0;
    const ck = await open(root, async () => (calls++ === 0 ? undefined : []));
    await ck.snapshot("first");
    await fsp.appendFile(path.join(root, "src/p3/m3/f.js"), "// more\n");
    const missed = await ck.snapshot("after");
    expect(missed.unchanged).toBe(true);
    expect(inSnapshot(ck, missed.id)).not.toEqual(await onDisk(root));
  });
});

describe("the watch's fence folder", () => {
  it("is named by its process; one a killed toolhost left is removed by the next watch, a live one's is kept", async () => {
    const { execFileSync: run } = await import("node:child_process");
    const os = await import("node:os");
    // A process that has ended: its pid is free (for the moment) and its folder is an orphan.
    const dead = Number(run(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).toString());
    const orphan = path.join(os.tmpdir(), `toolhost-fence-${dead}-test`);
    const live = path.join(os.tmpdir(), `toolhost-fence-${process.ppid}-test`);
    await fsp.mkdir(orphan, { recursive: true });
    await fsp.mkdir(live, { recursive: true });
    const watch = new FolderWatch();
    try {
      await expect(fsp.stat(orphan)).rejects.toThrow();
      expect((await fsp.stat(live)).isDirectory()).toBe(true);
      const own = (await fsp.readdir(os.tmpdir())).filter((n) => n.startsWith(`toolhost-fence-${process.pid}-`));
      expect(own).toHaveLength(1);
    } finally {
      watch.close();
      await fsp.rm(live, { recursive: true, force: true });
    }
  });
});

describe("the watch's feed", () => {
  it("names a file written, a path made or removed with its folder's whole, and knows nothing at first or after a lost event", async () => {
    const root = await fsp.realpath(await folder({ "a/f.txt": "f\n", "a/sub/g.txt": "g\n" }));
    const watch = new FolderWatch();
    try {
      for (const p of [root, `${root}/a`, `${root}/a/sub`]) watch.watch(p);
      // The map's first pass (a watch starts blind); the feed's first answer is "everything".
      expect(watch.take()).toBeUndefined();
      expect(watch.feed(root)).toBeUndefined();
      await fsp.appendFile(path.join(root, "a/f.txt"), "more\n");
      await fsp.rm(path.join(root, "a/sub"), { recursive: true });
      await watch.fence();
      watch.take();
      const paths = watch.feed(root) ?? [];
      expect(paths).toContain(`${root}/a/f.txt`);
      expect(paths).not.toContain(`${root}/a/f.txt/`);
      expect(paths).toContain(`${root}/a/sub/`);
      await watch.fence();
      expect(watch.feed(root)).toEqual([]);
      // A watch the map dropped (its folder moved away) still reports: its path is stale, the feed knows nothing.
      watch.forget(`${root}/a`);
      await fsp.writeFile(path.join(root, "a/new.txt"), "n\n");
      await watch.fence();
      expect(watch.feed(root)).toBeUndefined();
    } finally {
      watch.close();
    }
  });
});
