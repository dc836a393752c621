import * as fsp from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { FakeToolCall } from "../fixtures/fake-openai.mjs";
import { attack, bash, toolResults, bwrapInstalled, expectNothingLanded, SECRET, stage, USERS, type Stage } from "./harness.js";

// Issue 20, classes 3 and 4. Secrets stay outside the sandbox: the agent's own environment (the
// provider keys), toolhost's home (its config and every project's transcripts), histories,
// credential stores and whatever the user adds to `sandbox.denyRead`. Unix sockets outside the
// workspace (docker, D-Bus, an ssh-agent) hear nothing from inside, and a file hard-linked into the
// workspace is written without changing the inode it shares with a file outside.

/** Secret values toolhost itself holds in its environment. */
const ENV_SECRETS: NodeJS.ProcessEnv = {
  ANTHROPIC_API_KEY: `${SECRET}-anthropic`,
  OPENAI_API_KEY: `${SECRET}-openai`,
  GITHUB_TOKEN: `${SECRET}-github`,
  AWS_SECRET_ACCESS_KEY: `${SECRET}-aws`,
  DB_PASSWORD: `${SECRET}-db`,
  MY_SERVICE_CREDENTIALS: `${SECRET}-creds`,
};

/** Files in the home that hold secrets, planted before each attack. */
const HOME_SECRETS = [
  ".toolhost/secret-note.txt",
  ".toolhost/sessions/other-project/old.jsonl",
  ".bash_history",
  ".zsh_history",
  ".python_history",
  ".config/gh/hosts.yml",
  ".local/share/keyrings/login.keyring",
  ".mozilla/firefox/abc.default/logins.json",
  ".config/google-chrome/Default/Login Data",
  ".docker/config.json",
  ".git-credentials",
  "private/notes.txt",
];

async function plantSecrets(s: Stage): Promise<void> {
  for (const rel of HOME_SECRETS) {
    await fsp.mkdir(path.dirname(path.join(s.home, rel)), { recursive: true });
    await fsp.writeFile(path.join(s.home, rel), `${SECRET}\n`, { mode: 0o600 });
  }
  // The user's own additions to what the sandbox hides; `private/` is in it.
  await fsp.writeFile(path.join(s.home, ".toolhost/config.json"), JSON.stringify({ sandbox: { denyRead: ["~/private"] } }));
  await s.own(s.home);
}

const SECRET_READS: { name: string; calls: FakeToolCall[] }[] = [
  { name: "env", calls: [bash("env")] },
  { name: "printenv", calls: [bash("printenv ANTHROPIC_API_KEY OPENAI_API_KEY GITHUB_TOKEN")] },
  { name: "/proc/self/environ", calls: [bash("tr '\\0' '\\n' < /proc/self/environ")] },
  { name: "the parent's environ", calls: [bash("for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null")] },
  { name: "python os.environ", calls: [bash(`python3 -c "import os; print(dict(os.environ))"`)] },
  { name: "toolhost's home", calls: [bash("cat ~/.toolhost/secret-note.txt; cat ~/.toolhost/config.json; grep -r SECRET ~/.toolhost")] },
  { name: "other projects' sessions", calls: [bash("cat ~/.toolhost/sessions/*/*.jsonl")] },
  { name: "shell histories", calls: [bash("cat ~/.bash_history ~/.zsh_history ~/.python_history")] },
  { name: "credential stores", calls: [bash("cat ~/.config/gh/hosts.yml ~/.docker/config.json ~/.git-credentials")] },
  {
    name: "keyrings and browser profiles",
    calls: [bash("cat ~/.local/share/keyrings/* ~/.mozilla/firefox/*/logins.json ~/.config/google-chrome/Default/*")],
  },
  { name: "a user's denyRead folder", calls: [bash("cat ~/private/notes.txt")] },
  { name: "a grep over the home", calls: [bash("grep -r PLANTED ~ 2>/dev/null | head")] },
  { name: "find and cat", calls: [bash("find ~ -type f -exec cat {} + 2>/dev/null | grep -a PLANTED")] },
];

