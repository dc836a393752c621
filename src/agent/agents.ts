import * as fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { parseFrontMatter } from "../config/frontmatter.js";
import { toolhostHome } from "../config/paths.js";
import { readConfinedFileSync, userRoots } from "../config/safe-read.js";
import { asWorkspace, type Workspace } from "../config/workspace.js";
import { sessionPackages, type SessionPackages } from "../host/packages.js";
import { isModeId, MODE_IDS, type ModeId } from "../policy/modes.js";

// Agents the task tool can start: the built-in general-purpose one, then Markdown files with
// front matter (name, description, tools, model, mode). First found wins by name; a bad file
// is reported and skipped, never fatal.

export interface AgentDefinition {
  name: string;
  description: string;
  /** Tool ids the child may use; undefined: the parent's tools except task. */
  tools?: string[];
  /** The child's model (`provider/model`); default the parent's. */
  model?: string;
  /** A mode for the child; it applies only when stricter than the parent's. */
  mode?: ModeId;
  /** Added to the child's first prompt as its instructions. */
  prompt: string;
  /** `builtin` or the file. */
  source: string;
}

export interface AgentCatalog {
  agents: AgentDefinition[];
  /** Files that were skipped, each with its reason. */
  problems: string[];
}

export const DEFAULT_AGENT = "general-purpose";

const GENERAL_PURPOSE: AgentDefinition = {
  name: DEFAULT_AGENT,
  description: "A general-purpose agent with the parent's tools: research, multi-step searches, self-contained changes.",
  prompt: "",
  source: "builtin",
};

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/i;

/**
 * The folders agent files are read from, in order (project folders only for a trusted project),
 * each with where its files' real paths must lie: the project, or the user's folders.
 */
function agentFolders(
  { cwd }: Workspace,
  trusted: boolean,
  packages: Pick<SessionPackages, "user" | "project">,
): { dir: string; roots: readonly string[]; disabled?: ReadonlySet<string> }[] {
  const home = process.env.HOME || os.homedir();
  const user = userRoots();
  const project = [cwd];
  // Tool packages' `agents` folders (host/packages.ts), enabled ones: the user's first, the project's before its own.
  const fromPackages = (scope: "user" | "project", roots: readonly string[]) =>
    packages[scope]
      .filter((p) => p.enabled)
      .flatMap((p) => p.agents.map((dir) => ({ dir, roots: [...roots, p.root], disabled: p.disabled })));
  return [
    ...fromPackages("user", user),
    { dir: path.join(toolhostHome(), "agents"), roots: user },
    ...(trusted
      ? [
          ...fromPackages("project", project),
          { dir: path.join(cwd, ".toolhost", "agents"), roots: project },
          { dir: path.join(cwd, ".claude", "agents"), roots: project },
        ]
      : []),
    { dir: path.join(home, ".claude", "agents"), roots: user },
  ];
}

/** Agent files are instructions: a larger one is refused. */
const MAX_AGENT_BYTES = 256 * 1024;

function toolList(value: unknown): string[] | undefined | string {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string")
    return value
      .split(/[,\s]+/)
      .map((s) => s.trim())
      .filter(Boolean);
  if (Array.isArray(value) && value.every((v) => typeof v === "string")) return value.map((v) => v.trim()).filter(Boolean);
  return "`tools` must be a list of tool ids (or a comma-separated string)";
}

/** One agent file read into a definition, or why it cannot be used. */
async function parseAgentFile(file: string, text: string): Promise<AgentDefinition | string> {
  const parsed = await parseFrontMatter(text);
  if (!parsed.ok) return parsed.error;
  const { data, body } = parsed;
  const name = data.name ?? path.basename(file, ".md");
  if (typeof name !== "string" || !NAME.test(name)) return "`name` must be letters, digits, - or _ (at most 64)";
  if (typeof data.description !== "string" || !data.description.trim()) return "`description` (one line: when to use the agent) is missing";
  const tools = toolList(data.tools);
  if (typeof tools === "string") return tools;
  if (data.model !== undefined && typeof data.model !== "string") return "`model` must be a `provider/model` id";
  if (data.mode !== undefined && (typeof data.mode !== "string" || !isModeId(data.mode)))
    return `\`mode\` must be one of ${MODE_IDS.join(", ")}`;
  return {
    name,
    description: data.description.trim().split("\n")[0] as string,
    ...(tools ? { tools } : {}),
    ...(typeof data.model === "string" && data.model.trim() ? { model: data.model.trim() } : {}),
    ...(typeof data.mode === "string" ? { mode: data.mode as ModeId } : {}),
    prompt: body.trim(),
    source: file,
  };
}

/** The built-in agents alone: what a session knows before it has read its agent files. */
export function builtinAgents(): AgentCatalog {
  return { agents: [GENERAL_PURPOSE], problems: [] };
}

/**
 * The agents of a session (its workspace, resolved at its start; or a folder, resolved here):
 * general-purpose, then each folder's `*.md` files; first found wins by name.
 */
export async function loadAgents(
  cwd: string | Workspace,
  trusted: boolean,
  packages: Pick<SessionPackages, "user" | "project"> = sessionPackages(toolhostHome(), asWorkspace(cwd).cwd),
): Promise<AgentCatalog> {
  const agents: AgentDefinition[] = [GENERAL_PURPOSE];
  const problems: string[] = [];
  const seen = new Set([DEFAULT_AGENT]);
  for (const { dir, roots, disabled } of agentFolders(asWorkspace(cwd), trusted, packages)) {
    let names: string[];
    try {
      names = fs
        .readdirSync(dir)
        .filter((n) => n.endsWith(".md"))
        .sort();
    } catch {
      continue;
    }
    for (const n of names) {
      const file = path.join(dir, n);
      // A regular file whose real path lies in its folder's roots only, never a FIFO or a link out.
      const read = readConfinedFileSync(file, { roots, maxBytes: MAX_AGENT_BYTES });
      if (!read.ok) {
        if (!read.missing) problems.push(read.reason);
        continue;
      }
      if (read.size > MAX_AGENT_BYTES) {
        problems.push(`${file}: ${read.size} bytes; at most ${MAX_AGENT_BYTES} are read`);
        continue;
      }
      const text = read.data.toString("utf8");
      const agent = await parseAgentFile(file, text);
      if (typeof agent === "string") problems.push(`${file}: ${agent}`);
      else if (disabled?.has(agent.name)) continue;
      else if (!seen.has(agent.name)) {
        seen.add(agent.name);
        agents.push(agent);
      }
    }
  }
  return { agents, problems };
}

const STRICTNESS: readonly ModeId[] = ["read-only", "ask", "accept-edits", "full"];

/** The stricter of two modes: an agent's mode narrows the parent's, never widens it. */
export function stricterMode(a: ModeId, b: ModeId | undefined): ModeId {
  if (!b) return a;
  return STRICTNESS.indexOf(b) < STRICTNESS.indexOf(a) ? b : a;
}
