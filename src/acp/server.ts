import { randomUUID } from "node:crypto";
import {
  agent,
  RequestError,
  type AgentContext,
  type ClientCapabilities,
  type InitializeResponse,
  type McpServer,
} from "@agentclientprotocol/sdk";
import { removeCredentials } from "../config/credentials.js";
import { readConfigFile, type ConfigFile } from "../config/file.js";
import { resolveWorkspace, type Workspace } from "../config/workspace.js";
import { modelReadiness } from "../agent/model/model-config.js";
import { SAVED_LOGIN_ID, TERMINAL_LOGIN_ID } from "./auth.js";
import { configuredProfileProblem, cwdProblem, directoriesProblem, initializeResponse, newSessionResponse } from "./handshake.js";
import { configOptionRow, modeRefusal, modeState, type ConfigRefusal } from "./modes.js";
import { sessionModules } from "./session-modules.js";
import { withSubagents } from "./subagents.js";
import { withRewind, type RewindRoutes } from "./rewind.js";
import { withCallCancel } from "./cancel-call.js";
import type { AcpSession } from "./session.js";
import type { ConnectionKeeper } from "./session-keeper.js";
import type { SessionStore, StoredSession } from "../agent/record/session-store.js";
import type { SessionHold } from "../agent/record/session-hold.js";

/**
 * A session as the connection knows it. The tools and runtime load right after session/new
 * is answered (they are most of start-up), and every later request awaits `ready`.
 */
interface SessionHandle {
  id: string;
  ready: Promise<AcpSession>;
}

/** A stored session to start from (session/load replays it to the editor, session/resume does not). */
interface Restore {
  stored: StoredSession;
  replay: boolean;
  /** This process's hold of the session's file, taken before the load. */
  hold: SessionHold;
}

/**
 * The workspace of a session/new, load or resume: its roots checked (each an existing absolute
 * directory, not a system folder), then resolved once (config/workspace.ts) for the whole session.
 */
function sessionWorkspace(params: { cwd: string; additionalDirectories?: string[] | null }): Workspace {
  const additionalDirectories = params.additionalDirectories ?? [];
  const problem = cwdProblem(params.cwd) ?? directoriesProblem(additionalDirectories);
  if (problem) throw RequestError.invalidParams({ cwd: params.cwd, additionalDirectories }, problem);
  return resolveWorkspace(params.cwd, additionalDirectories);
}

/**
 * Starts a session: its tools (built from `config`, the user's config file as session/new read it
 * for its answer, or read now for a load), its recorder, its MCP servers in the background.
 */
async function loadSession(
  id: string,
  workspace: Workspace,
  mcpServers: AcpSession["mcpServers"],
  client: AgentContext,
  clientCapabilities: ClientCapabilities,
  config: ConfigFile,
  store: SessionStore,
  restore?: Restore,
  writeLines?: (lines: string) => Promise<void>,
): Promise<AcpSession> {
  const [{ AcpSession }, { SessionTools }, { listProfiles }, { restoredState }, { loadedSessionRecorder, newSessionRecorder }] =
    await sessionModules();
  const state = restore ? restoredState(restore.stored) : undefined;
  const [tools, listed] = await Promise.all([
    SessionTools.create(workspace, { profile: state?.profile, configFile: config }),
    listProfiles(),
  ]);
  const profile = tools.toolset.profile;
  const recorder = restore ? loadedSessionRecorder(store, restore.stored, restore.hold) : newSessionRecorder(store, id, workspace);
  // A new session's file is there from session/new on: another process (acpx's `prompt -s`) can load it before its first prompt.
  if (!restore) recorder?.start();
  const session = new AcpSession({
    id,
    mcpServers,
    client,
    clientCapabilities,
    tools,
    profiles: listed.profiles.map((p) => p.name),
    recorder,
    writeLines,
    // A profile's model sits below TOOLHOST_MODEL (the user's explicit choice for this run).
    model: process.env.TOOLHOST_MODEL ? undefined : profile.model,
  });
  if (restore && state) {
    session.agent.restore(state);
    if (restore.replay) await session.replay(restore.stored);
    // A torn last line (a write cut off by a crash) or a damaged one is skipped on load: say so.
    const skipped = restore.stored.skippedLines;
    if (skipped > 0) {
      const lines = skipped === 1 ? "1 line" : `${skipped} lines`;
      await session.say(
        `toolhost: ${lines} of the session file ${restore.stored.file} could not be read (cut off or damaged) and ${skipped === 1 ? "was" : "were"} skipped.`,
      );
    }
  }
  // MCP servers connect in the background; a model turn's first request waits for them (bounded),
  // and so does the first command update, so the menu arrives once with their prompts.
  void session.startMcp().catch((err: unknown) => process.stderr.write(`toolhost: MCP servers of session ${id}: ${String(err)}\n`));
  await session.announceStart();
  // The option's full profile list and the profile's model are known only now.
  await session.update({ sessionUpdate: "config_option_update", configOptions: session.configOptions() });
  return session;
}

