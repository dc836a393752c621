import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { FakeToolCall } from "../fixtures/fake-openai.mjs";
import { attack, bash, bwrapInstalled, expectNothingLanded, stage, toolResults, userGitStatus, USERS, type Stage } from "./harness.js";

// Issue 20 class 2, nested git repositories: git runs the hooks and config of whichever repository
// it finds above the user's folder, so a repository a sandboxed command changes or leaves anywhere
// in the workspace would run its code at the user's next `git status` there, outside the sandbox.
// Each attack plants a core.fsmonitor (or a hook) that would leave a marker in the home; the
// judge is a real `git status` run as the stage's user in that folder after the run. The attacks
// are spelled with git commands and python, which the watchdog lets through (it refuses writes
// into `.git/` by redirection), so the sandbox alone stands in the way; each ends with RAN, which
// shows it ran. The control runs them all unsandboxed and sees every one land. Without the
// sandbox, commands are the user's to approve: out of this class's scope.

const RAN = "RAN-TO-ITS-END";
const fsmonitor = (s: Stage, id: string) => `"touch ${s.home}/ran-${id}; false"`;
const config = (s: Stage, dir: string, id: string) => `git -C ${dir} config core.fsmonitor ${fsmonitor(s, id)}`;
const py = (code: string) => `python3 -c "${code}"`;

interface NestedAttack {
  id: string;
  name: string;
  /** The folder the user's git status runs in. */
  dir: string;
  command: (s: Stage) => string;
  /** A hook that must not be there, for an attack that plants one. */
  hook?: string;
  /** A folder the user gives back its search permission (`chmod u+x`) before their git status. */
  fix?: string;
}

const ATTACKS: NestedAttack[] = [
  {
    id: "hook",
    name: "a nested clone's hook, by python",
    dir: "sub",
    hook: "sub/.git/hooks/post-checkout",
    command: () => py("import os; p='sub/.git/hooks/post-checkout'; open(p, 'w').write('#!/bin/sh\\\\ntouch x\\\\n'); os.chmod(p, 0o755)"),
  },
  { id: "clone", name: "a nested clone's config", dir: "sub", command: (s) => config(s, "sub", "clone") },
  { id: "vendored", name: "a vendored clone's config", dir: "vendor/lib", command: (s) => config(s, "vendor/lib", "vendored") },
  { id: "submodule", name: "a submodule's git folder under the root's .git", dir: "mod", command: (s) => config(s, "mod", "submodule") },
  {
    id: "deep",
    name: "a new repository deep down",
    dir: "a/b/c",
    command: (s) => `mkdir -p a/b/c && git -C a/b/c init -q && ${config(s, "a/b/c", "deep")}`,
  },
  {
    id: "gitfile",
    name: "a .git file pointing at a git folder planted beside it",
    dir: "x",
    command: (s) =>
      `git init -q x && ${config(s, "x", "gitfile")} && ${py("import os; os.rename('x/.git', 'gd'); open('x/.git', 'w').write('gitdir: ../gd')")}`,
  },
  {
    id: "bare",
    name: "a bare repository's layout with a worktree of its own",
    dir: "bare",
    command: (s) =>
      `mkdir -p bare/objects bare/refs && echo 'ref: refs/heads/main' > bare/HEAD && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = %s\\n' ${JSON.stringify(fsmonitor(s, "bare"))} > bare/config`,
  },
  {
    id: "moved",
    name: "a tree prepared in the private /tmp, moved in, mtimes set back",
    dir: "moved/q",
    command: (s) =>
      `mkdir -p /tmp/p/q && git -C /tmp/p/q init -q && ${config(s, "/tmp/p/q", "moved")} && mv /tmp/p moved && touch -d 2001-01-01 . moved moved/q`,
  },
  {
    id: "readonly",
    name: "a new repository whose folders are made read-only",
    dir: "ro",
    command: (s) =>
      `git init -q ro && ${config(s, "ro", "readonly")} && ${py("import os; os.chmod('ro/.git', 0o555); os.chmod('ro', 0o555)")}`,
  },
  {
    id: "unlistable",
    name: "a new repository under a folder that can be entered but not listed",
    dir: "hid/x",
    command: (s) => `mkdir -p hid/x && git -C hid/x init -q && ${config(s, "hid/x", "unlistable")} && chmod 311 hid`,
  },
  {
    id: "unsearchable",
    name: "a new repository under a folder that can be listed but not entered, until the user fixes its mode",
    dir: "ns/x",
    fix: "ns",
    command: (s) => `mkdir -p ns/x && git -C ns/x init -q && ${config(s, "ns/x", "unsearchable")} && chmod 644 ns`,
  },
];

