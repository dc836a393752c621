import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { LocalShell } from "../../src/runtime/shell/local.js";
import { bubblewrapSandbox, provenIsolation, type BubblewrapOptions } from "../../src/runtime/sandbox/bubblewrap.js";
import type { SpawnRequest } from "../../src/runtime/shell/scoped.js";
import { describeSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import { tempDir } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

// Issue 20, classes 1, 3 and 4, through real bwrap and real processes: each attack is checked by
// its effect (a file unchanged, a listener that hears nothing, a secret absent from the output),
// next to a control where the same command runs unsandboxed and the attack lands.

const status = await sandboxStatus("runtime/sandbox-isolation.test.ts");
const root = process.geteuid?.() === 0;
const has = (bin: string) => new Promise<boolean>((r) => execFile("sh", ["-c", `command -v ${bin}`], (err) => r(!err)));

const requires = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };
let ws: string;
let home: string;
let outside: string;
const sessions: RuntimeSession[] = [];
const savedEnv = { ...process.env };

beforeAll(async () => {
  ws = await tempDir({ "a.txt": "a\n" });
  // A stand-in home (secrets, histories) and toolhost home (config, other sessions), outside /tmp:
  // the sandbox replaces /tmp with a tmpfs, which would hide a home there whether or not it is hidden.
  home = await homeOutsideTmp({
    ".bash_history": "export GITHUB_TOKEN=HISTORY-SECRET\n",
    ".config/gh/hosts.yml": "oauth_token: GH-SECRET\n",
    ".ssh/id_ed25519": "SSH-SECRET\n",
    ".toolhost/config.json": JSON.stringify({ providers: { anthropic: { apiKey: "CONFIG-SECRET" } } }),
    ".toolhost/sessions/other/s1.jsonl": "OTHER-SESSION-SECRET\n",
    "private/notes.txt": "DENYREAD-SECRET\n",
  });
  outside = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-isolation-"));
  process.env.TOOLHOST_HOME = path.join(home, ".toolhost");
  process.env.TEST_PROVIDER_API_KEY = "ENV-SECRET-KEY";
  process.env.MYAPP_TOKEN = "PATTERN-SECRET";
  process.env.MYAPP_MODE = "fast";
  process.env.EXACT_TOKEN = "named-exactly";
  process.env.SSH_AUTH_SOCK = path.join(outside, "agent.sock");
  process.env.LANG = "C.UTF-8";
});
afterAll(async () => {
  process.env = savedEnv;
  for (const dir of [ws, home, outside]) await fsp.rm(dir, { recursive: true, force: true });
});
afterEach(async () => {
  for (const s of sessions.splice(0)) await s.close();
});

/** A folder under /var/tmp holding `files` (relative path → content). */
async function homeOutsideTmp(files: Record<string, string>): Promise<string> {
  const dir = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-home-"));
  for (const [name, content] of Object.entries(files)) {
    await fsp.mkdir(path.dirname(path.join(dir, name)), { recursive: true });
    await fsp.writeFile(path.join(dir, name), content);
  }
  return dir;
}

async function run(command: string, options: BubblewrapOptions | "unsandboxed" = {}, sidecarDir?: string) {
  const session = new RuntimeSession({
    workspace: ws,
    shell: new LocalShell(),
    ...(sidecarDir ? { sidecarDir } : {}),
    ...(options === "unsandboxed" ? {} : { spawnTransform: bubblewrapSandbox({ homes: [home], ...options }) }),
  });
  sessions.push(session);
  const ctx = createToolContext({ session, toolId: "bash", callId: "c", requires, signal: new AbortController().signal });
  return ctx.shell.run(command);
}

