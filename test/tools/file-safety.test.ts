import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import edit from "../../src/tools/edit.js";
import read from "../../src/tools/read.js";
import write from "../../src/tools/write.js";
import { MemoryFs } from "../../src/runtime/fs/memory.js";
import { ToolError } from "../../src/tool/errors.js";
import { decodeChecked } from "../../src/tools/text.js";
import { BACKENDS, call, diskWorkspace, errorOf, output, tempDir, useWorkspace, type Workspace } from "../helpers.js";

const workspaces = useWorkspace();

/** Makes a workspace file read-only for everyone (chmod 444), on either backend. */
async function makeReadOnly(ws: Workspace, rel: string): Promise<void> {
  const abs = path.join(ws.root, rel);
  if (ws.session.fs instanceof MemoryFs) ws.session.fs.put(abs, (await ws.bytes(rel)) ?? "", 0o444);
  else await fsp.chmod(abs, 0o444);
}

const modeOf = async (ws: Workspace, rel: string) => ((await ws.session.fs.stat(path.join(ws.root, rel)))?.mode ?? 0) & 0o777;

describe.each(BACKENDS)("file tools on $name: read-only files", ({ make }) => {
  // CI runs as root, for whom access(W_OK) always succeeds: the mode bits must decide.
  it("refuses to write or edit a chmod 444 file, leaving it as it was", async () => {
    const ws = await workspaces.use(make({ "locked.txt": "keep me\n", "hard.txt": "linked\n" }));
    await makeReadOnly(ws, "locked.txt");
    // Refused before anyone is asked to approve a change that cannot be made.
    let asked = 0;
    const authorize = async () => (asked++, { outcome: "allow" as const });
    const viaWrite = errorOf(
      (await call(write, { path: "locked.txt", content: "replaced\n" }, ws.session, { authorize })).envelope,
      "permission_denied",
    );
    expect(viaWrite).toMatch(/read-only/);
    expect(viaWrite).toMatch(/chmod/);
    errorOf(
      (await call(edit, { path: "locked.txt", old_string: "keep", new_string: "lose" }, ws.session, { authorize })).envelope,
      "permission_denied",
    );
    expect(asked).toBe(0);
    expect(await ws.text("locked.txt")).toBe("keep me\n");
    expect(await modeOf(ws, "locked.txt")).toBe(0o444);
    if (ws.backend === "node") {
      // A hard-linked file: the same check holds there.
      await fsp.link(path.join(ws.root, "hard.txt"), path.join(ws.root, "hard2.txt"));
      await fsp.chmod(path.join(ws.root, "hard.txt"), 0o444);
      errorOf((await call(write, { path: "hard2.txt", content: "x\n" }, ws.session)).envelope, "permission_denied");
      expect(await ws.text("hard.txt")).toBe("linked\n");
    }
    // A writable file is still written.
    await call(write, { path: "free.txt", content: "ok\n" }, ws.session);
    expect(await ws.text("free.txt")).toBe("ok\n");
  });
});

describe("file tools on disk: hard links", () => {
  it("write and edit of a file hard-linked from outside the workspace leave the outside file and its inode alone", async () => {
    const ws = await workspaces.use(diskWorkspace({}));
    const outside = await tempDir({ "secret.txt": "outside content\n" });
    workspaces.defer(() => fsp.rm(outside, { recursive: true, force: true }));
    const outsideFile = path.join(outside, "secret.txt");
    const { ino } = await fsp.stat(outsideFile);
    for (const name of ["w.txt", "e.txt"]) await fsp.link(outsideFile, path.join(ws.root, name));

    output(await call(write, { path: "w.txt", content: "written in the workspace\n" }, ws.session).then((r) => r.envelope));
    output(await call(read, { path: "e.txt" }, ws.session).then((r) => r.envelope));
    output(await call(edit, { path: "e.txt", old_string: "outside", new_string: "edited" }, ws.session).then((r) => r.envelope));

    expect(await ws.text("w.txt")).toBe("written in the workspace\n");
    expect(await ws.text("e.txt")).toBe("edited content\n");
    expect(await fsp.readFile(outsideFile, "utf8")).toBe("outside content\n");
    const after = await fsp.stat(outsideFile);
    expect(after.ino).toBe(ino);
    expect(after.nlink).toBe(1);
    for (const name of ["w.txt", "e.txt"]) expect((await fsp.stat(path.join(ws.root, name))).ino).not.toBe(ino);
  });
});

describe.each(BACKENDS)("file tools on $name: hostile paths", ({ make }) => {
  it("refuses a NUL byte in a path with invalid_arguments, for every file tool", async () => {
    const ws = await workspaces.use(make({ "a.txt": "A\n" }));
    const calls = [
      [read, { path: "a.txt\0.md" }],
      [write, { path: "a\0b.txt", content: "x" }],
      [edit, { path: "a.txt\0", old_string: "A", new_string: "B" }],
    ] as const;
    for (const [tool, args] of calls) {
      const text = errorOf((await call(tool, args, ws.session)).envelope, "invalid_arguments");
      expect(text).toMatch(/NUL/);
      expect(text).not.toMatch(/at .*\.ts:\d+/);
    }
    expect(await ws.text("a.txt")).toBe("A\n");
  });

  it("does not name the session's sidecar folder among the allowed roots", async () => {
    const ws = await workspaces.use(make({}));
    const text = errorOf((await call(read, { path: "/etc/passwd" }, ws.session)).envelope, "outside_root");
    expect(text).toContain(ws.root);
    expect(text).not.toContain(ws.session.sidecars.dir);
    expect(text).not.toMatch(/sidecar/);
  });
});

