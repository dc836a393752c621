import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import read from "../../src/tools/read.js";
import { binaryReason, decodeText, detectLineEnding, encodeText, nearNames } from "../../src/tools/text.js";
import { BACKENDS, call, errorOf, output, tempDir, useWorkspace } from "../helpers.js";

interface FileData {
  path: string;
  type: "file";
  content: string;
  start_line: number;
  end_line: number;
  total_lines: number | null;
  next_offset: number | null;
  version: string;
  encoding: string;
  notice: string;
}
interface ByteData {
  content: string;
  byte_offset: number;
  byte_end: number;
  next_byte_offset: number | null;
  total_bytes: number;
  notice: string;
}
interface DirData {
  type: "directory";
  entries: string[];
  total: number;
  content: string;
  next_offset: number | null;
  notice: string;
}

const numbered = (n: number, prefix = "line") => Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`).join("\n") + "\n";

const workspaces = useWorkspace();

describe.each(BACKENDS)("read on $name", ({ name, make }) => {
  const run = async (args: unknown) => (await call(read, args, workspaces.current.session)).envelope;

  it("numbers lines, reports the end of file and records a read stamp", async () => {
    const ws = await workspaces.use(make({ "src/a.ts": "const a = 1;\nconst b = 2;\n" }));
    const env = await run({ path: "src/a.ts" });
    const data = output<FileData>(env);
    expect(data.content).toBe("1\tconst a = 1;\n2\tconst b = 2;");
    expect(data).toMatchObject({
      path: path.join(ws.root, "src/a.ts"),
      type: "file",
      start_line: 1,
      end_line: 2,
      total_lines: 2,
      next_offset: null,
    });
    expect(data.notice).toBe("Showing lines 1-2. End of file (2 lines).");
    expect(data.encoding).toBe("utf-8");
    expect(env.metadata.truncated).toBeUndefined();
    const stat = await ws.session.fs.stat(data.path);
    expect(data.version).toBe(stat?.version);
    expect(ws.session.readStamps.get(data.path)).toBe(data.version);
  });

  it("counts a last line without a line break and right-aligns the numbers", async () => {
    await workspaces.use(make({ "a.txt": numbered(12).trimEnd() }));
    const data = output<FileData>(await run({ path: "a.txt", offset: 8 }));
    expect(data.content.split("\n")).toEqual([" 8\tline 8", " 9\tline 9", "10\tline 10", "11\tline 11", "12\tline 12"]);
    expect(data.total_lines).toBe(12);
  });

  it("turns schema failures into invalid_arguments envelopes", async () => {
    await workspaces.use(make({ "a.txt": "x\n" }));
    expect(errorOf(await run({}), "invalid_arguments")).toMatch(/path/);
    expect(errorOf(await run({ path: 5 }), "invalid_arguments")).toMatch(/path/);
    expect(errorOf(await run({ path: "a.txt", offset: 0 }), "invalid_arguments")).toMatch(/offset/);
    expect(errorOf(await run({ path: "a.txt", byte_limit: 10 ** 9 }), "invalid_arguments")).toMatch(/byte_limit/);
    expect(errorOf(await run({ path: "a.txt", offset: 2, byte_offset: 0 }), "invalid_arguments")).toMatch(/not both/);
  });

  it("suggests near names for a missing file", async () => {
    await workspaces.use(make({ "src/index.ts": "", "src/Index.tsx": "", "src/other.ts": "", "src/util.ts": "" }));
    const text = errorOf(await run({ path: "src/indx.ts" }), "not_found");
    expect(text).toContain("Did you mean");
    expect(text).toContain("src/index.ts");
    expect(text).not.toContain("other.ts");
    expect(errorOf(await run({ path: "src/INDEX.TS" }), "not_found")).toContain("src/index.ts");
    expect(errorOf(await run({ path: "nope/x.ts" }), "not_found")).toMatch(/does not exist either/);
  });

  it("refuses binary files by content and by extension", async () => {
    await workspaces.use(
      make({ "blob.bin2": new Uint8Array([0x41, 0x00, 0x42]), "img.png": "not really a png", "ctl.txt": new Uint8Array(100).fill(1) }),
    );
    expect(errorOf(await run({ path: "blob.bin2" }), "binary_file")).toMatch(
      /binary file \(it contains NUL bytes\); it cannot be read as text/,
    );
    expect(errorOf(await run({ path: "img.png" }), "binary_file")).toMatch(/\.png/);
    expect(errorOf(await run({ path: "ctl.txt" }), "binary_file")).toMatch(/control characters/);
  });

  it("lists a directory sorted, with / after directories, paged by offset/limit", async () => {
    await workspaces.use(make({ "d/b.ts": "", "d/a.ts": "", "d/sub/x": "", "d/c/y": "" }));
    const all = output<DirData>(await run({ path: "d" }));
    expect(all.entries).toEqual(["a.ts", "b.ts", "c/", "sub/"]);
    expect(all).toMatchObject({ type: "directory", total: 4, content: "a.ts\nb.ts\nc/\nsub/", next_offset: null });
    const page = output<DirData>(await run({ path: "d", offset: 2, limit: 2 }));
    expect(page.entries).toEqual(["b.ts", "c/"]);
    expect(page.next_offset).toBe(4);
    expect(page.notice).toMatch(/Continue with offset=4/);
    expect(errorOf(await run({ path: "d", offset: 9 }), "invalid_arguments")).toMatch(/4 entries/);
  });

  it("refuses paths outside the workspace", async () => {
    await workspaces.use(make({ "a.txt": "x\n" }));
    expect(errorOf(await run({ path: "../outside.txt" }), "outside_root")).toMatch(/outside/);
    expect(errorOf(await run({ path: "sub/../../x" }), "outside_root")).toMatch(/outside/);
    expect(errorOf(await run({ path: "/etc/passwd" }), "outside_root")).toMatch(/outside/);
  });

  it("shows CRLF as one line break, strips a UTF-8 BOM and decodes UTF-16", async () => {
    await workspaces.use(
      make({
        "crlf.txt": "one\r\ntwo\r\n",
        "bom.txt": "\uFEFFhello\nworld",
        "le.txt": encodeText("héllo\nwörld ✓\n", "utf-16le"),
        "be.txt": encodeText("héllo\r\nwörld 😀", "utf-16be"),
      }),
    );
    expect(output<FileData>(await run({ path: "crlf.txt" })).content).toBe("1\tone\n2\ttwo");
    const bom = output<FileData>(await run({ path: "bom.txt" }));
    expect(bom.content).toBe("1\thello\n2\tworld");
    expect(bom.encoding).toBe("utf-8-bom");
    const le = output<FileData>(await run({ path: "le.txt" }));
    expect(le).toMatchObject({ content: "1\théllo\n2\twörld ✓", encoding: "utf-16le", total_lines: 2 });
    const be = output<FileData>(await run({ path: "be.txt" }));
    expect(be).toMatchObject({ content: "1\théllo\n2\twörld 😀", encoding: "utf-16be", total_lines: 2 });
    // A UTF-16 range starts at the code unit holding byte_offset.
    const range = output<ByteData>(await run({ path: "be.txt", byte_offset: 3, byte_limit: 8 }));
    expect(range).toMatchObject({ content: "héll", byte_offset: 2, byte_end: 10 });
  });

  it("says when a file is empty, and refuses an offset past the end", async () => {
    await workspaces.use(make({ "empty.txt": "", "three.txt": "a\nb\nc\n" }));
    const empty = output<FileData>(await run({ path: "empty.txt" }));
    expect(empty).toMatchObject({ content: "", total_lines: 0, next_offset: null });
    expect(empty.notice).toMatch(/empty/);
    expect(errorOf(await run({ path: "three.txt", offset: 4 }), "invalid_arguments")).toMatch(/past the end of three\.txt: it has 3 lines/);
    expect(errorOf(await run({ path: "empty.txt", offset: 2 }), "invalid_arguments")).toMatch(/empty/);
  });

  it("pages through a long file with offset and limit", async () => {
    await workspaces.use(make({ "long.txt": numbered(5000) }));
    const first = output<FileData>(await run({ path: "long.txt" }));
    expect(first).toMatchObject({ start_line: 1, end_line: 2000, next_offset: 2001, total_lines: null });
    expect(first.notice).toBe("Showing lines 1-2000. Continue with offset=2001.");
    expect(first.content.split("\n")[1999]).toBe("2000\tline 2000");
    const last = output<FileData>(await run({ path: "long.txt", offset: 4001 }));
    expect(last).toMatchObject({ start_line: 4001, end_line: 5000, next_offset: null, total_lines: 5000 });
    const mid = output<FileData>(await run({ path: "long.txt", offset: 10, limit: 3 }));
    expect(mid.content).toBe("10\tline 10\n11\tline 11\n12\tline 12");
    expect(mid.next_offset).toBe(13);
    // A window that ends exactly at the last line is the end of the file.
    expect(output<FileData>(await run({ path: "long.txt", offset: 4991, limit: 10 })).next_offset).toBeNull();
  });

  it("stops the window below 200 KB at a line boundary, so the host never truncates", async () => {
    const line = "x".repeat(199);
    await workspaces.use(make({ "wide.txt": Array.from({ length: 2000 }, () => line).join("\n") }));
    const env = await run({ path: "wide.txt" });
    const data = output<FileData>(env);
    expect(env.metadata.truncated).toBeUndefined();
    expect(Buffer.byteLength(data.content)).toBeLessThanOrEqual(200 * 1024);
    expect(data.end_line).toBeLessThan(2000);
    expect(data.end_line).toBeGreaterThan(900);
    expect(data.next_offset).toBe(data.end_line + 1);
    expect(data.notice).toMatch(/capped at 200 KB\)\. Continue with offset=/);
  });

  it("starts and stops a UTF-8 byte window on whole characters", async () => {
    // x (1 byte) € (bytes 1-3) 😀 (bytes 4-7) y (byte 8)
    await workspaces.use(make({ "u.txt": "x€😀y" }));
    // From inside €, through all of 😀: the window moves to 😀's first byte.
    expect(output<ByteData>(await run({ path: "u.txt", byte_offset: 2, byte_limit: 6 }))).toMatchObject({
      content: "😀",
      byte_offset: 4,
      byte_end: 8,
      next_byte_offset: 8,
    });
    // Ending inside 😀: the window stops before it, and the next one starts there.
    expect(output<ByteData>(await run({ path: "u.txt", byte_offset: 1, byte_limit: 5 }))).toMatchObject({
      content: "€",
      byte_offset: 1,
      byte_end: 4,
      next_byte_offset: 4,
    });
  });

  it("cuts long lines and reads them whole with byte_offset/byte_limit", async () => {
    const long = "é" + "a".repeat(4999);
    await workspaces.use(make({ "min.js": `short\n${long}\nend\n` }));
    const data = output<FileData>(await run({ path: "min.js" }));
    const [, second] = data.content.split("\n");
    expect(second).toMatch(/^2\té(a){1999}… \(line truncated to 2000 chars; it is 5001 bytes from byte 6: use byte_offset\/byte_limit/);
    const whole = output<ByteData>(await run({ path: "min.js", byte_offset: 6, byte_limit: 5001 }));
    expect(whole.content).toBe(long);
    expect(whole.next_byte_offset).toBe(6 + 5001);
    // A range starting inside "é" skips to the next character; one ending inside a character stops before it.
    const inside = output<ByteData>(await run({ path: "min.js", byte_offset: 7, byte_limit: 3 }));
    expect(inside).toMatchObject({ content: "aa", byte_offset: 8, byte_end: 10 });
    const cut = output<ByteData>(await run({ path: "min.js", byte_offset: 5, byte_limit: 2 }));
    expect(cut).toMatchObject({ content: "\n", byte_end: 6, next_byte_offset: 6 });
    const tail = output<ByteData>(await run({ path: "min.js", byte_offset: 5007 }));
    expect(tail).toMatchObject({ content: "\nend\n", next_byte_offset: null });
    expect(tail.notice).toMatch(/End of file/);
    expect(errorOf(await run({ path: "min.js", byte_offset: 999_999 }), "invalid_arguments")).toMatch(/5012 bytes/);
  });

  it("agrees with a naive split for random files, windows and encodings", async () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const alphabet = ["a", "b", " ", "\t", "é", "✓", "😀", "\r"];
    const lines = Array.from({ length: 3000 }, () =>
      Array.from({ length: rand(6) === 0 ? 0 : rand(200) }, () => alphabet[rand(alphabet.length)]).join(""),
    );
    const text = lines.map((l, i) => l + (i % 7 === 0 ? "\r\n" : "\n")).join("") + "tail";
    const expected = text.split("\n").map((l) => l.replace(/\r$/, ""));
    await workspaces.use(
      make({
        "u8.txt": text,
        "le.txt": encodeText(text, "utf-16le"),
        "be.txt": encodeText(text, "utf-16be"),
        "bom.txt": encodeText(text, "utf-8-bom"),
      }),
    );
    for (const file of ["u8.txt", "le.txt", "be.txt", "bom.txt"]) {
      for (let k = 0; k < 6; k++) {
        const offset = 1 + rand(expected.length);
        const limit = 1 + rand(500);
        const data = output<FileData>(await run({ path: file, offset, limit }));
        const want = expected.slice(offset - 1, offset - 1 + limit);
        expect(
          data.content.split("\n").map((l) => l.replace(/^ *\d+\t/, "")),
          `${file} ${offset}+${limit}`,
        ).toEqual(want);
        const end = offset + want.length - 1;
        expect(data.next_offset).toBe(end < expected.length ? end + 1 : null);
        expect(data.total_lines).toBe(end < expected.length ? null : expected.length);
      }
    }
  });

  it("publishes a title, locations and a shorthand", () => {
    const root = name === "node" ? "/tmp/ws" : "/ws";
    expect(read.title?.({ path: "src/a.ts" })).toBe("Read src/a.ts");
    expect(read.title?.({ path: "src/a.ts", offset: 10, limit: 200 })).toBe("Read src/a.ts:10-209");
    expect(read.locations?.({ path: "src/a.ts", offset: 10 }, { workspace: root })).toEqual([{ path: `${root}/src/a.ts`, line: 10 }]);
    expect(read.locations?.({ path: "/abs/b.ts" }, { workspace: root })).toEqual([{ path: "/abs/b.ts", line: 1 }]);
    expect(read.shorthand?.(" src/a.ts ")).toEqual({ path: "src/a.ts" });
    expect(read.shorthand?.("src/a.ts:10")).toEqual({ path: "src/a.ts", offset: 10 });
    expect(read.shorthand?.("src/a.ts:10-20")).toEqual({ path: "src/a.ts", offset: 10, limit: 11 });
  });
});

describe("read on disk only", () => {
  it("refuses a symlink that leads outside the workspace", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({ "a.txt": "x\n" }));
    const outside = await tempDir({ "secret.txt": "secret\n" });
    workspaces.defer(() => fsp.rm(outside, { recursive: true, force: true }));
    await fsp.symlink(path.join(outside, "secret.txt"), path.join(ws.root, "link.txt"));
    await fsp.symlink(outside, path.join(ws.root, "dirlink"));
    expect(errorOf((await call(read, { path: "link.txt" }, ws.session)).envelope, "outside_root")).toMatch(/symbolic link/);
    expect(errorOf((await call(read, { path: "dirlink/secret.txt" }, ws.session)).envelope, "outside_root")).toMatch(/symbolic link/);
  });

  it("reads lines 1-2000 of a 1 GiB file without reading the whole file", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({}));
    const file = path.join(ws.root, "huge.log");
    await fsp.writeFile(file, numbered(3000, "log entry"));
    await fsp.truncate(file, 1024 ** 3); // the rest is a sparse hole
    const started = performance.now();
    const data = output<FileData>((await call(read, { path: "huge.log" }, ws.session)).envelope);
    const elapsed = performance.now() - started;
    expect(data).toMatchObject({ start_line: 1, end_line: 2000, next_offset: 2001, total_lines: null });
    expect(data.content.split("\n")[1999]).toBe("2000\tlog entry 2000");
    expect(elapsed).toBeLessThan(2000);
  });

  it("reads a 50 MB generated file window quickly", async () => {
    const ws = await workspaces.use(BACKENDS[0].make({}));
    const file = path.join(ws.root, "big.txt");
    const block = numbered(10_000, "generated line with some padding text");
    const handle = await fsp.open(file, "w");
    for (let written = 0; written < 50 * 1024 * 1024; written += block.length) await handle.write(block);
    await handle.close();
    const started = performance.now();
    // Deep in the file: the lines before the window are counted, not decoded.
    const data = output<FileData>((await call(read, { path: "big.txt", offset: 400_001, limit: 1000 }, ws.session)).envelope);
    expect(performance.now() - started).toBeLessThan(3000);
    expect(data.content.split("\n")[0]).toBe("400001\tgenerated line with some padding text 1");
    expect(data.next_offset).toBe(401_001);
  });
});

describe("text helpers", () => {
  it("detects binary content, but not UTF-16 text", () => {
    expect(binaryReason("a.txt", new Uint8Array([104, 105, 0]))).toMatch(/NUL/);
    expect(binaryReason("a.txt", encodeText("hi", "utf-16le"))).toBeNull();
    expect(binaryReason("a.txt", new Uint8Array(0))).toBeNull();
    expect(binaryReason("a.txt", Buffer.from("plain\ttext\r\n"))).toBeNull();
    expect(binaryReason("Lib.JAR", Buffer.from("text"))).toMatch(/\.jar/);
    // 30% is the threshold: 3 control bytes in 10 is text, 4 is binary.
    expect(binaryReason("a", Buffer.from([1, 2, 3, 65, 65, 65, 65, 65, 65, 65]))).toBeNull();
    expect(binaryReason("a", Buffer.from([1, 2, 3, 4, 65, 65, 65, 65, 65, 65]))).toMatch(/control/);
  });

  it("round-trips every encoding byte for byte", () => {
    for (const encoding of ["utf-8", "utf-8-bom", "utf-16le", "utf-16be"] as const) {
      const bytes = encodeText("a\r\nü😀\n", encoding);
      const decoded = decodeText(bytes, true);
      expect(decoded).toEqual({ text: "a\r\nü😀\n", encoding });
      expect(Buffer.from(encodeText(decoded.text, decoded.encoding)).equals(Buffer.from(bytes))).toBe(true);
    }
    expect(() => decodeText(Buffer.from([0x61, 0xe9, 0x62]), true)).toThrow();
  });

  it("detects line-ending conventions", () => {
    expect(detectLineEnding("a\r\nb\r\n")).toBe("crlf");
    expect(detectLineEnding("a\nb")).toBe("lf");
    expect(detectLineEnding("a\r\nb\n")).toBe("mixed");
    expect(detectLineEnding("a")).toBe("none");
  });

  it("ranks near names", () => {
    const names = ["index.ts", "Index.tsx", "indexer.ts", "README.md", "readme.txt", "other.ts"];
    expect(nearNames("INDEX.TS", names)).toEqual(["index.ts", "Index.tsx", "indexer.ts"]);
    expect(nearNames("readme.md", names)).toEqual(["README.md", "readme.txt"]);
    expect(nearNames("zzz.go", names)).toEqual([]);
  });
});
