import { randomUUID } from "node:crypto";
import { statSync } from "node:fs";
import path from "node:path";
import { Readable } from "node:stream";
import {
  agent,
  ndJsonStream,
  RequestError,
  type AgentContext,
  type ClientCapabilities,
  type InitializeResponse,
} from "@agentclientprotocol/sdk";
import { modelOptionState } from "../agent/model-config.js";
import { peekUserConfig } from "../config/file.js";
import { version } from "../config/paths.js";
import { selectProfileName } from "../config/profile-name.js";
import { DEFAULT_MODE, isModeId } from "../policy/modes.js";
import { sweepStaleSidecars } from "../runtime/sidecars.js";
import { guardLines, MAX_MESSAGE_BYTES } from "./line-guard.js";
import { configOptions, listProfileNames, modeState } from "./modes.js";
import type { AcpSession } from "./session.js";

/**
 * A session as the connection knows it. The tools and runtime load right after session/new
 * is answered (they are most of start-up), and every later request awaits `ready`.
 */
interface SessionHandle {
  id: string;
  ready: Promise<AcpSession>;
}

async function loadSession(
  id: string,
  cwd: string,
  mcpServers: AcpSession["mcpServers"],
  client: AgentContext,
  clientCapabilities: ClientCapabilities,
): Promise<AcpSession> {
  const [{ AcpSession }, { SessionTools }, { listProfiles }] = await Promise.all([
    import("./session.js"),
    import("../agent/session-tools.js"),
    import("../host/profiles.js"),
  ]);
  const [tools, listed] = await Promise.all([SessionTools.create(cwd), listProfiles()]);
  const profile = tools.toolset.profile;
  const session = new AcpSession({
    id,
    cwd,
    mcpServers,
    client,
    clientCapabilities,
    tools,
    profiles: listed.profiles.map((p) => p.name),
    // A profile's model sits below TOOLHOST_MODEL (the user's explicit choice for this run).
    model: process.env.TOOLHOST_MODEL ? undefined : profile.model,
  });
  await session.announceStart();
  // The option's full profile list and the profile's model are known only now.
  await session.update({ sessionUpdate: "config_option_update", configOptions: session.configOptions() });
  return session;
}

/** Why a session cannot run in `cwd` (it must be an existing directory), or null. */
function cwdProblem(cwd: string): string | null {
  let stat;
  try {
    stat = statSync(cwd, { throwIfNoEntry: false });
  } catch (err) {
    return `cwd ${cwd} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}); open a folder you can read`;
  }
  if (!stat) return `cwd ${cwd} does not exist; open an existing project folder`;
  if (!stat.isDirectory()) return `cwd ${cwd} is not a directory; open the folder that contains it`;
  return null;
}

/** The toolhost ACP agent: one instance per connection. */
export function createAgent() {
  const sessions = new Map<string, SessionHandle>();
  let clientCapabilities: ClientCapabilities = {};

  const handle = (sessionId: string): SessionHandle => {
    const found = sessions.get(sessionId);
    if (!found) throw RequestError.resourceNotFound(sessionId);
    return found;
  };

  const setMode = async (h: SessionHandle, mode: string): Promise<AcpSession> => {
    if (!isModeId(mode)) throw RequestError.invalidParams({ mode }, `Unknown mode ${mode}; modes: read-only, ask, accept-edits, full`);
    const session = await h.ready;
    session.setMode(mode);
    return session;
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
      const problem = cwdProblem(params.cwd);
      if (problem) throw RequestError.invalidParams({ cwd: params.cwd }, problem);
      const id = randomUUID();
      const caps = clientCapabilities;
      // Started after the response goes out, so the answer does not wait for the tools to load.
      const h: SessionHandle = {
        id,
        ready: new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
          loadSession(id, path.resolve(params.cwd), params.mcpServers ?? [], client, caps),
        ),
      };
      h.ready.catch((err: unknown) => process.stderr.write(`toolhost: session ${h.id} failed to start: ${String(err)}\n`));
      sessions.set(h.id, h);
      // One read of config.json for both options; the profiles are a directory listing (none is read here).
      const peek = peekUserConfig();
      const profile = selectProfileName({ config: peek });
      const names = listProfileNames();
      const options = configOptions(DEFAULT_MODE, modelOptionState(undefined, process.env, peek), { current: profile, names });
      return { sessionId: h.id, modes: modeState(DEFAULT_MODE), configOptions: options };
    })
    .onRequest("session/set_mode", async ({ params }) => {
      const session = await setMode(handle(params.sessionId), params.modeId);
      await session.update({ sessionUpdate: "config_option_update", configOptions: session.configOptions() });
      return {};
    })
    .onRequest("session/set_config_option", async ({ params }) => {
      const h = handle(params.sessionId);
      if (!["mode", "model", "profile"].includes(params.configId) || typeof params.value !== "string") {
        throw RequestError.invalidParams({ configId: params.configId }, `Unknown config option ${params.configId}`);
      }
      if (params.configId === "profile") {
        const session = await h.ready;
        const problem = await session.setProfile(params.value);
        if (problem) throw RequestError.invalidParams({ value: params.value }, problem);
        return { configOptions: session.configOptions() };
      }
      if (params.configId === "model") {
        const session = await h.ready;
        const problem = session.setModel(params.value);
        if (problem) throw RequestError.invalidParams({ value: params.value }, problem);
        return { configOptions: session.configOptions() };
      }
      const session = await setMode(h, params.value);
      await session.update({ sessionUpdate: "current_mode_update", currentModeId: session.agent.mode });
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

/**
 * Serves ACP on stdin/stdout until stdin closes or SIGTERM; then kills what it started and exits 0.
 * `out` writes to the real stdout: the CLI has sent every other write to stdout (an extension's
 * console.log or process.stdout.write) to stderr, so only the protocol reaches the client.
 */
export async function serveStdio(out: (chunk: Uint8Array) => Promise<void>): Promise<void> {
  const { app, shutdown } = createAgent();
  const encoder = new TextEncoder();
  const input = guardLines(Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>, (dropped) => {
    const what = `${dropped.method ?? "message"}${dropped.id === undefined ? "" : ` (id ${JSON.stringify(dropped.id)})`}`;
    process.stderr.write(
      `toolhost: dropped a ${dropped.bytes}-byte ${what}: one ACP message may have at most ${MAX_MESSAGE_BYTES} bytes\n`,
    );
    if (dropped.id === undefined) return null;
    const message =
      `The message is too large: ${dropped.bytes} bytes, and one ACP message may have at most ${MAX_MESSAGE_BYTES} (32 MiB). ` +
      "Nothing was done with it: send less (attach big files as resource links instead of pasting them).";
    const error = { code: -32600, message, data: { bytes: dropped.bytes, limit: MAX_MESSAGE_BYTES } };
    // A request gets its error answer; an answer of the client becomes an error for the request waiting on it.
    if (dropped.method === undefined) return JSON.stringify({ jsonrpc: "2.0", id: dropped.id, error });
    void out(encoder.encode(`${JSON.stringify({ jsonrpc: "2.0", id: dropped.id, error })}\n`)).catch(() => {});
    return null;
  });
  const stream = ndJsonStream(new WritableStream<Uint8Array>({ write: (chunk) => out(chunk) }), input, {
    maxMessageBytes: MAX_MESSAGE_BYTES + 1024,
  });
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
