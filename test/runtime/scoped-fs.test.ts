import { execFile, spawnSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { ToolError } from "../../src/tool/errors.js";
import { tempDir } from "../helpers.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((c) => c()));
});

async function setup() {
  const outside = await tempDir({ "secret.txt": "secret" });
  const root = await tempDir({ "a.txt": "A", "dir/b.txt": "B" });
  await fsp.symlink(outside, path.join(root, "out-link"));
  await fsp.symlink(path.join(outside, "secret.txt"), path.join(root, "secret-link.txt"));
  await fsp.symlink(path.join(root, "a.txt"), path.join(root, "inside-link.txt"));
  const session = new RuntimeSession({ workspace: root });
  const ctx = createToolContext({
    session,
    toolId: "t",
    callId: "c",
    requires: { fs: { read: ["{workspace}/**"], write: ["{workspace}/**"] } },
    signal: new AbortController().signal,
  });
  cleanups.push(async () => {
    await session.close();
    await fsp.rm(root, { recursive: true, force: true });
    await fsp.rm(outside, { recursive: true, force: true });
  });
  return { root, outside, ctx };
}

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (err) {
    return err instanceof ToolError ? err.code : `threw ${String(err)}`;
  }
}

describe("ScopedFs path checks", () => {
  it("resolves relative paths against the workspace", async () => {
    const { root, ctx } = await setup();
    expect(await ctx.fs.resolve("dir/b.txt", "read")).toBe(path.join(root, "dir/b.txt"));
    expect(await ctx.fs.resolve("@dir/b.txt", "read")).toBe(path.join(root, "dir/b.txt"));
    expect(await ctx.fs.resolve(".", "read")).toBe(root);
  });

  it("refuses .. and absolute paths that leave the roots", async () => {
    const { outside, ctx } = await setup();
    expect(await codeOf(ctx.fs.resolve("../x", "read"))).toBe("outside_root");
    expect(await codeOf(ctx.fs.resolve("dir/../../x", "write"))).toBe("outside_root");
    expect(await codeOf(ctx.fs.resolve(path.join(outside, "secret.txt"), "read"))).toBe("outside_root");
    expect(await codeOf(ctx.fs.resolve("/etc/passwd", "read"))).toBe("outside_root");
    expect(await codeOf(ctx.fs.resolve("~/.ssh/id_rsa", "read"))).toBe("outside_root");
  });

  it("refuses symlinks that lead outside, also for files that do not exist yet", async () => {
    const { ctx } = await setup();
    expect(await codeOf(ctx.fs.resolve("secret-link.txt", "read"))).toBe("outside_root");
    expect(await codeOf(ctx.fs.readFile("out-link/secret.txt"))).toBe("outside_root");
    expect(await codeOf(ctx.fs.writeFile("out-link/new/deep.txt", "x"))).toBe("outside_root");
    expect(await codeOf(ctx.fs.resolve("inside-link.txt", "read"))).toBe("ok");
  });

  it("names the allowed roots in the error", async () => {
    const { root, ctx } = await setup();
    await expect(ctx.fs.resolve("/etc/passwd", "read")).rejects.toThrow(root);
  });
});

