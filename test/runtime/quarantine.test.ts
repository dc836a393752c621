import { execFileSync } from "node:child_process";
import { existsSync, statfsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { quarantineReachable, removePlant, sweepStaleQuarantine, type QuarantineFor } from "../../src/runtime/sandbox/quarantine.js";
import { tempDir } from "../helpers.js";

// The quarantine's own rules, without a sandbox: which mount layouts leave it out of reach, and a
// move across file systems (a copy that follows nothing, then the source deleted).

describe("quarantineReachable", () => {
  const q = "/home/u/.toolhost/quarantine";
  it("a recorded session's sidecar folder in toolhost's home does not reach it", () => {
    expect(quarantineReachable(q, ["/work/ws", "/home/u/.toolhost/sessions/p/s1"], ["/home/u/.toolhost"])).toBe(false);
  });
  it("a workspace that covers the home does not either: toolhost's home is hidden deeper", () => {
    expect(quarantineReachable(q, ["/home/u"], ["/home/u/.toolhost"])).toBe(false);
  });
  it("a workspace that is toolhost's home, or lies over the quarantine, does; so does one with nothing hidden", () => {
    expect(quarantineReachable(q, ["/home/u/.toolhost"], ["/home/u/.toolhost"])).toBe(true);
    expect(quarantineReachable(q, ["/home/u/.toolhost/quarantine"], ["/home/u/.toolhost"])).toBe(true);
    expect(quarantineReachable(q, ["/home"], [])).toBe(true);
  });
});

// /dev/shm is a tmpfs on most Linux machines; the quarantine in /var/tmp (the disk) is another file system.
const shm = existsSync("/dev/shm") && existsSync("/var/tmp") && statfsSync("/dev/shm").type !== statfsSync("/var/tmp").type;

describe.skipIf(!shm)("a plant on another file system than the quarantine", () => {
  let ws: string;
  let home: string;
  let outside: string;
  beforeEach(async () => {
    ws = await fsp.realpath(await fsp.mkdtemp("/dev/shm/toolhost-q-"));
    home = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-q-"));
    outside = await tempDir({ "secret.txt": "secret\n" });
  });
  afterEach(async () => {
    for (const dir of [ws, home, outside]) await fsp.rm(dir, { recursive: true, force: true });
  });
  const into = (): QuarantineFor => ({ anchor: home, parts: ["quarantine", "s", "c"] });

  it("is copied (folders, files, symlinks as links, never followed) and deleted from the workspace", async () => {
    execFileSync("git", ["init", "-q", path.join(ws, "sub")]);
    await fsp.symlink(path.join(outside, "secret.txt"), path.join(ws, "sub/.git/hooks/linked"));
    await fsp.chmod(path.join(ws, "sub/.git/hooks"), 0o500);
    const removal = removePlant(path.join(ws, "sub/.git"), ws, into());
    expect(removal).toEqual({ moved: path.join(home, "quarantine/s/c/sub/.git") });
    expect(existsSync(path.join(ws, "sub/.git"))).toBe(false);
    const moved = path.join(home, "quarantine/s/c/sub/.git");
    expect(await fsp.readFile(path.join(moved, "HEAD"), "utf8")).toMatch(/^ref: /);
    expect(await fsp.readlink(path.join(moved, "hooks/linked"))).toBe(path.join(outside, "secret.txt"));
    expect((await fsp.stat(path.join(home, "quarantine"))).mode & 0o777).toBe(0o700);
    expect(await fsp.readFile(path.join(outside, "secret.txt"), "utf8")).toBe("secret\n");
  });

  it("one that cannot be copied (a FIFO) is deleted, and nothing half-copied stays in quarantine", async () => {
    await fsp.mkdir(path.join(ws, "sub/.git"), { recursive: true });
    await fsp.writeFile(path.join(ws, "sub/.git/config"), "[core]\n");
    execFileSync("mkfifo", [path.join(ws, "sub/.git/fifo")]);
    const removal = removePlant(path.join(ws, "sub/.git"), ws, into());
    expect(removal).toMatchObject({ deleted: expect.stringMatching(/could not be moved to quarantine: fifo is neither/) as string });
    expect(existsSync(path.join(ws, "sub/.git"))).toBe(false);
    expect(await fsp.readdir(path.join(home, "quarantine/s/c/sub"))).toEqual([]);
  });
});

describe("sweepStaleQuarantine", () => {
  it("removes a session's folder past its age, keeps a young one, and follows no link", async () => {
    const dir = await tempDir();
    const outside = await tempDir();
    await fsp.writeFile(path.join(outside, "keep.txt"), "mine\n");
    for (const name of ["old", "young"]) await fsp.mkdir(path.join(dir, name, "call", "ws-1", ".git"), { recursive: true });
    // An old session folder holding a link out: the link goes, what it points at stays.
    await fsp.symlink(outside, path.join(dir, "old", "call", "link"));
    const old = new Date(Date.now() - 31 * 24 * 3600_000);
    await fsp.utimes(path.join(dir, "old"), old, old);
    // A symlink directly in the quarantine is never a session folder.
    await fsp.symlink(outside, path.join(dir, "planted-link"));
    await fsp.lutimes(path.join(dir, "planted-link"), old, old);
    await sweepStaleQuarantine(dir);
    expect(existsSync(path.join(dir, "old"))).toBe(false);
    expect(existsSync(path.join(dir, "young", "call", "ws-1", ".git"))).toBe(true);
    expect(await fsp.readFile(path.join(outside, "keep.txt"), "utf8")).toBe("mine\n");
    expect((await fsp.lstat(path.join(dir, "planted-link"))).isSymbolicLink()).toBe(true);
  });
});