describe.skipIf(!status.available)("class 1: no capabilities, whoever runs toolhost", () => {
  it("the command holds no capability, no_new_privs is set and the seccomp filter is on (unsandboxed root holds them all)", async () => {
    const inside = await run("cat /proc/self/status");
    expect(provenIsolation(inside.stdout)).toBeUndefined();
    expect(inside.stdout).toMatch(/^CapBnd:\s+0+$/m);
    const plain = await run("cat /proc/self/status", "unsandboxed");
    if (root) expect(provenIsolation(plain.stdout)).toMatch(/CapEff is 0*1?[0-9a-f]*[1-9a-f]/);
  });

  it.skipIf(process.arch !== "x64" && process.arch !== "arm64")("cannot set up io_uring (EPERM); unsandboxed it can", async () => {
    // io_uring_setup(1, &params) is 425 on x86_64 and aarch64 alike; it prints the fd or -1 and errno.
    const probe = `python3 -c "import ctypes; c=ctypes.CDLL(None, use_errno=True); r=c.syscall(425, 1, ctypes.create_string_buffer(120)); print('RING', r, ctypes.get_errno())"`;
    if (!(await has("python3"))) return;
    expect((await run(probe)).stdout).toBe("RING -1 1\n");
    const plain = (await run(probe, "unsandboxed")).stdout;
    // Control: the host allows it (unless its io_uring_disabled sysctl says otherwise).
    if ((await fsp.readFile("/proc/sys/kernel/io_uring_disabled", "utf8").catch(() => "0")).trim() === "0")
      expect(plain).toMatch(/^RING \d+ 0$/m);
  });

  it("cannot undo a mask, remount / writable, mount, or make a namespace: the file outside stays unchanged", async () => {
    const victim = path.join(outside, "victim.txt");
    await fsp.writeFile(victim, "original\n");
    const attack = [
      `umount -l ${home}/.ssh; cat ${home}/.ssh/id_ed25519`,
      "mount -o remount,rw /",
      `mount -o remount,rw ${outside}`,
      "mount -t tmpfs x /mnt && echo MOUNTED",
      `mount --bind ${ws} ${outside} && echo BOUND`,
      "unshare -U true && echo UNSHARED",
      "unshare -r -m true && echo UNSHARED",
      `python3 -c "import os; os.unshare(os.CLONE_NEWUSER); print('UNSHARED')"`,
      `echo pwned > ${victim}`,
      "true",
    ].join("; ");
    const inside = await run(attack);
    expect(inside.stdout).not.toMatch(/SSH-SECRET|MOUNTED|BOUND|UNSHARED/);
    expect(inside.stderr).toMatch(/Operation not permitted|permission denied/i);
    expect(await fsp.readFile(victim, "utf8")).toBe("original\n");
    // Control: outside the sandbox the same write lands.
    await run(`echo pwned > ${victim}`, "unsandboxed");
    expect(await fsp.readFile(victim, "utf8")).toBe("pwned\n");
  });

  it("cannot type into a terminal: TIOCSTI is refused before the kernel looks at the fd (unsandboxed: not a tty)", async () => {
    const line = `python3 -c "import fcntl, termios; fcntl.ioctl(0, termios.TIOCSTI, b'x')"`;
    expect((await run(line)).stderr).toMatch(/Operation not permitted/);
    expect((await run(line, "unsandboxed")).stderr).toMatch(/Inappropriate ioctl/);
  });

  it("ordinary commands still work: git, node, python3, rg, threads and fork", async () => {
    const rg = await has("rg");
    const line = [
      "git --version",
      `${process.execPath} -e "require('worker_threads'); console.log('node', 1 + 1)"`,
      `python3 -c "import threading, subprocess; t = threading.Thread(target=print, args=('py',)); t.start(); t.join(); subprocess.run(['true'])"`,
      ...(rg ? ["rg --version | head -1"] : []),
      "echo ok",
    ].join(" && ");
    const result = await run(line);
    expect(result.stderr).toBe("");
    expect(result.exit_code).toBe(0);
    expect(result.stdout).toMatch(/git version[\s\S]*node 2[\s\S]*py[\s\S]*ok/);
  });

  it("describeSandbox says running as root, and what the sandbox does about it", () => {
    expect(describeSandbox({ active: true, off: false }, 0)).toMatch(/running as root: .*user namespace.*no capabilities/);
    expect(describeSandbox({ active: true, off: false }, 1000)).not.toMatch(/running as root/);
    expect(describeSandbox({ active: true, off: false }, 1000)).toMatch(/no capabilities and a seccomp filter/);
    expect(describeSandbox({ active: false, off: true, reason: "x" }, 0)).toMatch(/as root, with every capability/);
  });
});

