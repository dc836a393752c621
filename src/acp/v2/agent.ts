import { randomUUID } from "node:crypto";
import type * as v1 from "@agentclientprotocol/sdk";
import { client as v1Client } from "@agentclientprotocol/sdk/unstable";
import {
  agent,
  agentProtocolRouter,
  assertSupportedMcpServers,
  RequestError,
  type AgentContext,
  type McpCapabilities,
  type McpServer,
  type SessionUpdate,
  type StateUpdate,
} from "@agentclientprotocol/sdk/experimental/v2";
import { configOptions, toolCall, UpdateMapper } from "./updates.js";

// ACP v2 over the same agent a v1 client gets. The v2 app answers the v2 client; every request
// becomes the v1 agent's own request (session/new, prompt, load/resume, close, …) sent in-process
// to an instance of acp/server.ts's createAgent; what that agent sends its client (session
// updates, approvals) comes back through a v1 client app here and goes out as v2. So one
// implementation of sessions, turns, tools and approvals serves both versions; this file maps.
//
// What the mapping adds, as v2 asks: a prompt is answered once its user message is inserted
// (echoed as `user_message`), the turn's end is an idle `state_update` with its stop reason, a
// prompt sent while a turn runs is held until it ends (a cancel answers it -32800), resume sends
// the session's state before its answer. The v1 agent sees a client without fs or terminals, so
// toolhost's own fs and shell (with the same sandbox and policy) serve a v2 client.

/** The v1 agent a v2 connection drives: createAgent's app and its shutdown. */
interface InnerAgent {
  app: v1.AgentApp;
  shutdown(): Promise<void>;
}

/** Makes the inner agent; `writeLines` takes a load's replay, written beside its SDK (v1 session/update lines). */
type InnerFactory = (writeLines: (lines: string) => Promise<void>) => InnerAgent;

/**
 * One connection's agent for both versions: the SDK's router, which picks at `initialize`, over
 * the connection's v1 app and a v2 app whose inner agent `create` makes (acp/server.ts's
 * createAgent, per connection). `shutdown` closes the v2 side's sessions.
 */
export function versionRouter(
  v1App: v1.AgentApp,
  create: (
    early: { sessions: never[]; clientCapabilities: v1.ClientCapabilities },
    writeLines: (lines: string) => Promise<void>,
  ) => InnerAgent,
) {
  // The inner agent's client asks for plan operations (plan_update with items, v2's only plans).
  const v2 = createV2Agent((writeLines) => create({ sessions: [], clientCapabilities: { plan: {} } as v1.ClientCapabilities }, writeLines));
  return { router: agentProtocolRouter().withV1(v1App).withV2(v2.app), shutdown: v2.shutdown };
}

/** The MCP transports a v2 client may give (v2 has no SSE). */
const MCP: McpCapabilities = { stdio: {}, http: {} };

/** v2 MCP servers as the v1 agent takes them (v1 stdio servers have no `type`, and args and env are required). */
function v1Servers(servers: McpServer[] | undefined): v1.McpServer[] {
  assertSupportedMcpServers(servers, MCP);
  return (servers ?? []).map((s): v1.McpServer => {
    const server = s as { type: string; name: string } & Record<string, unknown>;
    if (server.type === "http")
      return { type: "http", name: server.name, url: server.url as string, headers: (server.headers ?? []) as v1.HttpHeader[] };
    return {
      name: server.name,
      command: server.command as string,
      args: (server.args ?? []) as string[],
      env: (server.env ?? []) as v1.EnvVariable[],
    };
  });
}

/** One session as this connection sees it. */
interface SessionState {
  mapper: UpdateMapper;
  /** The running turn (the v1 prompt), until its idle state went out. */
  turn: Promise<void> | null;
  /** Prompts held while a turn runs: rejected by a cancel or a close. */
  held: Set<(error: Error) => void>;
}

