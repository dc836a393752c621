import { spawn } from "node:child_process";
import * as fsp from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { createInterface } from "node:readline";
import { describe, expect, it } from "vitest";
import { attack, bash, bwrapInstalled, toolResults, stage, USERS, type Stage } from "./harness.js";

// Issue 33: a socket file the sandbox can see (in the workspace, in a folder of the home) may
// belong to a listener outside it; no mount hides it, so the seccomp filter refuses AF_UNIX sockets
// in every sandboxed command (`socket(AF_UNIX)`, and a datagram `socketpair`, which can `sendto`
// any path), a call with allowed hosts too: its proxy bridge's socat keeps them, the command runs
// in an inner bwrap under the strict filter. Judged by effect: the listeners hear nothing. A stream
// socket pair still works. Control: with `sandbox.allowUnixSockets` the same commands are heard.

interface Listener {
  /** What it heard, from the sandbox (the test's own marker taken out). */
  heard: string[];
  /**
   * Sends a marker from outside and waits until the listener has it: what the sandbox sent
   * earlier is queued before it (accepted connections, datagrams in order), so it is in `heard` by then.
   */
  drain(): Promise<void>;
  close(): Promise<void>;
}

const MARKER = "marker-from-the-test";

/** Resolves when `heard` gets the marker, and takes it out. */
function markerHeard(heard: string[], arrived: (listener: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    arrived(() => {
      const i = heard.indexOf(MARKER);
      if (i < 0) return;
      heard.splice(i, 1);
      resolve();
    });
  });
}

/** A stream listener (node) that records every connection and what it is sent. */
async function streamListener(file: string): Promise<Listener> {
  const heard: string[] = [];
  let onHeard = () => {};
  const server = net.createServer((socket) => {
    heard.push("<connection>");
    socket.on("data", (d: Buffer) => {
      heard.push(d.toString());
      onHeard();
    });
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(file, resolve));
  await fsp.chmod(file, 0o777);
  return {
    heard,
    drain: async () => {
      const arrived = markerHeard(heard, (listener) => (onHeard = listener));
      const client = net.connect(file, () => client.end(MARKER));
      await arrived;
      // The marker's own connection is not one of the sandbox's.
      heard.splice(heard.lastIndexOf("<connection>"), 1);
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const DGRAM_SERVER = [
  "import os, socket, sys",
  "s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)",
  "s.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o777)",
  "print('ready', flush=True)",
  "while True: print(s.recv(100).decode(), flush=True)",
].join("\n");

/** A datagram listener (python, outside the sandbox) that records what it is sent. */
async function datagramListener(file: string): Promise<Listener> {
  const child = spawn("/usr/bin/python3", ["-c", DGRAM_SERVER, file], { stdio: ["ignore", "pipe", "inherit"] });
  const heard: string[] = [];
  let onHeard = () => {};
  const lines = createInterface({ input: child.stdout });
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`the datagram listener ended (${code})`)));
    lines.on("line", (line) => {
      if (line === "ready") return resolve();
      heard.push(line);
      onHeard();
    });
  });
  const ended = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    heard,
    drain: async () => {
      const arrived = markerHeard(heard, (listener) => (onHeard = listener));
      spawn("/usr/bin/python3", [
        "-c",
        `import socket, sys; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"${MARKER}", sys.argv[1])`,
        file,
      ]);
      await arrived;
    },
    close: async () => {
      child.kill("SIGKILL");
      await ended;
    },
  };
}

/** Each way a command reaches a stream socket (`S`) or a datagram socket (`D`). */
const CONNECTS = (s: string, d: string): string[] => [
  `echo via-socat | socat - UNIX-CONNECT:${s}`,
  `curl -s -m 3 --unix-socket ${s} http://x/via-curl`,
  `python3 -c "import socket; c=socket.socket(socket.AF_UNIX); c.connect('${s}'); c.send(b'via-python')"`,
  `node -e "require('net').connect('${s}', function () { this.end('via-node') })"`,
  `echo via-socat-sendto | socat - UNIX-SENDTO:${d}`,
  `python3 -c "import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'via-dgram', '${d}')"`,
  `python3 -c "import socket; a,b=socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); a.sendto(b'via-pair', '${d}')"`,
];

/** What must keep working: a stream socket pair (python), node's child pipes (socket pairs too). */
const STILL_WORKS = [
  `python3 -c "import socket; a,b=socket.socketpair(); a.send(b'pair-ok'); print(b.recv(7).decode())"`,
  `node -e "process.stdout.write(require('child_process').execFileSync('echo', ['child-ok']))"`,
];