describe.skipIf(!status.available)("class 3: secrets stay outside", () => {
  it("passes an allow-listed environment: no provider key, no secret-named variable unless named exactly", async () => {
    const inside = await run("env", { env: ["MYAPP_*", "EXACT_TOKEN"] });
    expect(inside.stdout).not.toContain("ENV-SECRET-KEY");
    expect(inside.stdout).not.toContain("PATTERN-SECRET");
    expect(inside.stdout).not.toContain("SSH_AUTH_SOCK");
    expect(inside.stdout).toMatch(/^MYAPP_MODE=fast$/m);
    expect(inside.stdout).toMatch(/^EXACT_TOKEN=named-exactly$/m);
    expect(inside.stdout).toMatch(/^LANG=C\.UTF-8$/m);
    expect(inside.stdout).toMatch(/^PATH=/m);
    expect(inside.stdout).toMatch(/^HOME=/m);
    // The values never reach a command line another user could read.
    const inner = bubblewrapSandbox({ env: ["EXACT_TOKEN"] });
    let wrapped: SpawnRequest | undefined;
    const session = new RuntimeSession({
      workspace: ws,
      spawnTransform: async (request, context) => (wrapped = await inner(request, context)),
    });
    sessions.push(session);
    const ctx = createToolContext({ session, toolId: "bash", callId: "c", requires, signal: new AbortController().signal });
    expect((await ctx.shell.run("echo $EXACT_TOKEN")).stdout).toBe("named-exactly\n");
    await inner.close();
    if (!wrapped) throw new Error("the transform did not run");
    expect(wrapped.args.join(" ")).not.toContain("named-exactly");
    // Control: unsandboxed, the agent's environment is all there.
    const plain = await run("env", "unsandboxed");
    expect(plain.stdout).toContain("ENV-SECRET-KEY");
  });

  it("hides ~/.toolhost but the call's own sidecar folder, histories, credential stores, /etc/shadow and denyRead", async () => {
    const sidecar = path.join(home, ".toolhost", "sessions", "proj", "this-session");
    const line = [
      `cat ${home}/.toolhost/config.json`,
      `cat ${home}/.toolhost/sessions/other/s1.jsonl`,
      `ls ${home}/.toolhost/sessions`,
      `cat ${home}/.bash_history`,
      `cat ${home}/.config/gh/hosts.yml`,
      `cat ${home}/private/notes.txt`,
      "cat /etc/shadow",
      `echo mine > ${sidecar}/own.txt && echo WROTE`,
      "true",
    ].join("; ");
    const inside = await run(line, { maskPaths: [path.join(home, "private")] }, sidecar);
    expect(inside.stdout).not.toMatch(/SECRET|root:/);
    expect(inside.stdout).toContain("WROTE");
    expect(await fsp.readFile(path.join(sidecar, "own.txt"), "utf8")).toBe("mine\n");
    // Control: unsandboxed, every one of them reads.
    const plain = await run(line, "unsandboxed", sidecar);
    for (const secret of ["CONFIG-SECRET", "OTHER-SESSION-SECRET", "HISTORY-SECRET", "GH-SECRET", "DENYREAD-SECRET"]) {
      expect(plain.stdout).toContain(secret);
    }
  });
});

