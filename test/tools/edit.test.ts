import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import edit, { EDIT_DIFF_BYTES, editDiff, unifiedDiff, type EditResult } from "../../src/tools/edit.js";
import { applyCandidates, findMatches, nonOverlapping } from "../../src/tools/edit-match.js";
import read from "../../src/tools/read.js";
import { encodeText } from "../../src/tools/text.js";
import { BACKENDS, call, errorOf, hex, output, tempDir, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

describe.each(BACKENDS)("edit on $name", ({ make }) => {
  const run = async (args: unknown) => call(edit, args, workspaces.current.session);
  const ok = async (args: unknown) => output<EditResult>((await run(args)).envelope);

  it("replaces a unique exact match and returns a unified diff", async () => {
    const ws = await workspaces.use(make({ "src/a.ts": "one\ntwo\nthree\nfour\nfive\nsix\nseven\n" }));
    const { envelope, events } = await run({ path: "src/a.ts", old_string: "four", new_string: "FOUR" });
    const data = output<EditResult>(envelope);
    const abs = path.join(ws.root, "src/a.ts");
    expect(data).toMatchObject({ path: abs, replacements: 1, first_changed_line: 4, match: "exact" });
    expect(data.diff).toBe("--- src/a.ts\n+++ src/a.ts\n@@ -1,7 +1,7 @@\n one\n two\n three\n-four\n+FOUR\n five\n six\n seven\n");
    expect(await ws.text("src/a.ts")).toBe("one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n");
    expect(events).toEqual([
      {
        type: "diff",
        path: abs,
        oldText: "one\ntwo\nthree\nfour\nfive\nsix\nseven\n",
        newText: "one\ntwo\nthree\nFOUR\nfive\nsix\nseven\n",
      },
    ]);
    expect(data.version).toBe((await ws.session.fs.stat(abs))?.version);
    expect(ws.session.readStamps.get(abs)).toBe(data.version);
  });

  it("turns schema failures into invalid_arguments envelopes", async () => {
    await workspaces.use(make({ "a.txt": "x" }));
    expect(errorOf((await run({ path: "a.txt", new_string: "y" })).envelope, "invalid_arguments")).toMatch(/old_string/);
    expect(
      errorOf((await run({ path: "a.txt", old_string: "x", new_string: "y", replace_all: "yes" })).envelope, "invalid_arguments"),
    ).toMatch(/replace_all/);
  });

  it("refuses an ambiguous match with the count and lines, and replace_all changes every one", async () => {
    const ws = await workspaces.use(make({ "a.ts": "x = 1;\ny = 2;\nx = 1;\nz = 3;\nx = 1;\n" }));
    const text = errorOf((await run({ path: "a.ts", old_string: "x = 1;", new_string: "x = 9;" })).envelope, "ambiguous_match");
    expect(text).toMatch(/matches 3 places in a\.ts: lines 1, 3, 5\. Add surrounding lines .* or set replace_all: true/);
    expect(await ws.text("a.ts")).toBe("x = 1;\ny = 2;\nx = 1;\nz = 3;\nx = 1;\n");
    const data = await ok({ path: "a.ts", old_string: "x = 1;", new_string: "x = 9;", replace_all: true });
    expect(data.replacements).toBe(3);
    expect(await ws.text("a.ts")).toBe("x = 9;\ny = 2;\nx = 9;\nz = 3;\nx = 9;\n");
  });

  it("keeps $ patterns in new_string literal, also with replace_all", async () => {
    const ws = await workspaces.use(make({ "a.js": "a = X;\nb = X;\n" }));
    await ok({ path: "a.js", old_string: "a = X", new_string: "a = $&$1$$" });
    await ok({ path: "a.js", old_string: "X", new_string: "$'", replace_all: true });
    expect(await ws.text("a.js")).toBe("a = $&$1$$;\nb = $';\n");
  });

  it("falls back through the fuzzy tiers and rewrites only the matched bytes", async () => {
    const ws = await workspaces.use(
      make({
        "quotes.py": "msg = \u201chello\u201d  \nother = \u2018x\u2019 \u2014 y\n",
        "trail.txt": "keep   \nalpha  \nbeta\t\nkeep2   \n",
        "indent.ts": "function f() {\n\tif (a) {\n\t\tb();\n\t}\n}\n",
        "esc.js": 'print("a")\nprint("it\'s")\n',
      }),
    );
    const uni = await ok({ path: "quotes.py", old_string: 'msg = "hello"', new_string: 'msg = "bye"' });
    expect(uni.match).toBe("unicode");
    expect(uni.notice).toMatch(/folding unicode/);
    expect(await ws.text("quotes.py")).toBe('msg = "bye"  \nother = \u2018x\u2019 \u2014 y\n');

    const trail = await ok({ path: "trail.txt", old_string: "alpha\nbeta", new_string: "ALPHA\nBETA" });
    expect(trail.match).toBe("trailing_whitespace");
    expect(await ws.text("trail.txt")).toBe("keep   \nALPHA\nBETA\t\nkeep2   \n");

    const ind = await ok({ path: "indent.ts", old_string: "if (a) {\n\tb();\n}", new_string: "if (a) {\n\tb();\n\tc();\n}" });
    expect(ind.match).toBe("indentation");
    expect(ind.first_changed_line).toBe(4);
    expect(await ws.text("indent.ts")).toBe("function f() {\n\tif (a) {\n\t\tb();\n\t\tc();\n\t}\n}\n");

    const esc = await ok({ path: "esc.js", old_string: 'print(\\"it\\\'s\\")', new_string: 'print(\\"it is\\")' });
    expect(esc.match).toBe("unescaped");
    expect(await ws.text("esc.js")).toBe('print("a")\nprint("it is")\n');
  });

  it("says where a failed match differs and what to do", async () => {
    await workspaces.use(make({ "a.ts": "function f() {\n  return 1;\n}\n" }));
    const text = errorOf((await run({ path: "a.ts", old_string: "function f() {\n  return 2;\n}", new_string: "x" })).envelope, "no_match");
    expect(text).toMatch(/not found in a\.ts\. .*line 2 differs: the file has " {2}return 1;".*Read the file again/);
  });

  it("refuses no-op edits", async () => {
    const ws = await workspaces.use(make({ "a.txt": "same  \n" }));
    expect(errorOf((await run({ path: "a.txt", old_string: "same", new_string: "same" })).envelope, "no_change")).toMatch(/identical/);
    // Matches only after ignoring trailing whitespace, and the replacement equals what is there.
    expect(errorOf((await run({ path: "a.txt", old_string: "same \n", new_string: "same  \n" })).envelope, "no_change")).toMatch(
      /would not change/,
    );
    expect(await ws.text("a.txt")).toBe("same  \n");
  });

  it("refuses an empty old_string on an existing file, and creates a missing file with it", async () => {
    const ws = await workspaces.use(make({ "a.txt": "x\n" }));
    expect(errorOf((await run({ path: "a.txt", old_string: "", new_string: "y" })).envelope, "invalid_arguments")).toMatch(/use write/);
    const { envelope, events } = await run({ path: "new/b.txt", old_string: "", new_string: "hello $&\n" });
    const data = output<EditResult>(envelope);
    expect(data).toMatchObject({ created: true, first_changed_line: 1 });
    expect(data.diff).toContain("+hello $&");
    expect(await ws.text("new/b.txt")).toBe("hello $&\n");
    expect(events).toEqual([{ type: "diff", path: path.join(ws.root, "new/b.txt"), oldText: null, newText: "hello $&\n" }]);
  });

  it("reports a missing file with near names", async () => {
    await workspaces.use(make({ "src/config.ts": "x" }));
    const text = errorOf((await run({ path: "src/confg.ts", old_string: "x", new_string: "y" })).envelope, "not_found");
    expect(text).toMatch(/Did you mean src\/config\.ts\?/);
  });

  it("refuses binary files and text it cannot decode losslessly", async () => {
    const ws = await workspaces.use(
      make({ "a.bin2": new Uint8Array([0x61, 0, 0x62]), "latin1.txt": new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]) }),
    );
    expect(errorOf((await run({ path: "a.bin2", old_string: "a", new_string: "b" })).envelope, "binary_file")).toMatch(/binary file/);
    expect(errorOf((await run({ path: "latin1.txt", old_string: "caf", new_string: "CAF" })).envelope, "binary_file")).toMatch(
      /not valid UTF-8/,
    );
    expect(hex(await ws.bytes("latin1.txt"))).toBe("636166e90a");
  });

  it("refuses an edit of a file changed since the session read it", async () => {
    const ws = await workspaces.use(make({ "a.txt": "alpha\nbeta\n" }));
    await call(read, { path: "a.txt" }, ws.session);
    const abs = path.join(ws.root, "a.txt");
    await ws.session.fs.writeFileAtomic(abs, Buffer.from("alpha\nbeta\ngamma\n"));
    const text = errorOf((await run({ path: "a.txt", old_string: "beta", new_string: "BETA" })).envelope, "stale_read");
    expect(text).toMatch(/modified since you last read it.*Read it again/);
    expect(await ws.text("a.txt")).toBe("alpha\nbeta\ngamma\n");
    await call(read, { path: "a.txt" }, ws.session);
    await ok({ path: "a.txt", old_string: "beta", new_string: "BETA" });
    // The edit's own write is recorded, so a second edit needs no new read.
    await ok({ path: "a.txt", old_string: "gamma", new_string: "GAMMA" });
    expect(await ws.text("a.txt")).toBe("alpha\nBETA\nGAMMA\n");
  });

  it("keeps CRLF, the BOM and UTF-16 byte for byte", async () => {
    const ws = await workspaces.use(
      make({
        "crlf.txt": "\uFEFFa\r\nb\r\nc\r\n",
        "mixed.txt": "a\r\nb\nc\r\n",
        "le.txt": encodeText("x\r\ny\r\n", "utf-16le"),
        "be.txt": encodeText("x\ny\n", "utf-16be"),
      }),
    );
    await ok({ path: "crlf.txt", old_string: "b\nc\n", new_string: "B\nC\nD\n" });
    expect(hex(await ws.bytes("crlf.txt"))).toBe("efbbbf" + Buffer.from("a\r\nB\r\nC\r\nD\r\n").toString("hex"));
    await ok({ path: "mixed.txt", old_string: "b", new_string: "b1\nb2" });
    expect(await ws.text("mixed.txt")).toBe("a\r\nb1\nb2\nc\r\n");
    await ok({ path: "le.txt", old_string: "y", new_string: "ÿ\nz" });
    expect(hex(await ws.bytes("le.txt"))).toBe(hex(encodeText("x\r\nÿ\r\nz\r\n", "utf-16le")));
    await ok({ path: "be.txt", old_string: "x\n", new_string: "😀\n" });
    expect(hex(await ws.bytes("be.txt"))).toBe(hex(encodeText("😀\ny\n", "utf-16be")));
  });

  it("refuses new omission placeholders in new_string", async () => {
    await workspaces.use(make({ "a.ts": "function f() {\n  a();\n  b();\n}\n" }));
    const text = errorOf(
      (await run({ path: "a.ts", old_string: "  a();\n  b();", new_string: "  a();\n  // ... existing code ...\n  c();" })).envelope,
      "invalid_arguments",
    );
    expect(text).toMatch(/"existing code": a placeholder/);
  });

  it("serialises concurrent edits of one file", async () => {
    const ws = await workspaces.use(make({ "a.txt": Array.from({ length: 10 }, (_, i) => `line ${i}`).join("\n") + "\n" }));
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) => run({ path: "a.txt", old_string: `line ${i}\n`, new_string: `LINE ${i}\n` })),
    );
    for (const r of results) output(r.envelope);
    expect(await ws.text("a.txt")).toBe(Array.from({ length: 10 }, (_, i) => `LINE ${i}`).join("\n") + "\n");
  });

  it("refuses paths outside the workspace", async () => {
    await workspaces.use(make({}));
    expect(errorOf((await run({ path: "../x.txt", old_string: "", new_string: "x" })).envelope, "outside_root")).toBeTruthy();
    expect(errorOf((await run({ path: "/etc/hosts", old_string: "a", new_string: "b" })).envelope, "outside_root")).toBeTruthy();
  });

  it("refuses directories", async () => {
    await workspaces.use(make({ "d/x": "x" }));
    expect(errorOf((await run({ path: "d", old_string: "a", new_string: "b" })).envelope, "is_directory")).toBeTruthy();
  });

  it("previews the diff before approval; a refused edit writes nothing and a failing one asks nobody", async () => {
    const ws = await workspaces.use(make({ "a.ts": "a = 1;\nb = 2;\n" }));
    const asked: string[] = [];
    const deny = async () => {
      asked.push("asked");
      return { outcome: "deny" as const, reason: "rejected by the user" };
    };
    const { envelope, events } = await call(edit, { path: "a.ts", old_string: "b = 2", new_string: "b = 3" }, ws.session, {
      authorize: deny,
    });
    expect(errorOf(envelope, "rejected")).toMatch(/rejected/);
    expect(events).toEqual([{ type: "diff", path: path.join(ws.root, "a.ts"), oldText: "a = 1;\nb = 2;\n", newText: "a = 1;\nb = 3;\n" }]);
    expect(await ws.text("a.ts")).toBe("a = 1;\nb = 2;\n");
    const failed = await call(edit, { path: "a.ts", old_string: "c = 3", new_string: "x" }, ws.session, { authorize: deny });
    expect(errorOf(failed.envelope, "no_match")).toBeTruthy();
    expect(asked).toHaveLength(1);
  });

  it("plans again at execution: a change made while approval was pending is kept", async () => {
    const ws = await workspaces.use(make({ "a.ts": "a = 1;\nb = 2;\n" }));
    const abs = path.join(ws.root, "a.ts");
    const session = ws.session;
    const { envelope, events } = await call(edit, { path: "a.ts", old_string: "b = 2", new_string: "b = 3" }, session, {
      authorize: async () => {
        await session.fs.writeFileAtomic(abs, Buffer.from("a = 0;\nb = 2;\n"));
        return { outcome: "allow" };
      },
    });
    output(envelope);
    expect(await ws.text("a.ts")).toBe("a = 0;\nb = 3;\n");
    expect(events.map((e) => (e.type === "diff" ? e.oldText : null))).toEqual(["a = 1;\nb = 2;\n", "a = 0;\nb = 2;\n"]);
  });

  it("publishes a title and locations", () => {
    expect(edit.title?.({ path: "src/a.ts", old_string: "a", new_string: "b" })).toBe("Edit src/a.ts");
    expect(edit.locations?.({ path: "src/a.ts", old_string: "a", new_string: "b" }, { workspace: "/w" })).toEqual([
      { path: "/w/src/a.ts" },
    ]);
  });
});

