import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { folderMapStore } from "../../src/runtime/sandbox/bubblewrap.js";
import { FolderWatch } from "../../src/runtime/sandbox/folder-watch.js";
import { NestedGitMap } from "../../src/runtime/sandbox/nested-git.js";
import { NestedGitWorker, prewarmMap, prewarmedMaps } from "../../src/runtime/sandbox/nested-git-client.js";
import { FolderMapStore } from "../../src/runtime/sandbox/nested-git-store.js";
import { tempDir, until } from "../helpers.js";

// The map of nested repositories kept between sessions (`nested-git-store.ts`): a new session's
// first pass checks the kept map by ctime instead of listing every folder, and must find every
// repository made between the sessions and every plant of its own commands, as a walk would.
// `hotMs` 0: folders made a moment ago are trusted by their ctime (the default lists them again).

let ws: string;
let other: string;
let storeDir: string;
const watches: FolderWatch[] = [];

beforeEach(async () => {
  ws = await tempDir({ "src/a.ts": "a\n", "vendor/lib/index.js": "x\n", "deep/a/b/c/d.ts": "d\n" });
  other = await tempDir({ "lib/x.js": "x\n", "lib/deep/y.js": "y\n" });
  storeDir = await tempDir();
  execFileSync("git", ["init", "-q", path.join(ws, "vendor/lib")]);
});
afterEach(async () => {
  for (const w of watches.splice(0)) w.close();
  for (const dir of [ws, other, storeDir]) await fsp.rm(dir, { recursive: true, force: true });
});

const sh = (script: string, cwd = ws) => execFileSync("/bin/sh", ["-c", script], { cwd });
const rel = (paths: { path: string }[], root = ws) => paths.map((p) => path.relative(root, p.path)).sort();

/** A session's map as its worker holds it: a watch of its own, and the roots kept by earlier sessions. */
function session(store: FolderMapStore, roots: string[]): NestedGitMap {
  const watch = new FolderWatch();
  watches.push(watch);
  const map = new NestedGitMap(0, watch);
  for (const root of roots) {
    const tree = store.read(root);
    if (tree) map.seed(root, tree);
  }
  return map;
}

/** Every change made so far delivered to the session's watch, as the worker waits before each pass. */
const fenced = () => watches.at(-1)!.fence();

async function keep(store: FolderMapStore, map: NestedGitMap): Promise<void> {
  for (const [root, tree] of map.current()) await store.save(root, tree);
}

