import path from "node:path";
import type { ParsedLine, Redirect, SimpleCommand, Word } from "./bash-parse.js";

// The files a bash line names (issue 11 §2), read from the parsed line, so that the ruleset can
// judge `echo x > ~/.bashrc` as a write of ~/.bashrc. Kept simple and documented:
// - file redirections: `>`, `>>`, `>|`, `&>`, `&>>`, `<>`, `>&` to a file are writes, `<` a read;
// - literal path arguments (a word starting with `/`, `~`, `./`, `../`, containing `/`, or `.`/`..`;
//   also the value of `--opt=value`) are reads, except where the command writes them: every operand
//   of rm/rmdir/mkdir/touch/tee/truncate/shred/unlink (path-like or not: `touch .profile`) and of
//   chmod/chown/chgrp after the mode or owner, the last operand of cp/mv/ln/install/rsync (the
//   others are reads), and dd's `of=`;
// - `cd`/`pushd` with a literal directory moves the base of later relative words; a `cd` to
//   somewhere unknown (`cd "$D"`, `cd -`, `popd`) makes later relative words unknown;
// - a target the shell expands at run time (`> $F`, `"$HOME"/x`, `~user/x`) is unknown: the
//   policy cannot say where it points, so such a line is asked about.
// The command word itself (`./build.sh`) is not a target: running it is what the command rules judge.

export interface FileTarget {
  path: string;
  access: "read" | "write";
}

export interface LineFiles {
  targets: FileTarget[];
  /** Targets known only at run time, as written (`$F`). */
  unknown: string[];
}

const WRITES_ALL = new Set(["rm", "rmdir", "mkdir", "touch", "tee", "truncate", "shred", "unlink", "chmod", "chown", "chgrp"]);
const WRITES_LAST = new Set(["cp", "mv", "ln", "install", "rsync"]);
const OWNER_FIRST = new Set(["chmod", "chown", "chgrp"]);
const READ_OPS = new Set(["<"]);
/** Device files a redirection may name without touching a file. */
const DEVICES = /^\/dev\/(?:null|stdin|stdout|stderr|tty|fd\/\d+)$/;
const URL = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

function looksLikePath(text: string): boolean {
  return text === "." || text === ".." || text.startsWith("/") || text.startsWith("~") || text.includes("/");
}

/** Where a word points, or null when only the shell can say (a variable, `~user`, a relative word after an unknown `cd`). */
function resolveWord(word: Word, cwd: string | null, home: string): string | null {
  if (!word.literal) return null;
  let text = word.text;
  if (word.tilde) {
    if (text !== "~" && !text.startsWith("~/")) return null;
    text = path.join(home, text.slice(1));
  }
  if (path.isAbsolute(text)) return path.normalize(text);
  return cwd === null ? null : path.resolve(cwd, text);
}

/** The value of `--opt=value` or dd's `of=value`, as a word of its own. */
function valueWord(word: Word): { key: string; value: Word } | null {
  if (!word.literal) return null;
  const m = /^(-{0,2}[A-Za-z][\w-]*)=(.*)$/s.exec(word.text);
  if (!m) return null;
  const value = m[2] as string;
  return { key: m[1] as string, value: { text: value, literal: true, tilde: value.startsWith("~") } };
}

/** The files one line names, resolved against the directory it runs in. */
export function bashFileTargets(line: ParsedLine, cwd: string, home: string): LineFiles {
  const out: LineFiles = { targets: [], unknown: [] };
  let base: string | null = cwd;
  const add = (word: Word, access: FileTarget["access"]): void => {
    const resolved = resolveWord(word, base, home);
    if (resolved === null) out.unknown.push(word.text);
    else out.targets.push({ path: resolved, access });
  };
  const redirect = (r: Redirect): void => {
    if (r.kind !== "file" || !r.target) return;
    if (r.target.literal && DEVICES.test(r.target.text)) return;
    add(r.target, READ_OPS.has(r.op) ? "read" : "write");
  };
  const attached = new Set<string>();
  for (const command of line.commands) {
    for (const r of command.redirects) {
      attached.add(`${r.op} ${r.target?.text ?? ""}`);
      redirect(r);
    }
    arguments_(command, add);
    base = nextBase(command, base, home);
  }
  // Redirections the parser did not hang on a command (on a compound statement the grammar keeps
  // apart): judged from where the line started, or unknown once the line changed directory.
  base = base === cwd ? cwd : null;
  for (const r of line.redirects) if (!attached.has(`${r.op} ${r.target?.text ?? ""}`)) redirect(r);
  return out;
}

function arguments_(command: SimpleCommand, add: (word: Word, access: FileTarget["access"]) => void): void {
  const [name, ...args] = command.words;
  const cmd = name?.literal ? path.basename(name.text) : "";
  const candidates: { word: Word; access: FileTarget["access"] }[] = [];
  // Commands that write take every operand as a file (`touch .profile`), a mode or owner aside.
  const writer = WRITES_ALL.has(cmd) || WRITES_LAST.has(cmd);
  let operands = 0;
  for (const word of args) {
    const kv = valueWord(word);
    if (kv && (word.text.startsWith("-") || cmd === "dd")) {
      if (looksLikePath(kv.value.text)) candidates.push({ word: kv.value, access: cmd === "dd" && kv.key === "of" ? "write" : "read" });
      continue;
    }
    if (word.literal && word.text.startsWith("-")) continue;
    if (writer && operands++ === 0 && OWNER_FIRST.has(cmd)) continue;
    if (writer || (word.literal ? !URL.test(word.text) && (looksLikePath(word.text) || word.tilde) : /[/~]/.test(word.text))) {
      candidates.push({ word, access: WRITES_ALL.has(cmd) ? "write" : "read" });
    }
  }
  const last = candidates.at(-1);
  if (WRITES_LAST.has(cmd) && last) last.access = "write";
  for (const c of candidates) add(c.word, c.access);
}

/** The directory later commands run in, after this one. */
function nextBase(command: SimpleCommand, base: string | null, home: string): string | null {
  const [name, ...args] = command.words;
  if (!name?.literal || !["cd", "pushd", "popd"].includes(name.text)) return base;
  const operands = args.filter((w) => !(w.literal && /^-[LPe@]+$/.test(w.text)));
  if (name.text === "popd") return null;
  if (operands.length === 0) return name.text === "cd" ? home : base;
  const [dir] = operands as [Word];
  if (dir.literal && dir.text === "-") return null;
  return resolveWord(dir, base, home);
}
