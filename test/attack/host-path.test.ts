import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { attack, bash, bwrapInstalled, expectNothingLanded, stage, toolResults, USERS, type Stage } from "./harness.js";

// The boundary rule for what toolhost itself runs: git (the checkpoints), bwrap, socat, a user's
// own hook, all found on PATH. A PATH that names a workspace folder (direnv's bin/) or a relative
// one (`.`) would find what a sandboxed command wrote there and run it outside the sandbox. Judged
// by effect: each planted program leaves a marker in the home when it runs; none may. The control
// runs the same names with the same PATH from the workspace, as a user's shell would: every marker
// appears (the plants are real).

const PLANTED = ["git", "bwrap", "socat", "fmt-tool"];

/** Programs in the workspace's bin/ and its top (for `.`), each writing its marker in the home when run. */
async function plant(s: Stage): Promise<void> {
  await fsp.mkdir(path.join(s.ws, "bin"));
  for (const name of PLANTED) {
    const script = `#!/bin/sh\necho ran > '${s.home}/ran-${name}'\n`;
    for (const at of [path.join(s.ws, "bin", name), path.join(s.ws, name)]) await fsp.writeFile(at, script, { mode: 0o755 });
  }
  // A user-level hook (the user's own, run outside the sandbox) that runs a program by name.
  await fsp.mkdir(path.join(s.home, ".claude"), { recursive: true });
  const hooks = { PostToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "fmt-tool" }] }] };
  await fsp.writeFile(path.join(s.home, ".claude/settings.json"), JSON.stringify({ hooks }));
  // Every command gets the proxy bridge (socat).
  await fsp.mkdir(path.join(s.home, ".toolhost"), { recursive: true });
  const rule = { permission: "net.fetch", pattern: "example.com", action: "allow" };
  await fsp.writeFile(path.join(s.home, ".toolhost/config.json"), JSON.stringify({ permissions: [rule] }));
  await s.own(s.ws);
  await s.own(s.home);
}

const ran = async (s: Stage): Promise<string[]> => (await fsp.readdir(s.home)).filter((n) => n.startsWith("ran-")).sort();
const plantedPath = (s: Stage) => [path.join(s.ws, "bin"), ".", process.env.PATH ?? ""].join(path.delimiter);

describe.concurrent.each(USERS)("issue 33, what toolhost runs is never found in the workspace, as $name", { timeout: 120_000 }, (user) => {
  it.skipIf(!bwrapInstalled())("git, bwrap, socat and a user hook's program planted on PATH's workspace entries do not run", async () => {
    const s = await stage(user);
    try {
      await plant(s);
      const result = await attack(s, [bash("echo inside-$(id -u)")], { env: { PATH: plantedPath(s) } });
      expect(await ran(s)).toEqual([]);
      expect(result.code, result.stderr).toBe(0);
      // The command ran, sandboxed by the real bwrap, with its checkpoints by the real git.
      expect(toolResults(result).join("\n")).toMatch(/inside-\d+/);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it("control: the same names with the same PATH, run from the workspace, find the plants", async () => {
    const s = await stage(user);
    try {
      await plant(s);
      const run = user.uid === undefined ? [] : ["setpriv", `--reuid=${user.uid}`, `--regid=${user.uid}`, "--clear-groups", "--"];
      const script = PLANTED.map((name) => `${name} >/dev/null 2>&1`).join("; ");
      const [file = "", ...args] = [...run, "/bin/sh", "-c", script];
      execFileSync(file, args, { cwd: s.ws, env: { PATH: plantedPath(s), HOME: s.home } });
      expect(await ran(s)).toEqual(PLANTED.map((n) => `ran-${n}`).sort());
    } finally {
      await s.close();
    }
  });
});
