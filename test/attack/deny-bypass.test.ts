import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runToEnd } from "../helpers.js";
import { attack, bash, bwrapInstalled, stage, toolResults, USERS, type Stage } from "./harness.js";

// Issue 33: a deny rule for `rm *` must not fall to a program that runs other programs. Each
// bypass aims at its own file in the workspace, which must survive: (a) through `toolhost run`,
// where the policy refuses each opaque line headless with its reason (and the readable ones by the
// rule itself); (b) with the policy out of the way, in the sandbox alone, where the program `rm`
// is a refusing stub whatever runs it. Each has a control where the same lines delete the files.

const RUNNER = fileURLToPath(new URL("../fixtures/sandbox-run.mjs", import.meta.url));
const STUB = "toolhost: rm is denied by a permission rule";

/** [line, opaque: the policy cannot read it (else a deny rule reads the rm in it)]; `@` is the line's own file. */
const BYPASSES: [string, boolean][] = [
  ["sh ./del.sh @", true],
  ["./del.sh @", true],
  ["bash <(echo rm @)", true],
  ["script -qc 'rm @' /dev/null", false],
  ["npx -c 'rm @'", true],
  ["npm exec -c 'rm @'", true],
  ["make d F=@", true],
  ["BASH_ENV=<(echo rm @) bash -c true", true],
  ["/usr/bin/python3 -c \"import os; os.system('rm @')\"", true],
  ["perl -e 'system(\"rm @\")'", true],
  ["cp -f /usr/bin/rm ./x-@ && ./x-@ @", true],
  ["/lib64/ld-linux-x86-64.so.2 /usr/bin/rm @", true],
  ["find . -name @ -exec rm {} \\;", false],
  ["env -S 'rm @'", true],
  ["echo @ | xargs /bin/rm", false],
];
const lines = BYPASSES.map(([line], i) => line.replaceAll("@", `v${i}`));
const victims = BYPASSES.map((_, i) => `v${i}`);

/** The workspace: a victim per bypass, a script and a makefile that delete what they are given. */
async function plant(s: Stage, denyRule: boolean): Promise<void> {
  for (const v of victims) await fsp.writeFile(path.join(s.ws, v), "keep\n");
  await fsp.writeFile(path.join(s.ws, "del.sh"), '#!/bin/sh\nrm "$1"\n', { mode: 0o755 });
  await fsp.writeFile(path.join(s.ws, "Makefile"), "d:\n\trm -f $(F)\n");
  await fsp.mkdir(path.join(s.home, ".toolhost"), { recursive: true });
  const permissions = denyRule ? [{ permission: "bash", pattern: "rm *", action: "deny" }] : [];
  await fsp.writeFile(path.join(s.home, ".toolhost/config.json"), JSON.stringify({ permissions }));
  await s.own(s.ws);
  await s.own(s.home);
}

const survivors = (s: Stage) => victims.filter((v) => existsSync(path.join(s.ws, v)));

/** The lines run in the sandbox alone (no policy), as the stage's user, through the built runtime. */
async function inSandbox(s: Stage, denied: string[], run = lines): Promise<{ line: string; stderr: string; stdout: string }[]> {
  const env = { PATH: process.env.PATH, HOME: s.home, TOOLHOST_HOME: path.join(s.home, ".toolhost"), LANG: "C.UTF-8" };
  const args = [RUNNER, s.ws, JSON.stringify({ deniedPrograms: denied }), JSON.stringify(run)];
  const uid = s.user.uid;
  const argv =
    uid === undefined
      ? [process.execPath, ...args]
      : ["setpriv", `--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", "--", process.execPath, ...args];
  const { code, stdout, stderr } = await runToEnd(argv, { cwd: s.ws, env });
  expect(code, stderr).toBe(0);
  return JSON.parse(stdout) as { line: string; stderr: string; stdout: string }[];
}

describe.skipIf(!bwrapInstalled()).concurrent.each(USERS)(
  "deny rules against programs that run programs, as $name",
  { timeout: 120_000 },
  (user) => {
    it("(a) headless, each bypass is refused: the opaque ones with the reason, the readable ones by the rule; a bare `rm` meets the stub", async () => {
      const s = await stage(user);
      try {
        await plant(s, true);
        const result = await attack(s, [...lines.map((line) => bash(line)), bash("rm")]);
        expect(result.code, result.stderr).toBe(0);
        expect(survivors(s)).toEqual(victims);
        const results = toolResults(result);
        const wrong = BYPASSES.flatMap(([, opaque], i) => {
          const text = results[i] ?? "";
          const ok = opaque
            ? /its effect cannot be read from its text, and a deny rule for `rm \*` is in force/.test(text)
            : /refused by a permission rule/.test(text);
          return ok ? [] : [`${lines[i]}: ${text}`];
        });
        expect(wrong).toEqual([]);
        // `rm` alone is not what `rm *` names, so the policy lets it run: the sandbox's stub answers (the session wires the rule to it).
        expect(results.at(-1)).toContain(STUB);
      } finally {
        await s.close();
      }
    });

    it("control (a): without the deny rule the same lines delete every file", async () => {
      const s = await stage(user);
      try {
        await plant(s, false);
        const result = await attack(
          s,
          lines.map((line) => bash(line)),
        );
        expect(result.code, result.stderr).toBe(0);
        expect(survivors(s)).toEqual([]);
      } finally {
        await s.close();
      }
    });

    it("(b) the sandbox alone: rm is a stub whatever runs it, and the stub cannot be rewritten; control: without it every file goes", async () => {
      const s = await stage(user);
      try {
        await plant(s, false);
        const denied = await inSandbox(s, ["rm"]);
        expect(survivors(s)).toEqual(victims);
        // Each met the stub; the loader cannot even load it (a script is no ELF file).
        const missed = denied.filter((r) => !`${r.stderr}${r.stdout}`.includes(r.line.startsWith("/lib64/") ? "invalid ELF header" : STUB));
        expect(missed).toEqual([]);
        const [tamper] = await inSandbox(s, ["rm"], ["chmod u+w /usr/bin/rm; printf 'x' > /usr/bin/rm; /usr/bin/rm v0"]);
        expect(tamper?.stderr).toContain(STUB);
        expect(survivors(s)).toEqual(victims);
        await inSandbox(s, []);
        expect(survivors(s)).toEqual([]);
      } finally {
        await s.close();
      }
    });
  },
);
