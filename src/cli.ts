#!/usr/bin/env node
// The toolhost command. Sub-commands load lazily so `toolhost` starts fast.
import { statSync } from "node:fs";
import * as nodeModule from "node:module";
import { parseArgs } from "node:util";
import { guardHostPath } from "./config/host-path.js";
import type { Workspace } from "./config/workspace.js";
import { EXIT_STDOUT_CLOSED, guardStdout, onStdoutError, type StdoutWriter } from "./commands/stdout.js";
import { subcommandsOf, usageOf, USAGE } from "./commands/usage.js";
// Static: the ACP entry and its early reader are light (the SDK loads behind them), and bundled
// with the CLI in one file (scripts/early-bundle.mjs); a dynamic import cost 5 ms of start-up.
import { serveStdio } from "./acp/stdio.js";

// Node 22.1+ keeps V8's compiled code of the bundle's chunks on disk between runs; Node 20 has no
// such API (nothing happens there). NODE_DISABLE_COMPILE_CACHE=1 turns it off.
(nodeModule as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// Past a file-size limit (ulimit -f) the kernel's default for SIGXFSZ kills the process (rc 153):
// caught, the write fails with EFBIG instead, and the session file's writer stops as on a full disk.
process.on("SIGXFSZ", () => {});

/** A line of a command's report, and of its error. */
const say = (text: string) => process.stdout.write(`${text}\n`); // stdout-ok: the command's report
const sayError = (text: string) => process.stderr.write(`${text}\n`);

/** The subcommand being run: its usage follows a usage error. */
let subcommand: string | undefined;

/** A usage error: one line, then the subcommand's usage (not the whole help); exit 2. */
function fail(message: string): never {
  const usage = subcommand === undefined ? undefined : usageOf(subcommand);
  const tail = usage ?? `commands: ${subcommandsOf().join(", ")} (toolhost --help)`;
  process.stderr.write(`toolhost${subcommand === undefined ? "" : ` ${subcommand}`}: ${message}\n\n${tail}\n`);
  process.exit(2);
}

/** `toolhost SUB --help` (before any `--`) and `toolhost help SUB`: SUB's usage, exit 0. */
function helpRequest(argv: string[]): string | undefined {
  const [command, ...rest] = argv;
  if (command === "help" && rest[0] !== undefined) return rest[0];
  const end = rest.indexOf("--");
  const flags = end === -1 ? rest : rest.slice(0, end);
  return command !== undefined && (flags.includes("--help") || flags.includes("-h")) ? command : undefined;
}

const SESSION_OPTIONS = { cwd: { type: "string" }, profile: { type: "string" } } as const;
/** The options of a command that runs tools in a workspace: call, run, policy. */
const WORKSPACE_OPTIONS = { ...SESSION_OPTIONS, "allow-home": { type: "boolean" } } as const;

/**
 * The workspace of a command that runs tools, resolved once (config/workspace.ts) for its whole
 * session. It refuses `/` and the system folders, and the home folder itself unless --allow-home
 * says so (then every change and command asks: refused headless).
 */
async function checkWorkspace(values: { cwd?: string; profile?: string; "allow-home"?: boolean }): Promise<Workspace> {
  const { resolveWorkspace, systemFolderProblem } = await import("./config/workspace.js");
  const dir = values.cwd ?? process.cwd();
  if (values.cwd !== undefined) refuseMissingFolder(values.cwd);
  await checkProfile(values.profile);
  const workspace = resolveWorkspace(dir);
  const problem = systemFolderProblem(dir, values.cwd === undefined ? "the current folder" : "--cwd", workspace.trustKey);
  if (problem) fail(problem);
  if (workspace.isHome && !values["allow-home"])
    fail(
      `${values.cwd === undefined ? "the current folder" : "--cwd"} ${dir} is your home folder: as a workspace, all of it would be writable to tools and commands. Run it in a project folder, or pass --allow-home (every change and command then needs approval)`,
    );
  return workspace;
}
/** The profile chosen (--profile, TOOLHOST_PROFILE, the config's) must exist: a typo is one line and exit 2, never a read-only fallback. */
async function checkProfile(requested: string | undefined): Promise<void> {
  const [{ unknownProfileProblem }, { peekConfig, readConfigFile }] = await Promise.all([
    import("./config/profile-name.js"),
    import("./config/file.js"),
  ]);
  const problem = unknownProfileProblem({ requested, config: peekConfig(readConfigFile()) });
  if (!problem) return;
  process.stderr.write(`toolhost: ${problem}\n`);
  process.exit(2);
}

/** --cwd must name an existing folder (as ACP's cwd must): one line and exit 2, before anything is created. */
function refuseMissingFolder(dir: string): void {
  let problem: string | null = null;
  try {
    if (!statSync(dir).isDirectory()) problem = "is not a folder";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    problem = code === "ENOENT" || code === "ENOTDIR" ? "does not exist" : `cannot be read (${code ?? String(err)})`;
  }
  if (!problem) return;
  process.stderr.write(`toolhost: --cwd ${dir} ${problem}\n`);
  process.exit(2);
}
const MODES = ["read-only", "ask", "accept-edits", "full"];

function checkMode(mode: string): void {
  if (!MODES.includes(mode)) fail(`unknown mode ${JSON.stringify(mode)}; modes: ${MODES.join(", ")}`);
}

/** run's caps (config/budget.ts): whole numbers, and dollars. */
const BUDGET_OPTIONS = {
  "max-turns": { type: "string" },
  "max-tool-calls": { type: "string" },
  "max-cost-usd": { type: "string" },
  "max-tokens": { type: "string" },
} as const;

function budgetFlags(values: Partial<Record<keyof typeof BUDGET_OPTIONS, string>>) {
  const read = (flag: keyof typeof BUDGET_OPTIONS, whole: boolean): number | undefined => {
    const text = values[flag];
    if (text === undefined) return undefined;
    const n = Number(text);
    if (text.trim() === "" || !Number.isFinite(n) || n <= 0 || (whole && !Number.isInteger(n)))
      fail(`--${flag} takes a ${whole ? "whole number" : "number"} above 0, not ${JSON.stringify(text)}`);
    return n;
  };
  return {
    maxTurns: read("max-turns", true),
    maxToolCalls: read("max-tool-calls", true),
    maxCostUsd: read("max-cost-usd", false),
    maxTokens: read("max-tokens", true),
  };
}

/** All of stdin, as text. */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function parse<O extends Record<string, { type: "string" | "boolean" }>>(args: string[], options: O, positionals = 0) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: positionals > 0, strict: true });
  } catch (err) {
    fail((err as Error).message);
  }
  if (parsed.positionals.length > positionals) fail(`unexpected arguments: ${parsed.positionals.slice(positionals).join(" ")}`);
  return parsed;
}

