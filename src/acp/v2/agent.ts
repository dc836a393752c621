import { randomUUID } from "node:crypto";
import type * as v1 from "@agentclientprotocol/sdk";
import {
  agent,
  agentProtocolRouter,
  assertSupportedMcpServers,
  RequestError,
  type AgentContext,
  type McpServer,
  type SessionUpdate,
  type StateUpdate,
} from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { CANCEL_TOOL_CALL } from "../cancel-call.js";
import { REWIND, REWIND_POINTS } from "../rewind.js";
import { startInner, type InnerAgent, type InnerFactory, type V1Agent } from "./bridge.js";
import type { OwnTurnParams } from "../own-turn.js";
import type { EarlyState } from "../server.js";
import { configOptions, MCP, toolhostExtensions, v1Capabilities, v2InitializeResponse, v2NewSessionResponse } from "./handshake.js";
import { UpdateMapper } from "./updates.js";

// ACP v2 over the same agent a v1 client gets. The v2 app answers the v2 client; every request
// becomes the v1 agent's own request (session/new, prompt, load/resume, close, fork, rewind,
// authenticate, one call's cancel, …) sent in-process to an instance of acp/server.ts's
// createAgent (acp/v2/bridge.ts), built at the first v2 `initialize`; what that agent sends its
// client comes back and goes out as v2. So one implementation of sessions, turns, tools and
// approvals serves both versions; this file maps.
//
// What the mapping adds, as v2 asks: a prompt is answered once its user message is inserted
// (echoed as `user_message`), the turn's end is an idle `state_update` with its stop reason, the
// turn is `requires_action` while it waits on the client (an approval, a form) and `running` again
// once answered, a prompt sent while a turn runs is held until it ends (a cancel answers it
// -32800), resume sends the session's state before its answer. The v1 agent sees a client without
// fs or terminals, so toolhost's own fs and shell (with the same sandbox and policy) serve a v2
// client; it sees the v2 client's form elicitation and terminal login as v1's.

/**
 * One connection's agent for both versions: the SDK's router, which picks at `initialize`, over
 * the connection's v1 app and a v2 app whose inner agent `create` makes (acp/server.ts's
 * createAgent) at the first v2 `initialize`: a v1 connection never builds it. `shutdown` closes
 * the v2 side's sessions, if it was built. `early`: what the early reader answered a v2 client
 * (its initialize, replayed to the router, and its sessions, which the inner agent adopts).
 */
export function versionRouter(
  v1App: v1.AgentApp,
  create: (early: EarlyState, writeLines: (lines: string) => Promise<void>) => InnerAgent,
  early?: EarlyState,
) {
  // The inner agent's client asks for plan operations (plan_update with items, v2's only plans).
  // A v2 initialize and session/new the early reader answered (acp/stdio.ts) are the inner agent's.
  const inner: EarlyState = early ?? { sessions: [], clientCapabilities: v1Capabilities(undefined) };
  const v2 = createV2Agent(
    (writeLines) => create(inner, writeLines),
    inner.sessions.map((s) => s.id),
  );
  return { router: agentProtocolRouter().withV1(v1App).withV2(v2.app), shutdown: v2.shutdown };
}

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

/** A v2 session request's workspace and MCP servers as the v1 agent's (session/new, resume, fork). */
function v1Setup(params: { cwd: string; additionalDirectories?: string[] | null; mcpServers?: McpServer[] }): {
  cwd: string;
  additionalDirectories: string[];
  mcpServers: v1.McpServer[];
} {
  return { cwd: params.cwd, additionalDirectories: params.additionalDirectories ?? [], mcpServers: v1Servers(params.mcpServers) };
}

/** An extension request's params: an object with its session's id (the inner agent checks the rest). */
function sessionParams(raw: unknown): { sessionId: string } & Record<string, unknown> {
  const params = typeof raw === "object" && raw !== null && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
  if (typeof params.sessionId !== "string") throw RequestError.invalidParams(raw, "sessionId must be a string");
  return params as { sessionId: string } & Record<string, unknown>;
}

/** One session as this connection sees it. */
interface SessionState {
  mapper: UpdateMapper;
  /** The running turn (the v1 prompt), until its idle state went out. */
  turn: Promise<void> | null;
  /** Prompts held while a turn runs: rejected by a cancel or a close. */
  held: Set<(error: Error) => void>;
  /** The turn's requests out to the client (approvals, forms): `requires_action` while there are any. */
  asking: number;
  /** The turn was cancelled (session/cancel, close): it ends idle, it does not run again. */
  cancelling: boolean;
  /** A turn the agent started by itself (acp/own-turn.ts) waits for the last one's idle state: its updates wait here. */
  waiting: unknown[] | null;
  /** Ends the agent's own turn with its stop reason. */
  ownEnd?: (stopReason: string) => void;
}

