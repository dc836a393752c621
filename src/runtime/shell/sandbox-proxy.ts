import { constants, accessSync } from "node:fs";
import * as fsp from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { isPrivateAddress, systemResolve } from "../addresses.js";
import { hostMatcher } from "../scope.js";

/**
 * The sandbox's way out to the network: an HTTP proxy on a unix socket that the bubblewrap
 * sandbox binds in (a socat inside the sandbox's own network namespace listens on
 * 127.0.0.1:PROXY_PORT and forwards to it). It lets through CONNECT host:port and plain-HTTP
 * absolute-URI requests to allowed host names only, and never to private or loopback addresses
 * unless a pattern says so, so a sandboxed command cannot reach the host's 127.0.0.1 services.
 */

/** The port socat listens on inside the sandbox (each call has its own network namespace). */
export const PROXY_PORT = 3128;

export interface SandboxProxyOptions {
  /** Host patterns a request may reach (`*.github.com`), matched as the scope's `net.hosts` are. */
  allowedHosts: readonly string[];
  /** Host patterns refused even when an allowed pattern matches (the session's deny rules for net.fetch). */
  deniedHosts?: readonly string[];
  /** Host patterns that may reach private, loopback or link-local addresses (default: none). */
  privateHosts?: readonly string[];
  /** Resolves a host name to its addresses (default: the system resolver, every address). */
  resolve?: (host: string) => Promise<readonly string[]>;
  /** Where to listen, in a folder private to this user (default: `proxy.sock` in a new 0700 folder under the OS temp dir). */
  socketPath?: string;
  /** At most this many client connections at once (default 64). */
  maxConnections?: number;
  /** A connection idle this long either way is closed (default 5 minutes). */
  idleTimeoutMs?: number;
  /** Reaching the target may take this long (default 10 s). */
  connectTimeoutMs?: number;
}

export interface SandboxProxy {
  /** The unix socket the proxy listens on. */
  readonly socketPath: string;
  /** Stops listening, ends every connection and removes the socket (and the folder it made). */
  close(): Promise<void>;
}

/** Where an executable is on PATH, or undefined. */
export function findExecutable(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

export type SandboxNetworkStatus = { available: true; socat: string } | { available: false; reason: string };

/**
 * Whether a sandboxed call can reach its allowed hosts: the proxy needs socat inside the
 * sandbox. Without it, sandboxed commands have no network at all, allowed hosts or not.
 */
export function sandboxNetworkStatus(socatPath?: string): SandboxNetworkStatus {
  const socat = socatPath ?? findExecutable("socat");
  if (!socat) {
    return {
      available: false,
      reason: "socat is not installed (apt-get install socat): sandboxed commands get no network, not even to allowed hosts",
    };
  }
  try {
    accessSync(socat, constants.X_OK);
  } catch {
    return { available: false, reason: `socat at ${socat} cannot be run: sandboxed commands get no network` };
  }
  return { available: true, socat };
}

/** The environment that sends a sandboxed command's HTTP(S) traffic through the proxy. */
export function proxyEnv(): Record<string, string> {
  const url = `http://127.0.0.1:${PROXY_PORT}`;
  // The sandbox's own loopback (a server the command starts itself) is reached directly.
  const noProxy = "localhost,127.0.0.1,::1";
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    ALL_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    all_proxy: url,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    // Node's own fetch and http honour the variables above only when asked (Node 22.21+, 24).
    NODE_USE_ENV_PROXY: "1",
  };
}

/** A host as the client named it: lower case, no brackets, no final dot. */
function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h;
}

/** `host:port` of a CONNECT request, or undefined when it is not one. */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: normalizeHost(match[1] as string), port };
}

/**
 * A new 0700 folder for sockets. Its path goes into a socat address inside the sandbox, so it
 * keeps to plain characters (and a unix socket's 107 bytes): /tmp when the temp dir has others.
 */
async function privateDir(): Promise<string> {
  const base = /^[\w./-]{1,60}$/.test(os.tmpdir()) ? os.tmpdir() : "/tmp";
  return fsp.mkdtemp(path.join(base, "toolhost-proxy-"));
}

type Verdict = { ok: true; addresses: readonly string[] } | { ok: false; status: number; message: string };

/**
 * A lookup that answers only the addresses that were checked: the connection goes to one of
 * them (trying each in turn, as autoSelectFamily does), never to what a second resolution says.
 */