/** serve's flags, checked, as acp/serve.ts takes them. */
async function serveOptions(args: string[]) {
  const { values } = parse(args, {
    listen: { type: "string" },
    socket: { type: "string" },
    "allow-origin": { type: "string", multiple: true },
    "max-connections": { type: "string" },
    "max-sessions": { type: "string" },
    grace: { type: "string" },
    "ping-interval": { type: "string" },
  } as const);
  if (values.listen !== undefined && values.socket !== undefined) fail("serve takes --listen or --socket, not both");
  const whole = (flag: string, text: string | undefined, byDefault: number, least: number): number => {
    if (text === undefined) return byDefault;
    const n = Number(text);
    if (text.trim() === "" || !Number.isInteger(n) || n < least)
      fail(`--${flag} takes a whole number of at least ${least}, not ${JSON.stringify(text)}`);
    return n;
  };
  const seconds = (flag: string, text: string | undefined, byDefault: number): number => {
    const n = text === undefined ? byDefault : Number(text);
    if (text?.trim() === "" || !Number.isFinite(n) || n < 0) fail(`--${flag} takes a number of seconds, not ${JSON.stringify(text)}`);
    return Math.round(n * 1000);
  };
  const { parseListen, newToken } = await import("./acp/serve-guard.js");
  const listen = values.socket === undefined ? parseListen(values.listen ?? "127.0.0.1:7700") : undefined;
  if (typeof listen === "string") fail(listen);
  const envToken = process.env.TOOLHOST_SERVE_TOKEN;
  if (envToken !== undefined && !/^[\x21-\x7e]{16,}$/.test(envToken))
    fail("TOOLHOST_SERVE_TOKEN must be at least 16 printable characters without spaces");
  return {
    listen,
    socket: values.socket,
    token: envToken ?? newToken(),
    tokenFromEnv: envToken !== undefined,
    allowOrigins: values["allow-origin"] ?? [],
    maxConnections: whole("max-connections", values["max-connections"], 8, 1),
    maxSessions: whole("max-sessions", values["max-sessions"], 16, 1),
    graceMs: whole("grace", values.grace, 60, 0) * 1000,
    pingIntervalMs: seconds("ping-interval", values["ping-interval"], 30),
  };
}