describe.skipIf(!status.available)("class 4: host sockets are unreachable", () => {
  /** A unix socket listener; `heard` counts the connections it accepted. */
  async function listener(socketPath: string) {
    const heard: number[] = [];
    const server = net.createServer((socket) => {
      heard.push(Date.now());
      socket.end("HELLO-FROM-HOST\n");
    });
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
    return { heard, close: () => new Promise((resolve) => server.close(resolve)) };
  }

  it("a socket under /run and one in $XDG_RUNTIME_DIR hear nothing from socat, python3 or nc; unsandboxed they do", async () => {
    const runDir = await fsp.mkdtemp("/run/toolhost-test-").catch(() => undefined);
    const xdg = await fsp.mkdtemp(path.join(outside, "xdg-"));
    process.env.XDG_RUNTIME_DIR = xdg;
    const sockets = [path.join(xdg, "bus"), ...(runDir ? [path.join(runDir, "docker.sock")] : [])];
    const servers = await Promise.all(sockets.map(listener));
    try {
      const tools = [
        ...((await has("socat")) ? [(s: string) => `socat -T1 - UNIX-CONNECT:${s} </dev/null`] : []),
        (s: string) => `python3 -c "import socket; c = socket.socket(socket.AF_UNIX); c.connect('${s}'); print(c.recv(100).decode())"`,
        ...((await has("nc")) ? [(s: string) => `nc -U -w1 ${s} </dev/null`] : []),
      ];
      const line = sockets.flatMap((s) => tools.map((t) => `${t(s)}; `)).join("") + "true";
      const inside = await run(line);
      expect(inside.stdout).not.toContain("HELLO-FROM-HOST");
      for (const s of servers) expect(s.heard).toEqual([]);
      // Control: the same python connect, unsandboxed, reaches each listener.
      const plain = await run(sockets.map((s) => tools[tools.length > 1 ? 1 : 0]!(s)).join("; "), "unsandboxed");
      expect(plain.stdout).toContain("HELLO-FROM-HOST");
      for (const s of servers) expect(s.heard.length).toBeGreaterThan(0);
    } finally {
      delete process.env.XDG_RUNTIME_DIR;
      for (const s of servers) await s.close();
      if (runDir) await fsp.rm(runDir, { recursive: true, force: true });
    }
  });

  it("a socket in the workspace hears nothing from a command or a language server (even with allowUnixSockets); a command with it does", async () => {
    const socketPath = path.join(ws, "app.sock");
    const server = await listener(socketPath);
    const connect = `python3 -c "import socket; c = socket.socket(socket.AF_UNIX); c.connect('${socketPath}'); print(c.recv(100).decode())"`;
    /** Runs `connect` through the transform, as a confined launch when `confined`. */
    const through = async (options: BubblewrapOptions, confined: boolean) => {
      const inner = bubblewrapSandbox({ homes: [home], ...options });
      const cache = await fsp.mkdtemp(path.join(outside, "lsp-"));
      const session = new RuntimeSession({
        workspace: ws,
        shell: new LocalShell(),
        spawnTransform: (request, context) => inner(request, confined ? { ...context, confined: { writable: [cache] } } : context),
      });
      sessions.push(session);
      const ctx = createToolContext({ session, toolId: "bash", callId: "c", requires, signal: new AbortController().signal });
      return ctx.shell.run(connect);
    };
    try {
      const refused = [await through({}, false), await through({}, true), await through({ allowUnixSockets: true }, true)];
      for (const result of refused) {
        expect(result.stdout).not.toContain("HELLO-FROM-HOST");
        expect(result.stderr).toMatch(/PermissionError: \[Errno 1\] Operation not permitted/);
      }
      expect(server.heard).toEqual([]);
      // Control: a command with the user's allowUnixSockets reaches it.
      expect((await through({ allowUnixSockets: true }, false)).stdout).toContain("HELLO-FROM-HOST");
      expect(server.heard.length).toBe(1);
    } finally {
      await server.close();
      await fsp.rm(socketPath, { force: true });
    }
  });

  it("keeps what name resolution reads: /etc/resolv.conf and /etc/hosts read the same inside", async () => {
    const line = "cat /etc/resolv.conf /etc/hosts";
    const [inside, plain] = [await run(line), await run(line, "unsandboxed")];
    expect(inside.stdout).toBe(plain.stdout);
  });
});
