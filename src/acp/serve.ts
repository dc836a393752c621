import { chmodSync, rmSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import type { AgentConnectOptions, AgentConnector } from "@agentclientprotocol/sdk";
import { AcpServer } from "@agentclientprotocol/sdk/experimental/server";
import { createNodeHttpHandler, createNodeWebSocketUpgradeHandler } from "@agentclientprotocol/sdk/experimental/node";
import { WebSocketServer, type WebSocket } from "ws";
import { sweepStale } from "../runtime/sidecars.js";
import { batchedWebSocket } from "./batch.js";
import { HttpBatches } from "./http-batch.js";
import { MAX_MESSAGE_BYTES } from "./line-guard.js";
import { ACP_PATH, isLoopback, refusal, type Refusal } from "./serve-guard.js";
import { versionRouter } from "./v2/agent.js";
import { createAgent } from "./server.js";
import { SessionKeeper } from "./session-keeper.js";

// `toolhost serve`: ACP over the network, per the Remote Transports RFD — Streamable HTTP (POST,
// SSE) and WebSocket on one `/acp` endpoint, through the SDK's server transport (AcpServer and its
// node adapter; `ws` for the upgrade). Each connection gets its own agent (createAgent, as stdio's
// one connection), so clients have their own sessions; the SessionKeeper is what they share.

export interface ServeOptions {
  /** TCP: where to listen. */
  listen?: { host: string; port: number };
  /** Or a unix socket (made 0600). */
  socket?: string;
  token: string;
  /** The token came from TOOLHOST_SERVE_TOKEN (it is not printed then). */
  tokenFromEnv: boolean;
  allowOrigins: string[];
  maxConnections: number;
  maxSessions: number;
  graceMs: number;
  /** WebSocket pings this often; a client that has not answered the last one by the next is dropped (0: none). */
  pingIntervalMs: number;
}

/** An HTTP connection whose client has no stream open this long is taken as gone (the SDK's client keeps one open from its initialize on). */
const HTTP_ABSENCE_MS = Number(process.env.TOOLHOST_SERVE_ABSENCE_MS) || 5000;

const log = (line: string) => void process.stderr.write(`toolhost serve: ${line}\n`);

/** Answers a refused request with its status and a plain-text reason. */
function refuse(res: ServerResponse, r: Refusal): void {
  res.writeHead(r.status, { "Content-Type": "text/plain; charset=utf-8", ...r.headers });
  res.end(`${r.message}\n`);
}

/** A refused WebSocket upgrade: an HTTP answer on the raw socket, then closed. */
function refuseUpgrade(socket: Duplex, r: Refusal): void {
  const body = `${r.message}\n`;
  const headers = Object.entries({ "Content-Type": "text/plain; charset=utf-8", ...r.headers, Connection: "close" })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");
  socket.end(`HTTP/1.1 ${r.status} Refused\r\n${headers}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/**
 * Pings every WebSocket client each `intervalMs`; one whose pong to the last ping has not come by
 * the next is terminated, which drops its connection (its sessions wait the grace for a resume).
 */
function pingClients(wss: WebSocketServer, intervalMs: number): NodeJS.Timeout {
  const answered = new WeakMap<WebSocket, boolean>();
  const timer = setInterval(() => {
    for (const ws of wss.clients) {
      if (!answered.has(ws)) ws.on("pong", () => answered.set(ws, true));
      else if (!answered.get(ws)) {
        log("a WebSocket client did not answer a ping: dropped");
        ws.terminate();
        continue;
      }
      answered.set(ws, false);
      ws.ping();
    }
  }, intervalMs);
  timer.unref();
  return timer;
}

/**
 * Serves until SIGTERM or SIGINT, then closes every connection's sessions (killing what they
 * started) and exits 0. Only logs go to stderr; stdout is not used.
 */
export async function serveRemote(options: ServeOptions): Promise<void> {
  const keeper = new SessionKeeper({ graceMs: options.graceMs, maxSessions: options.maxSessions, log });
  let live = 0;

  /**
   * One connection's agent: the SDK's router over its v1 app and a v2 one (acp/v2/), picked at
   * `initialize`. Both sides' sessions are the keeper's: a drop keeps them `--grace` for a resume
   * (the v2 side's inner agent is a connection of the keeper's of its own, so a v2 client's
   * sessions are taken over by the next connection's inner agent as a v1 client's are).
   */
  // JSON-RPC batches POSTed over Streamable HTTP: answered here, each entry through the SDK (http-batch.ts).
  const httpBatches = new HttpBatches();
  const connectionAgent = (): AgentConnector => {
    const conn = keeper.connection();
    const made = createAgent({ sessions: [] }, undefined, conn.keeper);
    conn.attach(made.sessions, made.shutdown);
    const v2conn = keeper.connection();
    const routed = versionRouter(made.app, (early, writeLines) => {
      const inner = createAgent(early, writeLines, v2conn.keeper);
      v2conn.attach(inner.sessions, inner.shutdown);
      return inner;
    });
    return {
      connect: (stream, connectOptions?: AgentConnectOptions) => {
        const connection = routed.router.connect(httpBatches.wrap(stream), connectOptions);
        live++;
        log(`a client connected (${live} connected)`);
        // The client is gone (socket closed, DELETE, or its streams absent): the stdio close path, after the grace.
        void connection.closed.finally(() => {
          live--;
          log(`a client left (${live} connected)`);
          for (const side of [conn, v2conn])
            void side.dropped().catch((err: unknown) => log(`closing a connection's sessions failed: ${String(err)}`));
        });
        return connection;
      },
    };
  };

  class BatchingServer extends AcpServer {
    override async handleRequest(request: Request, handleOptions?: Parameters<AcpServer["handleRequest"]>[1]): Promise<Response> {
      const one = (r: Request) => super.handleRequest(r, handleOptions);
      return (await httpBatches.answer(request, one)) ?? one(request);
    }
  }
  const acp = new BatchingServer({ createAgent: connectionAgent });
  const onHttp = createNodeHttpHandler(acp, { maxRequestBodyBytes: MAX_MESSAGE_BYTES + 1024 });
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES + 1024 });
  // JSON-RPC batches: split before the SDK's server (which refuses arrays), answers joined after it.
  const handleUpgrade = wss.handleUpgrade.bind(wss);
  wss.handleUpgrade = (req, socket, head, done) =>
    handleUpgrade(req, socket, head, (webSocket, request) => done(batchedWebSocket(webSocket), request));
  const onUpgrade = createNodeWebSocketUpgradeHandler(acp, wss);
  const pinger = options.pingIntervalMs > 0 ? pingClients(wss, options.pingIntervalMs) : undefined;
  const guard = {
    token: options.token,
    allowOrigins: options.allowOrigins,
    checkHost: options.listen !== undefined && isLoopback(options.listen.host),
  };
  const full = (): Refusal | null =>
    live >= options.maxConnections
      ? { status: 503, message: `toolhost serve has ${live} clients connected, the most it takes (--max-connections)` }
      : null;

  // An HTTP connection's client is gone when its connection stream (a GET without a session) stays
  // closed, or is never opened after the initialize that made the connection: the connection is
  // deleted as a DELETE would, which ends it as a closed WebSocket does.
  const absent = new Map<string, NodeJS.Timeout>();
  /** Open connection streams per connection. */
  const streaming = new Map<string, number>();
  const awaitStream = (id: string) => {
    if (streaming.has(id) || absent.has(id)) return;
    const timer = setTimeout(() => {
      absent.delete(id);
      void acp.handleRequest(new Request(`http://localhost${ACP_PATH}`, { method: "DELETE", headers: { "Acp-Connection-Id": id } }));
    }, HTTP_ABSENCE_MS);
    timer.unref();
    absent.set(id, timer);
  };
  const watchStream = (req: IncomingMessage, res: ServerResponse, newConnection: boolean) => {
    if (newConnection) {
      res.once("finish", () => {
        const id = res.getHeader("acp-connection-id");
        if (typeof id === "string") awaitStream(id);
      });
      return;
    }
    const id = req.headers["acp-connection-id"];
    if (req.method !== "GET" || typeof id !== "string" || req.headers["acp-session-id"] !== undefined) return;
    clearTimeout(absent.get(id));
    absent.delete(id);
    streaming.set(id, (streaming.get(id) ?? 0) + 1);
    res.once("close", () => {
      const left = (streaming.get(id) ?? 1) - 1;
      if (left > 0) return void streaming.set(id, left);
      streaming.delete(id);
      awaitStream(id);
    });
  };

  // TCP keepalive: a peer whose machine or network vanished is found by the kernel too.
  const server = createServer({ keepAlive: true, keepAliveInitialDelay: 30_000 }, (req, res) => {
    const newConnection = req.method === "POST" && req.headers["acp-connection-id"] === undefined;
    const refused = refusal(req.url, req.headers, guard) ?? (newConnection ? full() : null);
    if (refused) return refuse(res, refused);
    watchStream(req, res, newConnection);
    onHttp(req, res);
  });
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const refused = refusal(req.url, req.headers, guard) ?? full();
    if (refused) return refuseUpgrade(socket, refused);
    onUpgrade(req, socket, head);
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    if (options.socket) {
      rmSync(options.socket, { force: true });
      server.listen(options.socket, () => resolve());
    } else server.listen(options.listen!.port, options.listen!.host, () => resolve());
  });
  if (options.socket) chmodSync(options.socket, 0o600);
  const address = server.address();
  if (typeof address === "string") log(`listening on unix socket ${address} (path ${ACP_PATH}: Streamable HTTP and WebSocket)`);
  else {
    const { address: host, port } = address as AddressInfo;
    const shown = host.includes(":") ? `[${host}]` : host;
    log(`listening on http://${shown}:${port}${ACP_PATH} and ws://${shown}:${port}${ACP_PATH}`);
    if (!isLoopback(host))
      log("warning: not a loopback address: the token crosses the network in clear text; put TLS in front (a proxy) or use SSH forwarding");
  }
  if (options.tokenFromEnv) log("token: from TOOLHOST_SERVE_TOKEN");
  else log(`token: ${options.token}   (clients send "Authorization: Bearer <token>"; TOOLHOST_SERVE_TOKEN sets one)`);

  // As stdio's connection does after its start: sidecar folders of sessions that were not recorded.
  setTimeout(() => void sweepStale().catch(() => {}), 2000).unref();

  await new Promise<void>((resolve) => {
    // `on`, not `once`: execa's signal-exit re-raises a signal that no other listener is left to
    // handle, which would kill the process before its sessions are closed.
    const stop = () => resolve();
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
  log("stopping: closing every session");
  server.close();
  clearInterval(pinger);
  for (const timer of absent.values()) clearTimeout(timer);
  await acp.close().catch(() => {});
  await keeper.closeAll();
  server.closeAllConnections();
  if (options.socket) rmSync(options.socket, { force: true });
  process.exit(0);
}
