import { keyRequired } from "../agent/model/provider-table.js";
import path from "node:path";
import { loadAgents } from "../agent/agents.js";
import { extensionLoader } from "../agent/extension-loader.js";
import { defaultModelId, parseModelId, isModelSpec } from "../agent/model/model-config.js";
import { peekUserConfig } from "../config/file.js";
import { loadRules } from "../policy/ruleset.js";
import { firstTimeSaid } from "../config/said-once.js";
import { packageRoot, toolhostHome, version } from "../config/paths.js";
import { describeWebSearch, resolveWebSearch } from "../config/web-search.js";
import { sandboxNetworkStatus } from "../runtime/sandbox/proxy.js";
import { buildToolset } from "../host/toolset.js";
import { hooksSummary } from "./hooks.js";
import { lspReport } from "./lsp-report.js";
import { mcpReport } from "./mcp.js";
import { describeSandbox, SessionSandbox, sandboxSetting } from "../runtime/sandbox/session-sandbox.js";

export interface DoctorOptions {
  cwd?: string;
  profile?: string;
}

/**
 * `toolhost doctor`: where toolhost looks, what it found, and every config, profile and
 * extension load problem. Exit 1 when there is a problem; shadowed and skipped files are notes.
 */
export async function runDoctor(options: DoctorOptions): Promise<number> {
  const home = toolhostHome();
  const { profile, report, skills, config, configFile, hooks } = await buildToolset({
    cwd: options.cwd ?? process.cwd(),
    profile: options.profile,
    home,
    loader: extensionLoader(),
  });
  const network = sandboxNetworkStatus();
  const setting = sandboxSetting();
  const [mcp, lsp] = await Promise.all([mcpReport(report.cwd, home), lspReport(report.cwd, configFile, config.config.lsp)]);
  const agents = await loadAgents(report.cwd, report.trusted);
  const hooked = hooksSummary(hooks);
  const lines = [
    `toolhost ${version} on Node ${process.versions.node}`,
    `home:    ${home}`,
    `config:  ${config.path}${config.error ? " (invalid)" : ""}`,
    `profile: ${profile.name} (${profile.origin}${profile.dir ? `, ${profile.dir}` : ""})`,
    `project: ${report.cwd} (${report.trusted ? "trusted" : report.trustChanges ? `not trusted: ${report.trustChanges.length} of its trusted files changed since it was trusted (toolhost tools lists them; toolhost trust)` : "not trusted"})`,
    "tool folders, in discovery order:",
    ...report.folders.map((f) => `  ${f.origin.padEnd(7)}  ${f.status.padEnd(10)}  ${f.files} file(s)  ${f.dir}`),
    `tools:   ${report.tools.length} (${report.tools.filter((t) => t.source !== "builtin").length} from extensions)`,
    `skills:  ${skills.skills.length} (\`toolhost skills\` lists them)`,
    `agents:  ${agents.agents.length} (\`toolhost agents\` lists them)`,
    hooked.line,
    `model:   ${defaultModelId(process.env, peekUserConfig(home))?.id ?? "none"}`,
    `types for extension files: ${path.join(packageRoot(), "dist", "index.d.ts")}`,
    `sandbox: ${describeSandbox(await new SessionSandbox({ setting }).state())}`,
    `sandbox network: ${network.available ? `allowed hosts through the proxy (socat: ${network.socat})` : network.reason}`,
    `web search: ${describeWebSearch(resolveWebSearch(config.config.webSearch))}`,
    `mcp servers: ${mcp.servers.length}${mcp.servers.length ? ` (${mcp.servers.filter((s) => s.state === "ready").length} ready, ${mcp.servers.reduce((n, s) => n + s.tools, 0)} tools; \`toolhost mcp list\` shows them)` : ""}`,
  ];
  const block = (title: string, items: string[]) => {
    if (items.length) lines.push("", title, ...items.map((i) => `  ${i.replace(/\n/g, "\n    ")}`));
  };
  // A folder the user named in toolDirs that is not there is a typo or a moved folder; the
  // profile's and the project's folders are optional.
  const rules = loadRules({
    manifest: { rules: profile.permissions, file: profile.dir ? path.join(profile.dir, "profile.json") : undefined },
    home,
    project: { dir: report.cwd, trusted: report.trusted },
  });
  const model = modelProblem(home);
  // One line per problem: the config file's trouble reaches several readers (tools, rules, MCP).
  // The rules' line first: for a config file that cannot be read it says the most (fail closed).
  const problems = dedupe([
    ...(model ? [model] : []),
    ...rules.problems,
    ...report.errors.map((e) => `${e.file}: ${e.message}`),
    ...agents.problems.map((p) => `${p} (the agent is left out; \`toolhost agents\` lists them)`),
    ...skills.problems.map((p) => `${p.file}: ${p.message} (the skill is left out)`),
    ...report.folders
      .filter((f) => f.origin === "config" && f.status === "missing")
      .map((f) => `${f.dir}: this folder is listed in toolDirs (${config.path}) but does not exist; create it or fix the entry`),
    ...(setting.problem ? [`${setting.problem} (the sandbox stays on and passes nothing extra)`] : []),
    ...mcp.problems.map((p) => `${p.file ? `${p.file}: ` : ""}${p.message}`),
    ...mcp.servers.filter((s) => s.state !== "ready").map((s) => `MCP server "${s.name}" ${s.error ?? s.state}`),
    ...lsp.problems,
  ]);
  block("language servers (each started in the sandbox, as a session starts it):", lsp.lines);
  block(`problems (${problems.length}):`, problems);
  block("shadowed (the first definition found wins):", [
    ...report.shadowed.map((s) => `${s.id}: ${s.file} lost to ${s.winner}`),
    ...skills.shadowed.map((s) => `skill ${s.name}: ${s.file} lost to ${s.winner}`),
  ]);
  block("skipped, project not trusted (`toolhost trust` loads them):", [
    ...report.skipped.map((s) => s.file),
    ...mcp.untrusted.map((u) => `MCP server "${u.name}"${u.file ? ` (${u.file})` : ""}`),
    ...hooked.waiting,
  ]);
  block("hooks toolhost does not run:", hooked.skipped);
  block("Claude Code settings toolhost does not use:", rules.notes);
  if (!problems.length) lines.push("", "No problems found.");
  process.stdout.write(`${lines.join("\n")}\n`); // stdout-ok: the command's report
  return problems.length ? 1 : 0;
}

/** The same problem said once (the config file's invalid JSON reaches the tools, the rules and MCP). */
const dedupe = (problems: string[]): string[] => problems.filter(firstTimeSaid);

/** No model configured, or one whose provider has no key: how to set one. Null when a model can run. */
function modelProblem(home: string): string | null {
  const peek = peekUserConfig(home);
  const picked = defaultModelId(process.env, peek);
  if (!picked)
    return `no model is configured, so prompts are not sent to one (slash commands still work): run \`toolhost login\`, or set TOOLHOST_MODEL=provider/model (e.g. anthropic/claude-sonnet-4-5 with ANTHROPIC_API_KEY) in the agent's environment, or "model" in ${peek.path}`;
  const spec = parseModelId(picked.id);
  if (!isModelSpec(spec)) return `model ${picked.id} (${picked.source === "env" ? "TOOLHOST_MODEL" : peek.path}): ${spec.error}`;
  const env = keyRequired(spec.provider);
  if (env && !process.env[env] && !peek.keyed.includes(spec.provider))
    return `model ${spec.id} needs an API key: set ${env} in the agent's environment, run \`toolhost login\`, or "providers": {"${spec.provider}": {"apiKey": "…"}} in ${peek.path}`;
  return null;
}