/** A tool call's JSON arguments from the command line (none: `{}`). */
function parseJsonArgs(json: string | undefined): unknown {
  if (json === undefined) return {};
  try {
    return JSON.parse(json) as unknown;
  } catch (err) {
    fail(`the arguments are not valid JSON: ${(err as Error).message}`);
  }
}

/** Runs a command that may load extension code, then exits: a stray timer in a tool file must not keep the CLI alive. */
async function thenExit(run: Promise<number>, out?: StdoutWriter): Promise<never> {
  const code = await run;
  // An empty write calls back once the earlier output has drained.
  await (out ? out("") : new Promise<void>((resolve) => process.stdout.write("", () => resolve()))); // stdout-ok
  process.exit(out?.gone && code === 0 ? EXIT_STDOUT_CLOSED : code);
}

async function main(argv: string[]): Promise<number> {
  // What toolhost itself runs (git, bwrap, a user hook…) is never found in a relative PATH entry.
  guardHostPath();
  process.stdout.on("error", onStdoutError);
  const [command, ...rest] = argv;
  const helpOf = helpRequest(argv);
  if (helpOf !== undefined) {
    const usage = usageOf(helpOf);
    if (usage === undefined) fail(`unknown command ${JSON.stringify(helpOf)}`);
    process.stdout.write(`${usage}\n`); // stdout-ok
    return 0;
  }
  if (command !== undefined && subcommandsOf().includes(command)) subcommand = command;
  switch (command) {
    case "tools": {
      const { values } = parse(rest, { json: { type: "boolean" }, ...SESSION_OPTIONS });
      await checkProfile(values.profile);
      const out = guardStdout();
      const { runTools } = await import("./commands/tools.js");
      return thenExit(runTools({ json: values.json ?? false, cwd: values.cwd, profile: values.profile, out }), out);
    }
    case "skills": {
      const { values } = parse(rest, { json: { type: "boolean" }, ...SESSION_OPTIONS });
      await checkProfile(values.profile);
      const out = guardStdout();
      const { runSkills } = await import("./commands/skills.js");
      return thenExit(runSkills({ json: values.json ?? false, cwd: values.cwd, profile: values.profile, out }), out);
    }
    case "agents": {
      const { values } = parse(rest, { json: { type: "boolean" }, cwd: { type: "string" } });
      const out = guardStdout();
      const { runAgents } = await import("./commands/agents.js");
      return thenExit(runAgents({ json: values.json ?? false, cwd: values.cwd, out }), out);
    }
    case "call": {
      const parsed = parse(rest, { ...WORKSPACE_OPTIONS, mode: { type: "string" } }, 2);
      const workspace = await checkWorkspace(parsed.values);
      const [id, json] = parsed.positionals;
      if (!id) fail("call needs a tool id");
      const args = parseJsonArgs(json);
      const mode = parsed.values.mode ?? "full";
      checkMode(mode);
      const out = guardStdout();
      const { runCall } = await import("./commands/call.js");
      return thenExit(runCall({ id, args, workspace, profile: parsed.values.profile, mode, out }), out);
    }
    case "policy": {
      const [sub, ...more] = rest;
      const parsed = parse(more, { ...WORKSPACE_OPTIONS, mode: { type: "string" }, json: { type: "boolean" } }, sub === "explain" ? 2 : 0);
      const workspace = await checkWorkspace(parsed.values);
      const mode = parsed.values.mode ?? "full";
      checkMode(mode);
      const out = guardStdout();
      const options = { workspace, profile: parsed.values.profile, mode, json: parsed.values.json ?? false, out };
      const { runPolicyExplain, runPolicyList } = await import("./commands/policy.js");
      if (sub === "list") return thenExit(runPolicyList(options), out);
      if (sub !== "explain") fail("policy takes explain <tool> '<json args>' or list");
      const [id, json] = parsed.positionals;
      if (!id) fail("policy explain needs a tool id");
      const args = parseJsonArgs(json);
      return thenExit(runPolicyExplain(id, args, options), out);
    }
    case "run": {
      const parsed = parse(
        rest,
        {
          ...WORKSPACE_OPTIONS,
          ...{ mode: { type: "string" }, model: { type: "string" }, json: { type: "boolean" }, ...BUDGET_OPTIONS },
          ...{ continue: { type: "boolean", short: "c" }, resume: { type: "string", short: "r" } },
        },
        1,
      );
      const budget = budgetFlags(parsed.values);
      const workspace = await checkWorkspace(parsed.values);
      let prompt = parsed.positionals[0];
      if (prompt === undefined) fail('run needs a prompt ("-" reads it from stdin)');
      const mode = parsed.values.mode ?? "ask";
      checkMode(mode);
      if (prompt === "-") prompt = await readStdin();
      if (!prompt.trim()) fail("the prompt is empty");
      const { values } = parsed;
      if (values.continue && values.resume !== undefined) fail("run takes --continue or --resume ID, not both");
      const resume = values.continue ? { continue: true as const } : values.resume !== undefined ? { id: values.resume } : undefined;
      const out = guardStdout();
      const { runPrompt } = await import("./commands/run.js");
      return thenExit(
        runPrompt({
          prompt,
          workspace,
          profile: values.profile,
          model: values.model,
          mode,
          json: values.json ?? false,
          budget,
          out,
          outClosed: out.closed,
          resume,
        }),
        out,
      );
    }
    case "sessions": {
      const [first, ...more] = rest;
      const action = first === undefined || first.startsWith("-") ? "list" : first;
      const args = first === undefined || first.startsWith("-") ? rest : more;
      const parsed = parse(
        args,
        {
          ...{ cwd: { type: "string" }, json: { type: "boolean" }, format: { type: "string" }, limit: { type: "string" } },
          // rewind and fork (commands/session-tree.ts)
          ...{ to: { type: "string" }, at: { type: "string" }, files: { type: "boolean" }, conversation: { type: "boolean" } },
          ...{ "dry-run": { type: "boolean" }, force: { type: "boolean" } },
        },
        action === "list" ? 0 : 1,
      );
      const limit = parsed.values.limit === undefined ? undefined : Number(parsed.values.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) fail("--limit takes a positive whole number");
      const { files, conversation } = parsed.values;
      if (files && conversation) fail("sessions rewind takes --files or --conversation (neither: both), not the two");
      const out = guardStdout();
      const { runSessions } = await import("./commands/sessions.js");
      return thenExit(
        runSessions({
          action,
          id: parsed.positionals[0],
          cwd: parsed.values.cwd,
          json: parsed.values.json ?? false,
          format: parsed.values.format,
          limit,
          to: parsed.values.to,
          at: parsed.values.at,
          mode: files ? "files" : conversation ? "conversation" : "both",
          dryRun: parsed.values["dry-run"] ?? false,
          force: parsed.values.force ?? false,
          out,
        }),
        out,
      );
    }
    case "trust": {
      const parsed = parse(rest, { revoke: { type: "boolean" } }, 1);
      const { runTrust } = await import("./commands/trust.js");
      return runTrust({ dir: parsed.positionals[0], revoke: parsed.values.revoke ?? false });
    }
    case "mcp": {
      const [sub, ...more] = rest;
      if (sub !== "list") fail(`mcp takes the sub-command list, got ${JSON.stringify(sub ?? "")}`);
      const { values } = parse(more, { json: { type: "boolean" }, cwd: { type: "string" } });
      const out = guardStdout();
      const { runMcpList } = await import("./commands/mcp.js");
      return thenExit(runMcpList({ json: values.json ?? false, cwd: values.cwd, out }), out);
    }
    case "hooks": {
      const [sub, ...more] = rest;
      const list = sub === undefined || sub.startsWith("-");
      if (!list && sub !== "list") fail(`hooks takes the sub-command list, got ${JSON.stringify(sub)}`);
      const { values } = parse(list ? rest : more, { json: { type: "boolean" }, ...SESSION_OPTIONS });
      await checkProfile(values.profile);
      const out = guardStdout();
      const { runHooksList } = await import("./commands/hooks.js");
      return thenExit(runHooksList({ json: values.json ?? false, cwd: values.cwd, profile: values.profile, out }), out);
    }
    case "serve": {
      const options = await serveOptions(rest);
      guardStdout();
      const { serveRemote } = await import("./acp/serve.js");
      await serveRemote(options).catch((err: NodeJS.ErrnoException) => {
        const why = { EADDRINUSE: "is in use", EACCES: "is not permitted", EADDRNOTAVAIL: "is not an address of this machine" }[
          err.code ?? ""
        ];
        if (why === undefined) throw err;
        const host = options.listen?.host ?? "";
        const where = options.socket ?? `${host.includes(":") ? `[${host}]` : host}:${options.listen?.port}`;
        sayError(`toolhost serve: ${where} ${why}`);
        process.exit(1);
      });
      return 0;
    }
    case "connect": {
      const { positionals } = parse(rest, {}, 1);
      const url = positionals[0];
      if (!url || !/^(wss?|ws\+unix|https?):\/\//.test(url)) fail("connect needs the URL of a toolhost serve, as ws://127.0.0.1:7700/acp");
      const token = process.env.TOOLHOST_SERVE_TOKEN;
      if (!token) fail("connect sends TOOLHOST_SERVE_TOKEN as its bearer token: set it to the token toolhost serve printed");
      const out = guardStdout();
      const { connectRemote } = await import("./acp/connect.js");
      return thenExit(connectRemote(url, token, out), out);
    }
    case "doctor": {
      const { values } = parse(rest, SESSION_OPTIONS);
      const { runDoctor } = await import("./commands/doctor.js");
      return thenExit(runDoctor({ cwd: values.cwd, profile: values.profile }));
    }
    case "login": {
      const { values } = parse(rest, { status: { type: "boolean" } });
      const { runLogin } = await import("./commands/login.js");
      return runLogin({ status: values.status ?? false });
    }
    case "logout": {
      parse(rest, {});
      const { runLogout } = await import("./commands/login.js");
      return runLogout();
    }
    case "install":
    case "uninstall": {
      const parsed = parse(rest, { project: { type: "boolean" }, cwd: { type: "string" } }, 1);
      const target = parsed.positionals[0];
      if (!target) fail(`${command} needs a ${command === "install" ? "package (an npm spec, a folder or a tarball)" : "package name"}`);
      const { runInstall, runUninstall } = await import("./commands/packages.js");
      const options = { cwd: parsed.values.cwd, project: parsed.values.project ?? false, out: say, err: sayError };
      return command === "install" ? runInstall(target, options) : runUninstall(target, options);
    }
    case "packages": {
      const [first, ...more] = rest;
      const action = first === undefined || first.startsWith("-") ? "list" : first;
      if (!["list", "enable", "disable"].includes(action)) fail(`packages takes list, enable or disable, got ${JSON.stringify(action)}`);
      const parsed = parse(
        action === "list" && first !== "list" ? rest : more,
        { json: { type: "boolean" }, project: { type: "boolean" }, cwd: { type: "string" } },
        action === "list" ? 0 : 1,
      );
      const { runPackagesList, runPackagesToggle } = await import("./commands/packages.js");
      const options = {
        cwd: parsed.values.cwd,
        project: parsed.values.project ?? false,
        json: parsed.values.json ?? false,
        out: say,
        err: sayError,
      };
      if (action === "list") return runPackagesList(options);
      const target = parsed.positionals[0];
      if (!target) fail(`packages ${action} needs NAME or NAME/ITEM`);
      return runPackagesToggle(action as "enable" | "disable", target, options);
    }
    case "--version":
    case "-v": {
      const { version } = await import("./config/paths.js");
      process.stdout.write(`${version}\n`); // stdout-ok
      return 0;
    }
    case "--help":
    case "-h":
    case "help":
      process.stdout.write(`${USAGE}\n`); // stdout-ok
      return 0;
    case undefined: {
      const out = guardStdout();
      await serveStdio(out);
      return 0;
    }
    default:
      fail(`unknown command ${JSON.stringify(command)}`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`toolhost: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  },
);
