import path from "node:path";
import { Readable, Writable } from "node:stream";
import {
  agent,
  ndJsonStream,
  RequestError,
  type AgentConnection,
  type ClientCapabilities,
  type InitializeResponse,
} from "@agentclientprotocol/sdk";
import { builtinRegistry } from "../host/builtins.js";
import type { ToolRegistry } from "../host/registry.js";
import { sweepStaleSidecars } from "../runtime/sidecars.js";
import { version } from "../version.js";
import { AcpSession } from "./session.js";

export interface AgentOptions {
  registry?: () => ToolRegistry;
}

/** The toolhost ACP agent: one instance per connection. */
export function createAgent(options: AgentOptions = {}) {
  const sessions = new Map<string, AcpSession>();
  let clientCapabilities: ClientCapabilities = {};
  let connection: AgentConnection | null = null;
  const makeRegistry = options.registry ?? builtinRegistry;

  const session = (sessionId: string): AcpSession => {
    const found = sessions.get(sessionId);
    if (!found) throw RequestError.resourceNotFound(sessionId);
    return found;
  };

  const app = agent({ name: "toolhost" })
    .onConnect((conn) => {
      connection = conn;
    })
    .onRequest("initialize", ({ params }): InitializeResponse => {
      clientCapabilities = params.clientCapabilities ?? {};
      return {
        // A v1 agent answers 1 whatever the client asks (never echo an unknown version).
        protocolVersion: 1,
        agentCapabilities: {
          loadSession: false,
          promptCapabilities: { image: true, audio: false, embeddedContext: true },
          mcpCapabilities: { http: false, sse: false },
          sessionCapabilities: { close: {} },
        },
        authMethods: [],
        agentInfo: { name: "toolhost", title: "toolhost", version },
      };
    })
    .onRequest("session/new", ({ params, client }) => {
      if (!path.isAbsolute(params.cwd)) {
        throw RequestError.invalidParams({ cwd: params.cwd }, `cwd must be an absolute path, got ${JSON.stringify(params.cwd)}`);
      }
      const created = new AcpSession({
        cwd: path.resolve(params.cwd),
        mcpServers: params.mcpServers ?? [],
        client,
        clientCapabilities,
        registry: makeRegistry(),
      });
      sessions.set(created.id, created);
      // After the response, so the client knows the session id when the update arrives.
      setImmediate(() => void created.announceCommands().catch(() => {}));
      return { sessionId: created.id, modes: created.modeState(), configOptions: created.configOptions() };
    })
    .onRequest("session/set_mode", async ({ params }) => {
      const s = session(params.sessionId);
      if (!s.setMode(params.modeId)) throw RequestError.invalidParams({ modeId: params.modeId }, `Unknown mode ${params.modeId}`);
      await s.update({ sessionUpdate: "config_option_update", configOptions: s.configOptions() });
      return {};
    })
    .onRequest("session/set_config_option", async ({ params }) => {
      const s = session(params.sessionId);
      if (params.configId !== "mode" || typeof params.value !== "string" || !s.setMode(params.value)) {
        throw RequestError.invalidParams({ configId: params.configId }, `Unknown config option or value: ${params.configId}`);
      }
      await s.update({ sessionUpdate: "current_mode_update", currentModeId: s.currentMode });
      return { configOptions: s.configOptions() };
    })
    .onRequest("session/prompt", ({ params }) => session(params.sessionId).prompt(params.prompt))
    .onNotification("session/cancel", ({ params }) => {
      sessions.get(params.sessionId)?.cancel();
    })
    .onRequest("session/close", async ({ params }) => {
      const s = session(params.sessionId);
      sessions.delete(params.sessionId);
      await s.close();
      return {};
    });

  /** Cancels every turn (killing what they started) and removes session files. */
  const shutdown = async () => {
    const all = [...sessions.values()];
    sessions.clear();
    await Promise.allSettled(all.map((s) => s.close()));
  };

  return { app, sessions, shutdown, connection: () => connection };
}

/** Serves ACP on stdin/stdout until stdin closes or SIGTERM; then kills what it started and exits 0. */
export async function serveStdio(): Promise<void> {
  const { app, shutdown } = createAgent();
  const stream = ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  );
  const conn = app.connect(stream);
  void sweepStaleSidecars().catch(() => {});
  let exiting = false;
  const exit = async () => {
    if (exiting) return;
    exiting = true;
    await shutdown();
    process.exit(0);
  };
  process.once("SIGTERM", () => void exit());
  process.once("SIGINT", () => void exit());
  // A broken stdout pipe means the client is gone: stop cleanly instead of crashing.
  process.stdout.on("error", () => void exit());
  await conn.closed.catch(() => {});
  await exit();
}
