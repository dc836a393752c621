import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { Checkpoints } from "../../src/runtime/checkpoints/checkpoints.js";
import {
  checkpointSessions,
  discardSessionCheckpoints,
  openCheckpoints,
  type CheckpointsOptions,
} from "../../src/runtime/checkpoints/repository.js";
import { useCleanup } from "./cleanup.js";

// Issue 23 §2: the workspace checkpoints, with real git on real files. Every restore is judged by
// a byte-for-byte picture of the folder (each file's bytes, executable bit, symlink target, each
// folder), taken before and after; a control test shows that picture tells a one-byte change.

const { handles, folder } = useCleanup<Checkpoints>();

let sessionCount = 0;
async function open(root: string, options: Partial<CheckpointsOptions> = {}): Promise<Checkpoints> {
  const home = options.home ?? (await folder());
  const opened = await openCheckpoints({ root, project: "proj", session: `s${++sessionCount}`, home, ...options });
  if (!opened.available) throw new Error(opened.reason);
  handles.push(opened.checkpoints);
  return opened.checkpoints;
}

/** Every entry under `root` (but `skip` names): folders, files (bytes and executable bit), symlinks. */
async function picture(root: string, skip: readonly string[] = [".git"]): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of (await fsp.readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (skip.includes(entry.name)) continue;
      const abs = path.join(dir, entry.name);
      const rel = path.relative(root, abs);
      const stat = await fsp.lstat(abs);
      if (stat.isSymbolicLink()) out[rel] = `link → ${await fsp.readlink(abs)}`;
      else if (stat.isDirectory()) {
        out[rel] = "folder";
        await walk(abs);
      } else {
        const hash = createHash("sha256")
          .update(await fsp.readFile(abs))
          .digest("hex");
        out[rel] = `file ${stat.mode & 0o100 ? "x" : "-"} ${stat.size} ${hash}`;
      }
    }
  };
  await walk(root);
  return out;
}

/** git in the user's repository, as the user runs it (no optional index refresh). */
const userGit = (root: string, ...args: string[]): string =>
  execFileSync("git", ["-C", root, ...args], { env: { ...process.env, GIT_OPTIONAL_LOCKS: "0" }, encoding: "utf8" });

/** The names in a snapshot, read from the shadow repository directly. */
function snapshotPaths(ck: Checkpoints, id: string): string[] {
  const out = execFileSync("git", ["--git-dir", ck.gitDir, "ls-tree", "-r", "-z", "--name-only", id], { encoding: "utf8" });
  return out.split("\0").filter(Boolean);
}

const write = (root: string, rel: string, content: string | Uint8Array) =>
  fsp.mkdir(path.dirname(path.join(root, rel)), { recursive: true }).then(() => fsp.writeFile(path.join(root, rel), content));

describe("the picture harness", () => {
  it("tells a one-byte change, a mode change and a new folder (control)", async () => {
    const root = await folder({ "a.txt": "hello\n", "b/c.bin": Buffer.from([0, 1, 2]) });
    const before = await picture(root);
    expect(await picture(root)).toEqual(before);
    await fsp.writeFile(path.join(root, "b/c.bin"), Buffer.from([0, 1, 3]));
    expect(await picture(root)).not.toEqual(before);
    await fsp.writeFile(path.join(root, "b/c.bin"), Buffer.from([0, 1, 2]));
    await fsp.chmod(path.join(root, "a.txt"), 0o755);
    expect(await picture(root)).not.toEqual(before);
    await fsp.chmod(path.join(root, "a.txt"), 0o644);
    await fsp.mkdir(path.join(root, "empty"));
    expect(await picture(root)).not.toEqual(before);
  });
});

