import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { GrepQuery } from "../../src/tool/context.js";
import { MemoryFs } from "../../src/runtime/fs/memory.js";
import { MemorySearch } from "../../src/runtime/search/memory.js";
import { MAX_LINE_CHARS, cutLine, fileNameGlob, listingNameGlob, planGlob } from "../../src/runtime/search/common.js";
import { RipgrepSearch, ripgrepPath } from "../../src/runtime/search/ripgrep.js";
import { tempDir, toolErrorOf } from "../helpers.js";

const never = new AbortController().signal;
const query = (q: Partial<GrepQuery>): GrepQuery => ({ pattern: "x", mode: "content", maxResults: 10_000, timeoutMs: 30_000, ...q });

describe("cutLine", () => {
  it("leaves short lines alone and cuts long ones around the match", () => {
    expect(cutLine("short")).toBe("short");
    const head = cutLine("a".repeat(1000));
    expect(head.startsWith("a".repeat(MAX_LINE_CHARS))).toBe(true);
    expect(head).toContain("[line cut: 1000 chars]");
    const text = `${"a".repeat(900)}MATCH${"b".repeat(900)}`;
    const cut = cutLine(text, 900);
    expect(cut.startsWith("…")).toBe(true);
    expect(cut).toContain("MATCH");
  });
});

describe("glob helpers", () => {
  it("fileNameGlob takes the last segment only when it is safe as a pre-filter", () => {
    expect(fileNameGlob("**/*.ts")).toBe("*.ts");
    expect(fileNameGlob("src/*.{ts,tsx}")).toBe("*.{ts,tsx}");
    expect(fileNameGlob("package.json")).toBe("package.json");
    expect(fileNameGlob("src/**")).toBeUndefined();
    expect(fileNameGlob("{src/*.ts,test/*.js}")).toBeUndefined();
    expect(fileNameGlob("f{1..3}.ts")).toBeUndefined();
    expect(fileNameGlob("*.+(ts|js)")).toBeUndefined();
    expect(fileNameGlob("dir/")).toBeUndefined();
  });

  it("listingNameGlob derives the pre-filter from a listing's glob, or none", () => {
    expect(listingNameGlob({ glob: "src/**/*.ts", timeoutMs: 1 })).toBe("*.ts");
    expect(listingNameGlob({ glob: "src/**", timeoutMs: 1 })).toBeUndefined();
    expect(listingNameGlob({ timeoutMs: 1 })).toBeUndefined();
  });

  it("planGlob splits name globs from path globs", () => {
    expect(planGlob("*.ts")).toEqual({ name: "*.ts" });
    expect(planGlob("!*.min.js")).toEqual({ notName: "*.min.js" });
    const plan = planGlob("src/**/*.ts");
    expect(plan.name).toBe("*.ts");
    expect(plan.keep?.("src/a/b.ts", "a/b.ts")).toBe(true);
    expect(plan.keep?.("lib/b.ts", "b.ts")).toBe(false);
    expect(planGlob("!src/**").keep?.("src/x", "x")).toBe(false);
  });
});

