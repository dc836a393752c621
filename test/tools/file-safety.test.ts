import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import edit from "../../src/tools/edit.js";
import read from "../../src/tools/read.js";
import write from "../../src/tools/write.js";
import { BACKENDS, call, errorOf, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

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
