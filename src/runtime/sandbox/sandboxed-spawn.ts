import type { RequirementSet } from "../../tool/requirements.js";
import type { CompiledScope } from "../scope.js";
import type { SpawnRequest, SpawnTransform } from "../shell/scoped.js";

// A program that is not a tool call, wrapped in the session's sandbox: a project's hook command,
// a project's MCP stdio server. Both are workspace code (their command line, and whatever it
// loads), so they run inside or not at all: never outside because the sandbox is off or missing.

/** What the wrapping needs of the session (a `RuntimeSession` is one). */
export interface SandboxHost {
  readonly spawnTransform?: SpawnTransform;
  readonly roots: readonly string[];
  readonly sidecars: { readonly dir: string };
  scope(requires: RequirementSet): CompiledScope;
}

/** The session's sandbox as it is now (a `SessionSandbox`'s state): why it does not wrap. */
export type SandboxState = () => Promise<{ active: boolean; reason?: string }>;

/** The request wrapped (run its file, args, env and cwd; `settle` once it ended), or why it cannot be. */
export type Sandboxed = { request: SpawnRequest } | { unavailable: string };

export interface SandboxedSpawnOptions {
  /** Names the program in the quarantine's folder (`hook`, `mcp-<server>`). */
  toolId: string;
  /**
   * Host patterns it may reach through the sandbox's proxy. Given (an MCP server's entry), these
   * only: not the hosts the session's net.fetch rules allow every command. Absent: as a bash call.
   */
  hosts?: readonly string[];
}

/**
 * `request` wrapped as a bash command is (the same mounts, project guard and environment
 * allow-list; the workspace writable), or `unavailable` with the reason: the session has no
 * sandbox, it is switched off, or none can run here.
 */
export async function sandboxedSpawn(
  host: SandboxHost,
  request: SpawnRequest,
  options: SandboxedSpawnOptions,
  state?: SandboxState,
): Promise<Sandboxed> {
  const transform = host.spawnTransform;
  if (!transform) return { unavailable: "this session has no sandbox" };
  const now = await state?.().catch((err: unknown) => ({ active: false, reason: String(err) }));
  if (now && !now.active) return { unavailable: `the sandbox is not active: ${now.reason ?? "unknown"}` };
  const hosts = options.hosts ?? [];
  const scope = host.scope({
    shell: [{ cmd: "*" }],
    fs: { read: ["{workspace}/**"] },
    ...(hosts.length ? { net: { hosts: [...hosts] } } : {}),
  });
  try {
    const wrapped = await transform(request, {
      scope,
      roots: host.roots,
      sidecarDir: host.sidecars.dir,
      toolId: options.toolId,
      backend: "local",
      unsandboxed: false,
      ...(options.hosts ? { scopeHostsOnly: true } : {}),
    });
    if (!wrapped.sandboxed) {
      await wrapped.settle?.();
      return { unavailable: "the sandbox is switched off" };
    }
    return { request: wrapped };
  } catch (err) {
    return { unavailable: err instanceof Error ? err.message : String(err) };
  }
}
