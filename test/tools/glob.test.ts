import { readFileSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import glob, { type GlobData } from "../../src/tools/glob.js";
import { BACKENDS, call, diskWorkspace, errorOf, output, tempDir, useWorkspace } from "../helpers.js";

const workspaces = useWorkspace();

const TREE = {
  "a.ts": "a",
  "b.js": "b",
  ".env.ts": "dot",
  "src/c.ts": "c",
  "src/d.tsx": "d",
  "src/deep/e.ts": "e",
  "test/f.ts": "f",
  "docs/readme.md": "r",
};

describe.each(BACKENDS)("glob on $name", ({ make }) => {
  const run = async (args: Record<string, unknown>) => (await call(glob, args, workspaces.current.session)).envelope;

  it("*.ts matches only the top level, dot files included", async () => {
    await workspaces.use(make(TREE));
    const data = output<GlobData>(await run({ pattern: "*.ts" }));
    expect(data.files).toEqual([".env.ts", "a.ts"]);
    expect(data.total).toBe(2);
    expect(data.root).toBe(".");
  });

  it("**/*.ts matches any depth, sorted by path", async () => {
    await workspaces.use(make(TREE));
    const data = output<GlobData>(await run({ pattern: "**/*.ts" }));
    expect(data.files).toEqual([".env.ts", "a.ts", "src/c.ts", "src/deep/e.ts", "test/f.ts"]);
  });

  it("supports braces and a literal base directory", async () => {
    await workspaces.use(make(TREE));
    expect(output<GlobData>(await run({ pattern: "{src,test}/*.{ts,tsx}" })).files).toEqual(["src/c.ts", "src/d.tsx", "test/f.ts"]);
    expect(output<GlobData>(await run({ pattern: "src/**" })).files).toEqual(["src/c.ts", "src/d.tsx", "src/deep/e.ts"]);
    expect(output<GlobData>(await run({ pattern: "nowhere/**/*.ts" })).files).toEqual([]);
  });

  it("matches relative to path and returns workspace-relative files", async () => {
    await workspaces.use(make(TREE));
    const data = output<GlobData>(await run({ pattern: "*.ts", path: "src" }));
    expect(data.files).toEqual(["src/c.ts"]);
    expect(data.root).toBe("src");
    const deep = output<GlobData>(await run({ pattern: "**/*.ts", path: "src" }));
    expect(deep.files).toEqual(["src/c.ts", "src/deep/e.ts"]);
  });

  it("accepts a pattern that repeats the path or is absolute", async () => {
    const ws = await workspaces.use(make(TREE));
    expect(output<GlobData>(await run({ pattern: "src/**/*.ts", path: "src" })).files).toEqual(["src/c.ts", "src/deep/e.ts"]);
    const abs = output<GlobData>(await run({ pattern: path.join(ws.root, "src/**/*.ts") }));
    expect(abs.files).toEqual(["src/c.ts", "src/deep/e.ts"]);
    expect(abs.root).toBe(".");
    expect(output<GlobData>(await run({ pattern: path.join(ws.root, "test/f.ts") })).files).toEqual(["test/f.ts"]);
    expect(output<GlobData>(await run({ pattern: "./src/*.ts" })).files).toEqual(["src/c.ts"]);
    expect(output<GlobData>(await run({ pattern: "../test/*.ts", path: "src" })).files).toEqual(["test/f.ts"]);
    errorOf(await run({ pattern: "../../*" }), "outside_root");
  });

  it("says when nothing matches at the top level but something deeper does", async () => {
    await workspaces.use(make(TREE));
    const data = output<GlobData>(await run({ pattern: "*.tsx" }));
    expect(data.files).toEqual([]);
    expect(data.total).toBe(0);
    expect(data.notice).toContain('"**/*.tsx"');
  });

  it("respects .gitignore (also nested) and skips .git", async () => {
    await workspaces.use(
      make({
        ...TREE,
        ".gitignore": "build/\n*.log\n!keep.log\n",
        "build/out.ts": "x",
        "x.log": "x",
        "keep.log": "k",
        "src/.gitignore": "deep/\n",
        ".git/config": "[core]",
        ".git/hooks/pre.ts": "x",
      }),
    );
    const data = output<GlobData>(await run({ pattern: "**" }));
    // The memory workspace holds a .keep marker.
    expect(data.files.filter((f) => f !== ".keep")).toEqual([
      ".env.ts",
      ".gitignore",
      "a.ts",
      "b.js",
      "docs/readme.md",
      "keep.log",
      "src/.gitignore",
      "src/c.ts",
      "src/d.tsx",
      "test/f.ts",
    ]);
    // A file-name pattern must not bring ignored files back.
    expect(output<GlobData>(await run({ pattern: "**/*.log" })).files).toEqual(["keep.log"]);
    expect(output<GlobData>(await run({ pattern: "**/*.ts" })).files).toEqual([".env.ts", "a.ts", "src/c.ts", "test/f.ts"]);
  });

  it("limit lowers what is shown, with the total and a notice", async () => {
    await workspaces.use(make(TREE));
    const env = await run({ pattern: "**/*.ts", limit: 2 });
    const data = output<GlobData>(env);
    expect(data.files).toEqual([".env.ts", "a.ts"]);
    expect(data.total).toBe(5);
    expect(data.notice).toMatch(/Showing 2 of 5/);
    expect(env.metadata.truncated).toBeUndefined();
  });

  it("caps at 1000 entries with a readable sidecar holding all of them", async () => {
    const files: Record<string, string> = {};
    for (let i = 0; i < 1200; i++) files[`many/f${String(i).padStart(4, "0")}.txt`] = "";
    await workspaces.use(make(files));
    const env = await run({ pattern: "many/*.txt" });
    const data = output<GlobData>(env);
    expect(data.files).toHaveLength(1000);
    expect(data.files[0]).toBe("many/f0000.txt");
    expect(data.total).toBe(1200);
    expect(env.metadata.truncated).toBe(true);
    expect(data.notice).toContain(env.metadata.output_path);
    const lines = readFileSync(env.metadata.output_path as string, "utf8")
      .trimEnd()
      .split("\n");
    expect(lines).toHaveLength(1200);
    expect(lines[1199]).toBe("many/f1199.txt");
  });

  it("refuses a path outside the workspace", async () => {
    await workspaces.use(make(TREE));
    errorOf(await run({ pattern: "*", path: "../.." }), "outside_root");
    errorOf(await run({ pattern: "/etc/*" }), "outside_root");
  });

  it("reports a missing directory and a file path", async () => {
    await workspaces.use(make(TREE));
    expect(errorOf(await run({ pattern: "*", path: "nope" }), "not_found")).toContain("nope");
    expect(errorOf(await run({ pattern: "*", path: "a.ts" }), "invalid_arguments")).toContain("read");
  });

  it("rejects bad arguments with a schema error", async () => {
    await workspaces.use(make(TREE));
    errorOf(await run({ pattern: "" }), "invalid_arguments");
    errorOf(await run({ pattern: "*", limit: 5000 }), "invalid_arguments");
  });
});

describe("glob on disk", () => {
  it("does not follow symbolic links out of the workspace", async () => {
    const outside = await tempDir({ "secret.ts": "s" });
    const ws = await workspaces.use(diskWorkspace({ "a.ts": "a" }));
    await fsp.symlink(outside, path.join(ws.root, "link"));
    expect(output<GlobData>((await call(glob, { pattern: "**/*.ts" }, ws.session)).envelope).files).toEqual(["a.ts"]);
    errorOf((await call(glob, { pattern: "*", path: "link" }, ws.session)).envelope, "outside_root");
    await fsp.rm(outside, { recursive: true, force: true });
  });

  it("lists a file whose name holds a newline whole", async () => {
    const ws = await workspaces.use(diskWorkspace({ "a.txt": "a", "new\nline.txt": "n", "line.txt": "l" }));
    const data = output<GlobData>((await call(glob, { pattern: "*.txt" }, ws.session)).envelope);
    expect(data.files).toEqual(["a.txt", "line.txt", "new\nline.txt"]);
    expect(data.total).toBe(3);
  });

  it("publishes title, locations and shorthand", () => {
    expect(glob.title?.({ pattern: "**/*.ts", path: "src" })).toBe('glob "**/*.ts" in src/');
    expect(glob.title?.({ pattern: "*.md" })).toBe('glob "*.md"');
    expect(glob.locations?.({ pattern: "*", path: "src" }, { workspace: "/ws" })).toEqual([{ path: "/ws/src" }]);
    expect(glob.shorthand?.("**/*.ts")).toEqual({ pattern: "**/*.ts" });
    expect(glob.kind).toBe("search");
  });
});
