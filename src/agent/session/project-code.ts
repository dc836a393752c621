import type { RuntimeSession } from "../../runtime/session.js";
import type { SessionSandbox } from "../../runtime/sandbox/session-sandbox.js";
import { sandboxedSpawn } from "../../runtime/sandbox/sandboxed-spawn.js";
import type { SpawnRequest } from "../../runtime/shell/scoped.js";
import { SessionHooks, type SessionHooksHost } from "./hooks.js";
import { SessionMcp, type SessionMcpHost } from "./mcp.js";

// A session's hooks and MCP servers. A project's hooks and stdio MCP servers are workspace code:
// they run inside the session's sandbox (a bash command's mounts, project guard and network, the
// server's allowedHosts only), or not at all (runtime/sandbox/sandboxed-spawn.ts).

export interface ProjectCodeHost {
  runtime: RuntimeSession;
  sandbox: SessionSandbox | undefined;
  hooks: Omit<SessionHooksHost, "sandbox">;
  mcp: Omit<SessionMcpHost, "sandbox">;
}

/** The session's hooks and MCP servers, each with the sandbox its project code runs in. */
export function projectCodeServices(host: ProjectCodeHost): { hooks: SessionHooks; mcp: SessionMcp } {
  const { runtime, sandbox: own } = host;
  const sandbox = (toolId: string, hosts?: readonly string[]) => (request: SpawnRequest) =>
    sandboxedSpawn(runtime, request, { toolId, hosts }, own && (() => own.state()));
  return {
    hooks: new SessionHooks({ ...host.hooks, sandbox: sandbox("hook") }),
    mcp: new SessionMcp({ ...host.mcp, sandbox: (request, spec) => sandbox(`mcp-${spec.name}`, spec.allowedHosts ?? [])(request) }),
  };
}
