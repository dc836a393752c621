import { headlessFrontEnd } from "../agent/session/agent-session.js";
import type { Workspace } from "../config/workspace.js";
import { formatLoadProblems } from "../host/toolset-report.js";
import { sweepStale } from "../runtime/sidecars.js";
import { headlessSession } from "./headless.js";

export interface CallOptions {
  id: string;
  args: unknown;
  /** Where the call runs, resolved once (cli.ts's checkWorkspace). */
  workspace: Workspace;
  profile?: string;
  /** The session mode the call runs in (default `full`: typing the command approves this one call). */
  mode?: string;
  /** The real stdout (the CLI sends every other write to stdout to stderr). */
  out: (text: string) => Promise<void>;
}

/**
 * `toolhost call`: one call through the same session machinery the editor uses — toolset,
 * policy, pipeline. The sidecar folder is kept after the call so a printed output_path stays
 * readable (a `cli-` folder, swept after a day).
 */
export async function runCall(options: CallOptions): Promise<number> {
  const session = await headlessSession({
    workspace: options.workspace,
    profile: options.profile,
    mode: options.mode ?? "full",
    frontEnd: headlessFrontEnd((text) => process.stderr.write(`${text}\n`)),
  });
  // An MCP tool: its server starts for this call (the user's, or a trusted project's) and stops after it.
  if (options.id.startsWith("mcp__")) await session.mcp.start([]);
  if (!session.registry.has(options.id)) {
    // A project that changed since it was trusted was named already (commands/headless.ts).
    const report = session.tools.toolset.report;
    const problems = formatLoadProblems(report.trustChanges ? { ...report, skipped: [], trustChanges: undefined } : report);
    if (problems) process.stderr.write(`${problems}\n`);
  }
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error("Interrupted"));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  // Alongside the call, and awaited: the CLI exits as soon as this returns.
  const swept = sweepStale().catch(() => {});
  const envelope = await session.callTool(options.id, options.args, controller.signal);
  await Promise.all([swept, session.mcp.stop()]);
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  await options.out(`${JSON.stringify(envelope, null, 2)}\n`); // the CLI prints the envelope
  return envelope.type === "output" ? 0 : 1;
}
