import { extensionLoader } from "../agent/extension-loader.js";
import { displayFile, type HookSpec } from "../host/hooks/config.js";
import type { Hooks } from "../host/hooks/engine.js";
import { buildToolset } from "../host/toolset.js";

export interface HooksListOptions {
  json: boolean;
  cwd?: string;
  profile?: string;
  /** The real stdout (the CLI sends every other write to stdout to stderr). */
  out: (text: string) => Promise<void>;
}

/** One hook for `--json`. */
function hookJson(h: HookSpec) {
  return {
    event: h.event,
    written: h.written,
    level: h.level,
    dialect: h.dialect,
    matcher: h.matcher ?? null,
    handler: h.handler.type === "command" ? { type: "command", command: h.handler.command } : { type: "function" },
    timeoutMs: h.timeoutMs,
    failClosed: h.failClosed,
    file: h.file,
    label: h.label,
  };
}

/** The hooks' lines of `toolhost doctor`: how many, and the project's that wait for trust. */
export function hooksSummary(hooks: Hooks): { line: string; waiting: string[]; skipped: string[] } {
  const n = hooks.list.length;
  return {
    line: `hooks:   ${n}${n ? ` (${[...new Set(hooks.list.map((h) => h.event))].join(", ")}; \`toolhost hooks list\` lists them)` : ""}`,
    waiting: hooks.waiting.map((w) => `${w.count} hook${w.count === 1 ? "" : "s"} in ${w.file}`),
    skipped: hooks.skipped.map((s) => `${displayFile(s.file)}: ${s.message}`),
  };
}

/** `toolhost hooks list`: every hook a session in this folder runs, in order, with its event, matcher and file. Exit 1 on a bad entry. */
export async function runHooksList(options: HooksListOptions): Promise<number> {
  const { hooks, report } = await buildToolset({ cwd: options.cwd ?? process.cwd(), profile: options.profile, loader: extensionLoader() });
  const failed = hooks.problems.length > 0;
  if (options.json) {
    const json = {
      trusted: report.trusted,
      hooks: hooks.list.map(hookJson),
      problems: hooks.problems,
      skipped: hooks.skipped,
      waiting: hooks.waiting,
    };
    await options.out(`${JSON.stringify(json, null, 2)}\n`);
    return failed ? 1 : 0;
  }
  const lines: string[] = [];
  if (!hooks.list.length)
    lines.push("No hooks (hooks in ~/.toolhost/config.json, a profile, ~/.claude/settings.json, or a trusted project's files).");
  for (const h of hooks.list) {
    const event = h.written === h.event ? h.event : `${h.event} (${h.written})`;
    const what = h.handler.type === "command" ? h.handler.command : "in-process handler";
    const limits = `${h.timeoutMs / 1000} s${h.failClosed ? ", failClosed" : ""}`;
    lines.push(`${h.level.padEnd(7)}  ${event}  matcher ${h.matcher ?? "*"}  [${limits}]`, `  ${what}`, `  ${h.label}`);
  }
  const section = (title: string, items: string[]) => {
    if (items.length) lines.push("", title, ...items.map((i) => `  ${i}`));
  };
  section(
    "problems (these entries are left out):",
    hooks.problems.map((p) => `${displayFile(p.file)}: ${p.message}`),
  );
  section("not run by toolhost:", hooksSummary(hooks).skipped);
  section("not run, the project is not trusted (`toolhost trust` lets them run):", hooksSummary(hooks).waiting);
  await options.out(`${lines.join("\n")}\n`);
  return failed ? 1 : 0;
}
