import { RequestError, type AgentContext, type ClientCapabilities } from "@agentclientprotocol/sdk";
import type { Workspace } from "../config/workspace.js";
import type { AcpSession } from "./session.js";

// `toolhost serve` runs one agent per connection in one process (acp/serve.ts). The keeper is what
// those connections share: which connection has which session, a client that a later connection
// can take over, and the grace period after a connection drops. stdio has one connection and no
// keeper: createAgent (acp/server.ts) works as before without one.

/** A connection's sessions as createAgent keeps them. */
type SessionMap = Map<string, { id: string; ready: Promise<AcpSession> }>;

/** What createAgent (acp/server.ts) asks of the keeper, per connection. */
export interface ConnectionKeeper {
  /** The client a session of this connection talks to: a relay that a later connection can take over. */
  relay(sessionId: string, client: AgentContext, caps: ClientCapabilities): AgentContext;
  /** Before session/new: refuses past the connection's limit of sessions. */
  admit(open: number): void;
  /**
   * session/load or session/resume of a session another connection of this process has (a
   * dropped one's within its grace period, or a live one's: its running turn is cancelled) is
   * taken over live (a resume by a client of the same capabilities and roots), or closed so the
   * load starts it from its file (undefined).
   */
  takeOver(
    sessionId: string,
    client: AgentContext,
    caps: ClientCapabilities,
    replay: boolean,
    workspace: Workspace,
  ): Promise<AcpSession | undefined>;
}

/** One session's client as a relay: `target` changes when another connection takes the session over. */
interface Relay {
  target: AgentContext;
  caps: ClientCapabilities;
  context: AgentContext;
}

/** The relay's face: every call (notify, request, createTerminal, the SDK's own symbols) goes to the current target. */
function relayContext(relay: Relay): AgentContext {
  return new Proxy({} as AgentContext, {
    get(_, key) {
      const value: unknown = Reflect.get(relay.target, key);
      return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(relay.target) : value;
    },
  });
}

/** Capabilities as one string, keys sorted, so two clients' can be compared. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value) ?? "null";
}

interface Connection {
  sessions: SessionMap;
  /** Shuts the connection's remaining sessions (createAgent's shutdown: the stdio close path). */
  shutdown: () => Promise<void>;
  dropped: boolean;
  grace?: NodeJS.Timeout;
}

export interface KeeperOptions {
  /** How long a dropped connection's sessions wait for a resume before they close. */
  graceMs: number;
  /** Sessions one connection may have open. */
  maxSessions: number;
  log: (line: string) => void;
}

/** The sessions of all of `toolhost serve`'s connections. */
export class SessionKeeper {
  private readonly connections = new Set<Connection>();
  private readonly relays = new Map<string, Relay>();

  constructor(private readonly options: KeeperOptions) {}

  /** The keeper of one new connection; `attach` gives it createAgent's sessions and shutdown. */
  connection(): { keeper: ConnectionKeeper; attach(sessions: SessionMap, shutdown: () => Promise<void>): void; dropped(): Promise<void> } {
    const conn: Connection = { sessions: new Map(), shutdown: async () => {}, dropped: false };
    const keeper: ConnectionKeeper = {
      relay: (sessionId, client, caps) => {
        const existing = this.relays.get(sessionId);
        if (existing) {
          existing.target = client;
          existing.caps = caps;
          return existing.context;
        }
        const relay = { target: client, caps } as Relay;
        relay.context = relayContext(relay);
        this.relays.set(sessionId, relay);
        return relay.context;
      },
      admit: (open) => {
        if (open >= this.options.maxSessions)
          throw RequestError.invalidRequest(
            { limit: this.options.maxSessions },
            `This connection has ${open} sessions open, the most toolhost serve allows (--max-sessions); close one first.`,
          );
      },
      takeOver: async (sessionId, client, caps, replay, workspace) => {
        const from = [...this.connections].find((c) => c !== conn && c.sessions.has(sessionId));
        if (!from) return undefined;
        const handle = from.sessions.get(sessionId)!;
        from.sessions.delete(sessionId);
        const session = await handle.ready;
        // A connection still up (its client may have vanished without closing, pings not yet
        // missed) loses the session to the client that asks for it with the token: its turn ends.
        if (!from.dropped) {
          await session.cancel();
          this.options.log(`session ${sessionId} taken over from a connection still open`);
        }
        const relay = this.relays.get(sessionId);
        // A load replays from the file; a client of other capabilities, or other roots, needs a session
        // built for them: each starts again from the file.
        const sameRoots = canonical(session.agent.workspace.realRoots) === canonical(workspace.realRoots);
        if (replay || !relay || !sameRoots || canonical(relay.caps) !== canonical(caps)) {
          await session.close();
          this.relays.delete(sessionId);
          return undefined;
        }
        relay.target = client;
        this.options.log(`session ${sessionId} resumed on a new connection`);
        return session;
      },
    };
    this.connections.add(conn);
    return {
      keeper,
      attach: (sessions, shutdown) => {
        conn.sessions = sessions;
        conn.shutdown = shutdown;
      },
      dropped: () => this.drop(conn),
    };
  }

  /**
   * The client is gone: every running turn is cancelled at once (its commands killed: nobody can
   * see or approve them, and the prompt's answer cannot reach a v1 client again); the sessions
   * wait `graceMs` for a session/resume, then close as stdio's do when stdin ends.
   */
  private async drop(conn: Connection): Promise<void> {
    conn.dropped = true;
    const handles = [...conn.sessions.values()];
    await Promise.allSettled(handles.map(async (h) => (await h.ready).cancel()));
    const end = async () => {
      this.connections.delete(conn);
      for (const id of conn.sessions.keys()) this.relays.delete(id);
      await conn.shutdown();
    };
    if (conn.sessions.size === 0 || this.options.graceMs <= 0) return end();
    this.options.log(`a client left with ${conn.sessions.size} session(s): kept ${this.options.graceMs / 1000}s for session/resume`);
    await new Promise<void>((resolve) => {
      conn.grace = setTimeout(resolve, this.options.graceMs);
      conn.grace.unref();
    });
    await end();
  }

  /** Closes every session of every connection (the server is stopping). */
  async closeAll(): Promise<void> {
    const all = [...this.connections];
    this.connections.clear();
    this.relays.clear();
    for (const c of all) clearTimeout(c.grace);
    await Promise.allSettled(all.map((c) => c.shutdown()));
  }
}
