import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, sleepMarker, survivors, tempDir, until } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

// Issue 33: whatever ends toolhost, every command it started ends with it. A real `toolhost run`
// starts a foreground bash command, is SIGKILLed while it runs (no exit hook runs), and the whole
// tree (guard, wrapper, bwrap, bash, sleep) must be gone, with no seccomp folder left behind.

const status = await sandboxStatus("cli/lifecycle.test.ts");
const dirs: string[] = [];
afterAll(async () => {
  for (const dir of dirs) await fsp.rm(dir, { recursive: true, force: true });
});

async function killedMidCommand(sandbox: "on" | "off") {
  const ws = await tempDir();
  // Outside /tmp, and toolhost's temp dir a fresh folder whose leftovers the test can list.
  const home = await fsp.mkdtemp("/var/tmp/toolhost-lifecycle-");
  const tmp = path.join(home, "tmp");
  await fsp.mkdir(tmp);
  dirs.push(ws, home);
  const marker = sleepMarker();
  const started = path.join(ws, "started");
  const fake = await startFakeOpenAI({
    script: [{ toolCalls: [{ name: "bash", arguments: { command: `touch ${started}; sleep ${marker}` } }] }, { text: "done" }],
  });
  const child = spawn(process.execPath, [CLI_PATH, "run", "--mode", "full", "--cwd", ws, "go"], {
    cwd: ws,
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TMPDIR: tmp,
      TOOLHOST_HOME: path.join(home, ".toolhost"),
      TOOLHOST_MODEL: "openai-compatible/fake",
      TOOLHOST_BASE_URL: fake.url,
      TOOLHOST_SANDBOX: sandbox,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  try {
    await until(async () => existsSync(started) && (await survivors(marker)).some((p) => p.includes(`sleep ${marker}`)), 30_000).catch(
      (err: Error) => {
        throw new Error(`${err.message}; toolhost said: ${stderr}`);
      },
    );
    child.kill("SIGKILL");
    await exited;
    // Every process of the tree (their command lines all hold the marker) ends, however long a busy machine takes.
    await until(async () => (await survivors(marker)).length === 0, 30_000).catch(async () => {
      throw new Error(`still running after toolhost's SIGKILL:\n${(await survivors(marker)).join("\n")}`);
    });
    return { leftovers: (await fsp.readdir(tmp)).filter((name) => name.startsWith("toolhost-seccomp-")) };
  } finally {
    child.kill("SIGKILL");
    for (const p of await survivors(marker)) process.kill(Number(p.split(":")[0]), "SIGKILL");
    await fake.close();
  }
}

describe("a command ends with toolhost, even when toolhost is SIGKILLed", () => {
  it.skipIf(!status.available)(
    "sandboxed: the wrapper, both bwraps and the command go; one shared filter folder, nothing per process",
    async () => {
      const { leftovers } = await killedMidCommand("on");
      // The filter lives in one content-addressed file per user (seccomp.ts), not a folder per process.
      expect(leftovers).toEqual([`toolhost-seccomp-${process.geteuid?.()}`]);
    },
  );

  it("unsandboxed: the command's whole group goes", async () => {
    const { leftovers } = await killedMidCommand("off");
    expect(leftovers).toEqual([]);
  });
});