describe("snapshot and restore", () => {
  it("brings back changed and deleted files byte for byte and removes created ones (a folder that is not a repository)", async () => {
    const binary = randomBytes(50_000);
    const root = await folder({
      "src/main.ts": "export const a = 1;\n",
      "src/deep/er/file.txt": "deep\n",
      "data.bin": binary,
      "with space and ünïcödé ✓.txt": "unicode name\n",
      "crlf.txt": "one\r\ntwo\r\n",
      "empty.txt": "",
    });
    await fsp.chmod(path.join(root, "src/main.ts"), 0o755);
    await fsp.symlink("src/main.ts", path.join(root, "link"));
    await fsp.symlink("/etc/hostname", path.join(root, "outside-link"));
    const ck = await open(root);
    const before = await picture(root);
    const first = await ck.snapshot("before the turn");
    expect(first.unchanged).toBe(false);
    expect(first.id).toMatch(/^[0-9a-f]{40}$/);

    // The "turn": edits, a deletion, new files in new folders, a mode change, symlinks changed.
    await fsp.writeFile(path.join(root, "src/main.ts"), "export const a = 2;\n");
    await fsp.chmod(path.join(root, "src/main.ts"), 0o644);
    await fsp.rm(path.join(root, "src/deep"), { recursive: true });
    await fsp.rm(path.join(root, "with space and ünïcödé ✓.txt"));
    const changedBinary = Buffer.from(binary);
    changedBinary.writeUInt8(changedBinary.readUInt8(25_000) ^ 0xff, 25_000);
    await fsp.writeFile(path.join(root, "data.bin"), changedBinary);
    await write(root, "new/folder/created.txt", "created\n");
    await write(root, "line\nbreak.txt", "odd name\n");
    await fsp.rm(path.join(root, "link"));
    await fsp.writeFile(path.join(root, "link"), "now a file\n");
    await fsp.rm(path.join(root, "outside-link"));
    await fsp.symlink("/etc/passwd", path.join(root, "outside-link"));
    const after = await ck.snapshot("after the turn");
    expect(after.id).not.toBe(first.id);

    expect(await ck.changes(first.id, after.id)).toEqual(
      expect.arrayContaining([
        { path: "src/main.ts", action: "modify" },
        { path: "src/deep/er/file.txt", action: "delete" },
        { path: "new/folder/created.txt", action: "create" },
        { path: "line\nbreak.txt", action: "create" },
        { path: "link", action: "modify" },
      ]),
    );

    const result = await ck.restore(first.id, { knownId: after.id });
    expect(result.conflicts).toEqual([]);
    expect(result.failed).toEqual([]);
    expect(result.applied).toBe(true);
    expect(result.files).toEqual(
      expect.arrayContaining([
        { path: "src/main.ts", action: "restore" },
        { path: "src/deep/er/file.txt", action: "create" },
        { path: "new/folder/created.txt", action: "delete" },
      ]),
    );
    expect(await picture(root)).toEqual(before);
    expect(await fsp.readlink(path.join(root, "outside-link"))).toBe("/etc/hostname");

    // And forward again, to the later snapshot.
    await ck.restore(after.id);
    expect(await fsp.readFile(path.join(root, "new/folder/created.txt"), "utf8")).toBe("created\n");
    expect((await fsp.stat(path.join(root, "src/main.ts"))).mode & 0o111).toBe(0);
    expect(await ck.changes(after.id, "workspace")).toEqual([]);
  });

  it("warm brings the index up to date without recording a snapshot", async () => {
    const root = await folder({ "a.txt": "a\n", "b/c.txt": "c\n" });
    const ck = await open(root);
    await ck.warm();
    expect(await ck.list()).toEqual([]);
    await fsp.writeFile(path.join(root, "a.txt"), "changed\n");
    const first = await ck.snapshot();
    expect(snapshotPaths(ck, first.id).sort()).toEqual(["a.txt", "b/c.txt"]);
    expect((await ck.list()).map((c) => c.id)).toEqual([first.id]);
  });

  it("returns the previous id when nothing changed", async () => {
    const root = await folder({ "a.txt": "a\n" });
    const ck = await open(root);
    const first = await ck.snapshot();
    const again = await ck.snapshot();
    expect(again).toMatchObject({ id: first.id, unchanged: true });
    await fsp.writeFile(path.join(root, "a.txt"), "b\n");
    expect((await ck.snapshot()).id).not.toBe(first.id);
    expect((await ck.list()).map((c) => c.id)).toHaveLength(2);
  });

  it("keeps a file's byte even where .gitattributes asks for line-ending conversion", async () => {
    const root = await folder({
      ".gitattributes": "* text eol=crlf\n*.txt filter=lfs ident\n",
      "lf.txt": "a\nb\n$Id$\n",
      "mixed.txt": "a\r\nb\n",
    });
    const ck = await open(root);
    const before = await picture(root);
    const id = (await ck.snapshot()).id;
    await fsp.writeFile(path.join(root, "lf.txt"), "changed\n");
    await fsp.writeFile(path.join(root, "mixed.txt"), "changed\n");
    await ck.restore(id);
    expect(await picture(root)).toEqual(before);
  });

  it("refuses ids that are not checkpoints", async () => {
    const root = await folder({ "a.txt": "a\n" });
    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    const blob = execFileSync("git", ["--git-dir", ck.gitDir, "rev-parse", `${id}:a.txt`], { encoding: "utf8" }).trim();
    await expect(ck.restore("HEAD")).rejects.toThrow(/not a checkpoint id/);
    await expect(ck.restore("0".repeat(40))).rejects.toThrow(/no checkpoint/);
    await expect(ck.restore(blob)).rejects.toThrow(/not a checkpoint/);
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("a\n");
  });

  it("a dry run lists what would change and changes nothing", async () => {
    const root = await folder({ "a.txt": "a\n", "gone.txt": "gone\n" });
    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    await fsp.writeFile(path.join(root, "a.txt"), "changed\n");
    await fsp.rm(path.join(root, "gone.txt"));
    await write(root, "new/new.txt", "new\n");
    const before = await picture(root);
    const plan = await ck.restore(id, { dryRun: true });
    expect(plan.applied).toBe(false);
    expect(plan.files).toEqual(
      expect.arrayContaining([
        { path: "a.txt", action: "restore" },
        { path: "gone.txt", action: "create" },
        { path: "new/new.txt", action: "delete" },
      ]),
    );
    expect(plan.files).toHaveLength(3);
    expect(await ck.plan(id)).toMatchObject({ files: plan.files, conflicts: [] });
    expect(await picture(root)).toEqual(before);
  });

  it("with paths, restores only those paths and leaves every other change as it is", async () => {
    const root = await folder({ "a.txt": "a\n", "b.txt": "b\n", "gone.txt": "gone\n", "kept-gone.txt": "kept\n" });
    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    const original = await picture(root);
    await fsp.writeFile(path.join(root, "a.txt"), "changed a\n");
    await fsp.writeFile(path.join(root, "b.txt"), "changed b\n");
    await fsp.rm(path.join(root, "gone.txt"));
    await fsp.rm(path.join(root, "kept-gone.txt"));
    await write(root, "new/one.txt", "one\n");
    await write(root, "new/two.txt", "two\n");
    const paths = ["a.txt", "gone.txt", "new/one.txt", "not-changed-at-all.txt"];
    const planned = await ck.plan(id, { paths });
    expect(planned.files).toEqual(
      expect.arrayContaining([
        { path: "a.txt", action: "restore" },
        { path: "gone.txt", action: "create" },
        { path: "new/one.txt", action: "delete" },
      ]),
    );
    expect(planned.files).toHaveLength(3);
    const result = await ck.restore(id, { paths });
    expect(result.failed).toEqual([]);
    const now = await picture(root);
    for (const rel of ["a.txt", "gone.txt"]) expect(now[rel]).toBe(original[rel]);
    expect(now["new/one.txt"]).toBeUndefined();
    // The paths not named keep their changes.
    expect(await fsp.readFile(path.join(root, "b.txt"), "utf8")).toBe("changed b\n");
    expect(now["kept-gone.txt"]).toBeUndefined();
    expect(await fsp.readFile(path.join(root, "new/two.txt"), "utf8")).toBe("two\n");
    // Control: without paths the same restore brings back all of it.
    await ck.restore(id);
    expect(await picture(root)).toEqual(original);
  });
});

