// The usage of each subcommand, taken from the general usage (its one source of truth): the lines
// of its \`toolhost SUB …\` entries. serve has a page of its own.

/** The general usage (`toolhost --help`): each subcommand's entry is cut from it. */
export const USAGE = `toolhost — an ACP agent and tool-plugin host

Usage:
  toolhost                                       serve the Agent Client Protocol on stdin/stdout
  toolhost serve [--listen HOST:PORT | --socket PATH]
                                                 serve it over the network: WebSocket and HTTP on /acp (serve --help)
  toolhost connect URL                           stdin/stdout to a toolhost serve at URL (ws://…/acp, http://…/acp),
                                                 with TOOLHOST_SERVE_TOKEN: for an editor that starts agents as commands
  toolhost tools [--json] [--cwd DIR]            list a session's tools, where each came from, load problems
  toolhost call <tool> '<json args>' [--cwd DIR] [--mode MODE] [--allow-home]
                                                 run one tool call through the session's policy, print its envelope
  toolhost skills [--json] [--cwd DIR]           list a session's skills, where each came from, shadowing, problems
  toolhost agents [--json] [--cwd DIR]           list the agents task may run, where each came from, bad files (exit 1)
  toolhost policy explain <tool> '<json args>' [--cwd DIR] [--mode MODE] [--json]
                                                 what the policy decides about one call, and which rule wins
  toolhost policy list [--cwd DIR] [--json]      the permission rules in force, with their sources
  toolhost run "<prompt>" [--cwd DIR] [--model ID] [--mode MODE] [--json] [--continue | --resume ID]
              [--max-turns N] [--max-tool-calls N] [--max-cost-usd X] [--max-tokens N]
                                                 one model turn without an editor (prompt "-": read stdin)
  toolhost trust [DIR] [--revoke]                let a project's .toolhost/tools/ load (they run code)
  toolhost mcp list [--cwd DIR] [--json]         the MCP servers a session starts, their status, tools, errors
  toolhost hooks list [--cwd DIR] [--json]       the hooks a session runs, in order: event, matcher, source file
  toolhost sessions [list] [--cwd DIR] [--limit N] [--json]
                                                 saved sessions, newest first
  toolhost sessions show|delete ID [--json]      one saved session's summary; delete it
  toolhost sessions export ID [--format md|jsonl]
                                                 a readable transcript (md, default) or the raw file
  toolhost sessions tree ID [--json]             its prompts (numbered), labels and the branches rewinds left
  toolhost sessions rewind ID --to N|MESSAGE_ID [--files|--conversation] [--dry-run] [--force]
                                                 put back the files and the conversation (default: both)
                                                 as they were before prompt N
  toolhost sessions fork ID [--at N]             a new session from this one (at the end of prompt N's turn)
  toolhost doctor [--cwd DIR]                    config, profile and extension problems (exit 1 if any)
  toolhost login                                 choose a model provider, its key or URL, and a model (asks in the terminal);
                                                 stored in ~/.toolhost/credentials.json (0600) for every session after
  toolhost login --status                        the stored login, what the environment sets (it wins), whether a model is ready
  toolhost logout                                remove the stored login
  toolhost install <npm-spec | path | tarball> [--project] [--cwd DIR]
                                                 install a tool package (its install scripts never run) into
                                                 ~/.toolhost/packages, or the project's .toolhost/packages
  toolhost uninstall NAME [--project] [--cwd DIR]
  toolhost packages [list] [--json] [--cwd DIR]  the user's and the project's tool packages, what they add, problems
  toolhost packages enable|disable NAME[/ITEM] [--project] [--cwd DIR]
                                                 switch a package, or one of its tools, skills or agents, on or off
  toolhost --version | --help

tools, skills, hooks, call, run and doctor take --profile NAME (default: TOOLHOST_PROFILE, the config's, or "default").
call, run and policy refuse / and the system folders as the workspace, and the home folder itself
unless --allow-home (then every change and command needs approval, so headless they are refused).
call runs in mode full (typing the command approves that one call) unless --mode says read-only,
ask or accept-edits; what the policy denies stays denied, and a call that needs approval is refused.
Exit codes of call: 0 output envelope, 1 error envelope, 2 bad usage.
run streams the model's text on stdout and one line per tool call on stderr (--json: one JSON
event per line on stdout). It runs in mode ask unless --mode says otherwise; nobody can approve
a call, so one that needs approval is refused. A slash command works too: run "/grep TODO".
--continue (-c) goes on with the workspace's newest saved session, --resume (-r) ID with that one
(an id or at least 8 characters of it).
The --max-* flags cap the run (model requests, tool calls, cost in USD, tokens) over the config's
budget; at a cap the turn stops with max_turn_requests.
Exit codes of run: 0 the turn ended normally, 1 it did not (no model, a provider error, max tokens,
a budget's cap, a refusal, a failed slash command), 2 bad usage, 130 interrupted.`;

const SERVE_USAGE = `toolhost serve — the Agent Client Protocol over the network

Usage:
  toolhost serve [--listen HOST:PORT | --socket PATH] [--allow-origin ORIGIN]...
                 [--max-connections N] [--max-sessions N] [--grace SECONDS] [--ping-interval SECONDS]

Serves ACP on the endpoint /acp, over WebSocket and over Streamable HTTP (POST and SSE), as the
ACP Remote Transports RFD describes. Each client gets its own sessions; one process serves them all.

  --listen HOST:PORT   where to listen (default 127.0.0.1:7700; port 0 picks a free one). Anything
                       but loopback sends the token in clear text: put TLS in front, or use SSH.
  --socket PATH        a unix socket instead (made 0600)
  --allow-origin O     a browser Origin let in (exact, as https://app.example:8443); repeatable.
                       A request with any other Origin header is refused.
  --max-connections N  clients connected at once (default 8)
  --max-sessions N     sessions open on one connection (default 16)
  --grace SECONDS      how long a disconnected client's sessions wait for session/resume on a new
                       connection (default 60; 0: they close at once). Their running turns are
                       cancelled at the disconnect, and the commands those turns started killed.
  --ping-interval S    WebSocket pings this often (default 30; 0: none); a client that has not
                       answered one by the next is dropped. session/resume or session/load of a
                       session from a new connection takes it over even while the old one is open.

Every request needs "Authorization: Bearer <token>". The token is TOOLHOST_SERVE_TOKEN, or one made at
start and printed once on stderr. On a loopback address the Host header must name loopback too (no
DNS rebinding). Messages are limited to 32 MiB. Logs go to stderr; stdout is not used. SIGTERM or
SIGINT closes every session and exits 0. The model and config are the same as for stdio (TOOLHOST_MODEL, ~/.toolhost).`;

/** The subcommands the general usage names, in its order. */
export function subcommandsOf(): string[] {
  const names = [...USAGE.matchAll(/^ {2}toolhost ([a-z][a-z-]*)/gm)].map((m) => m[1] as string);
  return [...new Set(names)];
}

/** One subcommand's entries of the general usage (each with its continuation lines); undefined if none. */
export function usageOf(sub: string): string | undefined {
  if (sub === "serve") return SERVE_USAGE;
  const lines: string[] = [];
  let inEntry = false;
  for (const line of USAGE.split("\n")) {
    const entry = /^ {2}toolhost (\S+)/.exec(line);
    if (entry) inEntry = entry[1] === sub;
    else if (!/^ {3,}\S/.test(line)) inEntry = false;
    if (inEntry) lines.push(line);
  }
  return lines.length > 0
    ? `Usage:\n${lines.join("\n")}\n\ntoolhost --help: every command and the notes on flags and exit codes.`
    : undefined;
}