describe.each(BACKENDS)("file tools on $name: files that are not valid UTF-8", ({ make }) => {
  // "café\nnaïve\n" in Latin-1: é and ï are single bytes that are invalid UTF-8.
  const latin1 = Buffer.from("caf\xe9\nna\xefve\nplain\n", "latin1");

  it("read flags a lossy decode in the result and says what it means", async () => {
    const ws = await workspaces.use(make({ "l1.txt": latin1, "ok.txt": "caf\u00e9 \uFFFD on purpose\n" }));
    const data = output<{ content: string; lossy?: boolean; notice: string }>((await call(read, { path: "l1.txt" }, ws.session)).envelope);
    expect(data.content).toContain("caf\uFFFD");
    expect(data.lossy).toBe(true);
    expect(data.notice).toMatch(/not valid UTF-8/);
    expect(data.notice).toMatch(/line 1/);
    expect(data.notice).toMatch(/allow_lossy/);
    const bytes = output<{ lossy?: boolean; notice: string }>((await call(read, { path: "l1.txt", byte_offset: 5 }, ws.session)).envelope);
    expect(bytes.lossy).toBe(true);
    expect(bytes.notice).toMatch(/not valid UTF-8/);
    // A real U+FFFD in valid UTF-8 is no loss.
    const fine = output<{ lossy?: boolean; notice: string }>((await call(read, { path: "ok.txt" }, ws.session)).envelope);
    expect(fine.lossy).toBeUndefined();
    expect(fine.notice).not.toMatch(/UTF-8/);
  });

  it("write and edit refuse to rewrite such a file unless allow_lossy is set", async () => {
    const ws = await workspaces.use(make({ "l1.txt": latin1, "l2.txt": latin1 }));
    const refused = errorOf((await call(write, { path: "l1.txt", content: "caf\uFFFD\nna\uFFFDve\nplain\nmore\n" }, ws.session)).envelope);
    expect(refused).toMatch(/not valid UTF-8/);
    expect(refused).toMatch(/allow_lossy: true/);
    const refusedEdit = errorOf((await call(edit, { path: "l2.txt", old_string: "plain", new_string: "PLAIN" }, ws.session)).envelope);
    expect(refusedEdit).toMatch(/allow_lossy: true/);
    expect(Buffer.from((await ws.bytes("l1.txt")) ?? []).equals(latin1)).toBe(true);
    expect(Buffer.from((await ws.bytes("l2.txt")) ?? []).equals(latin1)).toBe(true);

    output((await call(write, { path: "l1.txt", content: "caf\u00e9\n", allow_lossy: true }, ws.session)).envelope);
    expect(await ws.text("l1.txt")).toBe("caf\u00e9\n");
    const edited = output<{ notice?: string }>(
      (await call(edit, { path: "l2.txt", old_string: "plain", new_string: "PLAIN", allow_lossy: true }, ws.session)).envelope,
    );
    expect(edited.notice).toMatch(/U\+FFFD/);
    expect(await ws.text("l2.txt")).toBe("caf\uFFFD\nna\uFFFDve\nPLAIN\n");
  });
});

describe.each(BACKENDS)("file tools on $name: large files", ({ make }) => {
  // Over LARGE_DIFF_BYTES (2 MiB): the diff events carry the changed lines, not both whole texts.
  const big = `${"x".repeat(99)}\n`.repeat(30_000);

  it("edit sends the changed lines, not both 3 MB texts, and still reports the change", async () => {
    const ws = await workspaces.use(make({ "big.txt": `${big}MARK\n${big}` }));
    const { envelope, events } = await call(edit, { path: "big.txt", old_string: "MARK", new_string: "DONE" }, ws.session);
    const data = output<{ diff: string; first_changed_line: number }>(envelope);
    expect(data.first_changed_line).toBe(30_001);
    expect(data.diff).toContain("-MARK\n+DONE\n");
    expect(events).toHaveLength(1);
    const diff = events[0] as { type: "diff"; oldText: string; newText: string };
    expect(diff.type).toBe("diff");
    expect(diff.oldText.length).toBeLessThan(64 * 1024);
    expect(diff.oldText).toContain("MARK\n");
    expect(diff.newText).toContain("DONE\n");
    expect(diff.newText.replace("DONE", "MARK")).toBe(diff.oldText);
    expect((await ws.text("big.txt"))?.slice(3_000_000, 3_000_005)).toBe("DONE\n");
  });

  it("write of a large file sends the changed lines only", async () => {
    const ws = await workspaces.use(make({ "big.txt": `${big}MARK\n${big}` }));
    const { envelope, events } = await call(write, { path: "big.txt", content: `${big}DONE\nmore\n${big}` }, ws.session);
    expect(output<{ additions: number; deletions: number }>(envelope)).toMatchObject({ additions: 2, deletions: 1 });
    const diff = events[0] as { type: "diff"; oldText: string; newText: string };
    expect(diff.oldText.length).toBeLessThan(64 * 1024);
    expect(diff.newText).toContain("DONE\nmore\n");
    expect(diff.oldText).toContain("MARK\n");
  });
});

describe("the longest text a file tool can hold", () => {
  it("says what the limit is instead of calling a huge file invalid UTF-8", () => {
    const err = (() => {
      try {
        decodeChecked(Buffer.from("a".repeat(64)), 32);
      } catch (e) {
        return e as ToolError;
      }
    })();
    expect(err).toBeInstanceOf(ToolError);
    expect(err?.code).toBe("too_large");
    expect(err?.message).toMatch(/64 bytes/);
    expect(err?.message).toMatch(/longest string/);
    expect(err?.message).not.toMatch(/UTF-8/);
    expect(decodeChecked(Buffer.from("a".repeat(32)), 32).text).toHaveLength(32);
  });
});