describe("what is left out", () => {
  it("does not record ignored files and never touches them", async () => {
    const root = await folder({
      ".gitignore": "*.log\nbuild/\n",
      "a.txt": "a\n",
      "debug.log": "log 1\n",
      "build/out.js": "built 1\n",
    });
    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    expect(snapshotPaths(ck, id).sort()).toEqual([".gitignore", "a.txt"]);
    await fsp.writeFile(path.join(root, "debug.log"), "log 2\n");
    await fsp.writeFile(path.join(root, "build/out.js"), "built 2\n");
    await write(root, "build/more.js", "more\n");
    await fsp.writeFile(path.join(root, "a.txt"), "changed\n");
    expect(await ck.changes(id, "workspace")).toEqual([{ path: "a.txt", action: "modify" }]);
    const result = await ck.restore(id);
    expect(result.files).toEqual([{ path: "a.txt", action: "restore" }]);
    expect(await fsp.readFile(path.join(root, "debug.log"), "utf8")).toBe("log 2\n");
    expect(await fsp.readFile(path.join(root, "build/out.js"), "utf8")).toBe("built 2\n");
    expect(await fsp.readFile(path.join(root, "build/more.js"), "utf8")).toBe("more\n");
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("a\n");

    // A .gitignore that starts to cover a recorded file takes it out of the next snapshot.
    await fsp.writeFile(path.join(root, ".gitignore"), "*.log\nbuild/\na.txt\n");
    expect(snapshotPaths(ck, (await ck.snapshot()).id).sort()).toEqual([".gitignore"]);
  });

  it("leaves out files over the size cap, lists them, and a restore leaves them alone", async () => {
    const root = await folder({ "small.txt": "small\n", "big.bin": randomBytes(5000) });
    const ck = await open(root, { maxFileBytes: 4096 });
    const first = await ck.snapshot();
    expect(first.skipped).toEqual([{ path: "big.bin", bytes: 5000, reason: "too-large" }]);
    expect(snapshotPaths(ck, first.id)).toEqual(["small.txt"]);

    // A recorded file that grows over the cap leaves the next snapshot and is listed.
    await fsp.writeFile(path.join(root, "small.txt"), randomBytes(6000));
    const second = await ck.snapshot();
    expect(second.skipped.map((s) => s.path)).toEqual(["big.bin", "small.txt"]);
    expect(snapshotPaths(ck, second.id)).toEqual([]);

    const bigNow = await fsp.readFile(path.join(root, "big.bin"));
    const result = await ck.restore(first.id, { knownId: second.id });
    expect(result.conflicts).toEqual([]);
    expect(result.files).toEqual([{ path: "small.txt", action: "restore" }]);
    expect(result.skipped).toEqual([{ path: "big.bin", reason: expect.stringContaining("over the size cap") }]);
    expect(await fsp.readFile(path.join(root, "small.txt"), "utf8")).toBe("small\n");
    expect(await fsp.readFile(path.join(root, "big.bin"))).toEqual(bigNow);
  });
});

