import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { projectFolderName } from "../../src/config/workspace.js";
import { checkpointSessions, discardSessionCheckpoints } from "../../src/runtime/checkpoints/repository.js";
import { openWorkspaceCheckpoints, type WorkspaceCheckpoints } from "../../src/runtime/checkpoints/roots.js";
import { useCleanup } from "./cleanup.js";

// A session's checkpoints of all its roots (issue 23 with additionalDirectories): each further root
// in a shadow repository of its own below the project's, snapshotted beside the primary root, with
// the same guarantees (its ignore rules, its size cap, its restore); a root inside another is one
// root's only; deleting a session and the orphan sweep reach the further roots' repositories too.

const { cleanup, handles, folder } = useCleanup<WorkspaceCheckpoints>();

async function open(roots: string[], home: string, session = "s1", maxFileBytes?: number): Promise<WorkspaceCheckpoints> {
  const opened = await openWorkspaceCheckpoints({ roots, project: "proj", session, home, maxFileBytes });
  if (!opened.available) throw new Error(opened.reason);
  handles.push(opened.checkpoints);
  return opened.checkpoints;
}

const refs = (gitDir: string, session: string): string[] =>
  execFileSync("git", ["--git-dir", gitDir, "for-each-ref", "--format=%(objectname)", `refs/toolhost/${session}/`], { encoding: "utf8" })
    .trim()
    .split("\n")
    .filter(Boolean);