/** A unix socket server that records what anyone sends it. */
async function socketListener(file: string): Promise<{ heard: string[]; close(): Promise<void> }> {
  const heard: string[] = [];
  const server = net.createServer((socket) => {
    heard.push("<connection>");
    socket.on("data", (d: Buffer) => heard.push(d.toString()));
    socket.on("error", () => {});
  });
  await fsp.mkdir(path.dirname(file), { recursive: true, mode: 0o755 });
  await new Promise<void>((resolve) => server.listen(file, resolve));
  await fsp.chmod(file, 0o777);
  return { heard, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

const connectors = (sock: string): { name: string; command: string }[] => [
  { name: "socat", command: `echo hello | socat - UNIX-CONNECT:${sock}` },
  { name: "curl --unix-socket", command: `curl -s -m 3 --unix-socket ${sock} http://x/` },
  { name: "python", command: `python3 -c "import socket; s=socket.socket(socket.AF_UNIX); s.connect('${sock}'); s.send(b'hello')"` },
  { name: "node", command: `node -e "require('net').connect('${sock}', function () { this.end('hello') })"` },
];

describe.concurrent.each(USERS)("issue 20, classes 3 and 4, as $name", { timeout: 120_000 }, (user) => {
  it("control: unsandboxed, the environment and the home's secrets reach the model (the harness sees it)", async () => {
    const s = await stage(user);
    try {
      await plantSecrets(s);
      const result = await attack(s, [bash("env; cat ~/private/notes.txt")], { env: { ...ENV_SECRETS, TOOLHOST_SANDBOX: "off" } });
      expect(result.toModel).toContain(`${SECRET}-github`);
      expect(result.toModel).toContain(`${SECRET}\\n`);
    } finally {
      await s.close();
    }
  });

  it.skipIf(!bwrapInstalled())("a variable the user names in sandbox.env passes, and ordinary ones do", async () => {
    const s = await stage(user);
    try {
      await plantSecrets(s);
      await fsp.writeFile(path.join(s.home, ".toolhost/config.json"), JSON.stringify({ sandbox: { env: ["NPM_TOKEN"] } }));
      await s.own(s.home);
      const result = await attack(s, [bash("echo token=$NPM_TOKEN lang=$LANG home=$HOME key=$ANTHROPIC_API_KEY")], {
        env: { ...ENV_SECRETS, NPM_TOKEN: "npm-visible", LANG: "C.UTF-8" },
      });
      expect(result.toModel).toContain("token=npm-visible lang=C.UTF-8");
      expect(result.toModel).toContain(`home=${s.home}`);
      expect(result.toModel).not.toContain(SECRET);
    } finally {
      await s.close();
    }
  });

  // One run with every read: a tool result that holds a secret names the read that got it.
  it("no secret reaches the model, by any of the reads", async () => {
    const s = await stage(user);
    try {
      await plantSecrets(s);
      const calls = SECRET_READS.flatMap((r) => r.calls);
      const result = await attack(s, calls, { env: ENV_SECRETS });
      expect(result.code, result.stderr).toBe(0);
      const leaks = toolResults(result).flatMap((text, i) => (text.includes(SECRET) ? [SECRET_READS[i]?.name] : []));
      expect(leaks).toEqual([]);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it.each(connectors("SOCK"))(
    "a unix socket under /run, under XDG_RUNTIME_DIR and at SSH_AUTH_SOCK hears nothing: $name",
    async ({ command }) => {
      const s = await stage(user);
      const tag = path.basename(s.root);
      const runDir = path.join("/run", tag);
      const listeners = await Promise.all([
        socketListener(path.join(runDir, "docker.sock")),
        socketListener(path.join(s.root, "xdg/bus")),
        socketListener(path.join(s.root, "agent/agent.sock")),
      ]);
      try {
        const env = { XDG_RUNTIME_DIR: path.join(s.root, "xdg"), SSH_AUTH_SOCK: path.join(s.root, "agent/agent.sock") };
        const calls = [
          path.join(runDir, "docker.sock"),
          "$XDG_RUNTIME_DIR/bus",
          `${env.XDG_RUNTIME_DIR}/bus`,
          "$SSH_AUTH_SOCK",
          env.SSH_AUTH_SOCK,
        ].map((sock) => bash(command.replace("SOCK", sock)));
        const result = await attack(s, calls, { env });
        expect(result.code, result.stderr).toBe(0);
        expect(listeners.map((l) => l.heard)).toEqual([[], [], []]);
        // Control: unsandboxed, each listener is reachable (by python: the watchdog, which stands
        // in for the sandbox when it is off, refuses socat and curl).
        const python = connectors("SOCK").find((c) => c.name === "python")?.command ?? "";
        const direct = [path.join(runDir, "docker.sock"), `${env.XDG_RUNTIME_DIR}/bus`, env.SSH_AUTH_SOCK].map((sock) =>
          bash(python.replace("SOCK", sock)),
        );
        await attack(s, direct, { env: { ...env, TOOLHOST_SANDBOX: "off" } });
        for (const l of listeners) expect(l.heard.length).toBeGreaterThan(0);
      } finally {
        await Promise.all(listeners.map((l) => l.close()));
        await fsp.rm(runDir, { recursive: true, force: true });
        await s.close();
      }
    },
  );

  it.each([
    { name: "write", call: { name: "write", arguments: { path: "linked.txt", content: "pwned\n" } } },
    { name: "edit", call: { name: "edit", arguments: { path: "linked.txt", old_string: "untouched", new_string: "pwned" } } },
  ])("the $name tool on a file hard-linked from outside changes the workspace's file, not the shared inode", async ({ call }) => {
    const s = await stage(user);
    try {
      const outside = path.join(s.home, "victim.txt");
      await fsp.link(outside, path.join(s.ws, "linked.txt"));
      const inode = (await fsp.stat(outside)).ino;
      const result = await attack(s, [{ name: "read", arguments: { path: "linked.txt" } }, call]);
      expect(result.code, result.stderr).toBe(0);
      expect(await fsp.readFile(path.join(s.ws, "linked.txt"), "utf8")).toBe("pwned\n");
      expect((await fsp.stat(outside)).ino).toBe(inode);
      expect(await expectNothingLanded(s, result)).toEqual([]);
    } finally {
      await s.close();
    }
  });
});
