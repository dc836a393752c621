import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import read from "../../src/tools/read.js";
import { detectPlaceholders, encodeText, newPlaceholders, placeholderOf } from "../../src/tools/text.js";
import write, { lineChanges, type WriteResult } from "../../src/tools/write.js";
import { BACKENDS, call, errorOf, hex, output, tempDir, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

describe.each(BACKENDS)("write on $name", ({ make }) => {
  const run = async (args: unknown) => call(write, args, workspaces.current.session);

  it("creates a file and its parent directories, exactly as given", async () => {
    const ws = await workspaces.use(make({}));
    const { envelope, events } = await run({ path: "deep/er/new.txt", content: "one\ntwo\n" });
    const data = output<WriteResult>(envelope);
    const abs = path.join(ws.root, "deep/er/new.txt");
    expect(data).toMatchObject({ path: abs, created: true, bytes: 8, lines: 2, additions: 2, deletions: 0 });
    expect(await ws.text("deep/er/new.txt")).toBe("one\ntwo\n");
    expect(events).toEqual([{ type: "diff", path: abs, oldText: null, newText: "one\ntwo\n" }]);
    expect(data.version).toBe((await ws.session.fs.stat(abs))?.version);
    expect(ws.session.readStamps.get(abs)).toBe(data.version);
  });

  it("overwrites a file, reporting the old and new text and the line changes", async () => {
    const ws = await workspaces.use(make({ "a.txt": "keep\nold\n" }));
    const { envelope, events } = await run({ path: "a.txt", content: "keep\nnew\nmore\n" });
    expect(output<WriteResult>(envelope)).toMatchObject({ created: false, additions: 2, deletions: 1, lines: 3 });
    expect(events).toEqual([{ type: "diff", path: path.join(ws.root, "a.txt"), oldText: "keep\nold\n", newText: "keep\nnew\nmore\n" }]);
    expect(await ws.text("a.txt")).toBe("keep\nnew\nmore\n");
  });

  it("turns schema failures into invalid_arguments envelopes", async () => {
    await workspaces.use(make({}));
    expect(errorOf((await run({ path: "a.txt" })).envelope, "invalid_arguments")).toMatch(/content/);
    expect(errorOf((await run({ path: "", content: "x" })).envelope, "invalid_arguments")).toMatch(/path/);
    expect(errorOf((await run({ path: "a.txt", content: 1 })).envelope, "invalid_arguments")).toMatch(/content/);
  });

  it("refuses a stale version and accepts the current one", async () => {
    const ws = await workspaces.use(make({ "a.txt": "v1\n" }));
    const version = output<{ version: string }>((await call(read, { path: "a.txt" }, ws.session)).envelope).version;
    const abs = path.join(ws.root, "a.txt");
    await ws.session.fs.writeFileAtomic(abs, Buffer.from("v2 from someone else\n"));
    const text = errorOf((await run({ path: "a.txt", content: "mine\n", version })).envelope, "stale_read");
    expect(text).toMatch(/changed since you read it .* Read it again/);
    expect(await ws.text("a.txt")).toBe("v2 from someone else\n");
    const fresh = output<{ version: string }>((await call(read, { path: "a.txt" }, ws.session)).envelope).version;
    output((await run({ path: "a.txt", content: "mine\n", version: fresh })).envelope);
    expect(await ws.text("a.txt")).toBe("mine\n");
    // The version of a file that has gone is stale too.
    expect(errorOf((await run({ path: "gone.txt", content: "x", version: fresh })).envelope, "stale_read")).toMatch(/no longer exists/);
  });

  it("refuses to write onto a directory, or below a file", async () => {
    await workspaces.use(make({ "d/x.txt": "x" }));
    expect(errorOf((await run({ path: "d", content: "x" })).envelope, "is_directory")).toMatch(/directory/);
    expect(errorOf((await run({ path: "d/x.txt/y.txt", content: "x" })).envelope, "not_found")).toMatch(/not a directory/);
  });

  it("keeps CRLF, a UTF-8 BOM and UTF-16, byte for byte", async () => {
    const ws = await workspaces.use(
      make({
        "crlf.txt": "a\r\nb\r\n",
        "bom.txt": "\uFEFFa\n",
        "le.txt": encodeText("a\r\n", "utf-16le"),
        "mixed.txt": "a\r\nb\n",
      }),
    );
    const crlf = output<WriteResult>((await run({ path: "crlf.txt", content: "x\ny\nz\n" })).envelope);
    expect(await ws.text("crlf.txt")).toBe("x\r\ny\r\nz\r\n");
    expect(crlf.notice).toMatch(/CRLF/);
    await run({ path: "bom.txt", content: "é\n" });
    expect(hex(await ws.bytes("bom.txt"))).toBe("efbbbf" + "c3a90a");
    await run({ path: "bom.txt", content: "\uFEFFagain\n" });
    expect(hex(await ws.bytes("bom.txt"))).toBe("efbbbf" + Buffer.from("again\n").toString("hex"));
    await run({ path: "le.txt", content: "hé\n" });
    expect(hex(await ws.bytes("le.txt"))).toBe(hex(encodeText("hé\r\n", "utf-16le")));
    // Mixed endings are no convention to enforce: written as given.
    await run({ path: "mixed.txt", content: "p\nq\n" });
    expect(await ws.text("mixed.txt")).toBe("p\nq\n");
    // New content that already has CRLF stays as it is.
    await run({ path: "crlf.txt", content: "m\r\nn" });
    expect(await ws.text("crlf.txt")).toBe("m\r\nn");
  });

  it("writes a new file as given: no BOM, LF", async () => {
    const ws = await workspaces.use(make({}));
    await run({ path: "n.txt", content: "a\nb" });
    expect(hex(await ws.bytes("n.txt"))).toBe(Buffer.from("a\nb").toString("hex"));
  });

  it("refuses new omission placeholders but not ones the file already had", async () => {
    const ws = await workspaces.use(make({ "doc.md": "Intro\n(rest of code ...)\n" }));
    const text = errorOf(
      (await run({ path: "a.ts", content: "class A {\n  // ... rest of the code ...\n}\n" })).envelope,
      "invalid_arguments",
    );
    expect(text).toMatch(/"rest of the code": a placeholder for omitted code.*complete content/);
    expect(await ws.text("a.ts")).toBeUndefined();
    output((await run({ path: "doc.md", content: "Intro v2\n(rest of code ...)\n" })).envelope);
  });

  it("replaces a binary file whole without diffing it", async () => {
    const ws = await workspaces.use(make({ "blob.bin": new Uint8Array([0, 1, 2, 3]) }));
    const { envelope, events } = await run({ path: "blob.bin", content: "text now\n" });
    expect(output<WriteResult>(envelope)).toMatchObject({ created: false, notice: "Replaced a binary file." });
    expect(events).toEqual([{ type: "diff", path: path.join(ws.root, "blob.bin"), oldText: null, newText: "text now\n" }]);
    expect(await ws.text("blob.bin")).toBe("text now\n");
  });

  it("does not rewrite identical content", async () => {
    const ws = await workspaces.use(make({ "a.txt": "same\n" }));
    const before = (await ws.session.fs.stat(path.join(ws.root, "a.txt")))?.version;
    const { envelope, events } = await run({ path: "a.txt", content: "same\n" });
    const data = output<WriteResult>(envelope);
    expect(events).toEqual([]);
    expect(data.version).toBe(before);
    expect(data.notice).toMatch(/nothing was written/);
  });

  it("refuses paths outside the workspace", async () => {
    await workspaces.use(make({}));
    expect(errorOf((await run({ path: "../evil.txt", content: "x" })).envelope, "outside_root")).toBeTruthy();
    expect(errorOf((await run({ path: "/tmp/evil-toolhost.txt", content: "x" })).envelope, "outside_root")).toBeTruthy();
  });

  it("serialises concurrent writes of one file", async () => {
    const ws = await workspaces.use(make({}));
    await Promise.all(Array.from({ length: 8 }, (_, i) => run({ path: "c.txt", content: `${i}\n`.repeat(1000) })));
    const text = (await ws.text("c.txt")) ?? "";
    expect(new Set(text.trim().split("\n")).size).toBe(1);
  });

  it("previews the diff before approval and writes nothing when refused", async () => {
    const ws = await workspaces.use(make({ "a.txt": "old\n" }));
    const { envelope, events } = await call(write, { path: "a.txt", content: "new\n" }, ws.session, {
      authorize: async () => ({ outcome: "deny", reason: "no" }),
    });
    expect(errorOf(envelope, "rejected")).toBe("no");
    expect(events).toEqual([{ type: "diff", path: path.join(ws.root, "a.txt"), oldText: "old\n", newText: "new\n" }]);
    expect(await ws.text("a.txt")).toBe("old\n");
  });

  it("publishes a title and locations", () => {
    expect(write.title?.({ path: "src/a.ts", content: "" })).toBe("Write src/a.ts");
    expect(write.locations?.({ path: "src/a.ts", content: "" }, { workspace: "/w" })).toEqual([{ path: "/w/src/a.ts", line: 1 }]);
  });
});

describe("write on disk only", () => {
  it("keeps the file mode and leaves no temp files", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({ "run.sh": "#!/bin/sh\necho old\n" }));
    const file = path.join(ws.root, "run.sh");
    await fsp.chmod(file, 0o755);
    output((await call(write, { path: "run.sh", content: "#!/bin/sh\necho new\n" }, ws.session)).envelope);
    expect((await fsp.stat(file)).mode & 0o777).toBe(0o755);
    expect(await fsp.readdir(ws.root)).toEqual(["run.sh"]);
  });

  it("refuses symlinks that lead outside, for existing and new files", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({}));
    const outside = await tempDir({ "target.txt": "outside\n" });
    workspaces.defer(() => fsp.rm(outside, { recursive: true, force: true }));
    await fsp.symlink(outside, path.join(ws.root, "link"));
    await fsp.symlink(path.join(outside, "target.txt"), path.join(ws.root, "file-link.txt"));
    const session = ws.session;
    expect(errorOf((await call(write, { path: "link/new.txt", content: "x" }, session)).envelope, "outside_root")).toMatch(/symbolic link/);
    expect(errorOf((await call(write, { path: "link/sub/new.txt", content: "x" }, session)).envelope, "outside_root")).toMatch(
      /symbolic link/,
    );
    expect(errorOf((await call(write, { path: "file-link.txt", content: "x" }, session)).envelope, "outside_root")).toMatch(
      /symbolic link/,
    );
    expect(await fsp.readdir(outside)).toEqual(["target.txt"]);
    expect(await fsp.readFile(path.join(outside, "target.txt"), "utf8")).toBe("outside\n");
  });

  it("refuses a dangling symlink that leads outside, keeping the link (issue 21)", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({}));
    const outside = await tempDir();
    workspaces.defer(() => fsp.rm(outside, { recursive: true, force: true }));
    await fsp.symlink(path.join(outside, "missing.txt"), path.join(ws.root, "dangling.txt"));
    await fsp.symlink("../../../../../../../../.." + path.join(outside, "rel.txt"), path.join(ws.root, "relative.txt"));
    await fsp.symlink(path.join(ws.root, "dangling.txt"), path.join(ws.root, "chain.txt"));
    await fsp.symlink(path.join(outside, "nodir"), path.join(ws.root, "dirlink"));
    for (const p of ["dangling.txt", "relative.txt", "chain.txt", "dirlink/new.txt"]) {
      expect(errorOf((await call(write, { path: p, content: "x" }, ws.session)).envelope, "outside_root"), p).toMatch(/symbolic link/);
    }
    expect((await fsp.lstat(path.join(ws.root, "dangling.txt"))).isSymbolicLink()).toBe(true);
    expect(await fsp.readdir(outside)).toEqual([]);
  });

  it("writes through a dangling symlink inside the workspace, creating its target", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({}));
    await fsp.symlink("sub/target.txt", path.join(ws.root, "alias.txt"));
    output((await call(write, { path: "alias.txt", content: "new\n" }, ws.session)).envelope);
    expect((await fsp.lstat(path.join(ws.root, "alias.txt"))).isSymbolicLink()).toBe(true);
    expect(await ws.text("sub/target.txt")).toBe("new\n");
  });

  it("writes through a symlink inside the workspace, keeping the link", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({ "real.txt": "old\n" }));
    await fsp.symlink(path.join(ws.root, "real.txt"), path.join(ws.root, "alias.txt"));
    output((await call(write, { path: "alias.txt", content: "new\n" }, ws.session)).envelope);
    expect((await fsp.lstat(path.join(ws.root, "alias.txt"))).isSymbolicLink()).toBe(true);
    expect(await ws.text("real.txt")).toBe("new\n");
  });
});

