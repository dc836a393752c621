import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import * as z from "zod";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { allowAll } from "../../src/policy/call.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { LocalShell } from "../../src/runtime/shell/local.js";
import { describeSandbox, SessionSandbox, sandboxAdvice, sandboxSetting } from "../../src/runtime/sandbox/session-sandbox.js";
import { defineTool } from "../../src/tool/define.js";
import { call, output, sleepMarker, survivors, tempDir } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

// The session's sandbox under the call pipeline: what it wraps, what lifts it (only the policy's
// grant), where the setting comes from, and that an early kill leaves nothing behind.

const status = await sandboxStatus("runtime/session-sandbox.test.ts");

let ws: string;
let outside: string;
const runtimes: RuntimeSession[] = [];

beforeEach(async () => {
  ws = await tempDir();
  outside = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-grant-test-"));
});

afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
  await fsp.rm(ws, { recursive: true, force: true });
  await fsp.rm(outside, { recursive: true, force: true });
});

function runtime(sandbox: SessionSandbox): RuntimeSession {
  const r = new RuntimeSession({ workspace: ws, shell: new LocalShell({ killGraceMs: 500 }), spawnTransform: sandbox.transform });
  runtimes.push(r);
  return r;
}

const on = () => new SessionSandbox({ setting: { value: "on", source: "default" } }).start();

/** An extension-like tool that runs a command through ctx.shell and claims to want out of the sandbox. */
const writer = defineTool({
  id: "writer",
  description: "writes a file with a command",
  kind: "execute",
  parameters: z.object({ file: z.string() }),
  requires: { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } },
  targets: () => ({ commands: ["echo x > file"], unsandboxed: true }),
  execute: async (args, ctx) => {
    const { exit_code, stderr, sandboxed } = await ctx.shell.run(`echo x > ${args.file}`);
    return { exit_code, stderr, sandboxed: sandboxed === true };
  },
});

describe.skipIf(!status.available)("the session sandbox in the call pipeline", () => {
  it("wraps ctx.shell of any tool; asking for out in its targets lifts nothing without the policy's grant", async () => {
    const target = path.join(outside, "f.txt");
    const r = runtime(on());
    const denied = output<{ exit_code: number; stderr: string; sandboxed: boolean }>(
      (await call(writer, { file: target }, r, { authorize: allowAll })).envelope,
    );
    expect(denied.exit_code).not.toBe(0);
    expect(denied.stderr).toMatch(/Read-only file system/);
    expect(denied.sandboxed).toBe(true);
    await expect(fsp.stat(target)).rejects.toThrow();

    const granted = output<{ exit_code: number; sandboxed: boolean }>(
      (await call(writer, { file: target }, r, { authorize: async () => ({ outcome: "allow", unsandboxed: true }) })).envelope,
    );
    expect(granted).toMatchObject({ exit_code: 0, sandboxed: false });
    expect(await fsp.readFile(target, "utf8")).toBe("x\n");
  });

  it("a command killed right after it starts leaves no process behind", async () => {
    const r = runtime(on());
    for (let i = 0; i < 12; i++) {
      const marker = sleepMarker();
      const controller = new AbortController();
      const started = call(defineBash(marker), {}, r, { signal: controller.signal });
      while (!(await survivors(`sleep ${marker}`)).length) await new Promise((resolve) => setTimeout(resolve, 2));
      await new Promise((resolve) => setTimeout(resolve, i % 4));
      controller.abort();
      await started;
      expect(await survivors(`sleep ${marker}`)).toEqual([]);
    }
  });
});

function defineBash(marker: string) {
  return defineTool({
    id: "sleeper",
    description: "sleeps",
    kind: "execute",
    parameters: z.object({}),
    requires: { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } },
    execute: async (_args, ctx) => (await ctx.shell.run(`sleep ${marker}`)).signal,
  });
}

