import path from "node:path";
import { extensionLoader } from "../agent/extension-loader.js";
import { invoke } from "../host/invoke.js";
import { buildToolset } from "../host/toolset.js";
import { formatLoadProblems } from "../host/toolset-report.js";
import { RuntimeSession } from "../runtime/session.js";
import { sweepStaleSidecars } from "../runtime/sidecars.js";

export interface CallOptions {
  id: string;
  args: unknown;
  cwd?: string;
  profile?: string;
}

/**
 * `toolhost call`: one call through the same toolset and invoke pipeline the agent uses. The
 * sidecar folder is kept after the call so a printed output_path stays readable (swept after 7 days).
 */
export async function runCall(options: CallOptions): Promise<number> {
  const workspace = path.resolve(options.cwd ?? process.cwd());
  const toolset = await buildToolset({ cwd: workspace, profile: options.profile, loader: extensionLoader() });
  if (!toolset.registry.has(options.id)) {
    const problems = formatLoadProblems(toolset.report);
    if (problems) process.stderr.write(`${problems}\n`);
  }
  const session = new RuntimeSession({ workspace });
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error("Interrupted"));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  void sweepStaleSidecars().catch(() => {});
  const envelope = await invoke(toolset.registry, options.id, options.args, {
    session,
    signal: controller.signal,
    manifest: toolset.manifest,
  });
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  process.stdout.write(`${JSON.stringify(envelope, null, 2)}\n`); // stdout-ok: the CLI prints the envelope
  return envelope.type === "output" ? 0 : 1;
}
