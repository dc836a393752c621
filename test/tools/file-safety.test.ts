import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import edit from "../../src/tools/edit.js";
import read from "../../src/tools/read.js";
import write from "../../src/tools/write.js";
import { MemoryFs } from "../../src/runtime/fs/memory.js";
import { BACKENDS, call, errorOf, useWorkspace, type Workspace } from "../helpers.js";

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
