import * as fsp from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { LocalShell } from "../../src/runtime/shell/local.js";
import { bubblewrapSandbox, sandboxAvailable } from "../../src/runtime/sandbox/bubblewrap.js";
import type { SpawnTransform } from "../../src/runtime/shell/scoped.js";
import type { RequirementSet } from "../../src/tool/requirements.js";
import { tempDir } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

const status = await sandboxStatus("runtime/sandbox.test.ts");

const requires: RequirementSet = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };

let ws: string;
/** Outside every root and outside /tmp (which the sandbox replaces): the read-only root is what guards it. */
let outside: string;
const sessions: RuntimeSession[] = [];

beforeEach(async () => {
  ws = await tempDir({ "sub/.keep": "" });
  outside = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-sandbox-test-"));
});

afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
  await fsp.rm(ws, { recursive: true, force: true });
  await fsp.rm(outside, { recursive: true, force: true });
});

function shell(transform: SpawnTransform | undefined, signal = new AbortController().signal) {
  const session = new RuntimeSession({
    workspace: ws,
    shell: new LocalShell({ killGraceMs: 500 }),
    ...(transform ? { spawnTransform: transform } : {}),
  });
  sessions.push(session);
  return { session, shell: createToolContext({ session, toolId: "t", callId: "c", requires, signal }).shell };
}

/** Host pids whose command line contains `token`. */
async function processesWith(token: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await fsp.readdir("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const cmdline = await fsp.readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    const stat = await fsp.readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    if (cmdline.includes(token) && !stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) found.push(Number(entry));
  }
  return found;
}

/** The three sleeps a test started (bwrap's and bash's command lines hold the tokens too). */
async function sleeps(token: string): Promise<number[]> {
  return (await Promise.all([1, 2, 3].map((n) => processesWith(`sleep\x003600.${token}${n}`)))).flat();
}

async function eventually(check: () => Promise<boolean>, limitMs: number): Promise<boolean> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("sandboxAvailable", () => {
  it("says why when bwrap cannot run, and probes once", async () => {
    const missing = await sandboxAvailable("/nonexistent/bwrap");
    expect(missing.available).toBe(false);
    if (!missing.available) expect(missing.reason).toMatch(/cannot start a sandbox here: .*ENOENT/);
    expect(sandboxAvailable()).toBe(sandboxAvailable());
  });
});

