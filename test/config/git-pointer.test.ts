import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readGitPointer } from "../../src/config/git-pointer.js";
import { tempDir } from "../helpers.js";

// The one reader of `.git` pointers: what git follows, and nothing that could hang or flood it.

let dir: string;
beforeEach(async () => {
  dir = await tempDir();
});
afterEach(async () => {
  await fsp.rm(dir, { recursive: true, force: true });
});

describe("readGitPointer", () => {
  it("a .git folder is its own git and common folder", async () => {
    execFileSync("git", ["init", "-q", dir]);
    expect(readGitPointer(path.join(dir, ".git"))).toEqual({ gitDir: path.join(dir, ".git"), commonDir: path.join(dir, ".git") });
  });

  it("a linked worktree's .git file: its git folder, and the common folder its commondir names", async () => {
    execFileSync("git", ["init", "-q", "main"], { cwd: dir });
    execFileSync("git", ["-C", "main", "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "x"], {
      cwd: dir,
    });
    execFileSync("git", ["-C", "main", "worktree", "add", "-q", "../wt"], { cwd: dir });
    expect(readGitPointer(path.join(dir, "wt/.git"))).toEqual({
      gitDir: path.join(dir, "main/.git/worktrees/wt"),
      commonDir: path.join(dir, "main/.git"),
    });
  });

  it("a relative gitdir is taken from the .git file's folder; a symlinked .git is followed, as git does", async () => {
    await fsp.mkdir(path.join(dir, "x"));
    await fsp.writeFile(path.join(dir, "x/.git"), "gitdir: ../gd\n");
    expect(readGitPointer(path.join(dir, "x/.git"))).toEqual({ gitDir: path.join(dir, "gd"), commonDir: path.join(dir, "gd") });
    // From the link's own folder, as git takes it (the path as given, not the target's).
    await fsp.mkdir(path.join(dir, "y"));
    await fsp.symlink("../x/.git", path.join(dir, "y/.git"));
    expect(readGitPointer(path.join(dir, "y/.git"))?.gitDir).toBe(path.join(dir, "gd"));
  });

  it("a FIFO, a missing entry or a file without a pointer is none; a huge file is read only at its start", async () => {
    execFileSync("mkfifo", [path.join(dir, "fifo")]);
    expect(readGitPointer(path.join(dir, "fifo"))).toBeUndefined();
    expect(readGitPointer(path.join(dir, "missing"))).toBeUndefined();
    await fsp.writeFile(path.join(dir, "plain"), "not a pointer\n");
    expect(readGitPointer(path.join(dir, "plain"))).toBeUndefined();
    await fsp.writeFile(path.join(dir, "late"), `${"x".repeat(10_000)}\ngitdir: /elsewhere\n`);
    expect(readGitPointer(path.join(dir, "late"))).toBeUndefined();
    // A commondir that is a FIFO does not hang it either.
    await fsp.mkdir(path.join(dir, "g"));
    execFileSync("mkfifo", [path.join(dir, "g/commondir")]);
    expect(readGitPointer(path.join(dir, "g"))).toEqual({ gitDir: path.join(dir, "g"), commonDir: path.join(dir, "g") });
  });
});
