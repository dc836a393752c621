import type { ToolContext } from "../tool/context.js";
import type { CallTargets } from "../tool/targets.js";

// What bash and process share about running a command line: how it is titled, and what the policy
// judges of it (the same targets, so rules, the watchdog, the mode and the sandbox treat a
// background start exactly as a bash call).

const TITLE_CHARS = 120;

/** The command's first line, trimmed and shortened: the editor shows what really runs. */
export function bashTitle(command: string): string {
  const lines = command.trim().split("\n");
  const first = (lines[0] ?? "").trim();
  const more = lines.length > 1;
  if (first.length > TITLE_CHARS) return `${first.slice(0, TITLE_CHARS - 1)}…`;
  return more ? `${first} …` : first;
}

/**
 * What running `command` in `workdir` touches: the command line, and the directory it runs in,
 * resolved as the shell will resolve it (default: the workspace); `unsandboxed` when the call asks
 * to run outside the sandbox (`sandbox: "off"`).
 */
export async function commandTargets(
  command: string,
  workdir: string | undefined,
  ctx: ToolContext,
  sandbox?: "on" | "off",
): Promise<Partial<CallTargets>> {
  return {
    commands: [command],
    paths: [await ctx.fs.resolve(workdir ?? ctx.workspace, "read")],
    ...(sandbox === "off" ? { unsandboxed: true } : {}),
  };
}
