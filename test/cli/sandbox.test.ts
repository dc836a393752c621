import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./harness.js";
import { useAgentEnv } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

// The sandbox as the CLI reports it: doctor, policy explain, and `toolhost call` on a machine
// without bwrap (a PATH that has node and nothing else).

const status = await sandboxStatus("cli/sandbox.test.ts");

const t = useAgentEnv({ shared: true, files: { "a.txt": "a\n" } });
let bareBin: string;

function toolhost(args: string[], env: Record<string, string> = {}) {
  const base = t.env({ TOOLHOST_MODEL: "ollama/qwen3" });
  delete base.TOOLHOST_SANDBOX;
  return runCli(args, { cwd: t.ws, env: { ...base, ...env }, timeout: 20_000 });
}

beforeAll(async () => {
  bareBin = await t.dir();
  await fsp.symlink(process.execPath, path.join(bareBin, "node"));
});

describe("toolhost doctor", () => {
  it.skipIf(!status.available)("says the sandbox is active", async () => {
    const { stdout } = await toolhost(["doctor"]);
    expect(stdout).toMatch(/^sandbox: active \(bubblewrap\)/m);
  });

  it("says it is off, and where that was set", async () => {
    expect((await toolhost(["doctor"], { TOOLHOST_SANDBOX: "off" })).stdout).toMatch(/^sandbox: off, switched off \(TOOLHOST_SANDBOX\)/m);
  });

  it("says why it cannot run and what to install, without failing the check", async () => {
    const { code, stdout } = await toolhost(["doctor"], { PATH: bareBin });
    expect(stdout).toMatch(/^sandbox: unavailable: bubblewrap \(bwrap\) is not installed.*Every call that runs commands asks first/m);
    expect(stdout).toMatch(/apt-get install bubblewrap/);
    expect(code).toBe(0);
  });
});

describe("toolhost call without bwrap", () => {
  it("refuses a command even in full mode, naming what to install; nothing runs", async () => {
    const { code, stdout } = await toolhost(["call", "bash", '{"command":"echo x > ran.txt"}'], { PATH: bareBin });
    expect(code).toBe(1);
    const envelope = JSON.parse(stdout) as { type: string; error_text: string; metadata: { error_code: string } };
    expect(envelope.metadata.error_code).toBe("permission_denied");
    expect(envelope.error_text).toMatch(/no sandbox can run here.*apt-get install bubblewrap/);
    await expect(fsp.stat(path.join(t.ws, "ran.txt"))).rejects.toThrow();
    // With the sandbox switched off it runs.
    expect((await toolhost(["call", "bash", '{"command":"echo x > ran.txt"}'], { PATH: bareBin, TOOLHOST_SANDBOX: "off" })).code).toBe(0);
    await fsp.stat(path.join(t.ws, "ran.txt"));
  });
});

describe("toolhost policy explain", () => {
  it.skipIf(!status.available)("says whether the sandbox applies to the call", async () => {
    const bash = await toolhost(["policy", "explain", "bash", '{"command":"make"}']);
    expect(bash.stdout).toMatch(/^bash in full mode: allow$/m);
    expect(bash.stdout).toMatch(/^sandbox: active \(bubblewrap\)/m);
    const read = await toolhost(["policy", "explain", "read", '{"path":"a.txt"}']);
    expect(read.stdout).toMatch(/^sandbox: does not apply \(the call runs no command\)$/m);
    const out = JSON.parse(
      (await toolhost(["policy", "explain", "bash", '{"command":"make","sandbox":"off","justification":"Build outside?"}', "--json"]))
        .stdout,
    );
    expect(out).toMatchObject({ decision: "ask", sandbox: { applies: false, state: "active", outside: true } });
    const json = JSON.parse((await toolhost(["policy", "explain", "bash", '{"command":"make"}', "--json"])).stdout);
    expect(json.sandbox).toEqual({ applies: true, state: "active" });
  });

  it("without bwrap: the call asks, and says why", async () => {
    const { stdout } = await toolhost(["policy", "explain", "bash", '{"command":"make"}'], { PATH: bareBin });
    expect(stdout).toMatch(/^bash in full mode: asks the user \(headless: refused\)$/m);
    expect(stdout).toMatch(/^sandbox: unavailable: bubblewrap \(bwrap\) is not installed/m);
  });
});