/** The v2 agent of one connection, over a v1 agent made by `makeInner`. */
function createV2Agent(makeInner: InnerFactory): { app: ReturnType<typeof agent>; shutdown(): Promise<void> } {
  let client: AgentContext | undefined;
  const sessions = new Map<string, SessionState>();
  const state = (sessionId: string): SessionState => {
    let s = sessions.get(sessionId);
    if (!s) sessions.set(sessionId, (s = { mapper: new UpdateMapper(), turn: null, held: new Set() }));
    return s;
  };

  // Everything the v2 client is sent goes out in order through one chain.
  let out: Promise<void> = Promise.resolve();
  const send = (sessionId: string, update: SessionUpdate): Promise<void> => {
    out = out
      .then(async () => {
        await client?.notify("session/update", { sessionId, update });
      })
      .catch((err: unknown) => void process.stderr.write(`toolhost: a v2 session/update was not sent: ${String(err)}\n`));
    return out;
  };
  const sendState = (sessionId: string, update: StateUpdate) =>
    send(sessionId, { sessionUpdate: "state_update", ...update } as SessionUpdate);
  /** A v1 update of the session, sent as v2 (or dropped when v2 has no such thing). */
  const relay = (sessionId: string, update: unknown): Promise<void> => {
    const mapped = state(sessionId).mapper.map(update as Parameters<UpdateMapper["map"]>[0]);
    return mapped ? send(sessionId, mapped) : out;
  };

  const inner = makeInner(async (lines) => {
    for (const line of lines.split("\n")) {
      if (line.trim() === "") continue;
      const message = JSON.parse(line) as { method?: string; params?: { sessionId: string; update: unknown } };
      if (message.method === "session/update" && message.params) void relay(message.params.sessionId, message.params.update);
    }
    await out;
  });

  // The v1 agent's client: what it sends comes here.
  const bridge = v1Client({ name: "toolhost-v2" })
    .onNotification("session/update", ({ params }) => void relay(params.sessionId, params.update))
    .onRequest("session/request_permission", async ({ params, signal }) => {
      const meta = params._meta?.permission as { title?: string; description?: string } | undefined;
      try {
        const answer = await client!.request(
          "session/request_permission",
          {
            sessionId: params.sessionId,
            title: meta?.title ?? params.toolCall.title ?? "Allow?",
            ...(meta?.description ? { description: meta.description } : {}),
            subject: { type: "tool_call", toolCall: toolCall(params.toolCall as v1.ToolCallUpdate) },
            options: params.options,
            ...(params._meta ? { _meta: params._meta } : {}),
          },
          { cancellationSignal: signal, stopWaitingOnCancel: true },
        );
        return answer.outcome.outcome === "selected" && "optionId" in answer.outcome
          ? { outcome: { outcome: "selected" as const, optionId: answer.outcome.optionId as string } }
          : { outcome: { outcome: "cancelled" as const } };
      } catch {
        return { outcome: { outcome: "cancelled" as const } };
      }
    });
  // In-process, over a pair of message streams (the two apps come from different SDK entries).
  const toClient = new TransformStream<v1.AnyMessage, v1.AnyMessage>();
  const toAgent = new TransformStream<v1.AnyMessage, v1.AnyMessage>();
  inner.app.connect({ writable: toClient.writable, readable: toAgent.readable });
  const v1 = bridge.connect({ writable: toAgent.writable, readable: toClient.readable }).agent;

  /** Held prompts of a session answered -32800 (a cancel or close stops them before insertion). */
  const dropHeld = (s: SessionState) => {
    for (const reject of s.held) reject(RequestError.requestCancelled());
    s.held.clear();
  };

  const known = (sessionId: string): SessionState => {
    const s = sessions.get(sessionId);
    if (!s) throw RequestError.sessionNotFound(sessionId);
    return s;
  };

  const app = agent({ name: "toolhost" })
    .onConnect((connection) => {
      client = connection.client;
    })
    .onRequest("initialize", async ({ params, client: ctx }) => {
      client ??= ctx;
      const answer = await v1.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: params.info });
      const caps = answer.agentCapabilities ?? {};
      const prompt = caps.promptCapabilities ?? {};
      const info = answer.agentInfo ?? { name: "toolhost", version: "0" };
      return {
        protocolVersion: 2,
        info: { name: info.name, title: info.title ?? null, version: info.version },
        capabilities: {
          session: {
            prompt: {
              ...(prompt.image ? { image: {} } : {}),
              ...(prompt.audio ? { audio: {} } : {}),
              ...(prompt.embeddedContext ? { embeddedContext: {} } : {}),
            },
            mcp: MCP,
            delete: {},
            additionalDirectories: {},
          },
        },
        authMethods: [],
      };
    })
    .onRequest("session/new", async ({ params }) => {
      const answer = await v1.request("session/new", {
        cwd: params.cwd,
        additionalDirectories: params.additionalDirectories ?? [],
        mcpServers: v1Servers(params.mcpServers),
      });
      state(answer.sessionId);
      return { sessionId: answer.sessionId, configOptions: configOptions(answer.configOptions) };
    })
    .onRequest("session/prompt", async ({ params }) => {
      const { sessionId } = params;
      const s = known(sessionId);
      // Held while a turn runs: inserted (and answered) when it ends.
      while (s.turn) {
        const running = s.turn;
        await new Promise<void>((resolve, reject) => {
          s.held.add(reject);
          void running.finally(() => {
            s.held.delete(reject);
            resolve();
          });
        });
      }
      const messageId = `msg_${randomUUID()}`;
      s.mapper.endRun();
      void send(sessionId, { sessionUpdate: "user_message", messageId, content: params.prompt });
      void sendState(sessionId, { state: "running" });
      s.turn = v1
        .request("session/prompt", { sessionId, prompt: params.prompt as v1.ContentBlock[] })
        .then(
          async ({ stopReason }) => {
            await sendState(sessionId, { state: "idle", stopReason } as StateUpdate);
          },
          async (err: unknown) => {
            const { code = -32603, message = String(err) } = err as { code?: number; message?: string };
            await sendState(sessionId, { state: "idle", stopReason: "error", error: { code, message } });
          },
        )
        .finally(() => {
          s.turn = null;
        });
      return { messageId };
    })
    .onNotification("session/cancel", async ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (s) dropHeld(s);
      await v1.notify("session/cancel", { sessionId: params.sessionId });
    })
    .onRequest("session/close", async ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) return {};
      dropHeld(s);
      try {
        await v1.request("session/close", { sessionId: params.sessionId });
      } catch (err) {
        // Closing what is not open succeeds (v2).
        if ((err as { code?: number }).code !== -32002) throw err;
      }
      // The cancelled turn's last updates and its idle state go out before the answer.
      await s.turn;
      await out;
      sessions.delete(params.sessionId);
      return {};
    })
    .onRequest("session/resume", async ({ params }) => {
      const { sessionId, replayFrom } = params;
      if (replayFrom && replayFrom.type !== "start") {
        throw RequestError.invalidParams({ replayFrom }, `Unsupported replay cursor ${String(replayFrom.type)}: only {"type": "start"}`);
      }
      const request = {
        sessionId,
        cwd: params.cwd,
        additionalDirectories: params.additionalDirectories ?? [],
        mcpServers: v1Servers(params.mcpServers),
      };
      const s = state(sessionId);
      s.mapper.endRun();
      let answer: v1.LoadSessionResponse | v1.ResumeSessionResponse;
      try {
        // A replay from the start is v1's session/load; without one, v1's session/resume.
        answer = replayFrom ? await v1.request("session/load", request) : await v1.request("session/resume", request);
      } catch (err) {
        if (!s.turn) sessions.delete(sessionId);
        throw err;
      }
      // The session's current state, after the replay and before the answer.
      await sendState(sessionId, s.turn ? { state: "running" } : { state: "idle" });
      return { configOptions: configOptions(answer.configOptions) };
    })
    .onRequest("session/set_config_option", async ({ params }) => {
      known(params.sessionId);
      if (params.type !== "id" || typeof params.value !== "string") {
        throw RequestError.invalidParams({ configId: params.configId }, `Option ${params.configId} takes a value id`);
      }
      const answer = await v1.request("session/set_config_option", {
        sessionId: params.sessionId,
        configId: params.configId,
        value: params.value,
      });
      return { configOptions: configOptions(answer.configOptions) };
    })
    .onRequest("session/list", async ({ params }) => {
      const page = await v1.request("session/list", { cwd: params.cwd ?? null, cursor: params.cursor ?? null });
      return { sessions: page.sessions as never, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
    })
    .onRequest("session/delete", async ({ params }) => {
      sessions.delete(params.sessionId);
      await v1.request("session/delete", { sessionId: params.sessionId });
      return {};
    });

  return { app, shutdown: () => inner.shutdown() };
}