describe("the user's git repository", () => {
  it("is never read into a snapshot nor changed, and git status stays the same", async () => {
    const root = await folder({ "tracked.txt": "v1\n", "secret.env": "KEY=1\n", ".gitignore": "*.tmp\n" });
    userGit(root, "init", "-q");
    userGit(root, "-c", "user.name=t", "-c", "user.email=t@t", "add", "tracked.txt", ".gitignore");
    userGit(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one");
    await fsp.writeFile(path.join(root, "tracked.txt"), "v2 staged\n");
    userGit(root, "add", "tracked.txt");
    await fsp.writeFile(path.join(root, "tracked.txt"), "v3 unstaged\n");
    await fsp.appendFile(path.join(root, ".git/info/exclude"), "secret.env\n");
    await write(root, "untracked.txt", "u\n");
    const gitBefore = await picture(path.join(root, ".git"), []);
    const statusBefore = userGit(root, "status", "--porcelain=v2", "--branch", "--untracked-files=all");

    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    // The user's .git/info/exclude applies: secret.env is not recorded; nothing of .git is.
    expect(snapshotPaths(ck, id).sort()).toEqual([".gitignore", "tracked.txt", "untracked.txt"]);
    await fsp.writeFile(path.join(root, "tracked.txt"), "v4 by the turn\n");
    await fsp.rm(path.join(root, "untracked.txt"));
    await write(root, "created.txt", "c\n");
    await ck.snapshot();
    await ck.restore(id);
    await ck.pack();

    expect(await picture(path.join(root, ".git"), [])).toEqual(gitBefore);
    expect(userGit(root, "status", "--porcelain=v2", "--branch", "--untracked-files=all")).toBe(statusBefore);
    expect(await fsp.readFile(path.join(root, "tracked.txt"), "utf8")).toBe("v3 unstaged\n");
    expect(userGit(root, "diff", "--cached", "--name-only")).toBe("tracked.txt\n");
  });

  it("records the files of a nested repository, never its .git", async () => {
    const root = await folder({
      "top.txt": "top\n",
      "vendor/lib/lib.c": "int x;\n",
      "vendor/lib/.gitignore": "*.o\n",
      "vendor/lib/lib.o": "obj",
    });
    userGit(path.join(root, "vendor/lib"), "init", "-q");
    const nestedGit = await picture(path.join(root, "vendor/lib/.git"), []);
    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    expect(snapshotPaths(ck, id).sort()).toEqual(["top.txt", "vendor/lib/.gitignore", "vendor/lib/lib.c"]);
    const before = await picture(root);
    await fsp.writeFile(path.join(root, "vendor/lib/lib.c"), "int y;\n");
    await write(root, "vendor/lib/new.c", "new\n");
    const after = await ck.snapshot();
    expect(await ck.changes(id, after.id)).toEqual([
      { path: "vendor/lib/lib.c", action: "modify" },
      { path: "vendor/lib/new.c", action: "create" },
    ]);
    await ck.restore(id);
    expect(await picture(root)).toEqual(before);
    expect(await picture(path.join(root, "vendor/lib/.git"), [])).toEqual(nestedGit);
  });
});

describe("conflicts", () => {
  it("a file changed outside toolhost since the known snapshot is listed and kept, unless force", async () => {
    const root = await folder({ "turn.txt": "t0\n", "user.txt": "u0\n" });
    const ck = await open(root);
    const before = (await ck.snapshot("before")).id;
    await fsp.writeFile(path.join(root, "turn.txt"), "t1\n");
    await fsp.writeFile(path.join(root, "user.txt"), "u1 by the turn\n");
    const known = (await ck.snapshot("after")).id;
    // Outside toolhost, after the last known state:
    await fsp.writeFile(path.join(root, "user.txt"), "u2 by the user\n");
    await write(root, "user-new.txt", "the user's new file\n");

    const result = await ck.restore(before, { knownId: known });
    expect(result.conflicts.map((c) => c.path).sort()).toEqual(["user-new.txt", "user.txt"]);
    expect(result.files).toEqual([{ path: "turn.txt", action: "restore" }]);
    expect(await fsp.readFile(path.join(root, "turn.txt"), "utf8")).toBe("t0\n");
    expect(await fsp.readFile(path.join(root, "user.txt"), "utf8")).toBe("u2 by the user\n");
    expect(await fsp.readFile(path.join(root, "user-new.txt"), "utf8")).toBe("the user's new file\n");

    const forced = await ck.restore(before, { knownId: known, force: true });
    expect(forced.conflicts.map((c) => c.path).sort()).toEqual(["user-new.txt", "user.txt"]);
    expect(await fsp.readFile(path.join(root, "user.txt"), "utf8")).toBe("u0\n");
    await expect(fsp.stat(path.join(root, "user-new.txt"))).rejects.toThrow();
  });

  it("never writes through a symlinked folder that points outside the workspace", async () => {
    const outside = await folder({ "f.txt": "outside\n" });
    const root = await folder({ "d/f.txt": "inside\n" });
    const outsideBefore = await picture(outside);
    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    // The folder becomes a symlink to the outside.
    await fsp.rm(path.join(root, "d"), { recursive: true });
    await fsp.symlink(outside, path.join(root, "d"));
    const known = (await ck.snapshot()).id;
    await fsp.writeFile(path.join(root, "d/f.txt"), "written outside by the user\n");

    // Recorded as a symlink, so restoring removes the link itself (never what it points to), then writes d/f.txt.
    const restored = await ck.restore(id, { knownId: known });
    expect(restored.conflicts).toEqual([]);
    expect((await fsp.lstat(path.join(root, "d"))).isDirectory()).toBe(true);
    expect(await fsp.readFile(path.join(root, "d/f.txt"), "utf8")).toBe("inside\n");
    expect(await fsp.readFile(path.join(outside, "f.txt"), "utf8")).toBe("written outside by the user\n");

    expect(await picture(outside)).not.toEqual(outsideBefore);
  });

  it("refuses a path below a symlinked folder it does not remove itself, even with force", async () => {
    const outside = await folder({ "f.txt": "outside\n" });
    const root = await folder({ "d/f.txt": "inside\n" });
    userGit(root, "init", "-q");
    const ck = await open(root);
    const id = (await ck.snapshot()).id;
    await fsp.rm(path.join(root, "d"), { recursive: true });
    await fsp.symlink(outside, path.join(root, "d"));
    // The user's exclude file makes the link invisible to snapshots: the restore must create d/f.txt below it.
    await fsp.appendFile(path.join(root, ".git/info/exclude"), "/d\n");
    const outsideBefore = await picture(outside);
    for (const force of [false, true]) {
      const result = await ck.restore(id, { force });
      expect(result.conflicts).toEqual([{ path: "d/f.txt", reason: expect.stringContaining("symbolic link") }]);
      expect(result.files).toEqual([]);
    }
    expect(await picture(outside)).toEqual(outsideBefore);
    expect((await fsp.lstat(path.join(root, "d"))).isSymbolicLink()).toBe(true);
  });
});

describe("sessions side by side, and disk", () => {
  it("two sessions snapshot in parallel, and a pack waits for them", async () => {
    const root = await folder({ "shared.txt": "0\n" });
    const home = await folder();
    const [a, b] = [await open(root, { home }), await open(root, { home })];
    const seen: Record<string, string> = {};
    for (let round = 0; round < 4; round++) {
      await fsp.writeFile(path.join(root, "shared.txt"), `${round}\n`);
      await write(root, `r${round}/file.txt`, `round ${round}\n`);
      const [sa, sb] = await Promise.all([a.snapshot(`a${round}`), b.snapshot(`b${round}`)]);
      expect(sa.id).not.toBe(sb.id);
      seen[sa.id] = `${round}\n`;
      seen[sb.id] = `${round}\n`;
    }
    // A pack from one session while the other snapshots: neither loses anything.
    await fsp.writeFile(path.join(root, "shared.txt"), "last\n");
    const [, last] = await Promise.all([b.pack(), a.snapshot("last")]);
    seen[last.id] = "last\n";
    expect((await a.list()).map((c) => c.label)).toEqual(["a0", "a1", "a2", "a3", "last"]);
    expect((await b.list()).map((c) => c.label)).toEqual(["b0", "b1", "b2", "b3"]);
    for (const [id, content] of Object.entries(seen)) {
      const owner = (await a.list()).some((c) => c.id === id) ? a : b;
      await owner.restore(id);
      expect(await fsp.readFile(path.join(root, "shared.txt"), "utf8")).toBe(content);
    }
    execFileSync("git", ["--git-dir", a.gitDir, "fsck", "--strict", "--no-dangling"], { stdio: "pipe" });
  });

  it("a pack keeps what another session's index names: its next snapshot is whole", async () => {
    const root = await folder({ "a.txt": "a0\n", "b.txt": "b0\n" });
    const home = await folder();
    const [a, b] = [await open(root, { home }), await open(root, { home })];
    const first = await a.snapshot();
    await fsp.writeFile(path.join(root, "a.txt"), "a1, seen by a scan of session a only\n");
    expect(await a.changes(first.id, "workspace")).toEqual([{ path: "a.txt", action: "modify" }]);
    await b.pack();
    // Unchanged since a's scan: the snapshot reuses that scan's tree, whose new blob no snapshot names.
    const second = await a.snapshot();
    await fsp.writeFile(path.join(root, "a.txt"), "a2\n");
    await a.restore(second.id);
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("a1, seen by a scan of session a only\n");
    execFileSync("git", ["--git-dir", a.gitDir, "fsck", "--strict", "--no-dangling"], { stdio: "pipe" });
  });

  it("drop and pack give the disk back; what is kept still restores", async () => {
    const root = await folder({ "a.txt": "a\n" });
    const ck = await open(root);
    await write(root, "big1.bin", randomBytes(2_000_000));
    const first = await ck.snapshot();
    await fsp.rm(path.join(root, "big1.bin"));
    await write(root, "big2.bin", randomBytes(2_000_000));
    const second = await ck.snapshot();
    const packed = await ck.pack();
    expect(packed.bytes).toBeGreaterThan(4_000_000);
    await ck.drop([first.id]);
    const after = await ck.pack();
    expect(after.bytes).toBeLessThan(packed.bytes - 1_500_000);
    expect(await ck.diskBytes()).toBe(after.bytes);
    expect((await ck.list()).map((c) => c.id)).toEqual([second.id]);
    await fsp.writeFile(path.join(root, "big2.bin"), "overwritten");
    await ck.restore(second.id);
    expect((await fsp.stat(path.join(root, "big2.bin"))).size).toBe(2_000_000);
    await ck.discard();
    await expect(ck.snapshot()).rejects.toThrow(/closed/);
  });

  it("a deleted session's checkpoints are found and discarded without its workspace, and the disk is given back", async () => {
    const root = await folder({ "a.txt": "a\n" });
    const home = await folder();
    const gone = await open(root, { home, project: "proj", session: "gone" });
    await write(root, "big.bin", randomBytes(1_000_000));
    await gone.snapshot();
    await fsp.rm(path.join(root, "big.bin"));
    const kept = await open(root, { home, project: "proj", session: "kept" });
    const keptId = (await kept.snapshot()).id;
    await gone.close();
    await kept.pack();
    const before = await kept.diskBytes();
    expect((await checkpointSessions(home)).map((s) => s.session).sort()).toEqual(["gone", "kept"]);
    // The workspace is gone too: nothing of it is needed.
    await fsp.rm(root, { recursive: true });
    expect(await discardSessionCheckpoints({ project: "proj", sessions: ["gone"], home })).toBe(true);
    expect(await discardSessionCheckpoints({ project: "nothing-here", sessions: ["gone"], home })).toBe(false);
    expect((await checkpointSessions(home)).map((s) => s.session)).toEqual(["kept"]);
    expect(await kept.diskBytes()).toBeLessThan(before - 500_000);
    const refs = execFileSync("git", ["--git-dir", kept.gitDir, "for-each-ref", "--format=%(objectname)", "refs/toolhost/"], {
      encoding: "utf8",
    });
    expect(refs.trim().split("\n")).toEqual([keptId]);
  });

  it("an overlay is one snapshot with some paths taken from another (absent there: absent)", async () => {
    const root = await folder({ "a.txt": "a1\n", "b.txt": "b1\n", "c.txt": "c1\n" });
    const ck = await open(root);
    const first = (await ck.snapshot()).id;
    await fsp.writeFile(path.join(root, "a.txt"), "a2\n");
    await fsp.writeFile(path.join(root, "b.txt"), "b2\n");
    await fsp.rm(path.join(root, "c.txt"));
    await write(root, "d/new.txt", "new\n");
    const second = (await ck.snapshot()).id;
    const mixed = await ck.overlay(second, first, ["a.txt", "c.txt", "d/new.txt"]);
    expect(await ck.overlay(second, first, [])).toBe(second);
    expect((await ck.changes(first, mixed)).sort((x, y) => (x.path < y.path ? -1 : 1))).toEqual([{ path: "b.txt", action: "modify" }]);
    await ck.restore(mixed);
    expect(await picture(root)).toEqual({ "a.txt": expect.any(String), "b.txt": expect.any(String), "c.txt": expect.any(String) });
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("a1\n");
    expect(await fsp.readFile(path.join(root, "b.txt"), "utf8")).toBe("b2\n");
    expect(await fsp.readFile(path.join(root, "c.txt"), "utf8")).toBe("c1\n");
  });

  it("a session adopts another's snapshots (a fork): they outlive the first session's discard and pack", async () => {
    const root = await folder({ "a.txt": "a\n" });
    const home = await folder();
    const first = await open(root, { home });
    const id = (await first.snapshot()).id;
    const fork = await open(root, { home });
    const blob = execFileSync("git", ["--git-dir", first.gitDir, "rev-parse", `${id}:a.txt`], { encoding: "utf8" }).trim();
    expect(await fork.adopt([id, blob, "0".repeat(40), "not an id"])).toEqual([id]);
    expect((await fork.list()).map((c) => c.id)).toEqual([id]);
    await first.discard();
    await fork.pack();
    await fsp.writeFile(path.join(root, "a.txt"), "changed\n");
    await fork.restore(id);
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("a\n");
  });

  it("a small change costs disk in proportion to the change, not the workspace", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 200; i++) files[`f${i}.txt`] = randomBytes(5000).toString("hex");
    const root = await folder(files);
    const ck = await open(root);
    await ck.snapshot();
    const base = await ck.diskBytes();
    await fsp.writeFile(path.join(root, "f7.txt"), randomBytes(5000).toString("hex"));
    await ck.snapshot();
    const grew = (await ck.diskBytes()) - base;
    expect(grew).toBeGreaterThan(0);
    // The workspace is 2 MB; one changed 10 kB file plus a tree and a commit.
    expect(grew).toBeLessThan(30_000);
  });
});

describe("without git", () => {
  it("says checkpoints are unavailable, and why", async () => {
    const empty = await folder();
    const root = await folder();
    const saved = process.env.PATH;
    process.env.PATH = empty;
    try {
      const opened = await openCheckpoints({ root, project: "p", session: "s", home: await folder() });
      expect(opened).toEqual({ available: false, reason: expect.stringContaining("git is not installed") });
    } finally {
      process.env.PATH = saved;
    }
    expect((await openCheckpoints({ root, project: "p", session: "s", home: await folder() })).available).toBe(true);
    expect(await openCheckpoints({ root, project: "../p", session: "s" })).toEqual({
      available: false,
      reason: expect.stringContaining("bad project"),
    });
  });
});
