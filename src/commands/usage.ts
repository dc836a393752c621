// The usage of each subcommand, taken from the general usage (its one source of truth): the lines
// of its \`toolhost SUB …\` entries. serve has a page of its own.

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
export function subcommandsOf(usage: string): string[] {
  const names = [...usage.matchAll(/^ {2}toolhost ([a-z][a-z-]*)/gm)].map((m) => m[1] as string);
  return [...new Set(names)];
}

/** One subcommand's entries of the general usage (each with its continuation lines); undefined if none. */
export function usageOf(usage: string, sub: string): string | undefined {
  if (sub === "serve") return SERVE_USAGE;
  const lines: string[] = [];
  let inEntry = false;
  for (const line of usage.split("\n")) {
    const entry = /^ {2}toolhost (\S+)/.exec(line);
    if (entry) inEntry = entry[1] === sub;
    else if (!/^ {3,}\S/.test(line)) inEntry = false;
    if (inEntry) lines.push(line);
  }
  return lines.length > 0
    ? `Usage:\n${lines.join("\n")}\n\ntoolhost --help: every command and the notes on flags and exit codes.`
    : undefined;
}