describe("lineChanges", () => {
  it("counts changed lines, and stays fast when every line changed", () => {
    expect(lineChanges("a\nb\nc\n", "a\nB\nc\nd\n")).toEqual({ additions: 2, deletions: 1 });
    expect(lineChanges("", "x\ny")).toEqual({ additions: 2, deletions: 0 });
    expect(lineChanges("x\n", "x\n")).toEqual({ additions: 0, deletions: 0 });
    const old = Array.from({ length: 20_000 }, (_, i) => `line ${i}`).join("\n");
    const started = performance.now();
    expect(lineChanges(old, old.toUpperCase())).toEqual({ additions: 20_000, deletions: 20_000 });
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

describe("omission placeholder detector", () => {
  it("catches the usual shapes", () => {
    for (const line of [
      "// ... rest of the code ...",
      "# ... existing code ...",
      "/* ... */ unchanged",
      "    // rest of methods ...",
      "{/* ... other components ... */}",
      "<!-- … remaining sections … -->",
      "-- ... same as before",
      "// ... (code omitted for brevity)",
      "(rest of code ...)",
      "// ...existing imports...",
    ]) {
      expect(placeholderOf(line), line).not.toBeNull();
    }
  });

  it("leaves real code and prose alone", () => {
    for (const line of [
      "// ...",
      "...",
      "const all = [...rest, ...other];",
      'console.log("loading...");',
      "# TODO: handle the rest later...",
      "def f(): ...",
      "// see the rest of the docs",
      "Please wait... the existing code will be migrated in a later release.",
    ]) {
      expect(placeholderOf(line), line).toBeNull();
    }
  });

  it("only reports placeholders the old text lacked", () => {
    expect(detectPlaceholders("a\n// ... existing code ...\nb\n# ... rest ...\n")).toEqual(["existing code", "rest"]);
    expect(newPlaceholders("// ... existing code ...", "x\n  // … existing code …\n")).toEqual([]);
    expect(newPlaceholders(null, "// ... existing code ...")).toEqual(["existing code"]);
  });
});
