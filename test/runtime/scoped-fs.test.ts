import * as fsp from "node:fs/promises";
import path from "node:path";
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

  it("keeps hard links linked", async () => {
    const { root, ctx } = await setup();
    await fsp.link(path.join(root, "a.txt"), path.join(root, "hard.txt"));
    await ctx.fs.writeFile("hard.txt", "both see this");
    expect(await fsp.readFile(path.join(root, "a.txt"), "utf8")).toBe("both see this");
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