describe("the checkpoints of a session's roots", () => {
  it("keep each further root in a repository of its own below the project's, and restore each root on its own", async () => {
    const primary = await folder({ "a.txt": "a1\n" });
    const other = await folder({ "b.txt": "b1\n", ".gitignore": "out/\n", "out/build.js": "x\n", "big.bin": randomBytes(3000) });
    const home = await folder();
    const ck = await open([primary, other], home, "s1", 2000);
    expect(ck.roots.map((r) => r.root)).toEqual([primary, other]);
    const projectDir = path.join(home, "checkpoints", "proj");
    expect(ck.primary.gitDir).toBe(projectDir);
    const otherCk = (await ck.find(other))!;
    expect(otherCk.gitDir).toBe(path.join(projectDir, "toolhost", "roots", projectFolderName(other)));
    expect(await ck.find(path.join(other, "."))).toBe(otherCk);
    expect(await ck.find(primary)).toBeUndefined();

    const [first, second] = await ck.snapshot("before");
    expect(first!.snapshot!.skipped).toEqual([]);
    // The further root's own ignore rules and the size cap apply there too.
    expect(second!.snapshot!.skipped).toEqual([{ path: "big.bin", bytes: 3000, reason: "too-large" }]);
    const listed = execFileSync("git", ["--git-dir", otherCk.gitDir, "ls-tree", "-r", "--name-only", second!.snapshot!.id], {
      encoding: "utf8",
    });
    expect(listed.trim().split("\n")).toEqual([".gitignore", "b.txt"]);
    expect(refs(projectDir, "s1")).toEqual([first!.snapshot!.id]);
    expect(refs(otherCk.gitDir, "s1")).toEqual([second!.snapshot!.id]);

    await fsp.writeFile(path.join(primary, "a.txt"), "a2\n");
    await fsp.writeFile(path.join(other, "b.txt"), "b2\n");
    await fsp.writeFile(path.join(other, "c.txt"), "c\n");
    const after = await ck.snapshot("after");
    expect(await otherCk.changes(second!.snapshot!.id, after[1]!.snapshot!.id)).toEqual([
      { path: "b.txt", action: "modify" },
      { path: "c.txt", action: "create" },
    ]);
    // A file changed outside since the known state is a conflict in the further root as in the primary one.
    await fsp.writeFile(path.join(other, "c.txt"), "changed by someone else\n");
    const restored = await otherCk.restore(second!.snapshot!.id, { knownId: after[1]!.snapshot!.id });
    expect(restored.files).toEqual([{ path: "b.txt", action: "restore" }]);
    expect(restored.conflicts).toEqual([{ path: "c.txt", reason: "changed since the last checkpoint" }]);
    expect(restored.skipped).toEqual([{ path: "big.bin", reason: "not in the checkpoint: 3000 bytes, over the size cap" }]);
    expect(await fsp.readFile(path.join(other, "b.txt"), "utf8")).toBe("b1\n");
    expect(await fsp.readFile(path.join(primary, "a.txt"), "utf8")).toBe("a2\n");
  });

  it("a root inside another is left out of the outer one's snapshots; a root that is another through a link is checkpointed once", async () => {
    const primary = await folder({ "a.txt": "a\n", "sub/inner.txt": "i\n", "sub/deep/d.txt": "d\n", "subway/w.txt": "w\n" });
    const home = await folder();
    const link = `${primary}-link`;
    await fsp.symlink(primary, link);
    cleanup.push(link);
    const sub = path.join(primary, "sub");
    const ck = await open([primary, sub, link], home);
    expect(ck.roots.map((r) => r.root)).toEqual([primary, sub]);
    const [outer, inner] = await ck.snapshot("both");
    const names = (gitDir: string, id: string) =>
      execFileSync("git", ["--git-dir", gitDir, "ls-tree", "-r", "--name-only", id], { encoding: "utf8" }).trim().split("\n");
    expect(names(ck.primary.gitDir, outer!.snapshot!.id)).toEqual(["a.txt", "subway/w.txt"]);
    expect(names(ck.further[0]!.checkpoints.gitDir, inner!.snapshot!.id)).toEqual(["deep/d.txt", "inner.txt"]);
    // A session of the same project without the nested root has it in the project's snapshots.
    const alone = await open([primary], home, "s2");
    const [whole] = await alone.snapshot("alone");
    expect(names(alone.primary.gitDir, whole!.snapshot!.id)).toEqual(["a.txt", "sub/deep/d.txt", "sub/inner.txt", "subway/w.txt"]);
  });

  it("a further root that cannot be opened is listed with the reason; the primary root is checkpointed still", async () => {
    const primary = await folder({ "a.txt": "a\n", "sub/s.txt": "s\n" });
    const home = await folder();
    const ck = await open([primary, `${primary}-gone`, path.join(primary, "a.txt")], home);
    expect(ck.roots.map((r) => r.root)).toEqual([primary]);
    expect(ck.unavailable).toEqual([
      { root: `${primary}-gone`, reason: expect.stringContaining("ENOENT") },
      { root: path.join(primary, "a.txt"), reason: expect.stringContaining("is not a folder") },
    ]);
    const [only] = await ck.snapshot("one");
    expect(only!.snapshot!.id).toMatch(/^[0-9a-f]{40}$/);
  });

  it("toolhost's home inside a further root is never part of that root's snapshots, nor of the primary's exclude file", async () => {
    const primary = await folder({ "a.txt": "a\n" });
    const other = await folder({ "b.txt": "b\n" });
    const home = path.join(other, "toolhost home");
    const ck = await open([primary, other], home);
    await fsp.writeFile(path.join(home, "config.json"), "{}\n");
    const [, second] = await ck.snapshot("home inside");
    const otherCk = ck.further[0]!.checkpoints;
    const listed = execFileSync("git", ["--git-dir", otherCk.gitDir, "ls-tree", "-r", "--name-only", second!.snapshot!.id], {
      encoding: "utf8",
    });
    expect(listed.trim().split("\n")).toEqual(["b.txt"]);
    expect(await fsp.readFile(path.join(otherCk.gitDir, "info", "exclude"), "utf8")).toBe("/toolhost\\ home/\n");
    expect(await fsp.readFile(path.join(ck.primary.gitDir, "info", "exclude"), "utf8")).toBe("");
  });

  it("deleting a session drops its refs in every root's repository; the sweep finds a session whose refs are only in a further root's", async () => {
    const primary = await folder({ "a.txt": "a\n" });
    const other = await folder({ "b.txt": "b\n" });
    const home = await folder();
    const gone = await open([primary, other], home, "gone");
    await fsp.writeFile(path.join(other, "big.bin"), randomBytes(600_000));
    await gone.snapshot("gone's");
    await fsp.rm(path.join(other, "big.bin"));
    const kept = await open([primary, other], home, "kept");
    const keptIds = (await kept.snapshot("kept's")).map((r) => r.snapshot!.id);
    const otherDir = kept.further[0]!.checkpoints.gitDir;
    expect(refs(otherDir, "gone")).toHaveLength(1);
    await kept.further[0]!.checkpoints.pack();
    const packed = await kept.further[0]!.checkpoints.diskBytes();
    // The primary repository's size leaves out the further roots' below it.
    expect(await kept.primary.diskBytes()).toBeLessThan(packed);

    expect(await discardSessionCheckpoints({ project: "proj", sessions: ["gone"], home })).toBe(true);
    expect(refs(otherDir, "gone")).toEqual([]);
    expect(refs(ck(home), "gone")).toEqual([]);
    expect(refs(otherDir, "kept")).toEqual([keptIds[1]]);
    expect(await kept.further[0]!.checkpoints.diskBytes()).toBeLessThan(packed - 300_000);

    // A session whose refs and index are only in a further root's repository (its own were dropped) is still listed, with its index's time.
    await kept.primary.discard();
    const listed = await checkpointSessions(home);
    expect(listed).toEqual([{ project: "proj", session: "kept", touchedMs: expect.any(Number) }]);
    expect(listed[0]!.touchedMs).toBeGreaterThan(0);
    expect(await discardSessionCheckpoints({ project: "proj", sessions: ["kept"], home })).toBe(true);
    expect(refs(otherDir, "kept")).toEqual([]);
    expect(await checkpointSessions(home)).toEqual([]);
  });
});

/** The project's repository under `home`. */
const ck = (home: string): string => path.join(home, "checkpoints", "proj");
