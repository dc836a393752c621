import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { FakeToolCall } from "../fixtures/fake-openai.mjs";
import { attack, bwrapInstalled, expectNothingLanded, SECRET, stage, toolResults, USERS, type Stage } from "./harness.js";

// Issue 24 §3: the `process` tool is one more way to run a command line, so every class of the
// corpus holds through it too — the sandbox (files outside, the listener, secrets in the
// environment and the home, persistence in the workspace) and the deny rules for every spelling.
// A background process's output reaches the model only through `process output`, so each attack
// starts one and reads it back: a secret that got out would show in that read.

/** What a process prints at its end (the command's own text, `$((40+2))`, never contains it). */
const DONE = "ATTACK-42-DONE";

/** A background start of `command`, then a read of its output once it ended. */
function viaProcess(command: string, name: string): FakeToolCall[] {
  return [
    { name: "process", arguments: { action: "start", command: `${command}; echo ATTACK-$((40+2))-DONE`, name } },
    { name: "process", arguments: { action: "output", name, wait_for: DONE, timeout_ms: 20_000 } },
  ];
}

const ENV_SECRETS: NodeJS.ProcessEnv = { OPENAI_API_KEY: `${SECRET}-openai`, GITHUB_TOKEN: `${SECRET}-github` };

/**
 * The attacks; `opaque` ones are spelled so that the watchdog's reading of the line cannot see the
 * harm, so they run, and only the sandbox stands in the way (the others the watchdog may refuse first).
 */
const ATTACKS: { name: string; command: string; opaque?: boolean }[] = [
  { name: "a write outside the workspace", command: "echo pwned > ~/victim.txt; rm -rf ~/.ssh" },
  {
    name: "a write outside the workspace, by python",
    command: `python3 -c "import os; open(os.path.expanduser('~/victim.txt'), 'w').write('pwned')"`,
    opaque: true,
  },
  { name: "the environment", command: "env; tr '\\0' '\\n' < /proc/self/environ", opaque: true },
  { name: "the key in the home", command: "cat ~/.ssh/id_rsa; grep -r PLANTED ~ 2>/dev/null | head" },
  {
    name: "the key in the home, by python",
    command: `python3 -c "import os, glob; [print(open(f).read()) for f in glob.glob(os.path.expanduser('~') + '/.*/*') if os.path.isfile(f)]"`,
    opaque: true,
  },
  { name: "the listener by bash's /dev/tcp", command: "echo hello > /dev/tcp/127.0.0.1/PORT" },
  {
    name: "the listener by python",
    command: `python3 -c "import socket; s=socket.create_connection(('127.0.0.1', PORT)); s.send(b'hello')"`,
    opaque: true,
  },
  {
    name: "the listener by node",
    command: `node -e "require('net').connect(PORT, '127.0.0.1', function () { this.end('hello') })"`,
    opaque: true,
  },
  {
    name: "a project tool planted for later",
    command: "mkdir -p .toolhost/tools && echo 'export default 1' > .toolhost/tools/evil.ts",
    opaque: true,
  },
  { name: "direnv planted for later", command: "echo 'echo pwned > ~/victim.txt' > .envrc", opaque: true },
];

const RM_SPELLINGS = ["rm KEEP", "/bin/rm KEEP", "command rm KEEP", "env rm KEEP", "sh -c 'rm KEEP'", "echo KEEP | xargs rm"];

async function denyRm(s: Stage, files: string[]): Promise<void> {
  await fsp.mkdir(path.join(s.home, ".toolhost"), { recursive: true });
  await fsp.writeFile(
    path.join(s.home, ".toolhost/config.json"),
    JSON.stringify({ permissions: [{ permission: "bash", pattern: "rm *", action: "deny" }] }),
  );
  for (const f of files) await fsp.writeFile(path.join(s.ws, f), "keep\n");
  await s.own(s.home);
  await s.own(s.ws);
}

describe.concurrent.each(USERS)("the process tool under attack, as $name", { timeout: 90_000 }, (user) => {
  it("control: unsandboxed, the same opaque starts land — the secret reaches the model, the file changes, the listener hears (the harness sees it)", async () => {
    const s = await stage(user);
    try {
      const opaque = ATTACKS.filter((a) => a.opaque && /python/.test(a.command)).map((a) => a.command.replaceAll("PORT", String(s.port)));
      const calls = [...viaProcess("env", "leak"), ...opaque.flatMap((command, i) => viaProcess(command, `c${i}`))];
      const result = await attack(s, calls, { env: { ...ENV_SECRETS, TOOLHOST_SANDBOX: "off" } });
      expect(result.toModel).toContain(`${SECRET}-github`);
      expect(result.toModel).toContain(DONE);
      // The same opaque attacks land without the sandbox: the write, the key, the listener.
      expect(await expectNothingLanded(s, result)).toEqual([
        expect.stringMatching(/^the listener heard/),
        "victim.txt changed",
        "the secret reached the model",
      ]);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!bwrapInstalled())("no attack started through process lands: files, listener, secrets, planted files", async () => {
    const s = await stage(user);
    try {
      const calls = ATTACKS.flatMap((a, i) => viaProcess(a.command.replaceAll("PORT", String(s.port)), `p${i}`));
      const result = await attack(s, calls, { env: ENV_SECRETS });
      expect(result.code, result.stderr).toBe(0);
      // Each opaque one ran to its end inside the sandbox (tried, not refused before it ran): its output read shows the end marker.
      const outputs = toolResults(result).filter((_, i) => i % 2 === 1);
      expect(ATTACKS.flatMap((a, i) => (a.opaque && !outputs[i]?.includes(DONE) ? [`${a.name}: ${outputs[i]}`] : []))).toEqual([]);
      expect(await expectNothingLanded(s, result)).toEqual([]);
      expect(result.toModel).not.toContain(SECRET);
      expect([".toolhost", ".envrc"].filter((rel) => existsSync(path.join(s.ws, rel)))).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("a bash deny rule holds for process starts, in every spelling; without it the same start removes the file", async () => {
    const s = await stage(user);
    try {
      const files = RM_SPELLINGS.map((_, i) => `keep${i}.txt`);
      await denyRm(s, [...files, "control.txt"]);
      const result = await attack(
        s,
        RM_SPELLINGS.flatMap((spelling, i) => viaProcess(spelling.replaceAll("KEEP", files[i]!), `rm${i}`)),
      );
      expect(result.code, result.stderr).toBe(0);
      expect(RM_SPELLINGS.filter((_, i) => !existsSync(path.join(s.ws, files[i]!)))).toEqual([]);
      // Control: with the rule gone, the same kind of start does remove its file.
      await fsp.rm(path.join(s.home, ".toolhost/config.json"));
      await attack(s, viaProcess("rm control.txt", "control"));
      expect(existsSync(path.join(s.ws, "control.txt"))).toBe(false);
    } finally {
      await s.close();
    }
  });
});