describe("a file listing given the caller's glob", () => {
  const tree = { ".gitignore": "skip.ts\n", "a.ts": "", "b.js": "", "skip.ts": "", "src/c.ts": "", "src/d.md": "" };
  let dir: string | undefined;
  afterEach(async () => {
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("lists only files whose name can match, and never what .gitignore excludes, on both engines", async () => {
    dir = await tempDir(tree);
    const mem = new MemorySearch(new MemoryFs(Object.fromEntries(Object.entries(tree).map(([rel, text]) => [`/ws/${rel}`, text]))));
    const engines = [
      (glob?: string) => new RipgrepSearch().files(dir as string, { glob, timeoutMs: 10_000 }, never),
      (glob?: string) => mem.files("/ws", { glob, timeoutMs: 10_000 }, never),
    ];
    for (const list of engines) {
      expect((await list("**/*.ts")).files.sort()).toEqual(["a.ts", "src/c.ts"]);
      // No safe name filter in "src/**": everything visible is listed, the caller filters.
      expect((await list("src/**")).files.sort()).toEqual([".gitignore", "a.ts", "b.js", "src/c.ts", "src/d.md"]);
      expect((await list()).files.sort()).toEqual([".gitignore", "a.ts", "b.js", "src/c.ts", "src/d.md"]);
    }
  });
});

describe("RipgrepSearch", () => {
  const rg = new RipgrepSearch();
  let dir: string | undefined;
  const savedEnv = process.env.TOOLHOST_RG_PATH;
  afterEach(async () => {
    if (savedEnv === undefined) delete process.env.TOOLHOST_RG_PATH;
    else process.env.TOOLHOST_RG_PATH = savedEnv;
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("finds the bundled rg binary", async () => {
    const bin = await ripgrepPath();
    expect(execFileSync(bin, ["--version"], { encoding: "utf8" })).toMatch(/^ripgrep \d+/);
  });

  it("stops listing once maxResults is exceeded", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 500; i++) files[`f${i}.txt`] = "";
    dir = await tempDir(files);
    const some = await rg.files(dir, { maxResults: 20, timeoutMs: 10_000 }, never);
    expect(some.files).toHaveLength(20);
    expect(some.limited).toBe(true);
    const all = await rg.files(dir, { maxResults: 500, timeoutMs: 10_000 }, never);
    expect(all.files).toHaveLength(500);
    expect(all.limited).toBe(false);
  });

  it("gives absolute paths outside the cwd and relative ones inside", async () => {
    dir = await tempDir({ "sub/a.txt": "x\n", "elsewhere/.keep": "" });
    const inside = await rg.grep(path.join(dir, "sub"), dir, query({ mode: "files" }), never);
    expect(inside.hits).toEqual([{ type: "file", path: "sub/a.txt" }]);
    const outside = await rg.grep(path.join(dir, "sub"), path.join(dir, "elsewhere"), query({ mode: "files" }), never);
    expect(outside.hits).toEqual([{ type: "file", path: path.join(dir, "sub/a.txt") }]);
  });

  it("decodes file names that are not UTF-8", async () => {
    dir = await tempDir();
    const name = Buffer.concat([Buffer.from("caf"), Buffer.from([0xe9]), Buffer.from(".txt")]);
    await fsp.writeFile(Buffer.concat([Buffer.from(`${dir}/`), name]), "x marks\n");
    const out = await rg.grep(dir, dir, query({}), never);
    expect(out.hits).toHaveLength(1);
    expect(out.hits[0]).toMatchObject({ type: "match", line: 1, text: "x marks" });
    expect((out.hits[0] as { path: string }).path).toMatch(/^caf.*\.txt$/);
  });

  it("times out, killing rg", async () => {
    dir = await tempDir();
    const name = `slow-${process.pid}-${Date.now()}.fifo`;
    execFileSync("mkfifo", [path.join(dir, name)]);
    const started = Date.now();
    const err = await toolErrorOf(rg.grep(path.join(dir, name), dir, query({ timeoutMs: 300 }), never));
    expect(err.code).toBe("timeout");
    expect(err.message).toMatch(/narrow the path or pattern/);
    expect(Date.now() - started).toBeLessThan(3000);
    expect(() => execFileSync("pgrep", ["-f", name])).toThrow();
  });

  it("abort stops the search and kills rg", async () => {
    dir = await tempDir();
    // A FIFO nobody writes to: rg blocks reading it until it is killed.
    const name = `blocked-${process.pid}-${Date.now()}.fifo`;
    execFileSync("mkfifo", [path.join(dir, name)]);
    const controller = new AbortController();
    const pending = toolErrorOf(rg.grep(path.join(dir, name), dir, query({}), controller.signal));
    await waitFor(() => rgRunningOn(name));
    const started = Date.now();
    controller.abort();
    expect((await pending).code).toBe("aborted");
    expect(Date.now() - started).toBeLessThan(5000);
    await waitFor(() => !rgRunningOn(name));
  });

  it("reports a bad regex with rg's message", async () => {
    dir = await tempDir({ "a.txt": "x\n" });
    const err = await toolErrorOf(rg.grep(dir, dir, query({ pattern: "a[b" }), never));
    expect(err.code).toBe("invalid_arguments");
    expect(err.message).toMatch(/unclosed character class/);
  });

  it("reports a missing root and a broken TOOLHOST_RG_PATH", async () => {
    dir = await tempDir({ "a.txt": "x\n" });
    expect((await toolErrorOf(rg.grep(path.join(dir, "nope"), dir, query({}), never))).code).toBe("not_found");
    process.env.TOOLHOST_RG_PATH = path.join(dir, "no-such-rg");
    expect((await toolErrorOf(rg.grep(dir, dir, query({}), never))).code).toBe("unavailable");
  });

  it("throws aborted when the signal is already aborted", async () => {
    dir = await tempDir({ "a.txt": "x\n" });
    const controller = new AbortController();
    controller.abort();
    expect((await toolErrorOf(rg.files(dir, { timeoutMs: 1000 }, controller.signal))).code).toBe("aborted");
  });
});

describe("MemorySearch", () => {
  it("lists files with .gitignore rules from parent directories", async () => {
    const mem = new MemoryFs({ "/ws/.gitignore": "*.tmp\n/top.txt\n", "/ws/a/x.tmp": "", "/ws/a/top.txt": "", "/ws/top.txt": "" });
    const search = new MemorySearch(mem);
    expect((await search.files("/ws/a", { timeoutMs: 1000 }, never)).files).toEqual(["top.txt"]);
    expect((await search.files("/ws", { timeoutMs: 1000 }, never)).files).toEqual([".gitignore", "a/top.txt"]);
  });

  it("times out and honours an aborted signal", async () => {
    const mem = new MemoryFs({ "/ws/a.txt": "x" });
    const search = new MemorySearch(mem);
    expect((await toolErrorOf(search.grep("/ws", "/ws", query({ timeoutMs: 0 }), never))).code).toBe("timeout");
    const controller = new AbortController();
    controller.abort();
    expect((await toolErrorOf(search.grep("/ws", "/ws", query({}), controller.signal))).code).toBe("aborted");
  });

  it("skips binary files when walking a tree", async () => {
    const mem = new MemoryFs({ "/ws/bin.dat": new Uint8Array([120, 0, 120]), "/ws/a.txt": "x" });
    const search = new MemorySearch(mem);
    expect((await search.grep("/ws", "/ws", query({ mode: "files" }), never)).hits).toEqual([{ type: "file", path: "a.txt" }]);
    const content = await search.grep("/ws", "/ws", query({}), never);
    expect(content.hits).toEqual([{ type: "match", path: "a.txt", line: 1, text: "x" }]);
    expect(content.searched).toBe(1);
  });
});

function rgRunningOn(name: string): boolean {
  try {
    return execFileSync("pgrep", ["-f", name], { encoding: "utf8" }).trim() !== "";
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean, ms = 5000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error("condition not reached in time");
    await new Promise((r) => setTimeout(r, 20));
  }
}
