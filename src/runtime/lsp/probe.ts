import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import type { LspConfig } from "../../config/schema.js";
import { LspClient, type LspLaunch } from "./client.js";
import type { LspLauncher } from "./sandbox.js";
import { findCommand, serverDefinitions, typescriptOptions, type LspServerDef } from "./servers.js";

// `toolhost doctor`'s check of each configured language server: its command found (where), its
// version, and whether it works — a real initialize handshake, launched exactly as a session
// launches it (the same command lookup, the same `LspLauncher`: inside the sandbox, confined), then
// shut down. The version is the one the server gives in its initialize answer (`serverInfo`), else
// the `version` of the npm package its command belongs to; neither runs anything more.

/** What the check found for one server. */
export interface LspServerCheck {
  name: string;
  command: string;
  /** The executable found; undefined when it was not. */
  path?: string;
  version?: string;
  /** True after a full handshake; false when it failed (see `problem`); undefined when it was not run. */
  works?: boolean;
  /** Why it does not work, or was not run. */
  problem?: string;
  /** A built-in server with its default command: a missing one is not a problem (none is installed). */
  builtin: boolean;
}

export interface LspCheckOptions {
  workspace: string;
  config: LspConfig | undefined;
  launcher: LspLauncher;
  /** The servers' environment (the child allow-list). */
  env: Record<string, string>;
  /** Where commands are looked up (PATH), default process.env. */
  lookupEnv?: NodeJS.ProcessEnv;
  /** The bound on one server's handshake. */
  timeoutMs?: number;
}

const BUILTIN_COMMANDS = ["typescript-language-server", "pyright-langserver", "bash-language-server"];

/** Every configured server checked at once; the config's own problems (a server without a command) too. */
export async function checkLanguageServers(options: LspCheckOptions): Promise<{ servers: LspServerCheck[]; problems: string[] }> {
  const { servers, problems } = serverDefinitions(options.config);
  try {
    return { servers: await Promise.all(servers.map((def) => checkOne(def, options))), problems };
  } finally {
    await options.launcher.close?.();
  }
}

async function checkOne(def: LspServerDef, options: LspCheckOptions): Promise<LspServerCheck> {
  const { workspace } = options;
  const check: LspServerCheck = { name: def.name, command: def.command, builtin: BUILTIN_COMMANDS.includes(def.command) };
  const found = findCommand(def.command, [workspace], options.lookupEnv);
  if (!found) return { ...check, problem: "not found (looked in node_modules/.bin and on PATH)" };
  check.path = found;
  const launch: LspLaunch = {
    file: found,
    args: def.args,
    cwd: workspace,
    env: options.env,
    root: workspace,
    initializationOptions: typescriptOptions(def, [workspace]),
  };
  const wrapped = await options.launcher
    .launch(launch)
    .catch((err: unknown) => ({ reason: err instanceof Error ? err.message : String(err) }));
  if ("reason" in wrapped)
    return {
      ...check,
      version: packageVersion(found),
      problem: `not run: language servers run only inside the sandbox (${wrapped.reason})`,
    };
  const client = new LspClient(def.name, wrapped);
  try {
    const answer = await client.initialize(options.timeoutMs ?? 20_000);
    return { ...check, version: answer.serverInfo?.version ?? packageVersion(found), works: true };
  } catch (err) {
    return { ...check, version: packageVersion(found), works: false, problem: err instanceof Error ? err.message : String(err) };
  } finally {
    await client.stop();
  }
}

/** The version of the npm package the command belongs to (node_modules/.bin links into it); undefined outside one. */
function packageVersion(command: string): string | undefined {
  let dir: string;
  try {
    dir = path.dirname(realpathSync(command));
  } catch {
    return undefined;
  }
  for (; dir.includes(`${path.sep}node_modules${path.sep}`); dir = path.dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, "package.json"), "utf8")) as { name?: unknown; version?: unknown };
      if (typeof manifest.name === "string" && typeof manifest.version === "string") return manifest.version;
    } catch {
      // No package.json here: one folder up.
    }
  }
  return undefined;
}

/** One line per server for the report: found where, its version, works or why not. */
export function describeServerCheck(check: LspServerCheck): string {
  if (!check.path) return `${check.name}: ${check.command} ${check.problem}`;
  const version = check.version ? `version ${check.version}` : "version unknown";
  const state = check.works
    ? "works (initialize answered, in the sandbox)"
    : check.works === false
      ? `does not work: ${check.problem}`
      : check.problem;
  return `${check.name}: ${check.path}, ${version}, ${state}`;
}
