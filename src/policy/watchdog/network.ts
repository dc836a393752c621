import type { Finding, ShellCommand, WatchdogCheck } from "./shell.js";

// Network use by commands that do not run in the OS sandbox (seed 003's list): HTTP clients and
// sockets, URL tokens, package managers that download, and git's remote operations. Sandboxed,
// these are allowed: the sandbox has no network, so they fail there instead.

const CLIENTS = new Set([
  "curl",
  "wget",
  "nc",
  "ncat",
  "netcat",
  "socat",
  "telnet",
  "ssh",
  "scp",
  "sftp",
  "ftp",
  "rsync",
  "aria2c",
  "http",
  "https",
]);
const INSTALLERS: Record<string, ReadonlySet<string> | "always"> = {
  npm: new Set(["install", "i", "ci", "add", "update", "up", "upgrade", "publish", "exec", "x", "create", "init", "login", "view", "info"]),
  pnpm: new Set(["install", "i", "add", "update", "up", "upgrade", "publish", "dlx", "exec", "create", "fetch"]),
  yarn: new Set(["install", "add", "up", "upgrade", "publish", "dlx", "create", "init"]),
  bun: new Set(["install", "i", "add", "update", "upgrade", "publish", "x", "create"]),
  pip: new Set(["install", "download", "wheel"]),
  pip3: new Set(["install", "download", "wheel"]),
  uv: new Set(["add", "sync", "pip", "tool", "run"]),
  cargo: new Set(["install", "add", "fetch", "update", "publish", "search"]),
  gem: new Set(["install", "update", "fetch", "push"]),
  go: new Set(["get", "install"]),
  npx: "always",
  pnpx: "always",
  bunx: "always",
};
const GIT_REMOTE = new Set(["push", "pull", "fetch", "clone", "remote", "ls-remote", "submodule"]);

function networkUse({ name, args }: ShellCommand): string | null {
  const url = args.find((w) => /^["']?(?:https?|ftp):\/\//i.test(w.text));
  if (!name) return url ? `a command reaches ${url.text}` : null;
  if (CLIENTS.has(name)) return `${name} reaches the network`;
  const sub = args.find((w) => !w.text.startsWith("-"))?.text;
  const installer = INSTALLERS[name];
  if (installer === "always" || (installer && ((sub && installer.has(sub)) || (name === "yarn" && sub === undefined)))) {
    return `${name}${sub && installer !== "always" ? ` ${sub}` : ""} downloads packages`;
  }
  if (name === "git") {
    let i = 0;
    while (i < args.length && args[i]?.text.startsWith("-")) i += /^-[Cc]$/.test(args[i]?.text ?? "") ? 2 : 1;
    const subcommand = args[i]?.text ?? "";
    if (GIT_REMOTE.has(subcommand)) return `git ${subcommand} talks to a remote`;
  }
  return url ? `${name} reaches ${url.text}` : null;
}

export const networkCheck: WatchdogCheck = {
  name: "network",
  check({ call, commands }): Finding | null {
    if (call.sandboxed) return null;
    for (const command of commands) {
      const why = networkUse(command);
      if (why) return { action: "ask", reason: `${why}, and commands run outside the sandbox here` };
    }
    return null;
  },
};
