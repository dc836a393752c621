import { statSync } from "node:fs";
import path from "node:path";
import type { InitializeResponse, NewSessionResponse, SessionCapabilities } from "@agentclientprotocol/sdk";
import { modelOptionState } from "../agent/model/model-config.js";
import { peekConfig, type ConfigFile } from "../config/file.js";
import { version } from "../config/paths.js";
import { systemFolderProblem } from "../config/workspace.js";
import { listProfileNames, selectProfileName, unknownProfileProblem } from "../config/profile-name.js";
import { DEFAULT_MODE } from "../policy/modes.js";
import { authMethods } from "./auth.js";
import { configOptions, modeState } from "./modes.js";

// The answers to `initialize` and `session/new`, light on purpose: the early reader (acp/stdio.ts)
// gives them before the SDK has loaded, and the SDK's handlers give the same ones afterwards.

/** The answer to `initialize`; the login methods offered depend on the client's capabilities (acp/auth.ts). */
export function initializeResponse(clientCapabilities?: unknown): InitializeResponse {
  return {
    // A v1 agent answers 1 whatever the client asks (never echo an unknown version).
    protocolVersion: 1,
    agentCapabilities: {
      loadSession: true,
      promptCapabilities: { image: true, audio: false, embeddedContext: true },
      // session/new's MCP servers: stdio always, streamable HTTP and SSE through the MCP SDK's transports.
      mcpCapabilities: { http: true, sse: true },
      // additionalDirectories: extra workspace roots of a session (new, load, resume), checked like cwd.
      // fork: session/fork (unstable ACP; a client whose schema does not know it ignores it: clients
      // signal nothing for it, acp/rewind.ts).
      sessionCapabilities: { close: {}, list: {}, resume: {}, delete: {}, additionalDirectories: {}, fork: {} } as SessionCapabilities,
      // Extension methods: _session/rewind_points and _session/rewind (acp/rewind.ts), _tool_call/cancel (acp/cancel-call.ts).
      _meta: { toolhost: { rewind: { version: 1 }, cancelToolCall: { version: 1 } } },
      // `logout` removes the stored login (acp/server.ts).
      auth: { logout: {} },
    },
    authMethods: authMethods(clientCapabilities),
    agentInfo: { name: "toolhost", title: "toolhost", version },
  };
}

/**
 * Why a session cannot run in `cwd` (it must be an absolute path to an existing directory, and
 * neither `/` nor a system folder), or null. The home folder itself is accepted: its rules make
 * every change and command ask (policy/ruleset.ts), and the session says so at start.
 */
export function cwdProblem(cwd: string, what = "cwd"): string | null {
  if (!path.isAbsolute(cwd)) return `${what} must be an absolute path, got ${JSON.stringify(cwd)}`;
  let stat;
  try {
    stat = statSync(cwd, { throwIfNoEntry: false });
  } catch (err) {
    return `${what} ${cwd} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}); open a folder you can read`;
  }
  if (!stat) return `${what} ${cwd} does not exist; open an existing project folder`;
  if (!stat.isDirectory()) return `${what} ${cwd} is not a directory; open the folder that contains it`;
  return systemFolderProblem(cwd, what);
}

/** Why a session cannot take these additional workspace roots (each checked like `cwd`), or null. */
export function directoriesProblem(dirs: readonly string[]): string | null {
  for (const dir of dirs) {
    const problem = cwdProblem(dir, "additional directory");
    if (problem) return problem;
  }
  return null;
}

/** Why no session can start with the configured profile (TOOLHOST_PROFILE or the config's names none), or null: refused, never a read-only fallback. */
export function configuredProfileProblem(config: ConfigFile): string | null {
  const problem = unknownProfileProblem({ config: peekConfig(config) });
  return problem && `toolhost cannot start a session: ${problem}. Fix the name, or unset it for the default profile`;
}

/**
 * A new session's answer: its id, modes and config options, from the session's config file (read
 * once for the whole start; the session's tools are built from the same value). Profiles are a
 * directory listing.
 */
export function newSessionResponse(sessionId: string, config: ConfigFile): NewSessionResponse {
  const peek = peekConfig(config);
  const profile = selectProfileName({ config: peek });
  const options = configOptions({
    mode: DEFAULT_MODE,
    model: modelOptionState(undefined, process.env, peek),
    profile: { current: profile, names: listProfileNames() },
  });
  return { sessionId, modes: modeState(DEFAULT_MODE), configOptions: options };
}
