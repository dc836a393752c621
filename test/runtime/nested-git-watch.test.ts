import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FolderWatch } from "../../src/runtime/sandbox/folder-watch.js";
import { NestedGitMap } from "../../src/runtime/sandbox/nested-git.js";
import { NestedGitWorker } from "../../src/runtime/sandbox/nested-git-client.js";
import { tempDir } from "../helpers.js";

// The map as a session uses it: in its worker thread, kept current by the kernel's watch
// (`folder-watch.ts`), a pass looking only at what changed. Run `npm run build` first (the worker
// is the built one). The same plants as the map's own tests, and the watch's fallbacks to a whole pass.

let ws: string;

beforeEach(async () => {
  ws = await tempDir({ "src/a.ts": "a\n", "vendor/lib/index.js": "x\n", "deep/a/b/c/d.ts": "d\n" });
  execFileSync("git", ["init", "-q", ws]);
  execFileSync("git", ["init", "-q", path.join(ws, "vendor/lib")]);
});
afterEach(async () => {
  await fsp.rm(ws, { recursive: true, force: true });
});

const sh = (script: string) => execFileSync("/bin/sh", ["-c", script], { cwd: ws });
const rel = (paths: { path: string }[]) => paths.map((p) => path.relative(ws, p.path)).sort();

describe("the map in its worker, kept current by the kernel's watch", () => {
  it("reports what a command planted, whatever hides it; finds the user's repository between commands without reporting it", async () => {
    const map = new NestedGitWorker();
    try {
      const first = await map.scan([ws]);
      expect(rel(first.found)).toEqual(["vendor/lib/.git"]);
      // Nothing changed: a pass finds nothing new and the map is the same.
      expect(await first.changes()).toEqual([]);
      sh(
        [
          "git init -q deep/a/b/c", // deep in folders the map knew
          "touch -d 2001-01-01 deep/a/b/c", // its mtime set back; no folder above it changed
          "mkdir -p /tmp/prep-$$/q && git init -q /tmp/prep-$$/q && mv /tmp/prep-$$ moved", // a prepared tree moved in
          "rm -rf src && mkdir src && git init -q src", // a folder replaced
        ].join(" && "),
      );
      expect(rel(await first.changes())).toEqual(["deep/a/b/c/.git", "moved/q/.git", "src/.git"]);
      // One left where it is is reported again; none reported twice once moved.
      sh("rm -rf moved/q/.git src/.git");
      expect(rel(await first.changes())).toEqual(["deep/a/b/c/.git"]);
      sh("rm -rf deep/a/b/c/.git");
      expect(await first.changes()).toEqual([]);
      // The user's editor makes a repository between two commands: found before the next, not its plant.
      sh("git init -q later && touch -d 2001-01-01 later .");
      const second = await map.scan([ws]);
      expect(rel(second.found)).toEqual(["later/.git", "vendor/lib/.git"]);
      expect(await second.changes()).toEqual([]);
    } finally {
      await map.close();
    }
  });

  it("each command checks from its own scan, and a plant that could not be moved refuses the next scan", async () => {
    const map = new NestedGitWorker();
    try {
      const first = await map.scan([ws]);
      sh("git init -q planted");
      const second = await map.scan([ws]);
      expect(rel(second.found)).toContain("planted/.git");
      expect(await second.changes()).toEqual([]);
      const [plant] = await first.changes();
      expect(rel([plant!])).toEqual(["planted/.git"]);
      first.failed(plant!);
      await expect(map.scan([ws])).rejects.toThrow(/planted\/\.git was planted by a sandboxed command and could not be moved/);
    } finally {
      await map.close();
    }
  });
});

describe("the watch says which folders changed, or that a pass must be whole", () => {
  it("a change after a folder's watch is delivered by the fence; past too many events between passes, the pass is whole", async () => {
    for (const flood of [true, false]) {
      const watch = new FolderWatch({ overflowAt: 50 });
      try {
        const map = new NestedGitMap(undefined, watch);
        await watch.fence();
        const check = map.scan([ws]); // whole: nothing was watched before
        sh(`rm -rf deep/a/new && git init -q deep/a/new && touch -d 2001-01-01 deep/a`);
        await watch.fence();
        const changed = watch.take();
        expect([...(changed?.dirty ?? [])].map((p) => path.relative(ws, p))).toContain("deep/a");
        // Taken above and dropped: as if the kernel had lost the plant's events. Then a flood of
        // events (the sign a queue overflowed) makes the pass whole, and its ctime shows the plant;
        // the control, without the flood, trusts the watch and misses it.
        if (flood) sh("for i in $(seq 60); do touch src/f$i; done");
        await watch.fence();
        expect(rel(check.changes())).toEqual(flood ? ["deep/a/new/.git"] : []);
      } finally {
        watch.close();
      }
    }
  });

  it("a pass the watch vouches for finds a plant from its event alone", async () => {
    const watch = new FolderWatch();
    try {
      const map = new NestedGitMap(undefined, watch);
      await watch.fence();
      const check = map.scan([ws]);
      sh("git init -q deep/a/b/c && touch -d 2001-01-01 deep/a/b/c");
      await watch.fence();
      expect(rel(check.changes())).toEqual(["deep/a/b/c/.git"]);
    } finally {
      watch.close();
    }
  });
});
