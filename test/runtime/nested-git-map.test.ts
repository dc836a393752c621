import { execFileSync, spawn } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { NestedGitMap } from "../../src/runtime/sandbox/nested-git.js";
import { CLI_PATH, tempDir, until } from "../helpers.js";

// The session's map of nested git repositories (`nested-git.ts`), without a sandbox: what a scan
// finds to protect, and what a command's check reports as planted since its scan, for every way a
// command could put a repository in place (a new folder, a rename, a prepared tree moved in, a
// folder replaced, mtimes set back, another spelling) — and nothing the user had before.

let ws: string;

beforeEach(async () => {
  ws = await tempDir({ "src/a.ts": "a\n", "vendor/lib/index.js": "x\n" });
  execFileSync("git", ["init", "-q", ws]);
  execFileSync("git", ["init", "-q", path.join(ws, "sub")]);
  execFileSync("git", ["init", "-q", path.join(ws, "vendor/lib")]);
});
afterEach(async () => {
  await fsp.rm(ws, { recursive: true, force: true });
});

const sh = (script: string) => execFileSync("/bin/sh", ["-c", script], { cwd: ws });
const rel = (paths: { path: string }[]) => paths.map((p) => path.relative(ws, p.path)).sort();

describe("the map of nested git repositories", () => {
  it("finds every nested .git (folder or file) and git folder, not the root's own, not inside a .git", async () => {
    sh("mkdir -p wt && printf 'gitdir: ../gitdirs/wt\\n' > wt/.git && git init -q --bare gitdirs/wt");
    const { found } = new NestedGitMap().scan([ws]);
    expect(rel(found)).toEqual(["gitdirs/wt", "sub/.git", "vendor/lib/.git", "wt/.git"]);
    expect(found.find((f) => f.path.endsWith("gitdirs/wt"))?.kind).toBe("gitdir");
  });

  it("reports a .git created anywhere since the scan, whatever hides it", async () => {
    const check = new NestedGitMap().scan([ws]);
    sh(
      [
        "git init -q src/new", // in a folder the map knew
        "mkdir -p deep/a/b && git init -q deep/a/b", // in a new tree
        "touch -d 2001-01-01 src src/new deep deep/a deep/a/b .", // mtimes set back
        "mkdir -p /tmp/prep-$$/q && git init -q /tmp/prep-$$/q && mv /tmp/prep-$$ moved", // a prepared tree moved in
        "mkdir -p caps && git init -q caps && mv caps/.git caps/.GIT", // another spelling
      ].join(" && "),
    );
    expect(rel(check.changes())).toEqual(["caps/.GIT", "deep/a/b/.git", "moved/q/.git", "src/new/.git"]);
    // One left where it is is reported again (a move that failed is tried again); one moved is not.
    sh("rm -rf deep/a/b/.git moved/q/.git src/new/.git");
    expect(rel(check.changes())).toEqual(["caps/.GIT"]);
    sh("rm -rf caps/.GIT");
    expect(check.changes()).toEqual([]);
  });

  it("trusts an older folder's ctime alone, and the ctime shows a plant whatever the mtime says", async () => {
    // Until the kernel's clock has stamped past every folder made above, so none is too recent to trust.
    const newest = Math.max(...["", "src", "sub", "vendor", "vendor/lib"].map((d) => statSync(path.join(ws, d)).ctimeMs));
    await until(async () => {
      await fsp.writeFile(path.join(ws, "tick"), "");
      return statSync(path.join(ws, "tick")).ctimeMs > newest;
    });
    const check = new NestedGitMap(0).scan([ws]);
    sh("git init -q src/new && touch -d 2001-01-01 src && git -C sub config core.fsmonitor evil");
    expect(rel(check.changes())).toEqual(["src/new/.git"]);
  });

  it("reports a folder replaced under the same name, and a nested repository moved elsewhere", async () => {
    const check = new NestedGitMap().scan([ws]);
    sh("rm -rf src && mkdir -p src && git init -q src && mv vendor vendored");
    expect(rel(check.changes())).toEqual(["src/.git", "vendored/lib/.git"]);
  });

  it("reports a git folder planted as a folder's entries, and only the entries it did not have", async () => {
    sh("mkdir -p keep/objects keep/refs keep/config");
    const check = new NestedGitMap().scan([ws]);
    sh("echo 'ref: refs/heads/main' > keep/HEAD && mkdir -p bare/objects bare/refs && cp keep/HEAD bare/HEAD && touch bare/config");
    expect(rel(check.changes())).toEqual(["bare/HEAD", "bare/config", "bare/objects", "bare/refs", "keep/HEAD"]);
  });

  it("reports a symlinked .git pointed elsewhere, with its target to put back", async () => {
    sh("git init -q --bare real.git && mkdir -p linked && ln -s ../real.git linked/.git");
    const check = new NestedGitMap().scan([ws]);
    sh("rm linked/.git && ln -s ../src linked/.git");
    expect(check.changes()).toEqual([{ path: path.join(ws, "linked/.git"), root: ws, link: "../real.git" }]);
  });

  it("keeps current: a repository the user made between commands is found and protected, not reported", async () => {
    const map = new NestedGitMap();
    map.scan([ws]).changes();
    sh("git init -q later");
    const check = map.scan([ws]);
    expect(rel(check.found)).toContain("later/.git");
    sh("echo x > later/file");
    expect(check.changes()).toEqual([]);
  });

  it("each command checks from its own scan: one that starts after a plant does not hide it from the other", async () => {
    const map = new NestedGitMap();
    const first = map.scan([ws]);
    sh("git init -q planted");
    const second = map.scan([ws]);
    expect(rel(second.found)).toContain("planted/.git");
    expect(second.changes()).toEqual([]);
    expect(rel(first.changes())).toEqual(["planted/.git"]);
  });

  it("skips the folders it is told to (the quarantine)", async () => {
    const check = new NestedGitMap().scan([ws], [path.join(ws, "q")]);
    sh("mkdir -p q && git init -q q/x");
    expect(check.changes()).toEqual([]);
  });

  it("a plant that could not be moved stops every later scan while it is there", async () => {
    const map = new NestedGitMap();
    const check = map.scan([ws]);
    sh("git init -q stuck");
    const [plant] = check.changes();
    check.failed(plant!);
    expect(() => map.scan([ws])).toThrow(/stuck\/\.git was planted by a sandboxed command and could not be moved/);
    await fsp.rm(path.join(ws, "stuck/.git"), { recursive: true });
    expect(() => map.scan([ws])).not.toThrow();
  });
});