describe("edit on disk only", () => {
  it("keeps the file mode and leaves no temp files", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({ "run.sh": "#!/bin/sh\necho old\n" }));
    await fsp.chmod(path.join(ws.root, "run.sh"), 0o755);
    output((await call(edit, { path: "run.sh", old_string: "old", new_string: "new" }, ws.session)).envelope);
    expect((await fsp.stat(path.join(ws.root, "run.sh"))).mode & 0o777).toBe(0o755);
    expect(await fsp.readdir(ws.root)).toEqual(["run.sh"]);
    expect(await ws.text("run.sh")).toBe("#!/bin/sh\necho new\n");
  });

  it("refuses symlinks that lead outside, for existing and new files", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({}));
    const outside = await tempDir({ "t.txt": "outside\n" });
    workspaces.defer(() => fsp.rm(outside, { recursive: true, force: true }));
    await fsp.symlink(outside, path.join(ws.root, "link"));
    const s = ws.session;
    expect(
      errorOf((await call(edit, { path: "link/t.txt", old_string: "outside", new_string: "x" }, s)).envelope, "outside_root"),
    ).toBeTruthy();
    expect(errorOf((await call(edit, { path: "link/new.txt", old_string: "", new_string: "x" }, s)).envelope, "outside_root")).toBeTruthy();
    expect(await fsp.readdir(outside)).toEqual(["t.txt"]);
    expect(await fsp.readFile(path.join(outside, "t.txt"), "utf8")).toBe("outside\n");
  });

  it("refuses a dangling symlink that leads outside (issue 21)", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({}));
    const outside = await tempDir();
    workspaces.defer(() => fsp.rm(outside, { recursive: true, force: true }));
    await fsp.symlink(path.join(outside, "missing.txt"), path.join(ws.root, "dangling.txt"));
    const env = (await call(edit, { path: "dangling.txt", old_string: "", new_string: "x" }, ws.session)).envelope;
    expect(errorOf(env, "outside_root")).toMatch(/symbolic link to .*missing\.txt/);
    expect((await fsp.lstat(path.join(ws.root, "dangling.txt"))).isSymbolicLink()).toBe(true);
    expect(await fsp.readdir(outside)).toEqual([]);
  });
});

