import * as fsp from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import type net from "node:net";
import path from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { LocalShell } from "../../src/runtime/shell/local.js";
import { bubblewrapSandbox, type BubblewrapOptions } from "../../src/runtime/sandbox/bubblewrap.js";
import { isPrivateAddress } from "../../src/runtime/addresses.js";
import {
  sandboxNetworkStatus,
  sandboxProxies,
  startSandboxProxy,
  type SandboxProxy,
  type SandboxProxyOptions,
} from "../../src/runtime/sandbox/proxy.js";
import { netFetchHosts } from "../../src/policy/net-hosts.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";
import type { RequirementSet } from "../../src/tool/requirements.js";
import { tempDir } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";

const sandbox = await sandboxStatus("runtime/sandbox-proxy.test.ts");
const network = sandboxNetworkStatus();
const skipSandbox = !sandbox.available || !network.available;
if (skipSandbox) {
  const why = !sandbox.available ? sandbox.reason : !network.available ? network.reason : "";
  console.warn(`sandbox-proxy.test.ts: the tests inside bubblewrap are skipped: ${why}`);
}

/** A stand-in for DNS: these names all point at the host's loopback, where the test server listens. */
const names: Record<string, string[]> = {
  "allowed.test": ["127.0.0.1"],
  "api.allowed.test": ["127.0.0.1"],
  "other.test": ["127.0.0.1"],
  "scoped.test": ["127.0.0.1"],
  "www.allowed.test": ["127.0.0.1"],
  "a.wild.test": ["127.0.0.1"],
};
const resolveHost = async (host: string): Promise<readonly string[]> => {
  const found = names[host];
  if (!found) throw new Error(`getaddrinfo ENOTFOUND ${host}`);
  return found;
};

/** Called when the server sees /slow's client go. */
let slowClosed = () => {};
/** What /big answers, in bytes. */
const BIG = 8_000_000;
let server: http.Server;
let port: number;
/** The Host header of each request the test server received. */
let seen: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push(req.headers.host ?? "");
    if (req.url === "/big") {
      res.end(Buffer.alloc(BIG, "x"));
      return;
    }
    if (req.url === "/slow") {
      // One chunk, then nothing until the other side goes away.
      res.write("first\n");
      res.on("close", () => slowClosed());
      return;
    }
    if (req.url === "/count") {
      let bytes = 0;
      req.on("data", (chunk: Buffer) => (bytes += chunk.length));
      req.on("end", () => res.end(`received ${bytes}\n`));
      return;
    }
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => res.end(`hello ${req.method} ${req.url} host=${req.headers.host}${body ? ` body=${body}` : ""}\n`));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const proxies: SandboxProxy[] = [];
beforeEach(() => {
  seen = [];
});
afterEach(async () => {
  for (const p of proxies.splice(0)) await p.close();
});

async function proxy(options: Partial<SandboxProxyOptions>): Promise<SandboxProxy> {
  const started = await startSandboxProxy({ allowedHosts: [], resolve: resolveHost, ...options });
  proxies.push(started);
  return started;
}

/** A plain-HTTP request through the proxy: an absolute URI, as curl sends it to an HTTP proxy. */
function get(p: SandboxProxy, url: string, init: { method?: string; body?: string; host?: string } = {}) {
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = http.request({
      socketPath: p.socketPath,
      method: init.method ?? "GET",
      path: url,
      headers: { host: init.host ?? (URL.canParse(url) ? new URL(url).host : "localhost") },
    });
    req.on("response", (res) => {
      let body = "";
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end(init.body);
  });
}

