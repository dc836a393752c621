import { parse } from "shell-quote";

/**
 * Commands whose first words say nothing about what runs: an "always" answer for them covers
 * only the exact command line, never a prefix.
 */
const OPAQUE = new Set([
  "bash",
  "sh",
  "zsh",
  "fish",
  "dash",
  "ksh",
  "sudo",
  "su",
  "doas",
  "env",
  "eval",
  "exec",
  "xargs",
  "nohup",
  "timeout",
  "time",
  "nice",
  "ionice",
  "command",
  "builtin",
  "source",
  ".",
  "python",
  "python3",
  "node",
  "perl",
  "ruby",
  "php",
  "deno",
  "bun",
  "npx",
  "pnpx",
  "bunx",
  "ssh",
  "watch",
]);

/** Second words that take a third as their real subject (`npm run build`, `cargo run`). */
const RUNNERS = new Set(["run", "exec", "x", "dlx"]);

const PLAIN_WORD = /^[A-Za-z0-9][A-Za-z0-9_:@+-]*$/;

/**
 * The words of a command line when it is one simple command: no operators (`&&`, `|`, `;`,
 * redirections), no substitutions, no newlines, no leading variable assignments.
 * Returns null for anything compound: such lines are only ever approved whole.
 */
export function simpleCommandWords(command: string): string[] | null {
  const line = command.trim();
  // shell-quote folds newlines into spaces and keeps substitutions inside words: refuse them first.
  if (line === "" || /[\n\r`]|\$\(|<\(|>\(/.test(line)) return null;
  let tokens: ReturnType<typeof parse>;
  try {
    tokens = parse(line, (name) => `$${name}`);
  } catch {
    return null;
  }
  if (!tokens.every((t): t is string => typeof t === "string")) return null;
  if (tokens.length === 0 || /^[A-Za-z_][A-Za-z0-9_]*=/.test(tokens[0] as string)) return null;
  return tokens;
}

/**
 * The narrow prefix an "always allow" answer for this command covers: the command and its
 * subcommand (`git status`, `npm run build`), or null when only the exact line may be remembered.
 */
export function commandPrefix(command: string): string[] | null {
  const words = simpleCommandWords(command);
  if (!words) return null;
  const [cmd, second, third] = words as [string, string | undefined, string | undefined];
  if (OPAQUE.has(cmd) || cmd.includes("/")) return null;
  const prefix = [cmd];
  if (second !== undefined && PLAIN_WORD.test(second)) {
    prefix.push(second);
    if (RUNNERS.has(second) && third !== undefined && PLAIN_WORD.test(third)) prefix.push(third);
  }
  return prefix;
}

/** Whether a command line is a simple command that starts with the remembered prefix. */
export function matchesPrefix(command: string, prefix: readonly string[]): boolean {
  const words = simpleCommandWords(command);
  return words !== null && prefix.length <= words.length && prefix.every((w, i) => words[i] === w);
}