describe("edit diffs", () => {
  const lines = (n: number, f = (i: number) => `line ${i}`) => Array.from({ length: n }, (_, i) => f(i)).join("\n") + "\n";

  it("diffs only the touched regions, with the same result as a whole-file diff", () => {
    const old = lines(60);
    const cases: [string, string, boolean][] = [
      ["line 5\n", "five\nand more\n", false],
      ["line 1", "LINE 1", true], // line 1, 10-19: regions merge and split
      ["line 58\nline 59\n", "", false],
      ["line 0\n", "", false],
    ];
    for (const [o, n, all] of cases) {
      const found = findMatches(old, o, n)!;
      const chosen = all ? nonOverlapping(found.candidates) : found.candidates;
      const neu = applyCandidates(old, chosen);
      expect(editDiff("f", old, neu, chosen), o).toBe(unifiedDiff("f", old, neu));
    }
  });

  it("shows CRLF files without carriage returns", () => {
    const old = "a\r\nb\r\n";
    const found = findMatches(old, "b", "c")!;
    expect(editDiff("f", old, applyCandidates(old, found.candidates), found.candidates)).toBe(
      "--- f\n+++ f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n",
    );
  });

  it("cuts a long diff of many separate hunks at 20 KB", () => {
    const old = lines(2000, (i) => (i % 10 === 0 ? `target ${"x".repeat(200)}` : `filler ${i} ${"y".repeat(200)}`));
    const chosen = nonOverlapping(findMatches(old, "target", "TARGET")!.candidates);
    expect(chosen).toHaveLength(200);
    const diff = editDiff("f", old, applyCandidates(old, chosen), chosen);
    expect(Buffer.byteLength(diff)).toBeLessThanOrEqual(EDIT_DIFF_BYTES + 100);
    expect(diff).toMatch(/\n… \(diff cut at 20 KB; read the file to see the rest\)\n$/);
    expect(diff).toContain("@@ -8,7 +8,7 @@");
  });

  it("stays fast and capped for a replace_all over thousands of lines", async () => {
    const ws = await workspaces.use(BACKENDS[1].make({ "big.txt": lines(20_000) }));
    const started = performance.now();
    const data = output<EditResult>(
      (await call(edit, { path: "big.txt", old_string: "line", new_string: "LINE", replace_all: true }, ws.session)).envelope,
    );
    expect(performance.now() - started).toBeLessThan(3000);
    expect(data.replacements).toBe(20_000);
    expect(Buffer.byteLength(data.diff)).toBeLessThan(EDIT_DIFF_BYTES + 200);
    expect(data.diff).toMatch(/^--- big\.txt\n\+\+\+ big\.txt\n@@ -1,/);
    expect(data.diff).toMatch(/diff cut; read the file/);
  });
});
