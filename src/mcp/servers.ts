import path from "node:path";
import { readConfigFile, type ConfigFile } from "../config/file.js";
import { projectConfigPath } from "../config/project-permissions.js";
import { readConfigTextSync } from "../config/safe-read.js";

// Where a session's MCP servers come from, and their one shape: the editor's `session/new`
// (converted by acp/), the user's `~/.toolhost/config.json` and, in a trusted project only,
// `.toolhost/config.json` and `.mcp.json` (a stdio server is a program that runs).

/** Who configured a server: the editor, the user's config file, or the project. */
export type McpOrigin = "editor" | "user" | "project";

interface SpecBase {
  /** The server's name as configured (tool ids and slash commands are made from it). */
  name: string;
  origin: McpOrigin;
  /** The file it was read from (the editor's servers have none). */
  file?: string;
  /** How long it may take to start and list its tools, in place of TOOLHOST_MCP_TIMEOUT_MS. */
  startupTimeoutMs?: number;
}

export interface StdioSpec extends SpecBase {
  transport: "stdio";
  command: string;
  args: string[];
  env: Record<string, string>;
  /** The working directory (default: the workspace). */
  cwd?: string;
  /**
   * Host patterns a project's server may reach from inside the sandbox, through its proxy (none:
   * no network). A user's or the editor's server runs outside the sandbox and ignores it.
   */
  allowedHosts?: string[];
}

export interface RemoteSpec extends SpecBase {
  transport: "http" | "sse";
  url: string;
  headers: Record<string, string>;
}

export type McpServerSpec = StdioSpec | RemoteSpec;

