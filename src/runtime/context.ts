import { createHash } from "node:crypto";
import type { ToolContext, ToolEvent } from "../tool/context.js";
import type { RequirementSet } from "../tool/requirements.js";
import type { HostServices } from "../tool/services.js";
import { ScopedFs } from "./fs/scoped.js";
import { ScopedNet } from "./net.js";
import { ScopedSearch } from "./search/scoped.js";
import type { RuntimeSession } from "./session.js";
import { ScopedProcesses } from "./shell/scoped-processes.js";
import { ScopedShell, type CallGrant } from "./shell/scoped.js";

export interface ToolContextOptions {
  session: RuntimeSession;
  toolId: string;
  callId: string;
  /** The effective requirements: the manifest's ∪ the tool's. */
  requires: RequirementSet;
  signal: AbortSignal;
  emit?: (event: ToolEvent) => void;
  /** The agent's services for this call (none for a bare runtime). */
  host?: HostServices;
  /** What the policy grants the call once approved (running outside the sandbox). */
  grant?: CallGrant;
}

/** Builds the capability surface for one call. Throws ScopeError when the requirements do not compile. */
export function createToolContext(options: ToolContextOptions): ToolContext {
  const { session, toolId, callId, signal } = options;
  const scope = session.scope(options.requires);
  const fs = new ScopedFs({ scope, workspace: session.workspace, route: session.route, unlistedRoots: [session.sidecars.dir] });
  const emit = options.emit ?? (() => {});
  const shell = new ScopedShell({
    scope,
    backend: session.shell,
    fs,
    workspace: session.workspace,
    roots: session.roots,
    sidecarDir: session.sidecars.dir,
    signal,
    sidecars: session.sidecars,
    toolId,
    emit,
    transform: session.spawnTransform,
    grant: options.grant,
    processes: session.processes,
  });
  return {
    toolId,
    callId,
    idempotencyKey: createHash("sha256").update(`${session.id}\0${callId}`).digest("hex").slice(0, 32),
    workspace: session.workspace,
    roots: session.roots,
    session,
    signal,
    fs,
    shell,
    processes: new ScopedProcesses({ scope, table: session.processes, shell, signal, toolId }),
    search: new ScopedSearch(fs, session.route, session.workspace, signal),
    net: new ScopedNet(scope, signal, session.net),
    sidecars: session.sidecars,
    host: options.host ?? {},
    emit,
  };
}