describe("the map kept between sessions", () => {
  it("a new session starts from it, finds what was made in between, and its watch covers every folder it did not list", async () => {
    const store = new FolderMapStore(storeDir);
    const first = session(store, [ws]);
    expect(rel(first.scan([ws]).found)).toEqual(["vendor/lib/.git"]);
    await keep(store, first);
    expect(store.read(ws)).toBeDefined();

    // Between the sessions: a repository deep in folders the map knew, its folder's mtime set back.
    sh("git init -q deep/a/b && touch -d 2001-01-01 deep/a/b");
    const second = session(store, [ws]);
    await fenced();
    const check = second.scan([ws]);
    expect(rel(check.found)).toEqual(["deep/a/b/.git", "vendor/lib/.git"]);
    // A command plants in folders the new session only checked by ctime: the watch must see them.
    sh("git init -q deep/a/b/c/e && touch -d 2001-01-01 deep/a/b/c && git init -q src/x");
    await fenced();
    expect(rel(await check.changes())).toEqual(["deep/a/b/c/e/.git", "src/x/.git"]);
  });

  it("a root added to a session whose watch already runs is checked whole, not trusted as kept", async () => {
    const store = new FolderMapStore(storeDir);
    const before = session(store, [other]);
    before.scan([other]);
    await keep(store, before);
    sh("git init -q lib/deep/r && touch -d 2001-01-01 lib/deep", other);

    const map = session(store, []);
    await fenced();
    map.scan([ws]);
    await fenced();
    // The watch vouches for ws now; `other` comes from the store, with a repository made since.
    map.seed(other, store.read(other)!);
    await fenced();
    const found = map.scan([ws, other]).found.filter((f) => f.root === other);
    expect(rel(found, other)).toEqual(["lib/deep/r/.git"]);
  });

  it("a file that is not this root's map is ignored: another root's, another format, broken", async () => {
    const store = new FolderMapStore(storeDir);
    const map = session(store, []);
    map.scan([ws]);
    map.scan([other]);
    await keep(store, map);
    const file = (name: string) => path.join(storeDir, name);
    const [wsFile = "", otherFile = ""] = await Promise.all(
      [ws, other].map(async (root): Promise<string> => {
        for (const name of await fsp.readdir(storeDir))
          if ((await fsp.readFile(file(name), "utf8")).includes(`"root":${JSON.stringify(root)}`)) return name;
        throw new Error(`no file for ${root}`);
      }),
    );
    expect(store.read(other)).toBeDefined();
    const text = await fsp.readFile(file(wsFile), "utf8");
    // ws's map under the name `other`'s would have.
    await fsp.writeFile(file(otherFile), text);
    expect(store.read(other)).toBeUndefined();
    await fsp.writeFile(file(wsFile), text.replace('"v":2', '"v":99'));
    expect(store.read(ws)).toBeUndefined();
    await fsp.writeFile(file(wsFile), text.slice(0, 100));
    expect(store.read(ws)).toBeUndefined();
  });

  it("a root's file no session wrote for 30 days goes, and a killed writer's temporary file; a recent one stays", async () => {
    const store = new FolderMapStore(storeDir);
    const old = path.join(storeDir, "0".repeat(32) + ".json");
    const recent = path.join(storeDir, "1".repeat(32) + ".json");
    const partial = path.join(storeDir, "2".repeat(32) + ".json.x.tmp");
    for (const file of [old, recent, partial]) await fsp.writeFile(file, "{}");
    const longAgo = new Date(Date.now() - 31 * 24 * 3600 * 1000);
    await fsp.utimes(old, longAgo, longAgo);
    await fsp.utimes(partial, new Date(Date.now() - 2 * 3600 * 1000), new Date(Date.now() - 2 * 3600 * 1000));
    const map = session(store, []);
    map.scan([ws]);
    await keep(store, map);
    expect(existsSync(old)).toBe(false);
    expect(existsSync(partial)).toBe(false);
    expect(existsSync(recent)).toBe(true);
    expect(store.read(ws)).toBeDefined();
  });

  it("is kept only inside a folder every sandbox hides", () => {
    expect(folderMapStore({ hiddenDirs: [storeDir], folderMapDir: path.join(storeDir, "maps") })).toBe(path.join(storeDir, "maps"));
    expect(folderMapStore({ hiddenDirs: [storeDir], folderMapDir: path.join(ws, "maps") })).toBeUndefined();
  });

  it("in the worker: prepared as the session starts, kept when it closes, read by the next", async () => {
    const one = new NestedGitWorker(() => storeDir);
    try {
      await one.prepare([ws]);
      expect(rel((await one.scan([ws])).found)).toEqual(["vendor/lib/.git"]);
    } finally {
      await one.close();
    }
    expect((await fsp.readdir(storeDir)).filter((n) => n.endsWith(".json"))).toHaveLength(1);
    sh("git init -q deep/a/b/c/n && touch -d 2001-01-01 deep/a/b/c");
    const two = new NestedGitWorker(() => storeDir);
    try {
      const check = await two.scan([ws]);
      expect(rel(check.found)).toEqual(["deep/a/b/c/n/.git", "vendor/lib/.git"]);
      sh("git init -q src/p");
      expect(rel(await check.changes())).toEqual(["src/p/.git"]);
    } finally {
      await two.close();
    }
    // Started before its session: the session's prepare with the same roots and store takes it.
    prewarmMap([ws], [], storeDir);
    prewarmMap([ws], [], storeDir);
    expect(prewarmedMaps()).toBe(1);
    const elsewhere = new NestedGitWorker(() => undefined);
    await elsewhere.prepare([ws]);
    expect(prewarmedMaps()).toBe(1);
    await elsewhere.close();
    const three = new NestedGitWorker(() => storeDir);
    try {
      await three.prepare([ws]);
      expect(prewarmedMaps()).toBe(0);
      expect(rel((await three.scan([ws])).found)).toEqual(["deep/a/b/c/n/.git", "src/p/.git", "vendor/lib/.git"]);
    } finally {
      await three.close();
    }
    // One no session takes is closed as a session's is: its map kept (here, of another root).
    prewarmMap([other], [], storeDir, 100);
    await until(() => prewarmedMaps() === 0);
    await until(() => new FolderMapStore(storeDir).read(other) !== undefined);
    // Without a store nothing is written.
    const none = new NestedGitWorker();
    await none.scan([ws]);
    await none.close();
    expect(existsSync(path.join(ws, ".toolhost"))).toBe(false);
  });
});