describe("atomic writes on disk", () => {
  it("keeps the file mode, writes through symlinks and leaves no temp files", async () => {
    const { root, ctx } = await setup();
    const script = path.join(root, "run.sh");
    await fsp.writeFile(script, "#!/bin/sh\n", { mode: 0o755 });
    await ctx.fs.writeFile("run.sh", "#!/bin/sh\necho hi\n");
    expect((await fsp.stat(script)).mode & 0o777).toBe(0o755);

    await ctx.fs.writeFile("inside-link.txt", "through the link");
    expect((await fsp.lstat(path.join(root, "inside-link.txt"))).isSymbolicLink()).toBe(true);
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("through the link");

    await ctx.fs.writeFile("new/nested/file.txt", "created");
    expect(await fsp.readFile(path.join(root, "new/nested/file.txt"), "utf8")).toBe("created");
    const leftovers = (await fsp.readdir(root, { recursive: true })).filter((f) => String(f).endsWith(".tmp"));
    expect(leftovers).toEqual([]);
  });

  it("removes temp files a killed writer left in a folder it writes into, and nothing else", async () => {
    const { root, ctx } = await setup();
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid!;
    const dir = path.join(root, "dir");
    const old = new Date(Date.now() - 5 * 60_000);
    const plant = async (name: string, mtime = old) => {
      await fsp.writeFile(path.join(dir, name), "half");
      await fsp.utimes(path.join(dir, name), mtime, mtime);
    };
    const deadTemp = `.b.txt.toolhost-${dead}-0123456789ab.tmp`;
    const liveTemp = `.b.txt.toolhost-${process.pid}-0123456789ab.tmp`;
    const freshDeadTemp = `.c.txt.toolhost-${dead}-ba9876543210.tmp`;
    const userFiles = [`.notes.toolhost-${dead}-draft.tmp`, `notes.toolhost-${dead}-0123456789ab.tmp`, `.b.txt.0123456789ab.tmp`];
    await plant(deadTemp);
    await plant(liveTemp);
    await plant(freshDeadTemp, new Date());
    for (const name of userFiles) await plant(name);
    await ctx.fs.writeFile("dir/new.txt", "written");
    const left = await fsp.readdir(dir);
    expect(left).not.toContain(deadTemp);
    expect(left).toEqual(expect.arrayContaining([liveTemp, freshDeadTemp, ...userFiles, "new.txt", "b.txt"]));
    expect(left.filter((f) => f.includes("new.txt"))).toEqual(["new.txt"]);
  });

  it("replaces the file with a new inode; a reader holding the old file still reads it whole", async () => {
    const { root, ctx } = await setup();
    const abs = path.join(root, "big.txt");
    const old = Buffer.alloc(4 * 1024 * 1024, "o");
    await fsp.writeFile(abs, old);
    const before = await fsp.stat(abs);
    const reader = await fsp.open(abs, "r");
    try {
      const first = Buffer.alloc(1024);
      await reader.read(first, 0, first.length);
      await ctx.fs.writeFile("big.txt", "new content\n");
      const after = await fsp.stat(abs);
      expect(after.ino).not.toBe(before.ino);
      expect(await fsp.readFile(abs, "utf8")).toBe("new content\n");
      // The reader that opened the old file goes on reading the old bytes, all of them.
      const rest = Buffer.alloc(old.length);
      const { bytesRead } = await reader.read(rest, 0, rest.length);
      expect(bytesRead).toBe(old.length - first.length);
      expect(Buffer.concat([first, rest.subarray(0, bytesRead)]).equals(old)).toBe(true);
    } finally {
      await reader.close();
    }
  });

  it("leaves the original intact, and no temp file, when a write fails part-way", async () => {
    const { root } = await setup();
    const abs = path.join(root, "keep.txt");
    await fsp.writeFile(abs, "the original\n");
    // A child process with a 32 KiB file-size limit (ulimit -f): the 1 MiB write fails with EFBIG
    // after the first 32 KiB reached the disk.
    const repo = fileURLToPath(new URL("../..", import.meta.url));
    const script = path.join(root, "write.mjs");
    await fsp.writeFile(
      script,
      [
        `import { createJiti } from ${JSON.stringify(path.join(repo, "node_modules/jiti/lib/jiti.mjs"))};`,
        `const { NodeFs } = await createJiti(import.meta.url).import(${JSON.stringify(path.join(repo, "src/runtime/fs/node.ts"))});`,
        `try { await new NodeFs().writeFileAtomic(process.argv[2], new Uint8Array(1024 * 1024).fill(65)); console.log("written"); }`,
        `catch (err) { console.log(err.code); }`,
      ].join("\n"),
    );
    const { stdout } = await promisify(execFile)("sh", ["-c", 'ulimit -f 64 && exec "$0" "$@"', process.execPath, script, abs]);
    expect(stdout.trim()).toBe("EFBIG");
    expect(await fsp.readFile(abs, "utf8")).toBe("the original\n");
    expect((await fsp.readdir(root)).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });

  it("never changes a hard-linked file's shared inode: the written path gets a new one, keeping its mode", async () => {
    const { root, ctx } = await setup();
    await fsp.link(path.join(root, "a.txt"), path.join(root, "hard.txt"));
    await fsp.chmod(path.join(root, "hard.txt"), 0o640);
    const before = await fsp.stat(path.join(root, "a.txt"));
    const original = await fsp.readFile(path.join(root, "a.txt"), "utf8");
    await ctx.fs.writeFile("hard.txt", "only this path sees this");
    expect(await fsp.readFile(path.join(root, "hard.txt"), "utf8")).toBe("only this path sees this");
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe(original);
    const [other, written] = await Promise.all([fsp.stat(path.join(root, "a.txt")), fsp.stat(path.join(root, "hard.txt"))]);
    expect(other.ino).toBe(before.ino);
    expect(other.nlink).toBe(1);
    expect(written.ino).not.toBe(before.ino);
    expect(written.mode & 0o777).toBe(0o640);
  });

  it("changes the version on every write, even within the same millisecond", async () => {
    const { ctx } = await setup();
    const first = await ctx.fs.writeFile("v.txt", "1");
    const second = await ctx.fs.writeFile("v.txt", "2");
    expect(first.version).not.toBe(second.version);
  });

  it("serialises work on one file", async () => {
    const { ctx } = await setup();
    const order: string[] = [];
    await Promise.all(
      ["x", "y", "z"].map((name, i) =>
        ctx.fs.withLock("a.txt", async () => {
          order.push(`start ${name}`);
          await new Promise((r) => setTimeout(r, 20 - i * 5));
          order.push(`end ${name}`);
        }),
      ),
    );
    expect(order).toEqual(["start x", "end x", "start y", "end y", "start z", "end z"]);
  });
});