// As a user who is not root, some folders cannot be listed: one the user's own command made so is
// a plant (the attack corpus shows it as nobody); another user's, which no sandboxed command could
// have changed, is not, even when its owner changes it as the command runs (a database's volume).
const asNobody = process.getuid?.() === 0 && existsSync("/usr/bin/setpriv");

describe.skipIf(!asNobody)("the map, run by a user who is not root", () => {
  it("moves nothing of another user's unreadable folder that changed, and reports one of its own", async () => {
    const root = await fsp.mkdtemp(path.join("/var/tmp", "toolhost-map-"));
    try {
      const ws = path.join(root, "ws");
      await fsp.mkdir(path.join(ws, "pg"), { recursive: true });
      await fsp.chmod(root, 0o755);
      execFileSync("chown", ["-R", "65534:65534", ws]);
      execFileSync("chown", ["0:0", path.join(ws, "pg")]);
      await fsp.chmod(path.join(ws, "pg"), 0o700);
      // The map as nobody: a scan, then (once root has changed pg and the command planted) the check.
      const module = path.join(path.dirname(CLI_PATH), "runtime/sandbox/nested-git.js");
      const script = [
        `const { NestedGitMap } = await import(${JSON.stringify(module)});`,
        `const check = new NestedGitMap().scan([${JSON.stringify(ws)}]);`,
        `console.log("scanned");`,
        `process.stdin.once("data", () => console.log(JSON.stringify(check.changes().map((p) => p.path))));`,
      ].join("\n");
      const child = spawn("setpriv", [
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        process.execPath,
        "--input-type=module",
        "-e",
        script,
      ]);
      let out = "";
      child.stdout.on("data", (d: Buffer) => (out += d.toString()));
      await until(() => out.includes("scanned"));
      await fsp.writeFile(path.join(ws, "pg/new-segment"), "x"); // its owner, as the command runs
      execFileSync("setpriv", [
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        "--",
        "sh",
        "-c",
        `mkdir -p ${ws}/mine/x && git init -q ${ws}/mine/x && chmod 311 ${ws}/mine`,
      ]);
      child.stdin.end("go\n");
      await new Promise((resolve) => child.on("close", resolve));
      expect(JSON.parse(out.split("\n")[1]!)).toEqual([path.join(ws, "mine")]);
    } finally {
      await fsp.rm(root, { recursive: true, force: true });
    }
  });
});
