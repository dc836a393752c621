import path from "node:path";
import type { ParsedLine, Redirect, SimpleCommand, Word } from "../bash-parse.js";
import { normalizeLine } from "../normalize.js";
import type { WatchdogCall } from "../watchdog.js";

// What the built-in checks share: the parsed commands of a call with their wrappers taken off and
// their working directory followed through `cd`, and a word's path as the shell would expand it.

/** One simple command as the checks see it. */
export interface ShellCommand {
  /** The parsed command. */
  command: SimpleCommand;
  /** The basename of what runs once wrappers (policy/wrappers.ts: `sudo`, `env X=1`, `timeout 5`, …) are taken off; null when not literal. */
  name: string | null;
  /** The words after the name. */
  args: Word[];
  /** The directory the command runs in; null when a `cd` to something not literal came before it. */
  cwd: string | null;
  /** The parsed line it belongs to. */
  line: ParsedLine;
  /** Other directories its relative words may be under (`git -C D`, `tar -C D`, `env -C D`); null when unknown. */
  dirs: (string | null)[];
  /** Literal values the line assigns to variables, for expanding `$F`. */
  vars: ReadonlyMap<string, readonly Word[]>;
  /** Why what it runs cannot be read from the line (`python3 -c`, `… | sh`), when it cannot. */
  unknown: string | null;
  /** The wrappers and indirections it was read out of (`sudo`, `find -exec`, `bash -c`). */
  via: readonly string[];
}

/** What every check gets: the call, its commands (parsed) and where `~` is. */
export interface CheckInput {
  call: WatchdogCall;
  commands: readonly ShellCommand[];
  home: string;
}

/** A check's finding; null when it has nothing to say. */
export interface Finding {
  action: "deny" | "ask";
  reason: string;
}

/** A small named rule of the built-in watchdog. */
export interface WatchdogCheck {
  name: string;
  check(input: CheckInput): Finding | null;
}

/**
 * The commands of parsed lines as the rules read them (policy/normalize.ts: wrappers and paths
 * off, `find -exec`, `xargs`, wrapped `bash -c`, literal `eval` and here-strings read out), each
 * with its working directory followed through `cd` / `pushd`.
 */
export async function shellCommands(lines: readonly ParsedLine[], cwd: string, home: string): Promise<ShellCommand[]> {
  const out: ShellCommand[] = [];
  for (const parsed of lines) {
    let dir: string | null = cwd;
    for (const normal of (await normalizeLine(parsed)).commands) {
      const { source, name, args, line, chdir, vars, unknown, via } = normal;
      const dirs = chdir.map((w) => wordPath(w, dir, home)?.path ?? null);
      out.push({ command: source, name, args, cwd: dir, line, dirs, vars, unknown, via });
      if (name === "cd" || name === "pushd") {
        const target = args.find((w) => !(w.literal && /^-[LPe@]+$/.test(w.text)));
        if (!target) dir = name === "cd" ? home : dir;
        else dir = wordPath(target, dir, home)?.path ?? null;
      }
    }
  }
  return out;
}

/** A word's path: `exact` false when a glob follows (the path is then the folder it expands under). */
export interface WordPath {
  path: string;
  exact: boolean;
}

/**
 * The absolute path a word names, as the shell would expand it: `~`, `$HOME`, relative to `cwd`.
 * A glob gives the folder it expands under. Null when the word depends on anything else
 * (another variable, a substitution) or `cwd` is unknown for a relative path.
 */
export function wordPath(word: Word, cwd: string | null, home: string): WordPath | null {
  let text = word.text;
  let exact = true;
  if (!word.literal) {
    // Only quotes, `$HOME` and globs are understood; anything else makes the word unknown.
    text = text.replace(/["']/g, "").replace(/^\$\{?HOME\}?(?=\/|$)/, home);
    if (/[$`]|<\(|>\(/.test(text)) return null;
    const glob = text.search(/[*?[{]/);
    if (glob >= 0) {
      text = text.slice(0, glob);
      text = text.endsWith("/") || text === "" ? text : path.dirname(text);
      exact = false;
    }
  }
  if (word.tilde || text.startsWith("~")) {
    if (text === "~" || text.startsWith("~/")) text = path.join(home, text.slice(1));
    else return null; // ~user
  }
  if (text === "") text = ".";
  if (path.isAbsolute(text)) return { path: path.normalize(text), exact };
  if (cwd === null) return null;
  return { path: path.resolve(cwd, text), exact };
}

/** Redirections that write their target. */
export function isWriteRedirect(r: Redirect): boolean {
  return r.kind === "file" && r.op !== "<";
}

/** Whether a word holds a command substitution (`$(…)` or backticks). */
export function hasSubstitution(word: Word): boolean {
  return !word.literal && (/\$\(/.test(word.text) || word.text.includes("`"));
}

/** A word's plain text when it is an option (`-rf`, `--force`), else null. */
export function optionText(word: Word): string | null {
  return word.literal && word.text.startsWith("-") && word.text.length > 1 ? word.text : null;
}

/** The operands of a command: words after its options (and after `--`). */
export function operands(args: readonly Word[], valueOptions: readonly string[] = []): Word[] {
  const out: Word[] = [];
  let options = true;
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as Word;
    if (options && word.literal && word.text === "--") {
      options = false;
      continue;
    }
    if (options && optionText(word)) {
      if (valueOptions.includes(word.text)) i++;
      continue;
    }
    out.push(word);
  }
  return out;
}
