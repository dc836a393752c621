import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import edit from "../../src/tools/edit.js";
import read from "../../src/tools/read.js";
import write from "../../src/tools/write.js";
import { MemoryFs } from "../../src/runtime/fs/memory.js";
import { BACKENDS, call, errorOf, output, useWorkspace, type Workspace } from "../helpers.js";

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
    const viaWrite = errorOf((await call(write, { path: "locked.txt", content: "replaced\n" }, ws.session)).envelope, "permission_denied");
    expect(viaWrite).toMatch(/read-only/);
    expect(viaWrite).toMatch(/chmod/);
    errorOf((await call(edit, { path: "locked.txt", old_string: "keep", new_string: "lose" }, ws.session)).envelope, "permission_denied");
    expect(await ws.text("locked.txt")).toBe("keep me\n");
    expect(await modeOf(ws, "locked.txt")).toBe(0o444);
    if (ws.backend === "node") {
      // A hard-linked file is written in place: the same check holds there.
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
