import path from "node:path";
import { peekConfig, readConfigFile } from "../config/file.js";
import { toolhostHome } from "../config/paths.js";
import { checkTrust } from "../host/trust.js";
import type { ServerStatus } from "../mcp/manager.js";
import { mergeServers, projectServers, userServers, type McpServerSpec, type SpecProblem } from "../mcp/servers.js";
import { sandboxedSpawn } from "../runtime/sandbox/sandboxed-spawn.js";
import { SessionSandbox, sandboxSettingOf } from "../runtime/sandbox/session-sandbox.js";
import { RuntimeSession } from "../runtime/session.js";

/** What `toolhost mcp list` and `toolhost doctor` report: each server connected once, then stopped. */
export interface McpReport {
  trusted: boolean;
  servers: (ServerStatus & { toolIds: string[]; prompts: number })[];
  /** Project servers left unstarted: the project is not trusted. */
  untrusted: { name: string; file?: string }[];
  problems: SpecProblem[];
}

/** Connects the servers a session in `cwd` would start (the user's; the project's when trusted), lists them, stops them. */
export async function mcpReport(cwd: string, home = toolhostHome()): Promise<McpReport> {
  // Trusted with its files as they are now (a project changed since it was trusted is not).
  const check = await checkTrust(cwd, home);
  const trusted = !check.error && check.trusted;
  const file = readConfigFile(home);
  const user = userServers(file);
  const project = projectServers(cwd);
  const merged = mergeServers(user.servers, trusted ? project.servers : []);
  const problems = [...user.problems, ...(trusted ? project.problems : []), ...merged.problems];
  const untrusted = trusted ? [] : project.servers.map((s: McpServerSpec) => ({ name: s.name, ...(s.file ? { file: s.file } : {}) }));
  if (merged.servers.length === 0) return { trusted, servers: [], untrusted, problems };
  const { McpServers } = await import("../mcp/manager.js");
  const toolIds = new Map<string, string[]>();
  // The project's stdio servers start as a session starts them: inside the sandbox, or not at all.
  const sandbox = new SessionSandbox({ setting: sandboxSettingOf(peekConfig(file)) }).start();
  const runtime = new RuntimeSession({ workspace: cwd, spawnTransform: sandbox.transform });
  const servers = new McpServers(
    cwd,
    {
      tools: (server, tools) =>
        toolIds.set(
          server,
          tools.map((t) => t.id),
        ),
      prompts: () => {},
      // Failures are in each server's status.
      report: () => {},
    },
    undefined,
    peekConfig(file).sandboxEnv,
    (request, spec) =>
      sandboxedSpawn(runtime, request, { toolId: `mcp-${spec.name}`, hosts: spec.allowedHosts ?? [] }, () => sandbox.state()),
  );
  try {
    await servers.start(merged.servers);
    return {
      trusted,
      servers: servers.status().map((s) => ({ ...s, toolIds: toolIds.get(s.name) ?? [] })),
      untrusted,
      problems,
    };
  } finally {
    await servers.close();
    await runtime.close();
  }
}

export interface McpListOptions {
  json: boolean;
  cwd?: string;
  /** The real stdout (the CLI sends every other write to stdout to stderr). */
  out: (text: string) => Promise<void>;
}

/** `toolhost mcp list`: the servers, whether they start, their tool and prompt counts, and errors. Exit 1 when one failed. */
export async function runMcpList(options: McpListOptions): Promise<number> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const report = await mcpReport(cwd);
  const failed = report.servers.some((s) => s.state !== "ready") || report.problems.length > 0;
  if (options.json) {
    await options.out(`${JSON.stringify(report, null, 2)}\n`);
    return failed ? 1 : 0;
  }
  const lines: string[] = [];
  if (report.servers.length === 0)
    lines.push("No MCP servers configured (~/.toolhost/config.json or the project's .mcp.json: mcpServers).");
  for (const s of report.servers) {
    const counts =
      s.state === "ready" ? `${s.tools} tool${s.tools === 1 ? "" : "s"}, ${s.prompts} prompt${s.prompts === 1 ? "" : "s"}` : s.error;
    lines.push(`${s.name}  ${s.state}  ${s.transport} (${s.origin})  ${counts}`, `  ${s.target}${s.file ? `  [${s.file}]` : ""}`);
  }
  if (report.problems.length) lines.push("", "problems:", ...report.problems.map((p) => `  ${p.file ? `${p.file}: ` : ""}${p.message}`));
  if (report.untrusted.length)
    lines.push(
      "",
      "not started, the project is not trusted (`toolhost trust` lets them start):",
      ...report.untrusted.map((u) => `  ${u.name}${u.file ? `  [${u.file}]` : ""}`),
    );
  lines.push("", "Servers the editor gives in session/new are not listed: they exist only in that session.");
  await options.out(`${lines.join("\n")}\n`);
  return failed ? 1 : 0;
}
