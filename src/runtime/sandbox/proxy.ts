import { constants, accessSync } from "node:fs";
import * as fsp from "node:fs/promises";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { forwardHttp, hostJudge, openTunnel, type ForwardContext, type HostRules } from "./proxy-forward.js";

/**
 * The sandbox's way out to the network: an HTTP proxy on a unix socket that the bubblewrap
 * sandbox binds in (a socat inside the sandbox's own network namespace listens on
 * 127.0.0.1:PROXY_PORT and forwards to it). It lets through CONNECT host:port and plain-HTTP
 * absolute-URI requests to allowed host names only, and never to private or loopback addresses
 * unless a pattern says so, so a sandboxed command cannot reach the host's 127.0.0.1 services.
 * This file: the proxy's socket, connections and life; `proxy-forward.ts`: one request's
 * way through (the host check, the CONNECT tunnel, the plain-HTTP forward).
 */

/** The port socat listens on inside the sandbox (each call has its own network namespace). */
export const PROXY_PORT = 3128;

/** Who may be reached (`HostRules`: allowed, denied and private-address hosts, the resolver), and how the proxy runs. */
export interface SandboxProxyOptions extends HostRules {
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

/**
 * A new 0700 folder for sockets. Its path goes into a socat address inside the sandbox, so it
 * keeps to plain characters (and a unix socket's 107 bytes): /tmp when the temp dir has others.
 */
async function privateDir(): Promise<string> {
  const base = /^[\w./-]{1,60}$/.test(os.tmpdir()) ? os.tmpdir() : "/tmp";
  return fsp.mkdtemp(path.join(base, "toolhost-proxy-"));
}

/** Where the proxy listens: the given socket, or `proxy.sock` in a folder of its own (`ownDir`, removed on close). */
async function socketLocation(socketPath: string | undefined): Promise<{ socketPath: string; ownDir?: string }> {
  if (socketPath !== undefined) return { socketPath };
  const ownDir = await privateDir();
  return { socketPath: path.join(ownDir, "proxy.sock"), ownDir };
}

/** The proxy's connections, both sides: each closed when idle this long, all ended on close. */
function connectionTracker(idleTimeoutMs: number): { sockets: Set<net.Socket>; track(socket: net.Socket): void } {
  const sockets = new Set<net.Socket>();
  return {
    sockets,
    track(socket) {
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
      socket.setTimeout(idleTimeoutMs, () => socket.destroy());
    },
  };
}

/** Listens on the socket, readable by this user only, without keeping the process alive. */
async function listenOn(server: http.Server, socketPath: string): Promise<void> {
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
}

/** Stops listening, ends every connection, then removes `remove` (the proxy's folder, or its socket). */
async function shutDown(server: http.Server, sockets: Set<net.Socket>, remove: string): Promise<void> {
  const stopped = new Promise<void>((done) => server.close(() => done()));
  for (const socket of sockets) socket.destroy();
  await stopped;
  await fsp.rm(remove, { recursive: true, force: true });
}

/** Starts a proxy for one allow list. Close it with the session. */
export async function startSandboxProxy(options: SandboxProxyOptions): Promise<SandboxProxy> {
  const judge = hostJudge(options);
  const { socketPath, ownDir } = await socketLocation(options.socketPath);
  const { sockets, track } = connectionTracker(options.idleTimeoutMs ?? 5 * 60_000);
  const ctx: ForwardContext = { judge, track, connectTimeoutMs: options.connectTimeoutMs ?? 10_000 };

  const server = http.createServer((req, res) => {
    void forwardHttp(req, res, ctx);
  });
  server.maxConnections = options.maxConnections ?? 64;
  // Streams are bounded by the idle timeout, not by a whole-request deadline.
  server.requestTimeout = 0;
  server.on("connection", track);
  server.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    void openTunnel(req, client, head, ctx);
  });
  await listenOn(server, socketPath);

  let closed: Promise<void> | undefined;
  return {
    socketPath,
    close() {
      closed ??= shutDown(server, sockets, ownDir ?? socketPath);
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