describe.skipIf(!status.available)("the bubblewrap sandbox over the real LocalShell", () => {
  it("passes output, exit codes, cwd and environment through", async () => {
    const { shell: sh } = shell(bubblewrapSandbox());
    const result = await sh.run('echo out; echo err >&2; echo "$MINE $(pwd)"; exit 3', {
      env: { MINE: "kept" },
      cwd: path.join(ws, "sub"),
    });
    expect(result).toMatchObject({ stdout: `out\nkept ${path.join(ws, "sub")}\n`, stderr: "err\n", exit_code: 3, timed_out: false });
    expect((await sh.exec("bash", ["-c", "exit 0"])).exit_code).toBe(0);
  });

  it("lets the command write inside the workspace, and nowhere else", async () => {
    const { shell: sh } = shell(bubblewrapSandbox());
    const inside = await sh.run(`echo written > ${path.join(ws, "sub/a.txt")}`);
    expect(inside.exit_code).toBe(0);
    expect(await fsp.readFile(path.join(ws, "sub/a.txt"), "utf8")).toBe("written\n");

    const target = path.join(outside, "victim.txt");
    await fsp.writeFile(target, "original\n");
    const outsideRoot = await sh.run(`echo changed > ${target}; echo more >> ${target}; rm -f ${target}`);
    expect(outsideRoot.exit_code).not.toBe(0);
    expect(outsideRoot.stderr).toMatch(/Read-only file system/);
    expect(await fsp.readFile(target, "utf8")).toBe("original\n");
    const created = await sh.run(`touch ${path.join(outside, "new.txt")}`);
    expect(created.exit_code).not.toBe(0);
    await expect(fsp.stat(path.join(outside, "new.txt"))).rejects.toThrow();

    // Another folder in /tmp is not there at all: the sandbox has a private /tmp.
    const otherTmp = await tempDir({ "f.txt": "original\n" });
    try {
      const result = await sh.run(`cat ${otherTmp}/f.txt; echo changed > ${otherTmp}/f.txt`);
      expect(result.exit_code).not.toBe(0);
      expect(result.stdout).toBe("");
      expect(await fsp.readFile(path.join(otherTmp, "f.txt"), "utf8")).toBe("original\n");
    } finally {
      await fsp.rm(otherTmp, { recursive: true, force: true });
    }
    // What the command writes in /tmp stays in its own /tmp.
    const marker = `toolhost-private-${process.pid}-${Date.now()}`;
    expect((await sh.run(`echo x > /tmp/${marker} && cat /tmp/${marker}`)).stdout).toBe("x\n");
    await expect(fsp.stat(path.join("/tmp", marker))).rejects.toThrow();
  });

  it("lets the command write in the session's sidecar folder and a given temp folder", async () => {
    const tmp = path.join(outside, "tmp");
    await fsp.mkdir(tmp);
    const { session, shell: sh } = shell(bubblewrapSandbox({ tmpDir: tmp }));
    const file = path.join(session.sidecars.dir, "from-sandbox.txt");
    const result = await sh.run(`echo side > ${file} && echo temp > "$TMPDIR/t.txt"`);
    expect(result.exit_code).toBe(0);
    expect(await fsp.readFile(file, "utf8")).toBe("side\n");
    expect(await fsp.readFile(path.join(tmp, "t.txt"), "utf8")).toBe("temp\n");
    // A truncated output still reaches its sidecar.
    const big = await sh.run("head -c 300000 /dev/zero | tr '\\0' a", { maxOutputBytes: 1000 });
    expect(big.truncated).toBe(true);
    expect((await fsp.stat(big.output_path as string)).size).toBe(300000);
  });

  it("hides the secrets in the home folder", async () => {
    const home = path.join(outside, "home");
    await fsp.mkdir(path.join(home, ".ssh"), { recursive: true });
    await fsp.writeFile(path.join(home, ".ssh/id_rsa"), "SECRET-KEY\n");
    await fsp.writeFile(path.join(home, ".netrc"), "machine x password SECRET-NETRC\n");
    await fsp.writeFile(path.join(home, "notes.txt"), "public\n");
    const line = 'cat "$HOME/.ssh/id_rsa"; cat "$HOME/.netrc"; cat "$HOME/notes.txt"; ls -A "$HOME/.ssh"';

    // Without the sandbox they are readable: the test plants what it means to hide.
    const plain = await shell(undefined).shell.run(line, { env: { HOME: home } });
    expect(plain.stdout).toContain("SECRET-KEY");

    const sandboxed = await shell(bubblewrapSandbox()).shell.run(line, { env: { HOME: home } });
    expect(sandboxed.stdout).toBe("public\n");
    expect(sandboxed.stderr).toMatch(/id_rsa: No such file or directory/);
    // Also through the `homes` option, whatever HOME the call has.
    const byOption = await shell(bubblewrapSandbox({ homes: [home] })).shell.run(`cat ${home}/.ssh/id_rsa`);
    expect(byOption.exit_code).not.toBe(0);
    expect(byOption.stdout).toBe("");
    expect(await fsp.readFile(path.join(home, ".ssh/id_rsa"), "utf8")).toBe("SECRET-KEY\n");
  });

  it("has no network: a listener on 127.0.0.1 receives nothing", async () => {
    let connections = 0;
    const server = http.createServer((_req, res) => res.end("reached"));
    server.on("connection", () => connections++);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const line = `exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3`;
    try {
      const plain = await shell(undefined).shell.run(line);
      expect(plain.stdout).toContain("reached");
      expect(connections).toBe(1);

      const sandboxed = await shell(bubblewrapSandbox()).shell.run(line);
      expect(sandboxed.exit_code).not.toBe(0);
      expect(sandboxed.stdout).toBe("");
      const viaNode = await shell(bubblewrapSandbox()).shell.run(
        `${process.execPath} -e "fetch('http://127.0.0.1:${port}/').then(() => process.exit(0), () => process.exit(7))"`,
      );
      expect(viaNode.exit_code).toBe(7);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("still kills the whole tree on timeout, background and setsid children included", async () => {
    const token = `${Math.floor(Math.random() * 1e6)}`;
    const { shell: sh } = shell(bubblewrapSandbox());
    const line = `sleep 3600.${token}1 & (setsid sleep 3600.${token}2 &) ; sleep 3600.${token}3`;
    const started = Date.now();
    const running = sh.run(line, { timeoutMs: 1500 });
    expect(await eventually(async () => (await sleeps(token)).length === 3, 1400)).toBe(true);
    const result = await running;
    expect(result.timed_out).toBe(true);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await eventually(async () => (await processesWith(`3600.${token}`)).length === 0, 3000)).toBe(true);
  });

  it("ends background jobs with the command (its pid namespace goes with it), unlike the plain LocalShell", async () => {
    const token = `${Math.floor(Math.random() * 1e6)}`;
    // The job has started by the time the command ends.
    const line = `(sleep 3600.${token}1 >/dev/null 2>&1 &); sleep 0.3; echo started`;
    const plain = await shell(undefined).shell.run(line);
    expect(plain.stdout).toBe("started\n");
    const left = await sleeps(token);
    expect(left).toHaveLength(1);
    for (const pid of left) process.kill(pid, "SIGKILL");

    const result = await shell(bubblewrapSandbox()).shell.run(line);
    expect(result.stdout).toBe("started\n");
    expect(await eventually(async () => (await processesWith(`3600.${token}`)).length === 0, 3000)).toBe(true);
  });

  it("still kills the whole tree on abort", async () => {
    const token = `${Math.floor(Math.random() * 1e6)}`;
    const controller = new AbortController();
    const { shell: sh } = shell(bubblewrapSandbox(), controller.signal);
    const running = sh.run(`sleep 3600.${token}1 & (setsid sleep 3600.${token}2 &) ; sleep 3600.${token}3`);
    expect(await eventually(async () => (await sleeps(token)).length === 3, 3000)).toBe(true);
    controller.abort();
    await running;
    expect(await eventually(async () => (await processesWith(`3600.${token}`)).length === 0, 3000)).toBe(true);
  });
});