/** Listeners in the workspace and in a folder of the home, the commands that try them, and what they heard. */
async function listeners(s: Stage): Promise<{ all: Listener[]; calls: ReturnType<typeof bash>[] }> {
  await fsp.mkdir(path.join(s.home, "sockets"), { mode: 0o755 });
  const all = [
    await streamListener(path.join(s.ws, "app.sock")),
    await streamListener(path.join(s.home, "sockets/app.sock")),
    await datagramListener(path.join(s.ws, "log.sock")),
    await datagramListener(path.join(s.home, "sockets/log.sock")),
  ];
  const calls = [
    ...CONNECTS(path.join(s.ws, "app.sock"), path.join(s.ws, "log.sock")),
    ...CONNECTS(path.join(s.home, "sockets/app.sock"), path.join(s.home, "sockets/log.sock")),
  ].map((command) => bash(command));
  return { all, calls };
}

/** A net.fetch allow rule: every sandboxed command gets the proxy bridge (socat inside, which needs AF_UNIX). */
async function allowHost(s: Stage): Promise<void> {
  await fsp.mkdir(path.join(s.home, ".toolhost"), { recursive: true });
  const rule = { permission: "net.fetch", pattern: "example.com", action: "allow" };
  await fsp.writeFile(path.join(s.home, ".toolhost/config.json"), JSON.stringify({ permissions: [rule] }));
  await s.own(path.join(s.home, ".toolhost"));
}

/** The bridge is there: the proxy's address answers inside (socat listening), and the command was told of it. */
const BRIDGE_UP = `python3 -c "import os, socket; socket.create_connection(('127.0.0.1', 3128)).close(); print('bridge-up', os.environ['HTTPS_PROXY'])"`;

async function allowUnixSockets(s: Stage): Promise<void> {
  await fsp.mkdir(path.join(s.home, ".toolhost"), { recursive: true });
  await fsp.writeFile(path.join(s.home, ".toolhost/config.json"), JSON.stringify({ sandbox: { allowUnixSockets: true } }));
  await s.own(path.join(s.home, ".toolhost"));
}

describe.concurrent.each(USERS)("issue 33, unix sockets, as $name", { timeout: 120_000 }, (user) => {
  it.skipIf(!bwrapInstalled())(
    "a listener outside on a socket in the workspace or the home hears nothing; a socket pair still works",
    async () => {
      const s = await stage(user);
      const { all, calls } = await listeners(s);
      try {
        const result = await attack(s, [...calls, ...STILL_WORKS.map((command) => bash(command))]);
        expect(result.code, result.stderr).toBe(0);
        for (const l of all) await l.drain();
        expect(all.map((l) => l.heard)).toEqual([[], [], [], []]);
        const results = toolResults(result);
        expect(results.at(-2)).toContain("pair-ok");
        expect(results.at(-1)).toContain("child-ok");
        // Refused by the filter, not missing: python says so.
        expect(results[2]).toMatch(/PermissionError|Operation not permitted/);
      } finally {
        await Promise.all(all.map((l) => l.close()));
        await s.close();
      }
    },
  );

  it.skipIf(!bwrapInstalled())(
    "with an allowed host (socat bridging to the proxy inside) the listeners hear nothing either; the bridge is up",
    async () => {
      const s = await stage(user);
      const { all, calls } = await listeners(s);
      try {
        await allowHost(s);
        const result = await attack(s, [...calls, bash(BRIDGE_UP)]);
        expect(result.code, result.stderr).toBe(0);
        for (const l of all) await l.drain();
        expect(all.map((l) => l.heard)).toEqual([[], [], [], []]);
        const results = toolResults(result);
        expect(results.at(-1)).toContain("bridge-up http://127.0.0.1:3128");
        expect(results[2]).toMatch(/PermissionError|Operation not permitted/);
      } finally {
        await Promise.all(all.map((l) => l.close()));
        await s.close();
      }
    },
  );

  it.skipIf(!bwrapInstalled())("control: with sandbox.allowUnixSockets each listener hears the same commands", async () => {
    const s = await stage(user);
    const { all, calls } = await listeners(s);
    try {
      await allowUnixSockets(s);
      const result = await attack(s, calls);
      expect(result.code, result.stderr).toBe(0);
      for (const l of all) await l.drain();
      for (const [i, l] of all.entries()) expect(l.heard.length, `listener ${i}`).toBeGreaterThan(0);
      const heard = all.flatMap((l) => l.heard).join(" ");
      for (const via of ["via-socat", "via-python", "via-node", "via-curl", "via-socat-sendto", "via-dgram", "via-pair"]) {
        expect(heard).toContain(via);
      }
    } finally {
      await Promise.all(all.map((l) => l.close()));
      await s.close();
    }
  });
});