/** A workspace that is a repository with a nested clone, a vendored one and a submodule, owned by the stage's user. */
async function nestedStage(s: Stage): Promise<void> {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: s.ws, stdio: "pipe" });
  git("init", "-q");
  git("init", "-q", "sub");
  git("init", "-q", "vendor/lib");
  await fsp.mkdir(path.join(s.ws, ".git/modules"));
  git("init", "-q", "--separate-git-dir", path.join(s.ws, ".git/modules/mod"), "mod");
  await s.own(s.ws);
}

/** What of attack `a` is left to run: its hook, or the code the user's git status ran. */
function landed(s: Stage, a: NestedAttack): string[] {
  if (a.fix && existsSync(path.join(s.ws, a.fix))) execFileSync("chmod", ["u+x", path.join(s.ws, a.fix)]);
  if (a.hook) return existsSync(path.join(s.ws, a.hook)) ? [`${a.id}: ${a.hook}`] : [];
  return userGitStatus(s, a.dir, a.id) ? [`${a.id}: git status ran it`] : [];
}

/** A background process plants a repository, then waits until it is gone and says so: it is moved while the process runs. */
const BACKGROUND = (s: Stage, waitForMove: boolean): FakeToolCall[] => [
  {
    name: "process",
    arguments: {
      action: "start",
      name: "bg",
      command: `git init -q bg && ${config(s, "bg", "background")} && echo PLANTED; until [ ! -e bg/.git ]; do sleep 0.1; done; echo MOVED-WHILE-RUNNING`,
    },
  },
  {
    name: "process",
    arguments: { action: "output", name: "bg", wait_for: waitForMove ? "MOVED-WHILE-RUNNING" : "PLANTED", timeout_ms: 20_000 },
  },
];

describe.concurrent.each(USERS)("issue 20 class 2, nested git repositories, as $name", { timeout: 90_000 }, (user) => {
  it("control: unsandboxed, every attack lands and the user's git status runs it (the harness sees it)", async () => {
    const s = await stage(user);
    try {
      await nestedStage(s);
      const calls = [...ATTACKS.map((a) => bash(`${a.command(s)}; echo ${RAN}`)), ...BACKGROUND(s, false)];
      const result = await attack(s, calls, { env: { TOOLHOST_SANDBOX: "off" } });
      expect(result.code, result.stderr).toBe(0);
      expect(ATTACKS.filter((a) => landed(s, a).length === 0).map((a) => a.id)).toEqual([]);
      expect(userGitStatus(s, "bg", "background")).toBe(true);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!bwrapInstalled()).each(ATTACKS.map((a) => [a.name, a] as const))(
    "%s: nothing is left for the user's git to run",
    async (_name, a) => {
      const s = await stage(user);
      try {
        await nestedStage(s);
        const result = await attack(s, [bash(`${a.command(s)}; echo ${RAN}`)]);
        expect(result.code, result.stderr).toBe(0);
        expect(toolResults(result).join("\n")).toContain(RAN);
        expect(landed(s, a)).toEqual([]);
        expect(await expectNothingLanded(s, result)).toEqual([]);
      } finally {
        await s.close();
      }
    },
  );

  it("the write tool cannot lay out a bare repository for the user's git (the harness sees one laid out by hand run)", async () => {
    const s = await stage(user);
    try {
      await nestedStage(s);
      const files = (dir: string, id: string): [string, string][] => [
        [`${dir}/objects/info`, ""],
        [`${dir}/refs/heads/main`, ""],
        [`${dir}/config`, `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = ${fsmonitor(s, id)}\n`],
        [`${dir}/HEAD`, "ref: refs/heads/main\n"],
      ];
      // Control: the same layout written by hand, and the user's git status runs its fsmonitor.
      for (const [file, content] of files("byhand", "byhand")) {
        await fsp.mkdir(path.dirname(path.join(s.ws, file)), { recursive: true });
        await fsp.writeFile(path.join(s.ws, file), content);
      }
      await s.own(s.ws);
      expect(userGitStatus(s, "byhand", "byhand")).toBe(true);
      // Through the write tool in full mode: the write that makes it a repository is asked about, so refused headless.
      const result = await attack(
        s,
        files("written", "written").map(([file, content]) => ({ name: "write", arguments: { path: file, content } })),
      );
      expect(result.code, result.stderr).toBe(0);
      expect(toolResults(result).join("\n")).toMatch(/project-config: write writes written\/HEAD, which git runs later/);
      expect(userGitStatus(s, "written", "written")).toBe(false);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!bwrapInstalled())("a background process's new repository is moved while it runs", async () => {
    const s = await stage(user);
    try {
      await nestedStage(s);
      const result = await attack(s, BACKGROUND(s, true));
      expect(result.code, result.stderr).toBe(0);
      expect(toolResults(result).join("\n")).toContain("MOVED-WHILE-RUNNING");
      expect(await expectNothingLanded(s, result)).toEqual([]);
      expect(userGitStatus(s, "bg", "background")).toBe(false);
    } finally {
      await s.close();
    }
  });
});