/** The v2 agent of one connection, over a v1 agent made by `makeInner` when the client initializes. */
function createV2Agent(makeInner: InnerFactory, earlySessions: string[]) {
  let client: AgentContext | undefined;
  /** The inner agent's capabilities a session's mapping needs: it cancels one call. */
  let callCancel = false;
  const sessions = new Map<string, SessionState>();
  const state = (sessionId: string): SessionState => {
    let s = sessions.get(sessionId);
    if (!s)
      sessions.set(
        sessionId,
        (s = { mapper: new UpdateMapper(() => callCancel), turn: null, held: new Set(), asking: 0, cancelling: false, waiting: null }),
      );
    return s;
  };
  for (const id of earlySessions) state(id);

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
    const s = state(sessionId);
    if (s.waiting) return (s.waiting.push(update), out);
    for (const mapped of s.mapper.mapAll(update as Parameters<UpdateMapper["map"]>[0])) void send(sessionId, mapped);
    return out;
  };
  /**
   * A turn the agent starts by itself (a background task's answer): `running` once the last turn's
   * idle state went out (the inner agent may say it starts before its last prompt's answer arrives;
   * its updates wait until then), `idle` when it ends; a prompt sent meanwhile is held as behind any turn.
   */
  const ownTurn = ({ sessionId, state: now, stopReason }: OwnTurnParams) => {
    const s = sessions.get(sessionId);
    if (!s) return;
    if (now === "idle") {
      s.ownEnd?.(stopReason ?? "end_turn");
      s.ownEnd = undefined;
      return;
    }
    const before = s.turn;
    const waiting: unknown[] = [];
    if (before) s.waiting = waiting;
    const ended = new Promise<string>((resolve) => (s.ownEnd = resolve));
    const turn: Promise<void> = (async () => {
      await before;
      if (s.waiting === waiting) s.waiting = null;
      s.mapper.endRun();
      s.cancelling = false;
      void sendState(sessionId, { state: "running" });
      for (const update of waiting) void relay(sessionId, update);
      const reason = await ended;
      await sendState(
        sessionId,
        reason === "error"
          ? { state: "idle", stopReason: "error", error: { code: -32603, message: "The agent's own turn failed" } }
          : ({ state: "idle", stopReason: reason } as StateUpdate),
      );
    })().finally(() => {
      if (s.turn === turn) s.turn = null;
    });
    s.turn = turn;
  };
  /**
   * The turn waits on the client (v2: requires_action, sent before the request) until the returned
   * function is called; then it runs again, unless it was cancelled (its idle state follows).
   */
  const waitOn = async (sessionId: string): Promise<() => void> => {
    const s = sessions.get(sessionId);
    if (!s?.turn) return () => {};
    if (s.asking++ === 0) await sendState(sessionId, { state: "requires_action" });
    return () => {
      if (--s.asking === 0 && s.turn && !s.cancelling) void sendState(sessionId, { state: "running" });
    };
  };

  // The inner agent, built at the first initialize (a v1 connection never gets here).
  let inner: ReturnType<typeof startInner> | undefined;
  const v1 = (): V1Agent => {
    inner ??= startInner(makeInner, {
      client: () => client!,
      relay: (sessionId, update) => void relay(sessionId, update),
      flushed: () => out,
      waitOn,
      ownTurn,
    });
    return inner.v1;
  };

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
      const answer: v1.InitializeResponse = await v1().request("initialize", {
        protocolVersion: 1,
        clientCapabilities: v1Capabilities(params.capabilities),
        clientInfo: params.info as v1.Implementation,
      });
      // Advertised on each running call (updates.ts), as v2 does, when the inner agent cancels one call.
      callCancel = toolhostExtensions(answer).cancelToolCall != null;
      return v2InitializeResponse(answer);
    })
    .onRequest("auth/login", async ({ params }) => {
      await v1().request("authenticate", { methodId: params.methodId });
      return {};
    })
    .onRequest("auth/logout", async () => {
      await v1().request("logout", {});
      return {};
    })
    .onRequest("session/new", async ({ params }) => {
      const answer = await v1().request("session/new", { ...v1Setup(params) });
      state(answer.sessionId);
      return v2NewSessionResponse(answer);
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
      s.cancelling = false;
      void send(sessionId, { sessionUpdate: "user_message", messageId, content: params.prompt });
      void sendState(sessionId, { state: "running" });
      const turn: Promise<void> = v1()
        .request("session/prompt", { sessionId, prompt: params.prompt as v1.ContentBlock[], _meta: { messageId } })
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
          // The agent's own turn may have followed this one already.
          if (s.turn === turn) s.turn = null;
        });
      s.turn = turn;
      return { messageId };
    })
    .onNotification("session/cancel", async ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (s) {
        s.cancelling = true;
        dropHeld(s);
      }
      await v1().notify("session/cancel", { sessionId: params.sessionId });
    })
    // One running call (advertised on the call while it runs): the v1 agent's _tool_call/cancel.
    // The call's end confirms it (`cancelled`, or completed if it finished first).
    .onRequest("tool_call/cancel", async ({ params }) => {
      const s = known(params.sessionId);
      if (!callCancel) throw RequestError.invalidParams(params, "Tool calls cannot be cancelled one by one here");
      s.mapper.cancelling(params.toolCallId);
      await v1().request(CANCEL_TOOL_CALL, { sessionId: params.sessionId, toolCallId: params.toolCallId });
      return {};
    })
    .onRequest("session/close", async ({ params }) => {
      const s = sessions.get(params.sessionId);
      if (!s) return {};
      s.cancelling = true;
      dropHeld(s);
      try {
        await v1().request("session/close", { sessionId: params.sessionId });
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
      const request = { sessionId, ...v1Setup(params) };
      const s = state(sessionId);
      s.mapper.endRun();
      let answer: v1.LoadSessionResponse | v1.ResumeSessionResponse;
      try {
        // A replay from the start is v1's session/load; without one, v1's session/resume.
        s.mapper.replaying = replayFrom !== undefined && replayFrom !== null;
        answer = replayFrom ? await v1().request("session/load", request) : await v1().request("session/resume", request);
      } catch (err) {
        if (!s.turn) sessions.delete(sessionId);
        throw err;
      } finally {
        s.mapper.replaying = false;
        s.mapper.endRun();
      }
      // The session's current state, after the replay and before the answer.
      await sendState(sessionId, s.turn ? { state: "running" } : { state: "idle" });
      return { configOptions: configOptions(answer.configOptions) };
    })
    // A new session from a session's current position (live or stored), started as a resume does.
    .onRequest("session/fork", async ({ params }) => {
      const answer = await v1().request("session/fork", { sessionId: params.sessionId, ...v1Setup(params) });
      state(answer.sessionId);
      return v2NewSessionResponse(answer);
    })
    .onRequest("session/set_config_option", async ({ params }) => {
      known(params.sessionId);
      if (params.type !== "id" || typeof params.value !== "string") {
        throw RequestError.invalidParams({ configId: params.configId }, `Option ${params.configId} takes a value id`);
      }
      const answer = await v1().request("session/set_config_option", {
        sessionId: params.sessionId,
        configId: params.configId,
        value: params.value,
      });
      return { configOptions: configOptions(answer.configOptions) };
    })
    .onRequest("session/list", async ({ params }) => {
      const page = await v1().request("session/list", { cwd: params.cwd ?? null, cursor: params.cursor ?? null });
      return { sessions: page.sessions as never, ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}) };
    })
    .onRequest("session/delete", async ({ params }) => {
      sessions.delete(params.sessionId);
      await v1().request("session/delete", { sessionId: params.sessionId });
      return {};
    })
    // Rewind (acp/rewind.ts), passed through: the same params and answer. After an applied rewind of
    // the conversation the session says what happened, as it records it (a message of its own, so
    // the replay of a resume shows the same); nothing is replayed: the messages after the point stay
    // on the client's screen until it resumes the session with `replayFrom: start`.
    .onRequest(REWIND_POINTS, sessionParams, async ({ params }) => {
      known(params.sessionId);
      return v1().request(REWIND_POINTS, params);
    })
    .onRequest(REWIND, sessionParams, async ({ params }) => {
      const s = known(params.sessionId);
      // After the running turn (as the session rewinds), so its message does not join the turn's last one.
      await s.turn;
      s.mapper.endRun();
      return v1().request(REWIND, params);
    });

  return { app, shutdown: async () => inner?.shutdown() };
}
