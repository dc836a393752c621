import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { attack, bash, bwrapInstalled, expectNothingLanded, stage, toolResults, userGitStatus, USERS, type Stage } from "./harness.js";

// Issue 33: the quarantine switched off from inside. It lay in the call's sidecar folder, which the
// sandbox writes (its path shows in /proc/self/mountinfo): a command made `quarantine` a file, and
// every plant stayed (a nested `.git` with core.fsmonitor then ran on the user's `git status`), or
// a symlink to a folder outside, and toolhost's own move wrote there. The judge: a real `git
// status` run as the stage's user in the planted folder (its fsmonitor would leave a marker in the
// home), and the symlink's target folder, which must stay empty. The control runs the same attack
// unsandboxed and sees the plant run; the sandboxed run shows the command did take the sidecar's
// `quarantine` (the old place) — it is its file or symlink after the run — and that it mattered not.

const RAN = "RAN-TO-ITS-END";
const marker = (s: Stage) => path.join(s.home, "ran-fsmonitor");

/** The sidecar folder the sandbox shows writable (a recorded session's, in toolhost's home), then the attack on its `quarantine`. */
function command(s: Stage, sabotage: "file" | "symlink", target: string): string {
  const take = sabotage === "file" ? `echo taken > "$q"` : `ln -s ${target} "$q"`;
  return [
    `side=$(awk '{print $5}' /proc/self/mountinfo | grep '^${s.home}/.toolhost/sessions/' | head -1)`,
    `q="$side/quarantine"; ${take}`,
    `git init -q sub && git -C sub config core.fsmonitor "touch ${marker(s)}; false"`,
    // By python: the watchdog refuses a shell redirection into .git/, so only the sandbox stands in the way.
    `python3 -c "import os; p='sub/.git/hooks/post-checkout'; open(p, 'w').write('#!/bin/sh\\ntouch ${marker(s)}\\n'); os.chmod(p, 0o755)"`,
    `echo ${RAN}`,
  ].join("; ");
}

/** What became of the sidecar's `quarantine` (the old place): the command's file or symlink, or nothing of the kind. */
async function oldQuarantine(s: Stage): Promise<string | undefined> {
  const sessions = path.join(s.home, ".toolhost/sessions");
  for (const project of await fsp.readdir(sessions).catch(() => [])) {
    for (const session of await fsp.readdir(path.join(sessions, project)).catch(() => [])) {
      const q = path.join(sessions, project, session, "quarantine");
      const stat = await fsp.lstat(q).catch(() => undefined);
      if (stat?.isSymbolicLink()) return `symlink to ${await fsp.readlink(q)}`;
      if (stat?.isFile()) return `file: ${(await fsp.readFile(q, "utf8")).trim()}`;
    }
  }
  return undefined;
}

/** A folder outside the workspace the stage's user may write: the symlink's target. */
async function outside(s: Stage): Promise<string> {
  const target = path.join(s.root, "target");
  await fsp.mkdir(target);
  await s.own(target);
  return target;
}

describe.concurrent.each(USERS)("issue 33, the quarantine taken from inside, as $name", { timeout: 90_000 }, (user) => {
  it("control: unsandboxed, the plant stays and the user's git status runs it (the harness sees it)", async () => {
    const s = await stage(user);
    try {
      const target = await outside(s);
      const result = await attack(s, [bash(command(s, "symlink", target))], { env: { TOOLHOST_SANDBOX: "off" } });
      expect(result.code, result.stderr).toBe(0);
      expect(toolResults(result).join("\n")).toContain(RAN);
      expect(existsSync(path.join(s.ws, "sub/.git/hooks/post-checkout"))).toBe(true);
      expect(userGitStatus(s, "sub", "fsmonitor")).toBe(true);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!bwrapInstalled()).each(["file", "symlink"] as const)(
    "the sidecar's quarantine made a %s, then a repository planted: it is moved out of reach, nothing written outside",
    async (sabotage) => {
      const s = await stage(user);
      try {
        const target = await outside(s);
        const result = await attack(s, [bash(command(s, sabotage, target))]);
        expect(result.code, result.stderr).toBe(0);
        const said = toolResults(result).join("\n");
        expect(said).toContain(RAN);
        // The command took the old place…
        expect(await oldQuarantine(s)).toBe(sabotage === "file" ? "file: taken" : `symlink to ${target}`);
        // …and the plant went to toolhost's own quarantine, whole, all the same.
        expect(said).toMatch(/moved to quarantine: sub\/\.git → \S*\/\.toolhost\/quarantine\//);
        const moved = new RegExp(`sub/\\.git → (${s.home}/\\.toolhost/quarantine/\\S+?/sub/\\.git)`).exec(said)?.[1];
        expect(moved && existsSync(path.join(moved, "hooks/post-checkout"))).toBe(true);
        expect(existsSync(path.join(s.ws, "sub/.git"))).toBe(false);
        expect(userGitStatus(s, "sub", "fsmonitor")).toBe(false);
        expect(await fsp.readdir(target)).toEqual([]);
        expect(await expectNothingLanded(s, result)).toEqual([]);
      } finally {
        await s.close();
      }
    },
  );
});