/** What the early reader (acp/stdio.ts) answered before the SDK loaded. */
export interface EarlyState {
  clientCapabilities?: ClientCapabilities;
  /** The params of an `initialize` answered early: replayed to the SDK, which gates on it. */
  initializeParams?: unknown;
  /** That initialize was v2's: the connection and its early sessions are the v2 side's (acp/v2/). */
  v2?: boolean;
  /** Sessions answered early, each with the config file its answer was made from. */
  sessions: { id: string; workspace: Workspace; mcpServers: McpServer[]; config: ConfigFile }[];
}

/**
 * The toolhost ACP agent: one instance per connection. `keeper` is `toolhost serve`'s, shared by
 * its connections (acp/session-keeper.ts): relayed clients, a limit of sessions, take-overs.
 */
export function createAgent(
  early: EarlyState = { sessions: [] },
  writeLines?: (lines: string) => Promise<void>,
  keeper?: ConnectionKeeper,
) {
  const sessions = new Map<string, SessionHandle>();
  let clientCapabilities: ClientCapabilities = early.clientCapabilities ?? {};
  /** The connection's one SessionStore: every session's recorder, list, load, delete and the sweep use it (loaded on first use). */
  let storeLoad: Promise<SessionStore> | undefined;
  const sessionStore = () => (storeLoad ??= import("../agent/record/session-store.js").then(({ SessionStore }) => new SessionStore()));

  /** Registers a session whose tools and runtime load right after its answer went out. */
  const open = (id: string, workspace: Workspace, mcpServers: McpServer[], client: AgentContext, config: ConfigFile): void => {
    const caps = clientCapabilities;
    const relayed = keeper?.relay(id, client, caps) ?? client;
    const h: SessionHandle = {
      id,
      ready: new Promise<void>((resolve) => setImmediate(resolve)).then(async () =>
        loadSession(id, workspace, mcpServers, relayed, caps, config, await sessionStore()),
      ),
    };
    h.ready.catch((err: unknown) => process.stderr.write(`toolhost: session ${h.id} failed to start: ${String(err)}\n`));
    sessions.set(h.id, h);
  };

  const handle = (sessionId: string): SessionHandle => {
    const found = sessions.get(sessionId);
    if (!found) throw RequestError.sessionNotFound(sessionId);
    return found;
  };

  /** A refused value, as the request's error. */
  const refuse = (refusal: ConfigRefusal | null) => {
    if (refusal) throw RequestError.invalidParams(refusal.data, refusal.message);
  };

  // _session/rewind_points, _session/rewind and session/fork (acp/rewind.ts).
  const rewindRoutes: RewindRoutes = {
    session: (sessionId) => handle(sessionId).ready,
    forkFile: async (sessionId) => {
      const live = sessions.get(sessionId);
      if (live) return (await live.ready).agent.fork();
      const store = await sessionStore();
      const stored = await store.read(sessionId);
      if (!stored) throw RequestError.sessionNotFound(sessionId);
      return (await import("../agent/rewind/rewinder.js")).forkStoredSession(store, stored);
    },
    resume: (sessionId, params, client) => restoreSession(sessionId, sessionWorkspace(params), params.mcpServers, client, false),
  };

  // The rewind methods go last: each handler before `initialize` delays its answer (the SDK asks them
  // in turn), and a request right behind a replayed initialize must find it answered.
  const app = withRewind(
    agent({ name: "toolhost" })
      .onRequest("initialize", ({ params }): InitializeResponse => {
        // The stable binding strips unstable capabilities (`subagents`, `plan`): they come from the raw
        // initialize line the early reader kept.
        const plan = (early.clientCapabilities as { plan?: unknown } | undefined)?.plan;
        clientCapabilities = {
          ...withSubagents(early.clientCapabilities),
          ...params.clientCapabilities,
          ...(plan != null ? { plan } : {}),
        };
        return initializeResponse(params.clientCapabilities);
      })
      .onRequest("session/new", ({ params, client }) => {
        keeper?.admit(sessions.size);
        const workspace = sessionWorkspace(params);
        const id = randomUUID();
        // Read once: the answer's options and the session's tools, rules, sandbox and MCP servers.
        const config = readConfigFile();
        const profileProblem = configuredProfileProblem(config);
        if (profileProblem) throw RequestError.invalidParams({ profile: profileProblem }, profileProblem);
        // Loaded after the response goes out, so the answer does not wait for the tools.
        open(id, workspace, params.mcpServers ?? [], client, config);
        return newSessionResponse(id, config);
      })
      .onRequest("session/set_mode", async ({ params }) => {
        const h = handle(params.sessionId);
        refuse(modeRefusal(params.modeId));
        const session = await h.ready;
        session.agent.setMode(params.modeId);
        await session.update({ sessionUpdate: "config_option_update", configOptions: session.configOptions() });
        return {};
      })
      // Each option's check and set are a row of acp/modes.ts's table, as is what the editor is sent.
      .onRequest("session/set_config_option", async ({ params }) => {
        const h = handle(params.sessionId);
        const option = configOptionRow(params.configId);
        if (!option || typeof params.value !== "string") {
          throw RequestError.invalidParams({ configId: params.configId }, `Unknown config option ${params.configId}`);
        }
        refuse(option.check?.(params.value) ?? null);
        const session = await h.ready;
        refuse(await option.set(session, params.value));
        return { configOptions: session.configOptions() };
      })
      .onRequest("session/prompt", async ({ params }) => (await handle(params.sessionId).ready).prompt(params.prompt, params._meta))
      .onNotification("session/cancel", async ({ params }) => {
        const own = sessions.get(params.sessionId);
        if (own) return (await own.ready).cancel();
        // Not a session of session/new: a subagent's child session (ACP subagent sessions) cancels that child alone.
        for (const h of sessions.values()) if ((await h.ready.catch(() => null))?.cancelChild(params.sessionId)) return;
      })
      // The login (acp/auth.ts): the agent method asks whether a model and its key are there; a
      // terminal method is the client's to run, never passed here (the schema says so).
      .onRequest("authenticate", ({ params }) => {
        if (params.methodId === TERMINAL_LOGIN_ID)
          throw RequestError.invalidParams(
            { methodId: params.methodId },
            "a terminal login is run by the client in a terminal, not passed to authenticate",
          );
        if (params.methodId !== SAVED_LOGIN_ID)
          throw RequestError.invalidParams({ methodId: params.methodId }, `unknown auth method ${params.methodId}`);
        const readiness = modelReadiness();
        if (!readiness.ready)
          throw RequestError.authRequired({ methodId: params.methodId }, `${readiness.reason}: run \`toolhost login\` in a terminal`);
        return {};
      })
      // Removes the stored login; keys in the agent's environment stay (they are not the agent's to remove).
      .onRequest("logout", () => {
        removeCredentials();
        return {};
      })
      .onRequest("session/close", async ({ params }) => {
        const h = handle(params.sessionId);
        sessions.delete(params.sessionId);
        await (await h.ready).close();
        return {};
      })
      .onRequest("session/load", async ({ params, client }) => {
        const session = await restoreSession(params.sessionId, sessionWorkspace(params), params.mcpServers ?? [], client, true);
        return { modes: modeState(session.agent.mode), configOptions: session.configOptions() };
      })
      .onRequest("session/resume", async ({ params, client }) => {
        const session = await restoreSession(params.sessionId, sessionWorkspace(params), params.mcpServers ?? [], client, false);
        return { modes: modeState(session.agent.mode), configOptions: session.configOptions() };
      })
      .onRequest("session/list", async ({ params }) => {
        const store = await sessionStore();
        let page;
        try {
          page = await store.list({ cwd: params.cwd ?? undefined, cursor: params.cursor ?? undefined });
        } catch (err) {
          throw RequestError.invalidParams({ cursor: params.cursor }, (err as Error).message);
        }
        // Files that cannot be opened stay out of the editor's list (a row it could not load); stderr names them.
        const broken = page.sessions.filter((s) => s.problem);
        if (broken.length) {
          process.stderr.write(
            `toolhost: session/list leaves out ${broken.length} session file(s) it cannot open (toolhost sessions list shows them):\n` +
              broken.map((s) => `  ${s.file}: ${s.problem}\n`).join(""),
          );
        }
        return {
          sessions: page.sessions
            .filter((s) => !s.problem)
            .map((s) => ({
              sessionId: s.id,
              cwd: s.cwd,
              ...(s.additionalDirectories?.length ? { additionalDirectories: s.additionalDirectories } : {}),
              title: s.title ?? null,
              updatedAt: s.updatedAt,
            })),
          ...(page.nextCursor ? { nextCursor: page.nextCursor } : {}),
        };
      })
      .onRequest("session/delete", async ({ params }) => {
        const open = sessions.get(params.sessionId);
        if (open) {
          sessions.delete(params.sessionId);
          await (await open.ready).close();
        }
        // Deleting what is not there leaves it not there: an unknown id succeeds too (idempotent, as clients retry).
        const { SessionHeldError } = await import("../agent/record/session-hold.js");
        try {
          await (await sessionStore()).delete(params.sessionId);
        } catch (err) {
          if (err instanceof SessionHeldError)
            throw RequestError.invalidRequest({ sessionId: params.sessionId, heldBy: err.pid }, err.message);
          throw err;
        }
        return {};
      }),
    rewindRoutes,
  );
  // _tool_call/cancel (acp/cancel-call.ts), last for the same reason.
  withCallCancel(app, (sessionId) => handle(sessionId).ready);

  /**
   * session/load and session/resume: the stored session starts again under its own id (a live
   * one of that id is closed first). Answered once it is ready, after the replay for a load.
   */
  const restoreSession = async (
    sessionId: string,
    workspace: Workspace,
    mcpServers: McpServer[],
    client: AgentContext,
    replay: boolean,
  ): Promise<AcpSession> => {
    // Another connection's session (toolhost serve): taken over live, or closed to start from its file.
    const taken = await keeper?.takeOver(sessionId, client, clientCapabilities, replay, workspace);
    if (taken) {
      sessions.set(sessionId, { id: sessionId, ready: Promise.resolve(taken) });
      await taken.sendCommands(true);
      return taken;
    }
    const store = await sessionStore();
    const stored = await store.read(sessionId);
    const live = sessions.get(sessionId);
    // Live with no prompt yet (its file only a header and settings) or never recorded (TOOLHOST_SESSIONS=off):
    // answered from memory, nothing to replay.
    if (live && !stored?.entries.some((entry) => entry.type !== "setting")) {
      const session = await live.ready;
      await session.sendCommands(true);
      return session;
    }
    if (!stored) {
      // A file that is there but cannot be read (damaged, a newer format) says so.
      const problem = await store.problem(sessionId);
      if (problem) throw RequestError.invalidRequest({ sessionId }, `Session ${sessionId} cannot be opened: ${problem}`);
      throw RequestError.sessionNotFound(sessionId);
    }
    if (live) {
      sessions.delete(sessionId);
      await (await live.ready).close();
    }
    // One process at a time: a session open in another process (another editor window) is refused, naming it.
    const { takeHold, SessionHeldError } = await import("../agent/record/session-hold.js");
    let hold: SessionHold;
    try {
      hold = takeHold(stored.file, sessionId);
    } catch (err) {
      if (err instanceof SessionHeldError) throw RequestError.invalidRequest({ sessionId, heldBy: err.pid }, err.message);
      throw err;
    }
    const ready = loadSession(
      sessionId,
      workspace,
      mcpServers,
      keeper?.relay(sessionId, client, clientCapabilities) ?? client,
      clientCapabilities,
      readConfigFile(),
      store,
      { stored, replay, hold },
      writeLines,
    );
    sessions.set(sessionId, { id: sessionId, ready });
    try {
      return await ready;
    } catch (err) {
      sessions.delete(sessionId);
      hold.release();
      throw err;
    }
  };

  /** Cancels every turn (killing what they started) and removes session files. */
  const shutdown = async () => {
    const all = [...sessions.values()];
    sessions.clear();
    await Promise.allSettled(all.map(async (h) => (await h.ready).close()));
  };

  /** Sessions the early reader answered: they start once the connection (and its client) exists. */
  const adoptEarly = (client: AgentContext) => {
    for (const { id, workspace, mcpServers, config } of early.sessions) open(id, workspace, mcpServers, client, config);
  };

  return { app, sessions, shutdown, adoptEarly, sessionStore };
}