function pinnedLookup(addresses: readonly string[]): net.LookupFunction {
  const entries = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
  return (_hostname, options, callback) => {
    if (options.all) callback(null, entries);
    else callback(null, entries[0]?.address ?? "", entries[0]?.family ?? 4);
  };
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function withoutHopByHop(headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders): http.OutgoingHttpHeaders {
  const listed = String(headers.connection ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** Starts a proxy for one allow list. Close it with the session. */
export async function startSandboxProxy(options: SandboxProxyOptions): Promise<SandboxProxy> {
  const allowed = options.allowedHosts.map(hostMatcher);
  const denied = (options.deniedHosts ?? []).map(hostMatcher);
  const privateOk = (options.privateHosts ?? []).map(hostMatcher);
  const resolve = options.resolve ?? systemResolve;
  const idleTimeoutMs = options.idleTimeoutMs ?? 5 * 60_000;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const ownDir = options.socketPath === undefined ? await privateDir() : undefined;
  const socketPath = options.socketPath ?? path.join(ownDir as string, "proxy.sock");
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    socket.setTimeout(idleTimeoutMs, () => socket.destroy());
  };

  async function judge(host: string): Promise<Verdict> {
    const allowedList = options.allowedHosts.join(", ") || "none";
    const deniedBy = options.deniedHosts?.find((_, i) => denied[i]?.(host));
    if (deniedBy !== undefined) return { ok: false, status: 403, message: `${host} is denied for this sandbox (${deniedBy})` };
    if (!allowed.some((m) => m(host))) {
      return { ok: false, status: 403, message: `${host} is not an allowed host for this sandbox (allowed: ${allowedList})` };
    }
    let addresses: readonly string[];
    try {
      addresses = net.isIP(host) ? [host] : await resolve(host);
    } catch (err) {
      return { ok: false, status: 502, message: `${host} could not be resolved: ${(err as Error).message}` };
    }
    if (addresses.length === 0) return { ok: false, status: 502, message: `${host} has no address` };
    const blocked = addresses.find(isPrivateAddress);
    if (blocked !== undefined && !privateOk.some((m) => m(host))) {
      return {
        ok: false,
        status: 403,
        message: `${host} resolves to ${blocked}, a private or loopback address, which the sandbox may not reach`,
      };
    }
    return { ok: true, addresses };
  }

  const refusalBody = (message: string) => `toolhost sandbox proxy: ${message}\n`;

  const server = http.createServer((req, res) => {
    void forward(req, res);
  });
  server.maxConnections = options.maxConnections ?? 64;
  // Streams are bounded by the idle timeout, not by a whole-request deadline.
  server.requestTimeout = 0;
  server.on("connection", track);

  function refuse(res: http.ServerResponse, status: number, message: string): void {
    const body = refusalBody(message);
    res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close" });
    res.end(body);
  }

  async function forward(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      refuse(res, 400, `only absolute http:// URLs and CONNECT are proxied, not ${JSON.stringify(req.url)}`);
      return;
    }
    if (url.protocol !== "http:") {
      refuse(res, 400, `only http:// URLs are proxied in the clear (https goes through CONNECT), not ${url.protocol}`);
      return;
    }
    const host = normalizeHost(url.hostname);
    const verdict = await judge(host);
    if (!verdict.ok) {
      req.resume();
      refuse(res, verdict.status, verdict.message);
      return;
    }
    // The Host header names the host that was checked, whatever the client wrote.
    const headers = { ...withoutHopByHop(req.headers), host: url.host };
    const upstream = http.request({
      host,
      // Node 20 tries each address in turn (autoSelectFamily is on by default).
      lookup: pinnedLookup(verdict.addresses),
      port: url.port === "" ? 80 : Number(url.port),
      method: req.method,
      path: url.pathname + url.search,
      headers,
      setHost: false,
      agent: false,
      timeout: connectTimeoutMs,
    });
    upstream.on("socket", (socket) => track(socket));
    upstream.on("timeout", () => upstream.destroy(new Error(`no answer from ${url.host} within ${connectTimeoutMs} ms`)));
    upstream.on("response", (answer) => {
      upstream.setTimeout(0);
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, withoutHopByHop(answer.headers));
      answer.pipe(res);
      answer.on("error", () => res.destroy());
    });
    upstream.on("error", (err) => {
      if (!res.headersSent) refuse(res, 502, `${url.host} could not be reached: ${err.message}`);
      else res.destroy();
    });
    // A client gone before the answer ends takes the upstream request with it.
    res.on("close", () => upstream.destroy());
    req.pipe(upstream);
  }

  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    void tunnel(req, client, head);
  });

  async function tunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer): Promise<void> {
    client.on("error", () => client.destroy());
    const refuseTunnel = (status: number, message: string) => {
      const body = refusalBody(message);
      const reason = http.STATUS_CODES[status] ?? "Error";
      client.end(
        `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    };
    const target = parseAuthority(req.url ?? "");
    if (!target) {
      refuseTunnel(400, `CONNECT needs host:port, not ${JSON.stringify(req.url)}`);
      return;
    }
    const verdict = await judge(target.host);
    if (!verdict.ok) {
      refuseTunnel(verdict.status, verdict.message);
      return;
    }
    const upstream = net.connect({
      host: target.host,
      port: target.port,
      lookup: pinnedLookup(verdict.addresses),
      autoSelectFamily: true,
    });
    track(upstream);
    const connectTimer = setTimeout(() => upstream.destroy(new Error(`timed out after ${connectTimeoutMs} ms`)), connectTimeoutMs);
    let established = false;
    upstream.once("connect", () => {
      clearTimeout(connectTimer);
      established = true;
      client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on("error", (err) => {
      clearTimeout(connectTimer);
      if (!established) refuseTunnel(502, `${target.host}:${target.port} could not be reached: ${err.message}`);
      else client.destroy();
    });
    upstream.on("close", () => {
      if (established) client.destroy();
    });
    client.on("close", () => upstream.destroy());
  }

  await new Promise<void>((resolveListen, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => {
      server.off("error", reject);
      resolveListen();
    });
  });
  await fsp.chmod(socketPath, 0o600);
  // A session that is never closed must not keep the process alive.
  server.unref();

  let closed: Promise<void> | undefined;
  return {
    socketPath,
    close() {
      closed ??= (async () => {
        const stopped = new Promise<void>((done) => server.close(() => done()));
        for (const socket of sockets) socket.destroy();
        await stopped;
        await fsp.rm(ownDir ?? socketPath, { recursive: true, force: true });
      })();
      return closed;
    },
  };
}

export interface SandboxProxies {
  /** The folder every proxy socket is in (the sandbox hides it, and binds in the one socket a call may use). */
  readonly dir: string;
  /**
   * The proxy for one allow list (and deny list, and list of hosts it may reach on a private
   * address: the pool's own by default), started on first use (the same lists share one proxy).
   */
  forHosts(hosts: readonly string[], denied?: readonly string[], privateHosts?: readonly string[]): Promise<SandboxProxy>;
  /** Closes every proxy and removes the folder. */
  close(): Promise<void>;
}

/** A session's proxies, one per distinct allow list, in one private folder, all closed together. */
export function sandboxProxies(options: Omit<SandboxProxyOptions, "allowedHosts" | "deniedHosts" | "socketPath"> = {}): SandboxProxies {
  let dir: Promise<string> | undefined;
  let dirPath = "";
  const proxies = new Map<string, Promise<SandboxProxy>>();
  let started = 0;
  let closing: Promise<void> | undefined;
  return {
    get dir() {
      return dirPath;
    },
    forHosts(hosts, denied = [], privateHosts = options.privateHosts ?? []) {
      if (closing) return Promise.reject(new Error("the sandbox's network proxies are closed"));
      const normalize = (patterns: readonly string[]) => [...new Set(patterns.map((h) => h.toLowerCase()))].sort();
      const list = normalize(hosts);
      const deniedList = normalize(denied);
      const privateList = normalize(privateHosts);
      const key = JSON.stringify([list, deniedList, privateList]);
      let proxy = proxies.get(key);
      if (!proxy) {
        dir ??= privateDir().then((made) => (dirPath = made));
        const n = started++;
        proxy = dir.then((d) =>
          startSandboxProxy({
            ...options,
            allowedHosts: list,
            deniedHosts: deniedList,
            privateHosts: privateList,
            socketPath: path.join(d, `${n}.sock`),
          }),
        );
        proxies.set(key, proxy);
        // A proxy that failed to start is tried again by the next call.
        proxy.catch(() => proxies.delete(key));
      }
      return proxy;
    },
    close() {
      closing ??= (async () => {
        await Promise.all([...proxies.values()].map((p) => p.then((proxy) => proxy.close()).catch(() => undefined)));
        const made = await dir?.catch(() => undefined);
        if (made) await fsp.rm(made, { recursive: true, force: true });
      })();
      return closing;
    },
  };
}
