import { extensionLoader } from "../agent/extension-loader.js";
import { buildToolset } from "../host/toolset.js";
import { trustChangeNotice, type ToolsetReport } from "../host/toolset-report.js";
import { WEB_SEARCH_HOWTO } from "../config/web-search.js";

export interface ToolsOptions {
  json: boolean;
  cwd?: string;
  profile?: string;
  /** The real stdout (the CLI sends every other write to stdout to stderr). */
  out: (text: string) => Promise<void>;
}

/** The sections after the table: only those with something in them, so a plain setup prints just the table. */
function reportSections(report: ToolsetReport): string[] {
  const sections: string[] = [];
  const section = (title: string, lines: string[]) => {
    if (lines.length) sections.push(`\n${title}\n${lines.map((l) => `  ${l}`).join("\n")}`);
  };
  section(
    "shadowed (discovery order: profile tools, user packages, config toolDirs, project packages, the project's tools; the first definition of an id wins):",
    report.shadowed.map((s) => `${s.id}: ${s.file} lost to ${s.winner}`),
  );
  section(
    "errors:",
    report.errors.map((e) => `${e.file}: ${e.message.replace(/\n/g, "\n    ")}`),
  );
  section(
    "skipped (this project is not trusted; `toolhost trust` loads them):",
    report.skipped.map((s) => s.file),
  );
  section(
    "disabled by the profile:",
    report.disabled.map((d) => `${d.id}: ${d.reason}`),
  );
  section(
    "unavailable here (isAvailable said no):",
    // web_search is on once the user configures a provider: say how.
    report.unavailable.map(
      (u) => `${u.id}: ${u.source}${u.id === "web_search" && u.source === "builtin" ? ` (to turn it on: ${WEB_SEARCH_HOWTO})` : ""}`,
    ),
  );
  return sections;
}

/** `toolhost tools`: the tools of a session in this folder, with where each came from and what went wrong. */
export async function runTools(options: ToolsOptions): Promise<number> {
  const { registry, report } = await buildToolset({
    cwd: options.cwd ?? process.cwd(),
    profile: options.profile,
    loader: extensionLoader(),
  });
  const tools = registry.list().map(({ tool, source }) => ({
    id: tool.id,
    kind: tool.kind,
    source,
    description: tool.description,
    parameters: tool.inputSchema,
    requires: tool.requires,
  }));
  if (options.json) {
    const { shadowed, errors, skipped, disabled, unavailable, profile, trusted, trustChanges, folders } = report;
    const out = {
      tools,
      profile,
      trusted,
      ...(trustChanges ? { trustChanges } : {}),
      shadowed,
      errors,
      skipped,
      disabled,
      unavailable,
      folders,
    };
    await options.out(`${JSON.stringify(out, null, 2)}\n`);
    return 0;
  }
  const width = Math.max(...tools.map((t) => t.id.length));
  const lines = tools.map((t) => {
    const summary = t.description.split(/(?<=\.)\s/)[0] ?? "";
    const from = t.source === "builtin" ? "" : `  [${t.source}]`;
    return `${t.id.padEnd(width)}  ${t.kind.padEnd(7)}  ${summary}${from}`;
  });
  const changed = trustChangeNotice(report);
  await options.out(`${[...lines, ...reportSections(report), ...(changed ? ["", changed] : [])].join("\n")}\n`);
  return 0;
}
