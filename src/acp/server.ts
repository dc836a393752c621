import { randomUUID } from "node:crypto";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import {
  agent,
  ndJsonStream,
  RequestError,
  type AgentContext,
  type ClientCapabilities,
  type InitializeResponse,
} from "@agentclientprotocol/sdk";
import { modelOptionState } from "../agent/model-config.js";
import type { ToolRegistry } from "../host/registry.js";
import { DEFAULT_MODE, isModeId, type ModeId } from "../policy/modes.js";
import { sweepStaleSidecars } from "../runtime/sidecars.js";
import { version } from "../version.js";
import { configOptions, modeState } from "./modes.js";
import type { AcpSession } from "./session.js";

export interface AgentOptions {
  /** The tools of a new session (default: the built-in locked tools). */
  registry?: () => ToolRegistry | Promise<ToolRegistry>;
}

/**
 * A session as the connection knows it. The tools and runtime load right after session/new
 * is answered (they are most of start-up), and every later request awaits `ready`.
 */
interface SessionHandle {
  id: string;
  mode: ModeId;
  ready: Promise<AcpSession>;
}

async function loadSession(
  handle: SessionHandle,
  cwd: string,
  mcpServers: AcpSession["mcpServers"],
  client: AgentContext,
  clientCapabilities: ClientCapabilities,
  registry: AgentOptions["registry"],
): Promise<AcpSession> {
  const [{ AcpSession }, tools] = await Promise.all([
    import("./session.js"),
    registry ? registry() : import("../host/builtins.js").then((m) => m.builtinRegistry()),
  ]);
  const session = new AcpSession({ id: handle.id, mode: handle.mode, cwd, mcpServers, client, clientCapabilities, registry: tools });
  await session.announceCommands();
  return session;
}

/** The toolhost ACP agent: one instance per connection. */
export function createAgent(options: AgentOptions = {}) {
  const sessions = new Map<string, SessionHandle>();
  let clientCapabilities: ClientCapabilities = {};

  const handle = (sessionId: string): SessionHandle => {
    const found = sessions.get(sessionId);
    if (!found) throw RequestError.resourceNotFound(sessionId);
    return found;
  };

  const setMode = async (h: SessionHandle, mode: string): Promise<void> => {
    if (!isModeId(mode)) throw RequestError.invalidParams({ mode }, `Unknown mode ${mode}; modes: read-only, ask, accept-edits, full`);
    h.mode = mode;
    (await h.ready).setMode(mode);
  };

  const app = agent({ name: "toolhost" })
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
      const h: SessionHandle = { id: randomUUID(), mode: DEFAULT_MODE, ready: undefined as unknown as Promise<AcpSession> };
      const caps = clientCapabilities;
      // Started after the response goes out, so the answer does not wait for the tools to load.
      h.ready = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
        loadSession(h, path.resolve(params.cwd), params.mcpServers ?? [], client, caps, options.registry),
      );
      h.ready.catch((err: unknown) => process.stderr.write(`toolhost: session ${h.id} failed to start: ${String(err)}\n`));
      sessions.set(h.id, h);
      return { sessionId: h.id, modes: modeState(h.mode), configOptions: configOptions(h.mode, modelOptionState(undefined)) };
    })
    .onRequest("session/set_mode", async ({ params }) => {
      const h = handle(params.sessionId);
      await setMode(h, params.modeId);
      const session = await h.ready;
      await session.update({ sessionUpdate: "config_option_update", configOptions: session.configOptions() });
      return {};
    })
    .onRequest("session/set_config_option", async ({ params }) => {
      const h = handle(params.sessionId);
      if ((params.configId !== "mode" && params.configId !== "model") || typeof params.value !== "string") {
        throw RequestError.invalidParams({ configId: params.configId }, `Unknown config option ${params.configId}`);
      }
      if (params.configId === "model") {
        const session = await h.ready;
        const problem = session.setModel(params.value);
        if (problem) throw RequestError.invalidParams({ value: params.value }, problem);
        return { configOptions: session.configOptions() };
      }
      await setMode(h, params.value);
      const session = await h.ready;
      await session.update({ sessionUpdate: "current_mode_update", currentModeId: h.mode });
      return { configOptions: session.configOptions() };
    })
    .onRequest("session/prompt", async ({ params }) => (await handle(params.sessionId).ready).prompt(params.prompt))
    .onNotification("session/cancel", async ({ params }) => {
      (await sessions.get(params.sessionId)?.ready)?.cancel();
    })
    .onRequest("session/close", async ({ params }) => {
      const h = handle(params.sessionId);
      sessions.delete(params.sessionId);
      await (await h.ready).close();
      return {};
    });

  /** Cancels every turn (killing what they started) and removes session files. */
  const shutdown = async () => {
    const all = [...sessions.values()];
    sessions.clear();
    await Promise.allSettled(all.map(async (h) => (await h.ready).close()));
  };

  return { app, sessions, shutdown };
}

/** Serves ACP on stdin/stdout until stdin closes or SIGTERM; then kills what it started and exits 0. */
export async function serveStdio(): Promise<void> {
  const { app, shutdown } = createAgent();
  const stream = ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  );
  const conn = app.connect(stream);
  setTimeout(() => void sweepStaleSidecars().catch(() => {}), 2000).unref();
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
