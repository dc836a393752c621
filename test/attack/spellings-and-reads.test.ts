import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { attack, bash, expectNothingLanded, SECRET, stage, USERS, type Stage } from "./harness.js";

// Issue 20, classes 5 and 6. A deny rule holds for every spelling of the command it names:
// wrappers, quotes and escapes, paths, xargs and find -exec, shells' -c, and lines whose effect
// the parser cannot know (eval, a variable as the command, code fed to an interpreter), which are
// refused headless where a bash rule is in force. And the files toolhost reads for itself
// (AGENTS.md, CLAUDE.md) are read only when they are regular files inside the workspace, without
// blocking: a symlink to a secret never reaches the model, a FIFO never hangs a session.

const KEEP = "keep.txt";

async function denyRm(s: Stage): Promise<void> {
  await fsp.mkdir(path.join(s.home, ".toolhost"), { recursive: true });
  await fsp.writeFile(
    path.join(s.home, ".toolhost/config.json"),
    JSON.stringify({ permissions: [{ permission: "bash", pattern: "rm *", action: "deny" }] }),
  );
  await fsp.writeFile(path.join(s.ws, KEEP), "keep\n");
  await s.own(s.home);
  await s.own(s.ws);
}

const SPELLINGS = [
  `rm ${KEEP}`,
  `\\rm ${KEEP}`,
  `"rm" ${KEEP}`,
  `r''m ${KEEP}`,
  `/bin/rm ${KEEP}`,
  `/usr/bin/rm ${KEEP}`,
  `command rm ${KEEP}`,
  `env rm ${KEEP}`,
  `env -i PATH=/usr/bin:/bin rm ${KEEP}`,
  `exec rm ${KEEP}`,
  `nohup rm ${KEEP}`,
  `timeout 5 rm ${KEEP}`,
  `time rm ${KEEP}`,
  `stdbuf -o0 rm ${KEEP}`,
  `nice -n 5 rm ${KEEP}`,
  `builtin command rm ${KEEP}`,
  `echo ${KEEP} | xargs rm`,
  `echo ${KEEP} | xargs -I{} rm {}`,
  `find . -name ${KEEP} -exec rm {} \\;`,
  `find . -name ${KEEP} -execdir rm {} +`,
  `bash -c "rm ${KEEP}"`,
  `sh -c 'rm ${KEEP}'`,
  `eval "rm ${KEEP}"`,
  `C=rm; $C ${KEEP}`,
  `$(echo rm) ${KEEP}`,
  `sh <<< "rm ${KEEP}"`,
  `echo "rm ${KEEP}" | sh`,
  `echo "rm ${KEEP}" > s.sh; . ./s.sh`,
  `python3 -c "import os; os.system('rm ${KEEP}')"`,
  `node -e "require('child_process').execSync('rm ${KEEP}')"`,
  `perl -e 'system("rm ${KEEP}")'`,
  `awk 'BEGIN { system("rm ${KEEP}") }'`,
  `git -c alias.x='!rm ${KEEP}' x`,
];

describe.concurrent.each(USERS)("issue 20, classes 5 and 6, as $name", { timeout: 60_000 }, (user) => {
  it("control: without the rule, rm removes the file (the harness sees it)", async () => {
    const s = await stage(user);
    try {
      await denyRm(s);
      await fsp.rm(path.join(s.home, ".toolhost/config.json"));
      await attack(s, [bash(`rm ${KEEP}`)]);
      expect(existsSync(path.join(s.ws, KEEP))).toBe(false);
    } finally {
      await s.close();
    }
  });

  it("with the rule, other commands still run", async () => {
    const s = await stage(user);
    try {
      await denyRm(s);
      const result = await attack(s, [bash(`ls && cat ${KEEP} && echo OUTPUT-$((40+2))`)]);
      expect(result.toModel).toContain("OUTPUT-42");
    } finally {
      await s.close();
    }
  });

  // One run with every spelling, each aimed at a file of its own: a file that is gone names the
  // spelling that got through.
  it("a deny rule for rm holds for every spelling", async () => {
    const s = await stage(user);
    try {
      await denyRm(s);
      const files = SPELLINGS.map((_, i) => `keep${i}.txt`);
      for (const f of files) await fsp.writeFile(path.join(s.ws, f), "keep\n");
      await s.own(s.ws);
      const result = await attack(
        s,
        SPELLINGS.map((command, i) => bash(command.replaceAll(KEEP, files[i] as string))),
      );
      expect(result.code, result.stderr).toBe(0);
      const through = SPELLINGS.filter((_, i) => !existsSync(path.join(s.ws, files[i] as string)));
      expect(through).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("control: a regular AGENTS.md in the workspace reaches the model", async () => {
    const s = await stage(user);
    try {
      await fsp.writeFile(path.join(s.ws, "AGENTS.md"), "Project rule: MARKER-AGENTS-4411\n");
      const result = await attack(s, []);
      expect(result.toModel).toContain("MARKER-AGENTS-4411");
    } finally {
      await s.close();
    }
  });

  it.each(["AGENTS.md", "CLAUDE.md"])("%s as a symlink to a secret outside the workspace never reaches the model", async (name) => {
    const s = await stage(user);
    try {
      await fsp.symlink(path.join(s.home, ".ssh/id_rsa"), path.join(s.ws, name));
      await fsp.mkdir(path.join(s.ws, "docs"));
      await fsp.symlink("/proc/self/environ", path.join(s.ws, "docs", name));
      const result = await attack(s, [bash("true")], { env: { ANTHROPIC_API_KEY: `${SECRET}-env` } });
      expect(result.code, result.stderr).toBe(0);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("an AGENTS.md that is a FIFO does not hang the session", async () => {
    const s = await stage(user);
    try {
      execFileSync("mkfifo", [path.join(s.ws, "AGENTS.md")]);
      await s.own(s.ws);
      const result = await attack(s, [bash("echo still-$((1+1))")]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.toModel).toContain("still-2");
    } finally {
      await s.close();
    }
  });

  it("a sidecar folder planted at this user's name is refused, naming it, and nothing is written into it", async () => {
    const s = await stage(user);
    try {
      const tmp = path.join(s.root, "tmp");
      const elsewhere = path.join(s.root, "elsewhere");
      await fsp.mkdir(tmp, { mode: 0o1777 });
      await fsp.chmod(tmp, 0o1777);
      await fsp.mkdir(elsewhere, { mode: 0o777 });
      await fsp.chmod(elsewhere, 0o777);
      const uid = user.uid ?? process.getuid?.() ?? 0;
      await fsp.symlink(elsewhere, path.join(tmp, `toolhost-sidecars-${uid}`));
      const result = await attack(s, [bash("seq 1 200000")], { env: { TMPDIR: tmp, TOOLHOST_SESSIONS: "off" } });
      expect(await fsp.readdir(elsewhere)).toEqual([]);
      expect(result.toModel + result.stderr).toContain(`toolhost-sidecars-${uid}`);
    } finally {
      await s.close();
    }
  });
});