/** CONNECT through the proxy, then (when it answers 200) an HTTP/1.0 GET through the tunnel. */
function connect(p: SandboxProxy, authority: string) {
  return new Promise<{ status: number; body: string; socket?: net.Socket }>((resolve, reject) => {
    const req = http.request({ socketPath: p.socketPath, method: "CONNECT", path: authority });
    req.on("connect", (res, socket, head) => {
      if (res.statusCode !== 200) {
        // What follows the answer's head (its body) comes as `head`, and then on the socket.
        let body = head.toString();
        socket.on("data", (chunk) => (body += chunk));
        socket.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        return;
      }
      let body = "";
      socket.write(`GET /tunnel HTTP/1.0\r\nHost: ${authority}\r\n\r\n`);
      socket.on("data", (chunk) => (body += chunk));
      socket.on("end", () => resolve({ status: 200, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("isPrivateAddress", () => {
  it.each([
    ["127.0.0.1", true],
    ["10.1.2.3", true],
    ["172.16.0.1", true],
    ["172.31.255.255", true],
    ["192.168.1.1", true],
    ["169.254.169.254", true],
    ["100.64.0.1", true],
    ["0.0.0.0", true],
    ["::1", true],
    ["::", true],
    ["fe80::1", true],
    ["fd00::1", true],
    ["::ffff:127.0.0.1", true],
    ["::ffff:7f00:1", true],
    ["64:ff9b::a00:1", true],
    ["fe80::1%eth0", true],
    ["not-an-address", true],
    ["8.8.8.8", false],
    ["172.32.0.1", false],
    ["140.82.112.3", false],
    ["2606:4700:4700::1111", false],
    ["::ffff:8.8.8.8", false],
  ])("%s → %s", (address, expected) => {
    expect(isPrivateAddress(address)).toBe(expected);
  });
});

describe("the sandbox proxy on the host", () => {
  it("forwards plain HTTP and CONNECT to an allowed host, with the checked Host header", async () => {
    const p = await proxy({ allowedHosts: ["allowed.test"], privateHosts: ["allowed.test"] });
    expect((await fsp.stat(p.socketPath)).mode & 0o777).toBe(0o600);

    const plain = await get(p, `http://allowed.test:${port}/a?b=1`);
    expect(plain).toEqual({ status: 200, body: `hello GET /a?b=1 host=allowed.test:${port}\n` });
    const posted = await get(p, `http://allowed.test:${port}/up`, { method: "POST", body: "payload" });
    expect(posted.body).toBe(`hello POST /up host=allowed.test:${port} body=payload\n`);
    // A Host header naming another site does not reach the server: the checked host replaces it.
    await get(p, `http://allowed.test:${port}/`, { host: "evil.example" });
    expect(seen).toEqual([`allowed.test:${port}`, `allowed.test:${port}`, `allowed.test:${port}`]);

    const tunnel = await connect(p, `allowed.test:${port}`);
    expect(tunnel.status).toBe(200);
    expect(tunnel.body).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*hello GET \/tunnel host=allowed\.test:\d+\n$/);
  });

  it("refuses a host outside the patterns with 403 and a body that says why", async () => {
    const p = await proxy({ allowedHosts: ["*.allowed.test"], privateHosts: ["*"] });
    expect((await get(p, `http://api.allowed.test:${port}/`)).status).toBe(200);

    const plain = await get(p, `http://other.test:${port}/`);
    expect(plain.status).toBe(403);
    expect(plain.body).toBe("toolhost sandbox proxy: other.test is not an allowed host for this sandbox (allowed: *.allowed.test)\n");
    // `*.allowed.test` is a subdomain pattern: the bare name is not in it.
    expect((await get(p, `http://allowed.test:${port}/`)).status).toBe(403);
    const tunnel = await connect(p, `other.test:${port}`);
    expect(tunnel.status).toBe(403);
    expect(tunnel.body).toContain("other.test is not an allowed host");
    expect(seen).toEqual([`api.allowed.test:${port}`]);

    // A denied pattern wins over an allowed one.
    const withDeny = await proxy({ allowedHosts: ["*.allowed.test"], deniedHosts: ["API.allowed.test"], privateHosts: ["*"] });
    const denied = await get(withDeny, `http://api.allowed.test:${port}/`);
    expect(denied).toEqual({
      status: 403,
      body: "toolhost sandbox proxy: api.allowed.test is denied for this sandbox (API.allowed.test)\n",
    });
    expect((await connect(withDeny, `api.allowed.test:${port}`)).status).toBe(403);
    expect(seen).toEqual([`api.allowed.test:${port}`]);
  });

  it("refuses an allowed name that resolves to a private or loopback address, unless that is allowed too", async () => {
    const p = await proxy({ allowedHosts: ["allowed.test", "127.0.0.1", "localhost"] });
    const plain = await get(p, `http://allowed.test:${port}/`);
    expect(plain.status).toBe(403);
    expect(plain.body).toContain("allowed.test resolves to 127.0.0.1, a private or loopback address");
    expect((await connect(p, `allowed.test:${port}`)).status).toBe(403);
    // An address literal is checked the same way.
    expect((await get(p, `http://127.0.0.1:${port}/`)).status).toBe(403);
    expect((await connect(p, `[::ffff:127.0.0.1]:${port}`)).status).toBe(403);
    expect(seen).toEqual([]);

    // With the system resolver: localhost is loopback.
    const system = await startSandboxProxy({ allowedHosts: ["localhost"] });
    proxies.push(system);
    const local = await get(system, `http://localhost:${port}/`);
    expect(local.status).toBe(403);
    expect(local.body).toMatch(/localhost resolves to (127\.0\.0\.1|::1), a private or loopback address/);

    const allowedPrivate = await proxy({ allowedHosts: ["allowed.test"], privateHosts: ["allowed.test"] });
    expect((await get(allowedPrivate, `http://allowed.test:${port}/`)).status).toBe(200);
  });

  it("refuses a name when ANY of its addresses is private, whichever order the resolver gives them in", async () => {
    const mixed: Record<string, readonly string[]> = {
      "public-first.test": ["93.184.216.34", "2606:2800:220:1::1", "127.0.0.1"],
      "private-first.test": ["10.1.2.3", "93.184.216.34"],
      "mapped-last.test": ["93.184.216.34", "::ffff:192.168.1.1"],
      "link-local-middle.test": ["93.184.216.34", "169.254.169.254", "1.1.1.1"],
    };
    const p = await proxy({
      allowedHosts: Object.keys(mixed),
      resolve: async (host) => mixed[host] ?? [],
    });
    for (const [host, addresses] of Object.entries(mixed)) {
      const blocked = addresses.find((a) => a !== "93.184.216.34" && a !== "2606:2800:220:1::1" && a !== "1.1.1.1")!;
      const plain = await get(p, `http://${host}:${port}/`);
      expect(plain.status, host).toBe(403);
      expect(plain.body).toContain(`${host} resolves to ${blocked}, a private or loopback address`);
      expect((await connect(p, `${host}:${port}`)).status, host).toBe(403);
    }
    expect(seen).toEqual([]);
  });

  it("resolves a name once, and connects to one of the addresses it checked, the next when one fails", async () => {
    const asked: string[] = [];
    // Nothing listens on [::1]:port (the test server is on 127.0.0.1): the next address is tried.
    const answers: Record<string, string[]> = { "dual.test": ["::1", "127.0.0.1"] };
    const p = await proxy({
      allowedHosts: ["dual.test"],
      privateHosts: ["dual.test"],
      resolve: async (host) => {
        asked.push(host);
        return answers[host] ?? [];
      },
    });
    expect(await get(p, `http://dual.test:${port}/a`)).toEqual({ status: 200, body: `hello GET /a host=dual.test:${port}\n` });
    expect((await connect(p, `dual.test:${port}`)).body).toContain("hello GET /tunnel host=dual.test");
    expect(asked).toEqual(["dual.test", "dual.test"]);
  });

  it("ends the upstream request when the client goes away before the answer is complete", async () => {
    const closed = new Promise<void>((resolve) => (slowClosed = resolve));
    const p = await proxy({ allowedHosts: ["allowed.test"], privateHosts: ["allowed.test"] });
    await new Promise<void>((resolve, reject) => {
      const req = http.request({ socketPath: p.socketPath, path: `http://allowed.test:${port}/slow` });
      req.on("response", (res) => res.once("data", () => (req.destroy(), resolve())));
      req.on("error", reject);
      req.end();
    });
    await closed;
  });

  it("answers 400 to a request that is not for a proxy, and 502 to a name that does not resolve", async () => {
    const p = await proxy({ allowedHosts: ["*"], privateHosts: ["*"] });
    const relative = await get(p, "/just-a-path");
    expect(relative.status).toBe(400);
    expect(relative.body).toContain("only absolute http:// URLs and CONNECT are proxied");
    const unknown = await get(p, "http://nowhere.test/");
    expect(unknown.status).toBe(502);
    expect(unknown.body).toContain("nowhere.test could not be resolved");
    expect((await connect(p, "no-port-here")).status).toBe(400);

    // An allowed host where nothing listens.
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const deadPort = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await get(p, `http://allowed.test:${deadPort}/`);
    expect(refused.status).toBe(502);
    expect(refused.body).toContain(`allowed.test:${deadPort} could not be reached: connect ECONNREFUSED`);
    const tunnel = await connect(p, `allowed.test:${deadPort}`);
    expect(tunnel.status).toBe(502);
    expect(tunnel.body).toContain("ECONNREFUSED");
  });

  it("takes the hosts a call may reach on a private address per call, in place of the pool's own", async () => {
    const pool = sandboxProxies({ resolve: resolveHost });
    try {
      // allowed.test resolves to 127.0.0.1: refused, unless the call's private list names it.
      const plain = await pool.forHosts(["allowed.test"]);
      expect((await get(plain, `http://allowed.test:${port}/`)).status).toBe(403);
      const opened = await pool.forHosts(["allowed.test"], [], ["allowed.test"]);
      expect(opened.socketPath).not.toBe(plain.socketPath);
      expect((await get(opened, `http://allowed.test:${port}/`)).status).toBe(200);
      expect(await pool.forHosts(["allowed.test"], [], ["ALLOWED.test"])).toBe(opened);
    } finally {
      await pool.close();
    }
  });

  it("ends open tunnels and removes its socket when closed", async () => {
    const pool = sandboxProxies({ resolve: resolveHost, privateHosts: ["allowed.test"] });
    const a = await pool.forHosts(["allowed.test"]);
    expect(await pool.forHosts(["ALLOWED.test", "allowed.test"])).toBe(a);
    const b = await pool.forHosts(["other.test"]);
    expect(b.socketPath).not.toBe(a.socketPath);
    expect((await pool.forHosts(["allowed.test"], ["x.allowed.test"])).socketPath).not.toBe(a.socketPath);
    expect((await fsp.stat(pool.dir)).mode & 0o777).toBe(0o700);

    const open = await new Promise<net.Socket>((resolve, reject) => {
      const req = http.request({ socketPath: a.socketPath, method: "CONNECT", path: `allowed.test:${port}` });
      req.on("connect", (_res, socket) => resolve(socket));
      req.on("error", reject);
      req.end();
    });
    const ended = new Promise((resolve) => open.on("close", resolve));
    await pool.close();
    await ended;
    await expect(fsp.stat(pool.dir)).rejects.toThrow(/ENOENT/);
    await expect(pool.forHosts(["allowed.test"])).rejects.toThrow(/closed/);
  });
});

describe("sandboxNetworkStatus", () => {
  it("says why when socat is missing", () => {
    const missing = sandboxNetworkStatus("/nonexistent/socat");
    expect(missing).toEqual({ available: false, reason: expect.stringContaining("/nonexistent/socat cannot be run") });
  });
});

describe.skipIf(skipSandbox)("a sandboxed command's network through the proxy", () => {
  let ws: string;
  const sessions: RuntimeSession[] = [];
  beforeEach(async () => {
    ws = await tempDir();
  });
  afterEach(async () => {
    for (const s of sessions.splice(0)) await s.close();
    await fsp.rm(ws, { recursive: true, force: true });
  });

  function shell(options: BubblewrapOptions, requires: RequirementSet = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } }) {
    const transform = bubblewrapSandbox({ resolveHost, ...options });
    const session = new RuntimeSession({ workspace: ws, shell: new LocalShell({ killGraceMs: 500 }), spawnTransform: transform });
    sessions.push(session);
    const ctx = createToolContext({ session, toolId: "t", callId: "c", requires, signal: new AbortController().signal });
    return { session, transform, shell: ctx.shell };
  }

  const curl = "curl -sS --max-time 10";

  it("reaches an allowed host through the proxy (plain and CONNECT), and nothing else", async () => {
    const { shell: sh } = shell({
      allowedHosts: () => ["allowed.test", "*.allowed.test"],
      deniedHosts: () => ["api.allowed.test"],
      privateHosts: ["allowed.test"],
    });
    const plain = await sh.run(`${curl} http://allowed.test:${port}/in`);
    expect(plain).toMatchObject({ exit_code: 0, stdout: `hello GET /in host=allowed.test:${port}\n` });
    // -p: a CONNECT tunnel, as for https.
    const tunnelled = await sh.run(`${curl} -p http://allowed.test:${port}/tunnelled`);
    expect(tunnelled).toMatchObject({ exit_code: 0, stdout: `hello GET /tunnelled host=allowed.test:${port}\n` });

    const other = await sh.run(`${curl} -w '%{http_code}' http://other.test:${port}/`);
    expect(other.stdout).toContain("other.test is not an allowed host for this sandbox (allowed: *.allowed.test, allowed.test)");
    expect(other.stdout).toMatch(/403$/);
    const otherTunnel = await sh.run(`${curl} -p http://other.test:${port}/`);
    expect(otherTunnel.exit_code).not.toBe(0);
    expect(otherTunnel.stderr).toMatch(/CONNECT tunnel failed, response 403/);
    const denied = await sh.run(`${curl} http://api.allowed.test:${port}/`);
    expect(denied.stdout).toBe("toolhost sandbox proxy: api.allowed.test is denied for this sandbox (api.allowed.test)\n");

    // Around the proxy there is no way out: the network namespace has nothing but its loopback.
    const direct = await sh.run(`${curl} --noproxy '*' http://127.0.0.1:${port}/direct`);
    expect(direct.exit_code).toBe(7);
    expect(seen).toEqual([`allowed.test:${port}`, `allowed.test:${port}`]);
  });

  it("a background process with allowed hosts reaches them through its proxy for as long as it lives", async () => {
    const transform = bubblewrapSandbox({ resolveHost, allowedHosts: () => ["allowed.test"], privateHosts: ["allowed.test"] });
    const session = new RuntimeSession({ workspace: ws, spawnTransform: transform });
    sessions.push(session);
    const requires: RequirementSet = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };
    const ctx = createToolContext({ session, toolId: "process", callId: "c", requires, signal: new AbortController().signal });
    await ctx.processes.start(`while read -r p; do ${curl} http://allowed.test:${port}/$p; echo; done`);
    await ctx.processes.write("p1", "first\n");
    expect(await ctx.processes.wait("p1", { streams: ["stdout"], pattern: /GET \/first/, timeoutMs: 15_000 })).toBe("matched");
    // Other calls come and go (each with its own sandbox); the process's proxy is still there.
    const other = createToolContext({ session, toolId: "t", callId: "d", requires, signal: new AbortController().signal });
    expect((await other.shell.run("echo between")).stdout).toBe("between\n");
    await ctx.processes.write("p1", "second\n");
    expect(await ctx.processes.wait("p1", { streams: ["stdout"], pattern: /GET \/second/, timeoutMs: 15_000 })).toBe("matched");
    expect(seen).toEqual([`allowed.test:${port}`, `allowed.test:${port}`]);
    await session.close();
    expect(ctx.processes.list().map((p) => p.status)).toEqual(["stopped"]);
  });

  it("refuses the host's loopback through the proxy unless that host is allowed to be private", async () => {
    const { shell: sh } = shell({ allowedHosts: () => ["allowed.test", "127.0.0.1"] });
    const named = await sh.run(`${curl} http://allowed.test:${port}/`);
    expect(named.stdout).toContain("allowed.test resolves to 127.0.0.1, a private or loopback address");
    // 127.0.0.1 inside the sandbox is the sandbox's own loopback (NO_PROXY): it goes nowhere.
    const literal = await sh.run(`NO_PROXY= no_proxy= ${curl} http://127.0.0.1:${port}/`);
    expect(literal.stdout).toContain("127.0.0.1 resolves to 127.0.0.1, a private or loopback address");
    expect(seen).toEqual([]);
  });

  it("lets a command reach a private address only for a host an allow rule names exactly (what the session wires)", async () => {
    const rules: SourcedRule[] = [
      { permission: "net.fetch", pattern: "allowed.test", action: "allow", source: "user" },
      { permission: "net.fetch", pattern: "*.wild.test", action: "allow", source: "user" },
    ];
    const hosts = () => netFetchHosts(rules);
    const { shell: sh } = shell({
      allowedHosts: () => hosts().allowed,
      deniedHosts: () => hosts().denied,
      privateHostsFor: () => hosts().private,
    });
    const named = await sh.run(`${curl} http://allowed.test:${port}/exact`);
    expect(named.stdout).toBe(`hello GET /exact host=allowed.test:${port}\n`);
    // A wildcard allows the host but never a private address.
    const wild = await sh.run(`${curl} http://a.wild.test:${port}/`);
    expect(wild.stdout).toContain("a.wild.test resolves to 127.0.0.1, a private or loopback address");
  });

  it("follows the session's net.fetch rules: allow rules open hosts, deny and ask rules close them", async () => {
    const rules: SourcedRule[] = [
      { permission: "net.fetch", pattern: "*.allowed.test", action: "allow", source: "user" },
      { permission: "net.fetch", pattern: "api.allowed.test", action: "ask", source: "project" },
    ];
    const { shell: sh } = shell({
      allowedHosts: () => netFetchHosts(rules).allowed,
      deniedHosts: () => netFetchHosts(rules).denied,
      privateHosts: ["*"],
    });
    const result = await sh.run(`${curl} http://www.allowed.test:${port}/; ${curl} http://api.allowed.test:${port}/`);
    expect(result.stdout).toBe(
      `hello GET / host=www.allowed.test:${port}\ntoolhost sandbox proxy: api.allowed.test is denied for this sandbox (api.allowed.test)\n`,
    );
  });

  it("streams large bodies both ways, plain and through a tunnel", async () => {
    const { shell: sh } = shell({ allowedHosts: () => ["allowed.test"], privateHosts: ["allowed.test"] });
    const down = await sh.run(`${curl} http://allowed.test:${port}/big | wc -c; ${curl} -p http://allowed.test:${port}/big | wc -c`);
    expect(down.stdout).toBe(`${BIG}\n${BIG}\n`);
    const up = await sh.run(
      `head -c 3000000 /dev/zero | ${curl} --data-binary @- http://allowed.test:${port}/count; ` +
        `head -c 3000000 /dev/zero | ${curl} -p --data-binary @- http://allowed.test:${port}/count`,
    );
    expect(up.stdout).toBe("received 3000000\nreceived 3000000\n");
  });

  it("allows the hosts of the call's own scope", async () => {
    const { shell: sh } = shell(
      { privateHosts: ["scoped.test"] },
      { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] }, net: { hosts: ["scoped.test"] } },
    );
    const result = await sh.run(`${curl} http://scoped.test:${port}/`);
    expect(result).toMatchObject({ exit_code: 0, stdout: `hello GET / host=scoped.test:${port}\n` });
  });

  it("shows a call only its own proxy socket", async () => {
    // The proxies' folder outside /tmp (which the sandbox replaces anyway): only the mask hides it.
    const base = await fsp.realpath(await fsp.mkdtemp("/var/tmp/toolhost-proxy-test-"));
    const savedTmp = process.env.TMPDIR;
    process.env.TMPDIR = base;
    try {
      const { session, shell: first } = shell({ allowedHosts: (c) => (c.toolId === "wide" ? ["*"] : []), privateHosts: ["*"] });
      const requires: RequirementSet = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };
      const wide = createToolContext({ session, toolId: "wide", callId: "w", requires, signal: new AbortController().signal }).shell;
      // Its socket, and the strict filter its inner bwrap loads (the command runs without AF_UNIX).
      expect((await wide.run(`ls ${base}/toolhost-proxy-*/`)).stdout).toBe("0.sock\ntoolhost-inner.bpf\n");
      const dir = (await fsp.readdir(base)).filter((name) => name.startsWith("toolhost-proxy-")).map((name) => path.join(base, name));
      expect(dir).toHaveLength(1);
      const scoped = createToolContext({
        session,
        toolId: "t",
        callId: "c",
        requires: { ...requires, net: { hosts: ["scoped.test"] } },
        signal: new AbortController().signal,
      }).shell;
      // Another allow list of the same session has its own socket, which this call must not see.
      const result = await scoped.run(
        `env | grep -c "^HTTPS_PROXY=http://127.0.0.1:3128$"; ls ${dir[0]}; ${curl} http://allowed.test:${port}/`,
      );
      expect(result.stdout).toContain("1\n1.sock\n");
      expect(result.stdout).toContain("allowed.test is not an allowed host for this sandbox (allowed: scoped.test)");
      expect((await fsp.readdir(dir[0] as string)).sort()).toEqual(["0.sock", "1.sock"]);
      expect((await first.run("env | grep -c 127.0.0.1:3128")).stdout).toBe("0\n");

      // Closing the session ends its proxies and removes their folder.
      await session.close();
      await expect(fsp.stat(dir[0] as string)).rejects.toThrow(/ENOENT/);
    } finally {
      if (savedTmp === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = savedTmp;
      await fsp.rm(base, { recursive: true, force: true });
    }
  });

  it("starts new proxies when its transform serves another session after a close", async () => {
    const { session, transform, shell: sh } = shell({ allowedHosts: () => ["allowed.test"], privateHosts: ["allowed.test"] });
    expect((await sh.run(`${curl} http://allowed.test:${port}/one`)).exit_code).toBe(0);
    await session.close();
    const again = new RuntimeSession({ workspace: ws, spawnTransform: transform });
    sessions.push(again);
    const requires: RequirementSet = { shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } };
    const next = createToolContext({ session: again, toolId: "t", callId: "c", requires, signal: new AbortController().signal }).shell;
    expect(await next.run(`${curl} http://allowed.test:${port}/two`)).toMatchObject({
      exit_code: 0,
      stdout: `hello GET /two host=allowed.test:${port}\n`,
    });
  });

  it("keeps today's sandbox when no host is allowed, or socat is missing: no proxy, no network", async () => {
    for (const options of [{}, { allowedHosts: () => ["allowed.test"], privateHosts: ["*"], socatPath: "/nonexistent/socat" }]) {
      const { shell: sh } = shell(options);
      const result = await sh.run(`env | grep -c 127.0.0.1:3128; pgrep -c socat; ${curl} http://allowed.test:${port}/`);
      expect(result.stdout).toBe("0\n0\n");
      expect(result.exit_code).not.toBe(0);
    }
    expect(seen).toEqual([]);
  });
});
