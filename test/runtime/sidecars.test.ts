import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RuntimeSession } from "../../src/runtime/session.js";
import { SessionSidecars, sweepStaleSidecars } from "../../src/runtime/sidecars.js";
import bash, { type BashResult } from "../../src/tools/bash.js";
import { call, CLI_PATH, output, tempDir } from "../helpers.js";

const CAP_VARS = ["TOOLHOST_SIDECAR_DIR", "TOOLHOST_SIDECAR_MAX_BYTES", "TOOLHOST_SIDECAR_SESSION_MAX_BYTES"] as const;
let saved: Record<string, string | undefined>;
let root: string;

beforeEach(async () => {
  saved = Object.fromEntries(CAP_VARS.map((k) => [k, process.env[k]]));
  root = await tempDir();
  process.env.TOOLHOST_SIDECAR_DIR = root;
});
afterEach(async () => {
  for (const k of CAP_VARS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  await fsp.rm(root, { recursive: true, force: true });
});

async function folderBytes(dir: string): Promise<number> {
  const names = await fsp.readdir(dir).catch(() => [] as string[]);
  let total = 0;
  for (const n of names) total += (await fsp.stat(path.join(dir, n))).size;
  return total;
}

describe("sidecar caps", () => {
  it("a sidecar stops at its cap and ends with a line saying how much was dropped", async () => {
    process.env.TOOLHOST_SIDECAR_MAX_BYTES = "300000";
    const ws = await tempDir();
    const session = new RuntimeSession({ workspace: ws });
    try {
      const { envelope } = await call(bash, { command: "yes 0123456789 | head -c 1000000" }, session);
      const data = output<BashResult>(envelope);
      expect(data.truncated).toBe(true);
      const file = data.output_path as string;
      const text = await fsp.readFile(file, "utf8");
      const [kept, line] = [text.slice(0, 300_000), text.slice(300_000)];
      expect(kept).toBe("0123456789\n".repeat(30_000).slice(0, 300_000));
      expect(line).toMatch(/700000 bytes dropped/);
      expect(line).toMatch(/cap/);
      // The result does not call the capped file the full output.
      expect(data.stdout).not.toMatch(/full output in/);
      expect(data.stdout).toContain(file);
    } finally {
      await session.close();
      await fsp.rm(ws, { recursive: true, force: true });
    }
  });

  it("the session's sidecar folder has a cap over all its files", async () => {
    process.env.TOOLHOST_SIDECAR_MAX_BYTES = "100000";
    process.env.TOOLHOST_SIDECAR_SESSION_MAX_BYTES = "250000";
    const sidecars = new SessionSidecars(path.join(root, "s1"));
    for (let i = 0; i < 5; i++) {
      const w = await sidecars.create("bash");
      for (let j = 0; j < 20; j++) await w.write("x".repeat(10_000));
      await w.close();
      expect(w.dropped).toBe(i < 2 ? 100_000 : i === 2 ? 150_000 : 200_000);
    }
    const text = await sidecars.writeText("grep", "y".repeat(50_000));
    expect(await fsp.readFile(text, "utf8")).toMatch(/^\n?\[toolhost: .*50000 bytes dropped.*session/);
    const files = await fsp.readdir(path.join(root, "s1"));
    expect(files).toHaveLength(6);
    // Only the notes exceed the 250 kB of data.
    expect(await folderBytes(path.join(root, "s1"))).toBeLessThan(250_000 + 6 * 200);
  });

  it("writeText keeps the head within the cap and says what it dropped", async () => {
    process.env.TOOLHOST_SIDECAR_MAX_BYTES = "1000";
    const sidecars = new SessionSidecars(path.join(root, "s2"));
    const file = await sidecars.writeText("grep", "z".repeat(5000));
    const text = await fsp.readFile(file, "utf8");
    expect(text.startsWith("z".repeat(1000))).toBe(true);
    expect(text.slice(1000)).not.toContain("z");
    expect(text).toMatch(/4000 bytes dropped/);
  });

  it("a write larger than the rest of the budget keeps its head", async () => {
    const sidecars = new SessionSidecars(path.join(root, "s3"), { maxFileBytes: 10, maxSessionBytes: 1000 });
    const w = await sidecars.create("bash");
    await w.write(Buffer.from("0123456789abcdef"));
    await w.write("more");
    await w.close();
    const text = await fsp.readFile(w.path, "utf8");
    expect(text.startsWith("0123456789\n")).toBe(true);
    expect(text).toMatch(/10 bytes dropped/);
    expect(w.dropped).toBe(10);
  });
});

describe("a sidecar folder that outlives its session", () => {
  it("a folder handed in is kept on close, and the next session on it adds files without overwriting any", async () => {
    const ws = await tempDir();
    const dir = path.join(root, "kept", "session-1");
    try {
      const first = new RuntimeSession({ workspace: ws, sidecarDir: dir });
      const a = await first.sidecars.writeText("grep", "first run\n");
      const w = await first.sidecars.create("bash");
      await w.write("bash output\n");
      await w.close();
      // Its scope reads the folder (a truncated output can be read on).
      expect(first.scope({}).read.roots).toContain(dir);
      await first.close();
      expect((await fsp.stat(dir)).mode & 0o777).toBe(0o700);
      expect((await fsp.readdir(dir)).sort()).toEqual(["bash-0002.txt", "grep-0001.txt"]);

      // A later run (the session loaded again): numbering goes on after the highest file.
      const second = new RuntimeSession({ workspace: ws, sidecarDir: dir });
      const b = await second.sidecars.writeText("grep", "second run\n");
      expect(path.basename(b)).toBe("grep-0003.txt");
      // A name taken meanwhile (another process) is skipped.
      await fsp.writeFile(path.join(dir, "bash-0004.txt"), "someone else's");
      const w2 = await second.sidecars.create("bash");
      await w2.write("more\n");
      await w2.close();
      expect(path.basename(w2.path)).toBe("bash-0005.txt");
      await second.close();
      expect(await fsp.readFile(a, "utf8")).toBe("first run\n");
      expect(await fsp.readFile(path.join(dir, "bash-0004.txt"), "utf8")).toBe("someone else's");
      expect(await fsp.readFile(w2.path, "utf8")).toBe("more\n");

      // Without a folder handed in, the session's own folder goes on close, as before.
      const temporary = new RuntimeSession({ workspace: ws });
      const c = await temporary.sidecars.writeText("grep", "gone\n");
      expect(c.startsWith(root + path.sep)).toBe(true);
      await temporary.close();
      await expect(fsp.stat(path.dirname(c))).rejects.toThrow();
    } finally {
      await fsp.rm(ws, { recursive: true, force: true });
    }
  });

  it("the files already there count against the folder's cap", async () => {
    const dir = path.join(root, "s4");
    await fsp.mkdir(dir);
    await fsp.writeFile(path.join(dir, "bash-0001.txt"), "x".repeat(900));
    const sidecars = new SessionSidecars(dir, { maxSessionBytes: 1000 });
    const file = await sidecars.writeText("grep", "y".repeat(500));
    expect(path.basename(file)).toBe("grep-0002.txt");
    const text = await fsp.readFile(file, "utf8");
    expect(text.startsWith("y".repeat(100) + "\n")).toBe(true);
    expect(text).toMatch(/400 bytes dropped: this session's sidecar folder reached its cap/);
  });
});

describe("sweeping old sidecar folders", () => {
  const age = async (dir: string, hours: number) => {
    await fsp.mkdir(dir, { recursive: true });
    await fsp.writeFile(path.join(dir, "bash-0001.txt"), "x");
    const t = new Date(Date.now() - hours * 3600_000);
    await fsp.utimes(dir, t, t);
  };

  it("removes CLI folders after a day and session folders after a week", async () => {
    await age(path.join(root, "cli-old"), 30);
    await age(path.join(root, "cli-new"), 2);
    await age(path.join(root, "session-recent"), 30);
    await age(path.join(root, "session-stale"), 8 * 24);
    await sweepStaleSidecars();
    expect((await fsp.readdir(root)).sort()).toEqual(["cli-new", "session-recent"]);
  });

  it("toolhost call sweeps before it exits, and keeps its own folder", async () => {
    await age(path.join(root, "cli-old"), 30);
    const ws = await tempDir();
    const home = await tempDir();
    try {
      const env = { ...process.env, TOOLHOST_HOME: home, TOOLHOST_SIDECAR_DIR: root, TOOLHOST_SIDECAR_MAX_BYTES: "1000" };
      const args = [CLI_PATH, "call", "bash", JSON.stringify({ command: "head -c 300000 /dev/zero | tr '\\0' x" }), "--cwd", ws];
      const { stdout } = await promisify(execFile)(process.execPath, args, { env, maxBuffer: 16 * 1024 * 1024 });
      const envelope = JSON.parse(stdout) as { metadata: { output_path?: string } };
      const own = envelope.metadata.output_path as string;
      expect(path.basename(path.dirname(own))).toMatch(/^cli-/);
      expect(await fsp.readdir(root)).toEqual([path.basename(path.dirname(own))]);
      expect((await fsp.stat(own)).size).toBeLessThan(1200);
    } finally {
      await fsp.rm(ws, { recursive: true, force: true });
      await fsp.rm(home, { recursive: true, force: true });
    }
  });
});

describe("the per-user sidecar root", () => {
  const DIST = fileURLToPath(new URL("../../dist/runtime/session.js", import.meta.url));
  const asRoot = process.geteuid?.() === 0;
  const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p));
  let shared: string;

  beforeEach(async () => {
    if (!existsSync(DIST)) throw new Error("dist/ is missing: run `npm run build` (npm test does) before these tests");
    // A temp folder every user can write to, sticky like /tmp.
    shared = await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-shared-"));
    await fsp.chmod(shared, 0o1777);
  });
  afterEach(() => fsp.rm(shared, { recursive: true, force: true }));

  /** One session of the built runtime, as `uid`, keeping a sidecar file: its path, or the error's message. */
  async function keepSidecar(uid: number): Promise<{ file?: string; uid?: number; error?: string }> {
    const script = path.join(shared, `probe-${uid}.mjs`);
    await fsp.writeFile(
      script,
      [
        `const { RuntimeSession } = await import(${JSON.stringify(pathToFileURL(DIST).href)});`,
        `const session = new RuntimeSession({ workspace: process.argv[2] });`,
        `const { statSync } = await import("node:fs");`,
        `try { const file = await session.sidecars.writeText("t", "kept"); console.log(JSON.stringify({ file, uid: statSync(file).uid })); }`,
        `catch (err) { console.log(JSON.stringify({ error: err.message })); }`,
        `finally { await session.close(); }`,
      ].join("\n"),
      { mode: 0o644 },
    );
    const env: Record<string, string> = { PATH: process.env.PATH ?? "", TMPDIR: shared, HOME: shared };
    const command = uid === 0 ? [process.execPath] : [setpriv!, `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", process.execPath];
    const { stdout } = await promisify(execFile)(command[0]!, [...command.slice(1), script, shared], { env });
    return JSON.parse(stdout) as { file?: string; uid?: number; error?: string };
  }

  it.skipIf(!asRoot || !setpriv)("is a 0700 folder of each user's own, for root and for nobody", async () => {
    for (const uid of [0, 65534]) {
      const { file, error, uid: owner } = await keepSidecar(uid);
      expect(error).toBeUndefined();
      expect(owner).toBe(uid);
      const own = path.join(shared, `toolhost-sidecars-${uid}`);
      expect(path.dirname(path.dirname(file!))).toBe(own);
      const s = await fsp.lstat(own);
      expect([s.isDirectory(), s.uid, s.mode & 0o777]).toEqual([true, uid, 0o700]);
    }
  });

  it.skipIf(!asRoot || !setpriv)("refuses a folder another user planted at the name, saying which and what to do", async () => {
    // Root plants nobody's folder first, open to all.
    const planted = path.join(shared, "toolhost-sidecars-65534");
    await fsp.mkdir(planted, { mode: 0o777 });
    await fsp.chmod(planted, 0o777);
    const { file, error } = await keepSidecar(65534);
    expect(file).toBeUndefined();
    expect(error).toContain(planted);
    expect(error).toMatch(/belongs to another user \(uid 0; this is uid 65534\)/);
    expect(error).toMatch(/Remove .*or set TOOLHOST_SIDECAR_DIR/);
    expect(await fsp.readdir(planted)).toEqual([]);
  });

  it.skipIf(!asRoot || !setpriv)("refuses a symlink another user planted at the name", async () => {
    // nobody plants root's name as a link to a folder of its own.
    const trap = path.join(shared, "trap");
    await fsp.mkdir(trap, { mode: 0o700 });
    await fsp.chown(trap, 65534, 65534);
    const planted = path.join(shared, "toolhost-sidecars-0");
    await fsp.symlink(trap, planted);
    await fsp.lchown(planted, 65534, 65534);
    const { file, error } = await keepSidecar(0);
    expect(file).toBeUndefined();
    expect(error).toContain(planted);
    expect(error).toMatch(/is a symlink \(to .*trap\)/);
    expect(await fsp.readdir(trap)).toEqual([]);
  });

  it("refuses a folder of its own that others can enter, and checks TOOLHOST_SIDECAR_DIR the same way", async () => {
    const open = path.join(shared, "open");
    await fsp.mkdir(open);
    await fsp.chmod(open, 0o755);
    process.env.TOOLHOST_SIDECAR_DIR = open;
    const ws = await tempDir();
    const session = new RuntimeSession({ workspace: ws });
    try {
      await expect(session.sidecars.writeText("t", "x")).rejects.toThrow(/open can be entered by other users \(mode 0755, not 0700\)/);
      const link = path.join(shared, "link");
      await fsp.symlink(root, link);
      process.env.TOOLHOST_SIDECAR_DIR = link;
      const second = new RuntimeSession({ workspace: ws });
      await expect(second.sidecars.writeText("t", "x")).rejects.toThrow(
        /link is a symlink .*Point TOOLHOST_SIDECAR_DIR at a folder of your own/,
      );
      await second.close();
      expect(await fsp.readdir(root)).toEqual([]);
      // Fixed: the same session goes on.
      await fsp.chmod(open, 0o700);
      expect(path.dirname(path.dirname(await session.sidecars.writeText("t", "x")))).toBe(open);
    } finally {
      await session.close();
      await fsp.rm(ws, { recursive: true, force: true });
    }
  });
});
