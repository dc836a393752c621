import { spawn, type ChildProcess } from "node:child_process";
import {
  client,
  type AnyMessage,
  type ClientCapabilities,
  type ClientConnection,
  type ClientContext,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
  type Stream,
} from "@agentclientprotocol/sdk";
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import { WebSocket } from "ws";
import { CLI_PATH, MACHINE_ENV } from "../helpers.js";
export { until } from "../helpers.js";
import { WireChecker } from "./wire.js";

// `toolhost serve` in tests: a spawned server, and the SDK's own WebSocket and HTTP clients driving
// it, every message checked against the ACP v1 schema as the stdio harness checks its lines.

/** A running `node dist/cli.js serve`. */
export class ServeProcess {
  readonly stderr: string[] = [];
  readonly stdout: string[] = [];
  private constructor(
    readonly child: ChildProcess,
    /** `127.0.0.1:PORT` */
    readonly address: string,
  ) {}

  /** Starts a server on a free loopback port and waits for its "listening" line. */
  static async start(env: NodeJS.ProcessEnv, args: string[] = []): Promise<ServeProcess> {
    const clean = { ...env };
    for (const name of MACHINE_ENV) if (!(name in env)) delete clean[name];
    const child = spawn(process.execPath, [CLI_PATH, "serve", ...(args.includes("--socket") ? [] : ["--listen", "127.0.0.1:0"]), ...args], {
      stdio: ["ignore", "pipe", "pipe"],
      env: clean,
    });
    const stderr: string[] = [];
    const stdout: string[] = [];
    child.stdout!.on("data", (d: Buffer) => stdout.push(d.toString()));
    const address = await new Promise<string>((resolve, reject) => {
      child.stderr!.on("data", (d: Buffer) => {
        stderr.push(d.toString());
        const m = /listening on (?:http:\/\/(127\.0\.0\.1:\d+)|unix socket (\S+))/.exec(stderr.join(""));
        if (m) resolve(m[1] ?? m[2]!);
      });
      child.once("exit", (code) => reject(new Error(`serve exited ${code}: ${stderr.join("")}`)));
    });
    const server = new ServeProcess(child, address);
    server.stderr.push(...stderr);
    child.stderr!.on("data", (d: Buffer) => server.stderr.push(d.toString()));
    child.stdout!.on("data", (d: Buffer) => server.stdout.push(d.toString()));
    server.stdout.push(...stdout);
    return server;
  }

  url(kind: "ws" | "http"): string {
    return `${kind}://${this.address}/acp`;
  }

  /** SIGTERM, then its exit code. */
  async stop(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) =>
      this.child.once("exit", (code, signal) => {
        if (process.env.DEBUG_SERVE) process.stderr.write(`serve exit ${code} ${signal}\n${this.stderr.join("")}\n`);
        resolve(code);
      }),
    );
    this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }
}

/** Each message through `stream`, both ways, recorded by `checker`. */
export function checked(stream: Stream, checker: WireChecker): Stream {
  const writer = stream.writable.getWriter();
  return {
    readable: stream.readable.pipeThrough(
      new TransformStream<AnyMessage, AnyMessage>({
        transform(message, controller) {
          checker.record("agent->client", JSON.stringify(message));
          controller.enqueue(message);
        },
      }),
    ),
    writable: new WritableStream<AnyMessage>({
      write(message) {
        checker.record("client->agent", JSON.stringify(message));
        return writer.write(message);
      },
      close: () => writer.close(),
      abort: (reason) => writer.abort(reason),
    }),
  };
}

export interface RemoteOptions {
  token?: string;
  /** The HTTP client's fetch (a test's own, to cut the network). */
  fetch?: typeof globalThis.fetch;
  headers?: Record<string, string>;
  capabilities?: ClientCapabilities;
  /** The answer to an approval (a promise that never settles: a client that never answers). */
  permission?: (request: RequestPermissionRequest) => RequestPermissionResponse | Promise<RequestPermissionResponse>;
}

/** The SDK's client over the SDK's WebSocket or HTTP stream to a serve process. */
export class RemoteClient {
  readonly checker = new WireChecker();
  readonly updates: SessionNotification[] = [];
  readonly permissionRequests: RequestPermissionRequest[] = [];
  readonly connection: ClientConnection;
  /** The WebSocket under a "ws" client, so a test can drop it as a dead network would. */
  socket?: WebSocket;

  constructor(
    url: string,
    readonly kind: "ws" | "http",
    private readonly options: RemoteOptions = {},
  ) {
    const headers = { ...(options.token ? { Authorization: `Bearer ${options.token}` } : {}), ...options.headers };
    // The socket the stream makes, kept.
    const keep = (socket: WebSocket) => (this.socket = socket);
    class KeptWebSocket extends WebSocket {
      constructor(address: string, protocols?: string | string[], opts?: { headers?: Record<string, string> }) {
        super(address, protocols, opts);
        keep(this);
      }
    }
    const stream =
      kind === "ws"
        ? createWebSocketStream(url, { WebSocket: KeptWebSocket, headers })
        : createHttpStream(url, { headers, fetch: options.fetch });
    const permission = options.permission ?? (() => ({ outcome: { outcome: "selected", optionId: "reject_once" } }));
    this.connection = client({ name: "toolhost-remote-test" })
      .onNotification("session/update", ({ params }) => {
        this.updates.push(params);
      })
      .onRequest("session/request_permission", ({ params }) => {
        this.permissionRequests.push(params);
        return permission(params);
      })
      .connect(checked(stream, this.checker));
  }

  get agent(): ClientContext {
    return this.connection.agent;
  }

  async initialize(): Promise<void> {
    await this.agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: this.options.capabilities ?? {},
      clientInfo: { name: "toolhost-remote-test", version: "1.0.0" },
    });
  }

  async newSession(cwd: string): Promise<string> {
    return (await this.agent.request("session/new", { cwd, mcpServers: [] })).sessionId;
  }

  /** The network goes away under the client: the TCP connection is destroyed, no close frame. */
  drop(): void {
    this.socket!.terminate();
  }

  close(): void {
    this.connection.close();
  }
}
