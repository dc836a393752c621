import path from "node:path";
import { loadAgents } from "../agent/agents.js";
import { toolhostHome } from "../config/paths.js";
import { checkTrust } from "../host/trust.js";

export interface AgentsOptions {
  json: boolean;
  cwd?: string;
  /** The real stdout (the CLI sends every other write to stdout to stderr). */
  out: (text: string) => Promise<void>;
}

/** `toolhost agents`: the agents a task call may name in this folder, where each came from, and bad agent files. */
export async function runAgents(options: AgentsOptions): Promise<number> {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  // Trusted with its files as they are now (a project changed since it was trusted is not).
  const check = await checkTrust(cwd, toolhostHome());
  const trusted = !check.error && check.trusted;
  const { agents, problems } = await loadAgents(cwd, trusted);
  if (options.json) {
    const list = agents.map(({ name, description, source, tools, model, mode }) => ({ name, description, source, tools, model, mode }));
    await options.out(`${JSON.stringify({ trusted, agents: list, problems }, null, 2)}\n`);
    return problems.length ? 1 : 0;
  }
  const width = Math.max(0, ...agents.map((a) => a.name.length));
  const lines = agents.map((a) => {
    const summary = a.description.length > 100 ? `${a.description.slice(0, 99)}…` : a.description;
    return `${a.name.padEnd(width)}  ${summary}  [${a.source}]`;
  });
  if (problems.length) lines.push("", "problems (these files are left out):", ...problems.map((p) => `  ${p}`));
  if (!trusted) lines.push("", "This project is not trusted, so its agent folders were not read: `toolhost trust` lets them load.");
  await options.out(`${lines.join("\n")}\n`);
  return problems.length ? 1 : 0;
}