/** A server entry that could not be used, with where it was written. */
export interface SpecProblem {
  server: string;
  file?: string;
  message: string;
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

function stringRecord(value: unknown, what: string): Record<string, string> {
  if (value === undefined) return {};
  if (!isRecord(value) || Object.values(value).some((v) => typeof v !== "string")) throw new Error(`${what} must be an object of strings`);
  return value as Record<string, string>;
}

/**
 * One entry of an `mcpServers` object, as Claude Code, Cursor and Zed users write it:
 * `{ command, args?, env?, cwd? }` for a program, `{ url, headers?, type? }` for a remote server
 * (`type: "sse"` for the older SSE transport; otherwise streamable HTTP).
 */
function parseEntry(name: string, entry: unknown, origin: McpOrigin, file: string | undefined, base: string): McpServerSpec {
  if (!isRecord(entry)) throw new Error("must be an object");
  if (entry.disabled === true) throw new Error("disabled");
  const spec = parseTransport(name, entry, origin, file, base);
  const timeout = entry.startupTimeoutMs;
  if (timeout === undefined) return spec;
  if (typeof timeout !== "number" || !Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_STARTUP_TIMEOUT_MS) {
    throw new Error(`startupTimeoutMs must be a whole number of milliseconds from 1 to ${MAX_STARTUP_TIMEOUT_MS}`);
  }
  return { ...spec, startupTimeoutMs: timeout };
}

/** A host name, or a pattern of one (`*` for any part): no scheme, port, path or `{variable}`. */
const HOST_PATTERN = /^[A-Za-z0-9*?.-]+$/;

/** A server may be given up to ten minutes to start (a first `npx` download). */
const MAX_STARTUP_TIMEOUT_MS = 10 * 60_000;

function parseTransport(
  name: string,
  entry: Record<string, unknown>,
  origin: McpOrigin,
  file: string | undefined,
  base: string,
): McpServerSpec {
  const type = entry.type ?? entry.transport;
  if (typeof entry.command === "string" && entry.command.trim() !== "") {
    if (type !== undefined && type !== "stdio") throw new Error(`has a command but type ${JSON.stringify(type)}`);
    const args = entry.args ?? [];
    if (!Array.isArray(args) || args.some((a) => typeof a !== "string")) throw new Error("args must be a list of strings");
    const cwd = entry.cwd;
    if (cwd !== undefined && typeof cwd !== "string") throw new Error("cwd must be a string");
    const hosts = entry.allowedHosts;
    if (hosts !== undefined && !(Array.isArray(hosts) && hosts.every((h) => typeof h === "string" && HOST_PATTERN.test(h))))
      throw new Error('allowedHosts must be a list of host names or patterns ("api.example.com", "*.example.com")');
    return {
      name,
      origin,
      file,
      transport: "stdio",
      command: entry.command,
      args: args as string[],
      env: stringRecord(entry.env, "env"),
      ...(cwd ? { cwd: path.resolve(base, cwd) } : {}),
      ...(hosts ? { allowedHosts: hosts as string[] } : {}),
    };
  }
  if (typeof entry.url === "string") {
    let url: URL;
    try {
      url = new URL(entry.url);
    } catch {
      throw new Error(`url ${JSON.stringify(entry.url)} is not a URL`);
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`url must be http or https, got ${url.protocol}`);
    const transport = type === "sse" ? "sse" : type === undefined || type === "http" || type === "streamable-http" ? "http" : null;
    if (!transport) throw new Error(`type ${JSON.stringify(type)} is not one of http, sse, stdio`);
    return { name, origin, file, transport, url: url.href, headers: stringRecord(entry.headers, "headers") };
  }
  throw new Error("needs a command (a program to run) or a url");
}

/** The servers of an `mcpServers` object; each bad entry is a problem of its own, the others stay. */
export function parseMcpServers(
  value: unknown,
  origin: McpOrigin,
  file?: string,
  base = file ? path.dirname(file) : process.cwd(),
): { servers: McpServerSpec[]; problems: SpecProblem[] } {
  const servers: McpServerSpec[] = [];
  const problems: SpecProblem[] = [];
  if (value === undefined) return { servers, problems };
  if (!isRecord(value)) return { servers, problems: [{ server: "*", file, message: "mcpServers must be an object of servers by name" }] };
  for (const [name, entry] of Object.entries(value)) {
    try {
      servers.push(parseEntry(name, entry, origin, file, base));
    } catch (err) {
      const message = (err as Error).message;
      if (message !== "disabled") problems.push({ server: name, file, message: `the server "${name}" ${message}` });
    }
  }
  return { servers, problems };
}

/** A project config file's JSON: a regular file inside the project only (config/safe-read.ts). */
function readJson(file: string, project: string): { json?: unknown; error?: string } {
  const { text, error } = readConfigTextSync(file, [project]);
  if (error) return { error };
  if (text === null) return {};
  try {
    return { json: JSON.parse(text) as unknown };
  } catch (err) {
    return { error: `${file} is not valid JSON (${(err as Error).message})` };
  }
}

/** The servers of the user's `~/.toolhost/config.json` (read already: a session's, once at its start). */
export function userServers(raw: ConfigFile = readConfigFile()): { servers: McpServerSpec[]; problems: SpecProblem[] } {
  if (raw.error) return { servers: [], problems: [{ server: "*", file: raw.path, message: raw.error }] };
  return parseMcpServers(isRecord(raw.json) ? raw.json.mcpServers : undefined, "user", raw.path);
}

/**
 * The project's servers: `.toolhost/config.json` `mcpServers`, then `.mcp.json` (Claude Code's
 * file) for names not taken. Only ever read for a trusted project; relative paths are the project's.
 */
export function projectServers(project: string): { servers: McpServerSpec[]; problems: SpecProblem[] } {
  const servers: McpServerSpec[] = [];
  const problems: SpecProblem[] = [];
  for (const file of [projectConfigPath(project), path.join(project, ".mcp.json")]) {
    const { json, error } = readJson(file, project);
    if (error) problems.push({ server: "*", file, message: error });
    if (!isRecord(json)) continue;
    const parsed = parseMcpServers(json.mcpServers, "project", file, project);
    problems.push(...parsed.problems);
    for (const spec of parsed.servers) if (!servers.some((s) => s.name === spec.name)) servers.push(spec);
  }
  return { servers, problems };
}

/** Whether a project has MCP servers configured (to say they wait for trust). */
export function projectHasServers(project: string): boolean {
  return projectServers(project).servers.length > 0;
}

/**
 * The session's servers, first name wins: the editor's, then the user's, then the project's.
 * A later server with a taken name is reported.
 */
export function mergeServers(...lists: McpServerSpec[][]): { servers: McpServerSpec[]; problems: SpecProblem[] } {
  const servers: McpServerSpec[] = [];
  const problems: SpecProblem[] = [];
  for (const spec of lists.flat()) {
    const taken = servers.find((s) => s.name === spec.name);
    if (taken) {
      problems.push({
        server: spec.name,
        file: spec.file,
        message: `the server "${spec.name}" (${spec.origin}) is also given by the ${taken.origin}${taken.file ? ` (${taken.file})` : ""}, which wins`,
      });
    } else servers.push(spec);
  }
  return { servers, problems };
}
