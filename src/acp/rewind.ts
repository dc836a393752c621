import { RequestError, type AgentApp, type AgentContext, type McpServer } from "@agentclientprotocol/sdk";
import type { ForkSessionResponse } from "@agentclientprotocol/sdk/unstable";
import { RewindError, isRewindMode, type RewindMode } from "../agent/rewind/rewinder.js";
import { modeState } from "./modes.js";
import type { AcpSession } from "./session.js";

// Rewind over ACP (issue 23 §4), in the shape of claude-agent-acp's proposal so one client serves
// both: `_session/rewind_points {sessionId}` → `{points}`, and `_session/rewind {sessionId,
// messageId, mode, dryRun?, force?}` → `{applied, files, conflicts}`; both advertised in
// initialize's `agentCapabilities._meta.toolhost.rewind`. After an applied rewind of the
// conversation the session tells the editor what happened (an agent message: ACP has no way to
// take back messages the editor shows). `session/fork` (unstable ACP: the stable binding does not
// know it, so it is registered here with its own parser) starts a new session from a session's
// current position and answers as session/resume does.

export const REWIND_POINTS = "_session/rewind_points";
export const REWIND = "_session/rewind";

interface RewindParams {
  sessionId: string;
  messageId: string;
  mode: RewindMode;
  dryRun?: boolean;
  force?: boolean;
}

const object = (raw: unknown): Record<string, unknown> => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw RequestError.invalidParams(raw, "params must be an object");
  return raw as Record<string, unknown>;
};

const text = (params: Record<string, unknown>, key: string): string => {
  const value = params[key];
  if (typeof value !== "string" || value === "") throw RequestError.invalidParams({ [key]: value }, `${key} must be a non-empty string`);
  return value;
};

const flag = (params: Record<string, unknown>, key: string): boolean | undefined => {
  const value = params[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "boolean") throw RequestError.invalidParams({ [key]: value }, `${key} must be true or false`);
  return value;
};

function rewindParams(raw: unknown): RewindParams {
  const params = object(raw);
  const mode = params.mode ?? "both";
  if (typeof mode !== "string" || !isRewindMode(mode))
    throw RequestError.invalidParams({ mode }, 'mode must be "files", "conversation" or "both"');
  return {
    sessionId: text(params, "sessionId"),
    messageId: text(params, "messageId"),
    mode,
    dryRun: flag(params, "dryRun"),
    force: flag(params, "force"),
  };
}

interface ForkParams {
  sessionId: string;
  cwd: string;
  additionalDirectories?: string[];
  mcpServers: McpServer[];
}

function forkParams(raw: unknown): ForkParams {
  const params = object(raw);
  const dirs = params.additionalDirectories;
  if (dirs != null && (!Array.isArray(dirs) || dirs.some((d) => typeof d !== "string")))
    throw RequestError.invalidParams({ additionalDirectories: dirs }, "additionalDirectories must be a list of paths");
  const servers = params.mcpServers;
  if (servers != null && !Array.isArray(servers)) throw RequestError.invalidParams({ mcpServers: servers }, "mcpServers must be a list");
  return {
    sessionId: text(params, "sessionId"),
    cwd: text(params, "cwd"),
    ...(dirs ? { additionalDirectories: dirs as string[] } : {}),
    mcpServers: (servers ?? []) as McpServer[],
  };
}

/** The problem a rewind met, as the request's error (a RewindError is the client's: invalid params). */
function asRequestError(error: unknown, params: unknown): never {
  if (error instanceof RewindError) throw RequestError.invalidParams(params, error.message);
  throw error;
}

export interface RewindRoutes {
  /** The live session of an id (session/new, load, resume). */
  session(sessionId: string): Promise<AcpSession>;
  /** A new session's file forked from a session (live or stored) at its current position: its id. */
  forkFile(sessionId: string): Promise<string>;
  /** Starts a stored session without replay (as session/resume). */
  resume(sessionId: string, params: ForkParams, client: AgentContext): Promise<AcpSession>;
}

/** Registers `_session/rewind_points`, `_session/rewind` and `session/fork` on the agent app. */
export function withRewind(app: AgentApp, routes: RewindRoutes): AgentApp {
  return app
    .onRequest(
      REWIND_POINTS,
      (raw: unknown) => ({ sessionId: text(object(raw), "sessionId") }),
      async ({ params }) => {
        const session = await routes.session(params.sessionId);
        const points = await session.agent.rewindPoints().catch((error: unknown) => asRequestError(error, params));
        return {
          // A state a rewind saved is a point too: `_meta.toolhost.kind` tells it from a prompt.
          points: points.map(({ messageId, kind, preview, createdAt, filesChanged }) => ({
            messageId,
            preview,
            createdAt,
            filesChanged,
            ...(kind === "saved" ? { _meta: { toolhost: { kind } } } : {}),
          })),
        };
      },
    )
    .onRequest(REWIND, rewindParams, async ({ params }) => {
      const session = await routes.session(params.sessionId);
      const { messageId, mode, dryRun, force } = params;
      const outcome = await session.agent
        .rewind(messageId, mode, { dryRun, force })
        .catch((error: unknown) => asRequestError(error, params));
      return {
        applied: outcome.applied,
        files: outcome.files,
        // A file that could not be written is left as it is too: the client shows it with its reason.
        conflicts: [...outcome.conflicts, ...outcome.failed.map((f) => ({ path: f.path, reason: `could not be restored: ${f.reason}` }))],
        _meta: { toolhost: { message: outcome.message, ...(outcome.kept ? { kept: outcome.kept } : {}) } },
      };
    })
    .onRequest("session/fork", forkParams, async ({ params, client }): Promise<ForkSessionResponse> => {
      const id = await routes.forkFile(params.sessionId).catch((error: unknown) => asRequestError(error, params));
      const session = await routes.resume(id, params, client);
      return {
        sessionId: id,
        modes: modeState(session.agent.mode),
        configOptions: session.configOptions() as ForkSessionResponse["configOptions"],
      };
    });
}
