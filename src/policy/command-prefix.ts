import type { ParsedLine, Redirect, SimpleCommand } from "./bash-parse.js";
import { WRAPPERS } from "./wrappers.js";

// What an "always allow" answer for a bash line remembers: the command and as many subcommand
// words as it takes, never more than the call showed.

/**
 * Commands whose words say nothing about what runs (interpreters, wrappers, shells, and builtins
 * that change the shell): an "always" answer for them covers only the exact line, never a prefix.
 */
const OPAQUE = new Set([
  ...["bash", "sh", "zsh", "fish", "dash", "ksh", "sudo", "su", "doas", "env", "eval", "exec"],
  ...["xargs", "nohup", "timeout", "time", "nice", "ionice", "command", "builtin", "source", "."],
  ...["python", "python3", "node", "perl", "ruby", "php", "deno", "bun", "npx", "pnpx", "bunx"],
  ...["ssh", "watch", "find", "awk", "gawk", "busybox", "parallel", "flock", "chroot", "strace"],
  ...["stdbuf", "script", "unbuffer", "export", "declare", "typeset", "local", "readonly", "unset"],
  ...["alias", "unalias", "set", "trap", "function"],
  // Every wrapper the rules and the watchdog see through (policy/wrappers.ts): `chronic git status`
  // must not remember `chronic git *`.
  ...Object.keys(WRAPPERS),
]);

/**
 * How many words name what runs, for commands with subcommands (`git status`: 2,
 * `docker compose up`: 3). Such a command with fewer plain words gets no prefix at all. A command
 * not listed takes no subcommand: its name alone is the prefix (`echo hi` → `echo`).
 */
const ARITY: Record<string, number> = {
  git: 2,
  npm: 2,
  pnpm: 2,
  yarn: 2,
  cargo: 2,
  go: 2,
  "go mod": 3,
  docker: 2,
  "docker compose": 3,
  "docker container": 3,
  "docker image": 3,
  "docker network": 3,
  "docker volume": 3,
  "docker-compose": 2,
  podman: 2,
  kubectl: 2,
  "kubectl config": 3,
  "kubectl rollout": 3,
  gh: 3,
  pip: 2,
  pip3: 2,
  uv: 2,
  "uv pip": 3,
  poetry: 2,
  brew: 2,
  apt: 2,
  "apt-get": 2,
  systemctl: 2,
  terraform: 2,
  helm: 2,
  dotnet: 2,
  aws: 3,
  gcloud: 3,
  az: 3,
  make: 2,
  just: 2,
  rake: 2,
  mvn: 2,
  gradle: 2,
  bundle: 2,
  composer: 2,
  bazel: 2,
  rustup: 2,
  conda: 2,
  dnf: 2,
  yum: 2,
  snap: 2,
  nix: 2,
  hg: 2,
  svn: 2,
};

/** Commands that change nothing: "always" for one of them covers its every use. */
const READS_ONLY = new Set([
  "echo",
  "printf",
  "ls",
  "pwd",
  "cat",
  "head",
  "tail",
  "wc",
  "grep",
  "rg",
  "which",
  "date",
  "true",
  "false",
  "sort",
  "uniq",
  "diff",
  "file",
  "stat",
  "du",
  "df",
  "tree",
  "less",
  "more",
  "basename",
  "dirname",
  "realpath",
  "whoami",
  "id",
  "uname",
]);

/** Subcommands that take the next word as their real subject (`npm run build`, `cargo run`). */
const RUNNERS = new Set(["run", "run-script", "exec", "x", "dlx"]);

const PLAIN_WORD = /^[A-Za-z0-9][A-Za-z0-9_:@+.-]*$/;

/**
 * The one command of a line that is a single plain simple command: every word literal, no
 * assignments, no substitutions, no function definitions, and no redirection other than a
 * descriptor copy or /dev/null. Null otherwise: such a line is only ever approved whole.
 */
export function plainCommand(line: ParsedLine): string[] | null {
  if (line.commands.length !== 1 || line.assignments.length > 0 || line.functions.length > 0) return null;
  const [command] = line.commands as [SimpleCommand];
  if (command.nested || command.assignments.length > 0 || !command.argv?.length) return null;
  const harmless = (r: Redirect): boolean =>
    r.kind === "fd" || (r.kind === "file" && r.target?.literal === true && r.target.text === "/dev/null");
  if (!line.redirects.every(harmless)) return null;
  return command.argv;
}

/**
 * The narrow prefix an "always allow" answer for this line covers — the command and as many
 * subcommand words as it takes (`git status`, `npm run test`, `docker compose up`) — or null when
 * only the exact line may be remembered (compound lines, interpreters, wrappers, paths).
 */
export function bashCommandPrefix(line: ParsedLine): string[] | null {
  const words = plainCommand(line);
  if (!words) return null;
  const [cmd, second] = words as [string, string | undefined];
  if (OPAQUE.has(cmd) || !PLAIN_WORD.test(cmd)) return null;
  const arity = (second !== undefined ? ARITY[`${cmd} ${second}`] : undefined) ?? ARITY[cmd];
  let n: number;
  if (arity !== undefined) {
    if (words.length < arity || !words.slice(1, arity).every((w) => PLAIN_WORD.test(w))) return null;
    n = arity;
  } else {
    // No subcommand. For a command that only reads or prints, the first argument is data (`echo
    // hi` → `echo`); for anything else "always" stays narrow (`rm notes.txt` → `rm notes.txt`).
    n = READS_ONLY.has(words[0] as string) || second === undefined || !PLAIN_WORD.test(second) ? 1 : 2;
  }
  const last = words[n - 1] as string;
  const next = words[n];
  if (n > 1 && RUNNERS.has(last) && next !== undefined && PLAIN_WORD.test(next)) n++;
  return words.slice(0, n);
}

/** Whether a line is a single plain command that starts with the remembered prefix. */
export function bashMatchesPrefix(line: ParsedLine, prefix: readonly string[]): boolean {
  const words = plainCommand(line);
  return words !== null && prefix.length > 0 && prefix.length <= words.length && prefix.every((w, i) => words[i] === w);
}
