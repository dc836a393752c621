import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { HOT_MS } from "../../src/runtime/sandbox/nested-git.js";
import { attack, bash, bwrapInstalled, expectNothingLanded, stage, toolResults, userGitStatus, USERS, type Stage } from "./harness.js";

// Issue 33: the map of nested repositories kept between sessions (runtime/sandbox/nested-git-store.ts).
// A new session trusts a kept folder whose inode and ctime are unchanged, and takes the nested
// repositories it lists as what to protect (bound read-only while a command runs). Two ways in:
// - a forged map: one that leaves out a nested clone's `.git` and names the folder's true ctime
//   (a command can stat everything it would need) leaves that `.git` unprotected, and the next
//   session's command writes its config. The store lives in toolhost's home, which every sandbox
//   hides: the forgery must not reach it. The control puts the same forgery there by hand, and the
//   next session's plant lands, so the judge sees a forged map work;
// - a plant in a folder the new session only checked by ctime (never listed), its mtimes set back:
//   the watch set before the check must see it.
// The judge is a real `git status` as the stage's user in the planted folder: its fsmonitor would
// leave a marker in the home.

const RAN = "RAN-TO-ITS-END";
const marker = (s: Stage, id: string) => path.join(s.home, `ran-${id}`);
const plant = (s: Stage, dir: string, id: string) => `git -C ${dir} config core.fsmonitor "touch ${marker(s, id)}; false"`;

/** A workspace that is a repository with a nested clone and a vendored one, owned by the stage's user. */
async function nestedStage(s: Stage): Promise<void> {
  const git = (...args: string[]) => execFileSync("git", args, { cwd: s.ws, stdio: "pipe" });
  git("init", "-q");
  git("init", "-q", "sub");
  await fsp.mkdir(path.join(s.ws, "vendor/deep/er"), { recursive: true });
  await s.own(s.ws);
  // A folder listed within 2 s of its ctime is listed again by the next session, kept or not: these
  // must be old enough for the first session's map to vouch for them by their ctime alone.
  const made = (await fsp.stat(path.join(s.ws, "vendor/deep/er"))).ctimeMs;
  while (Date.now() < made + HOT_MS + 100) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** The kept map's columns this file reads (nested-git-store.ts), its names split. */
interface KeptMap {
  names: string[];
  flags: number[];
  git: Record<string, unknown>;
  [column: string]: unknown;
}

/** Where the stage's sessions keep the workspace's map. */
const keptMap = (s: Stage) =>
  path.join(s.home, ".toolhost/folder-maps", `${createHash("sha256").update(s.ws).digest("hex").slice(0, 32)}.json`);

/** A first session, whose map is kept; then the kept map as the next session will read it. */
async function firstSession(s: Stage): Promise<KeptMap> {
  const result = await attack(s, [bash(`true; echo ${RAN}`)]);
  expect(result.code, result.stderr).toBe(0);
  const kept = JSON.parse(await fsp.readFile(keptMap(s), "utf8")) as { names: string; flags: number[]; git: Record<string, unknown> };
  return { ...kept, names: kept.names.split("/") };
}

/** The kept map without the nested clone's `.git`: what a forger would write. */
function forged(kept: KeptMap): string {
  const at = kept.names.indexOf("sub");
  expect(kept.git[at], "the kept map lists sub/.git").toBeDefined();
  const git = { ...kept.git };
  delete git[at];
  // Not "listed too soon after a change" either (bit 1): a forger writes what it likes.
  const flags = kept.flags.map((f, i) => (i === at ? f & ~1 : f));
  return JSON.stringify({ ...kept, names: kept.names.join("/"), git, flags });
}

/** A command that writes `content` where the kept map is (it waits out the session's own write, 2 s after its first pass). */
const forge = (s: Stage, content: string) =>
  `sleep 3; mkdir -p "${path.dirname(keptMap(s))}" && printf '%s' '${content}' > "${keptMap(s)}"; echo ${RAN}`;

const DEEP = "vendor/deep/er/x";

/** New repositories in folders a kept map vouches for by their ctime, their mtimes set back. */
const ctimeOnlyPlants = (s: Stage) =>
  `git init -q ${DEEP} && ${plant(s, DEEP, "deep")} && git init -q vendor/y && ${plant(s, "vendor/y", "shallow")} && touch -d 2001-01-01 vendor vendor/deep vendor/deep/er; echo ${RAN}`;

describe.concurrent.each(USERS)("issue 33, the map kept between sessions, as $name", { timeout: 120_000 }, (user) => {
  it.skipIf(!bwrapInstalled())(
    "control: a forged map in the store leaves a nested clone unguarded, and the next session's plant runs",
    async () => {
      const s = await stage(user);
      try {
        await nestedStage(s);
        const kept = await firstSession(s);
        await fsp.writeFile(keptMap(s), forged(kept));
        const result = await attack(s, [bash(`${plant(s, "sub", "forged")}; echo ${RAN}`)]);
        expect(result.code, result.stderr).toBe(0);
        expect(toolResults(result).join("\n")).toContain(RAN);
        expect(userGitStatus(s, "sub", "forged")).toBe(true);
      } finally {
        await s.close();
      }
    },
  );

  it.skipIf(!bwrapInstalled())("a command cannot forge the kept map: the next session still guards the nested clone", async () => {
    const s = await stage(user);
    try {
      await nestedStage(s);
      const content = forged(await firstSession(s));
      const forging = await attack(s, [bash(forge(s, content))]);
      expect(forging.code, forging.stderr).toBe(0);
      expect(toolResults(forging).join("\n")).toContain(RAN);
      expect(await fsp.readFile(keptMap(s), "utf8")).not.toBe(content);
      const result = await attack(s, [bash(`${plant(s, "sub", "forged")}; echo ${RAN}`)]);
      expect(result.code, result.stderr).toBe(0);
      expect(userGitStatus(s, "sub", "forged")).toBe(false);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!bwrapInstalled())("control: unsandboxed, the plants in folders a kept map vouches for run", async () => {
    const s = await stage(user);
    try {
      await nestedStage(s);
      await firstSession(s);
      const result = await attack(s, [bash(ctimeOnlyPlants(s))], { env: { TOOLHOST_SANDBOX: "off" } });
      expect(result.code, result.stderr).toBe(0);
      expect(userGitStatus(s, DEEP, "deep")).toBe(true);
      expect(userGitStatus(s, "vendor/y", "shallow")).toBe(true);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!bwrapInstalled())("a plant in folders the new session only checked by their ctime, mtimes set back, is moved", async () => {
    const s = await stage(user);
    try {
      await nestedStage(s);
      await firstSession(s);
      // One command: a later command's pass would find what this one's missed.
      const result = await attack(s, [bash(ctimeOnlyPlants(s))]);
      expect(result.code, result.stderr).toBe(0);
      expect(toolResults(result).join("\n")).toContain(RAN);
      expect(userGitStatus(s, DEEP, "deep")).toBe(false);
      expect(userGitStatus(s, "vendor/y", "shallow")).toBe(false);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