describe("without a sandbox", () => {
  it("refuses a command the policy did not approve to run unsandboxed, and runs one it did", async () => {
    const sandbox = new SessionSandbox({
      setting: { value: "on", source: "default" },
      probe: async () => ({ available: false, reason: "bubblewrap (bwrap) is not installed: apt-get install bubblewrap" }),
    });
    const r = runtime(sandbox);
    const refused = (await call(writer, { file: path.join(ws, "f.txt") }, r, { authorize: allowAll })).envelope;
    expect(refused).toMatchObject({ type: "error", metadata: { error_code: "permission_denied" } });
    await expect(fsp.stat(path.join(ws, "f.txt"))).rejects.toThrow();
    const ran = (
      await call(writer, { file: path.join(ws, "f.txt") }, r, { authorize: async () => ({ outcome: "allow", unsandboxed: true }) })
    ).envelope;
    expect(output(ran)).toMatchObject({ exit_code: 0, sandboxed: false });
    expect(describeSandbox(await sandbox.state())).toMatch(
      /^unavailable: bubblewrap \(bwrap\) is not installed.*apt-get install bubblewrap/,
    );
  });
});

describe("what toolhost advises where no sandbox can run (issue 35 §2)", () => {
  // The probe's reasons as sandboxAvailable() words them, with bwrap's own stderr.
  const PROC = "bwrap cannot start a sandbox here: bwrap: Can't mount proc on /proc: Operation not permitted";
  const USERNS =
    "bwrap cannot start a sandbox here: bwrap: No permissions to create a new namespace, likely because the kernel does not allow non-privileged user namespaces.";
  const MISSING = "bubblewrap (bwrap) is not installed: apt-get install bubblewrap";

  it("bwrap installed but stopped at /proc: the container's option or TOOLHOST_SANDBOX=off, never 'install bubblewrap'", async () => {
    const sandbox = new SessionSandbox({
      setting: { value: "on", source: "default" },
      probe: async () => ({ available: false, reason: PROC }),
    });
    const state = await sandbox.state();
    for (const text of [state.advice, describeSandbox(state)]) {
      expect(text).toMatch(/--security-opt systempaths=unconfined \(Podman/);
      expect(text).toMatch(
        /Docker --security-opt systempaths=unconfined --security-opt seccomp=unconfined --security-opt apparmor=unconfined/,
      );
      expect(text).toMatch(/TOOLHOST_SANDBOX=off/);
      expect(text).not.toMatch(/install bubblewrap/i);
    }
    // In a container or not: a masked /proc is a container runtime's (or an outer sandbox's).
    expect(sandboxAdvice(PROC, false)).toBe(sandboxAdvice(PROC, true));
  });

  it("bwrap missing: install it; user namespaces refused: the container's options inside one, the system's setting outside", () => {
    expect(sandboxAdvice(MISSING, true)).toMatch(
      /^Install bubblewrap \(Debian\/Ubuntu: apt-get install bubblewrap\).*TOOLHOST_SANDBOX=off/,
    );
    expect(sandboxAdvice(USERNS, true)).toMatch(/this container does not let it start.*systempaths=unconfined/);
    expect(sandboxAdvice(USERNS, false)).toMatch(
      /does not let it create user namespaces: allow them \(Debian: sysctl kernel.unprivileged_userns_clone=1/,
    );
    const other = sandboxAdvice("the sandbox does not isolate commands here: CapEff is 0000000000000020", false);
    expect(other).toMatch(/^Set TOOLHOST_SANDBOX=off/);
    for (const reason of [USERNS, "the sandbox does not isolate commands here: no_new_privs is not set"])
      expect(sandboxAdvice(reason, false)).not.toMatch(/install bubblewrap/i);
  });
});

describe("sandboxSetting", () => {
  it("TOOLHOST_SANDBOX, then the user's config file, else on; anything unknown leaves it on", async () => {
    const home = await tempDir({ "config.json": JSON.stringify({ sandbox: "off" }) });
    const empty = await tempDir({ "config.json": JSON.stringify({ sandbox: "nope" }) });
    try {
      expect(sandboxSetting({}, home)).toEqual({ value: "off", source: path.join(home, "config.json") });
      expect(sandboxSetting({ TOOLHOST_SANDBOX: "on" }, home)).toEqual({ value: "on", source: "TOOLHOST_SANDBOX" });
      const problem = `${path.join(empty, "config.json")}: sandbox must be "on", "off" or { mode, env, denyRead, allowUnixSockets }`;
      expect(sandboxSetting({ TOOLHOST_SANDBOX: "OFF" }, empty)).toEqual({ value: "off", source: "TOOLHOST_SANDBOX", problem });
      expect(sandboxSetting({ TOOLHOST_SANDBOX: "0" }, empty)).toEqual({ value: "on", source: "default", problem });
      expect(sandboxSetting({}, path.join(empty, "missing"))).toEqual({ value: "on", source: "default" });
      const off = new SessionSandbox({ setting: sandboxSetting({}, home) });
      expect(await off.state()).toEqual({ active: false, off: true, reason: `switched off (${path.join(home, "config.json")})` });
    } finally {
      await fsp.rm(home, { recursive: true, force: true });
      await fsp.rm(empty, { recursive: true, force: true });
    }
  });
});

describe("sandboxSetting, the object form", () => {
  const setting = async (sandbox: unknown) => {
    const home = await tempDir({ "config.json": JSON.stringify({ sandbox }) });
    try {
      return sandboxSetting({}, home);
    } finally {
      await fsp.rm(home, { recursive: true, force: true });
    }
  };

  it("takes mode, env names and denyRead paths (~/ expanded)", async () => {
    expect(await setting({ mode: "off", env: ["GITHUB_TOKEN", "MYAPP_*"], denyRead: ["~/work/secrets", "/srv/keys"] })).toMatchObject({
      value: "off",
      env: ["GITHUB_TOKEN", "MYAPP_*"],
      denyRead: [path.join(os.homedir(), "work/secrets"), "/srv/keys"],
    });
    expect(await setting({ env: ["A"] })).toMatchObject({ value: "on", env: ["A"] });
  });

  it("fails closed on anything malformed: on, no variable passed, only well-formed paths hidden", async () => {
    for (const bad of [
      { mode: "off", env: "GITHUB_TOKEN" },
      { mode: "of" },
      { mode: "off", env: ["BAD NAME"] },
      { mode: "off", extra: true },
      { mode: "off", env: ["A"], denyRead: ["relative/path", "/abs"] },
      ["off"],
      7,
    ]) {
      const s = await setting(bad);
      expect(s.value, JSON.stringify(bad)).toBe("on");
      expect(s.env).toBeUndefined();
      expect(s.problem).toMatch(/sandbox/);
    }
    expect((await setting({ mode: "off", denyRead: ["relative", "/abs"] })).denyRead).toEqual(["/abs"]);
  });

  it("takes allowUnixSockets: true only when the whole entry is well formed (else unix sockets stay refused)", async () => {
    expect(await setting({ allowUnixSockets: true })).toMatchObject({ value: "on", allowUnixSockets: true });
    expect((await setting({ allowUnixSockets: false })).allowUnixSockets).toBeUndefined();
    expect((await setting({ env: ["A"] })).allowUnixSockets).toBeUndefined();
    expect((await setting("on")).allowUnixSockets).toBeUndefined();
    for (const bad of [
      { allowUnixSockets: "true" },
      { allowUnixSockets: 1 },
      { allowUnixSockets: true, extra: 1 },
      { allowUnixSockets: true, mode: "of" },
    ]) {
      const s = await setting(bad);
      expect(s.allowUnixSockets, JSON.stringify(bad)).toBeUndefined();
      expect(s.problem).toMatch(/sandbox/);
    }
    expect((await setting({ allowUnixSockets: "yes" })).problem).toMatch(/allowUnixSockets must be true or false/);
  });

  it("the state and describeSandbox say whether unix sockets are refused", async () => {
    const probe = () => Promise.resolve({ available: true as const });
    const strict = await new SessionSandbox({ setting: { value: "on", source: "default" }, probe }).state();
    const allowed = await new SessionSandbox({ setting: { value: "on", source: "default", allowUnixSockets: true }, probe }).state();
    expect(strict.unixSockets).toBeUndefined();
    expect(allowed.unixSockets).toBe(true);
    expect(describeSandbox(strict)).toMatch(/no unix sockets, a call with allowed hosts included/);
    expect(describeSandbox(allowed)).toMatch(/unix sockets allowed \(sandbox.allowUnixSockets\)/);
  });
});
