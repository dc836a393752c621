import { parseBash, type ParsedLine, type SimpleCommand, type Word } from "./bash-parse.js";
import { codeVariables, opaqueProgram, opaqueRunner } from "./opaque.js";
import { unwrap } from "./wrappers.js";

// What a command line runs, whatever the spelling (issue 20, class 5). The parser already removes
// quotes and escapes (`"rm"`, `\rm`, `r''m` are `rm`); here each simple command also loses its
// wrappers (policy/wrappers.ts: `sudo`, `env A=1`, `timeout 5`, `xargs`, …) and its path
// (`/bin/rm` is `rm`), and the commands it runs through its own words are read out and judged
// too: `find -exec/-execdir/-ok/-okdir`, a literal `bash -c` / `sh -c` script behind a wrapper,
// a literal `eval`, `watch`, `trap`, `su -c` or `flock -c` script, a shell fed a literal
// here-string or here-doc, a git alias `!script` given with `-c`, and a command name held in a
// variable the line assigned literally (`C=rm; $C x`).
//
// What cannot be read is *unknown*, with the reason: a command name only known when it runs,
// eval of anything not literal, `source`/`.` of a file, a shell or interpreter running inline
// code (`python3 -c`, `node -e`, `perl -e`, `ruby -e`, `php -r`) or code fed on stdin (`… | sh`,
// `sh -s`, `python3 < x.py`), git's `-c` of a key that runs a program, awk with `system()` or a
// pipe, sed's `e`, `env -S`, `parallel`. So is what runs code the line does not show
// (policy/opaque.ts): a script file given to a shell or an interpreter (`sh ./x.sh`, `bash <(…)`,
// `python3 x.py`, `awk -f`), a program named by its path (`./x.sh`), a runner of a project's
// recipes or a package's programs (`make`, `npm exec`, `npx`), and an environment variable that
// hands a program code (`BASH_ENV=`, `LD_PRELOAD=`).

/** One command the line runs, as the rules and the watchdog judge it. */
export interface NormalCommand {
  /** The simple command of the parsed line it was read from. */
  source: SimpleCommand;
  /** The parsed line (or script) that command belongs to. */
  line: ParsedLine;
  /** The basename of what runs; null when it is not literal (or nothing runs). */
  name: string | null;
  /** The words after the name. */
  args: Word[];
  /** The wrappers and indirections it was read out of (`sudo`, `find -exec`, `bash -c`), outermost first. */
  via: string[];
  /** Directories it runs in other than the line's (`env -C D`, `git -C D`, `make -C D`, `tar -C D`). */
  chdir: Word[];
  /** The command as one line: the name and its words, unquoted, wrappers off. */
  text: string;
  /** Why what it runs cannot be read from the line, when it cannot. */
  unknown: string | null;
  /** Literal values the line assigns to variables (`F=~/x; cat $F`), for expanding its words. */
  vars: ReadonlyMap<string, readonly Word[]>;
}

export interface NormalLine {
  commands: NormalCommand[];
  /** Why parts of the line cannot be read (empty: every part can). */
  unknown: string[];
}

const SHELLS = new Set(["bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "fish"]);
/** Interpreters and the options that hand them inline code. */
const INTERPRETERS: Record<string, { inline: readonly string[]; long?: readonly string[] }> = {
  python: { inline: ["c"] },
  node: { inline: ["e", "p"], long: ["--eval", "--print"] },
  nodejs: { inline: ["e", "p"], long: ["--eval", "--print"] },
  perl: { inline: ["e", "E"] },
  ruby: { inline: ["e"] },
  php: { inline: ["r"] },
  lua: { inline: ["e"] },
  Rscript: { inline: ["e"] },
  osascript: { inline: ["e"] },
  tclsh: { inline: [] },
  irb: { inline: [] },
  deno: { inline: [] },
  bun: { inline: ["e"], long: ["--eval", "--print"] },
  pwsh: { inline: ["c"], long: ["-Command", "-EncodedCommand"] },
};
const AWKS = new Set(["awk", "gawk", "mawk", "nawk"]);
const INFO = /^(?:--version|-V|--help|-h|-v)$/;
const FIND_EXEC = /^-(?:exec|execdir|ok|okdir)$/;
/** git config keys whose value is a program git runs. */
const GIT_RUNS =
  /^(?:alias\..*|core\.(?:pager|sshcommand|fsmonitor|editor|hookspath|askpass|gitproxy)|(?:diff|merge|filter)\..*|credential\..*|.*\.(?:textconv|program|command|cmd|helper|editor|process|clean|smudge))$/i;
/** git's global options that take the next word as their value. */
const GIT_VALUES = new Set(["-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"]);
const MAX_DEPTH = 4;

const word = (text: string): Word => ({ text, literal: true, tilde: text.startsWith("~") });

/** A simple `$NAME`, `${NAME}` or `"$NAME"`, or null. */
export function variableName(w: Word): string | null {
  if (w.literal) return null;
  return /^"?\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))"?$/.exec(w.text)?.slice(1).find(Boolean) ?? null;
}

class Normalizer {
  readonly out: NormalLine = { commands: [], unknown: [] };

  async line(line: ParsedLine, via: readonly string[], depth: number): Promise<void> {
    const vars = new Map<string, Word[]>();
    const assigned = [...line.assignments, ...line.commands.flatMap((c) => c.assignments)];
    for (const a of assigned) vars.set(a.name, [...(vars.get(a.name) ?? []), a.value]);
    const words = line.commands.flatMap((c) => c.words);
    for (const name of codeVariables(
      words,
      assigned.map((a) => a.name),
    ))
      this.unknown(`${name}= makes programs run code the line does not show`);
    for (const source of line.commands) await this.command(source.words, { source, line, vars }, [...via], depth);
  }

  private unknown(reason: string): void {
    if (!this.out.unknown.includes(reason)) this.out.unknown.push(reason);
  }

  /** A script the line hands to a shell: parsed and read like the line itself. */
  private async script(text: string, via: string[], depth: number): Promise<void> {
    const what = via.at(-1) ?? "a script";
    if (depth >= MAX_DEPTH) return this.unknown(`${what} nests scripts too deeply to read`);
    const parsed = await parseBash(text).catch(() => null);
    if (!parsed) return this.unknown(`the script of ${what} does not parse`);
    await this.line(parsed, via, depth + 1);
  }

  async command(
    words: readonly Word[],
    at: { source: SimpleCommand; line: ParsedLine; vars: ReadonlyMap<string, readonly Word[]> },
    via: string[],
    depth: number,
  ): Promise<void> {
    // A command name held in a variable the line set literally: each value it may hold.
    const held = words[0] ? variableName(words[0]) : null;
    const values = held !== null ? at.vars.get(held) : undefined;
    if (values?.length && values.every((v) => v.literal) && depth < MAX_DEPTH) {
      for (const value of values) {
        const split = value.text.split(/\s+/).filter(Boolean).map(word);
        await this.command([...split, ...words.slice(1)], at, [...via, `$${held}`], depth + 1);
      }
      return;
    }
    const u = unwrap(words);
    const all = [...via, ...u.via];
    // xargs adds the words it reads to the command's own: `xargs rm` runs `rm <words>`, which a
    // rule for `rm *` must see as such.
    if (u.via.includes("xargs") && u.head) u.args = [...u.args, word("{}")];
    const push = (unknown: string | null, chdir: Word[] = []): NormalCommand => {
      const text = [u.head?.text ?? "", ...u.args.map((w) => w.text)].join(" ").trim();
      const command: NormalCommand = { ...at, name: u.name, args: u.args, via: all, chdir: [...u.chdir, ...chdir], text, unknown };
      if (u.head?.literal) command.text = [u.name, ...u.args.map((w) => w.text)].join(" ");
      this.out.commands.push(command);
      if (unknown) this.unknown(unknown);
      return command;
    };
    if (u.split) return void push("env -S splits a string into the command it runs");
    if (!u.head) return void push(null);
    if (u.name === null) return void push(`the command name ${u.head.text} is known only when it runs`);
    const name = u.name;
    const args = u.args;
    // `make -C DIR`, `tar -C DIR`: the folder it works in, for the watchdog.
    const dir = ["make", "tar"].includes(name) ? args.findIndex((w) => w.text === "-C" || w.text === "--directory") : -1;
    const eq = ["make", "tar"].includes(name) ? args.find((w) => w.text.startsWith("--directory=")) : undefined;
    const chdirs = [...(dir >= 0 && args[dir + 1] ? [args[dir + 1] as Word] : []), ...(eq ? [word(eq.text.slice(12))] : [])];
    const opaque = opaqueProgram(u.head, name) ?? opaqueRunner(name, args);
    if (opaque) return void push(opaque, chdirs);
    const literal = (w: Word | undefined): w is Word => w !== undefined && w.literal;
    const runScript = async (script: Word | undefined, what: string): Promise<void> => {
      if (!literal(script)) return void push(`${what} runs a script known only when it runs`);
      push(null);
      await this.script(script.text, [...all, what], depth);
    };

    // What feeds its stdin code: a pipe, a here-string or here-doc, a `<` file.
    const fed = at.source.redirects.find((r) => r.kind === "herestring" || r.kind === "heredoc" || (r.kind === "file" && r.op === "<"));
    const stdin = at.source.piped || fed !== undefined || args.length === 0;
    if (SHELLS.has(name)) {
      const c = args.findIndex((w) => /^-[A-Za-z]*c[A-Za-z]*$/.test(w.text));
      if (c >= 0) {
        // A shell that is the command's own first word: the parser already read (or refused) its script.
        if (at.source.words[0] === u.head) return void push(null);
        return runScript(
          args.slice(c + 1).find((w) => !w.text.startsWith("-") && !w.text.startsWith("+")),
          `${name} -c`,
        );
      }
      const operand = args.find((w) => !w.text.startsWith("-") && !w.text.startsWith("+"));
      if (operand && !args.some((w) => /^-[A-Za-z]*s/.test(w.text))) {
        return void push(`${name} runs the script ${operand.text}, whose commands the line does not show`);
      }
      if (args.length === 1 && INFO.test(args[0]?.text ?? "")) return void push(null);
      if (fed && fed.kind !== "file" && fed.target?.literal) return runScript(fed.target, `${name} <<<`);
      return void push(`${name} runs commands it reads from stdin (a pipe, a here-string, a here-doc or a file)`);
    }
    switch (name) {
      case "eval":
        if (args.length > 0 && args.every((w) => w.literal)) return runScript(word(args.map((w) => w.text).join(" ")), "eval");
        return void push("eval runs text known only when it runs");
      case "source":
      case ".":
        return void push(`${name} runs the commands of ${args[0]?.text ?? "a file"} in this shell`);
      case "watch": {
        const rest = args.filter((w, i) => !w.text.startsWith("-") && !/^-(?:n|d|-interval)$/.test(args[i - 1]?.text ?? ""));
        return runScript(rest.every((w) => w.literal) ? word(rest.map((w) => w.text).join(" ")) : undefined, "watch");
      }
      case "trap": {
        const body = args.find((w) => !/^-[lp]$/.test(w.text));
        if (!body || body.text === "-" || body.text === "" || (body.literal && /^[A-Z0-9]+$/.test(body.text))) return void push(null);
        return runScript(body, "trap");
      }
      case "su":
      case "runuser":
      case "script":
      case "flock": {
        // `-c SCRIPT`, `-qc SCRIPT` (options joined before it), `-cSCRIPT`, `--command=SCRIPT`.
        for (const [i, w] of args.entries()) {
          if (w.text === "--command") return runScript(args[i + 1], `${name} -c`);
          if (w.text.startsWith("--command=")) return runScript(w.literal ? word(w.text.slice(10)) : undefined, `${name} -c`);
          const joined = /^-[A-Za-z]*c(.*)$/s.exec(w.text);
          if (joined && !w.text.startsWith("--")) {
            return runScript(joined[1] ? (w.literal ? word(joined[1]) : undefined) : args[i + 1], `${name} -c`);
          }
        }
        return void push(null);
      }
      case "parallel":
        return void push("parallel runs commands it builds when it runs");
      case "find": {
        push(null);
        for (let i = 0; i < args.length; i++) {
          if (!FIND_EXEC.test(args[i]?.text ?? "")) continue;
          const end = args.findIndex((w, j) => j > i && (w.text === ";" || w.text === "+"));
          const body = args.slice(i + 1, end < 0 ? undefined : end);
          await this.command(body, at, [...all, `find ${args[i]?.text}`], depth + 1);
          if (end < 0) break;
          i = end;
        }
        return;
      }
      case "git":
        return this.git(args, at, all, depth, push);
    }
    if (AWKS.has(name)) {
      if (args.some((w) => w.text === "-f" || w.text.startsWith("--file")))
        return void push(`${name} runs a program file the line does not show`);
      const program = args.find((w, i) => !w.text.startsWith("-") && !/^-[vF]$/.test(args[i - 1]?.text ?? ""));
      if (program && !program.literal) return void push(`${name} runs a program known only when it runs`);
      if (program && /\bsystem\s*\(|\|/.test(program.text)) return void push(`${name} runs commands of its own (system() or a pipe)`);
      return void push(null);
    }
    if (name === "sed") {
      if (args.some((w) => /^-[A-Za-z]*f/.test(w.text) || w.text.startsWith("--file")))
        return void push("sed runs a script file the line does not show");
      const script = args.filter((w) => !w.text.startsWith("-"));
      if (script.some((w) => /(?:^|[;\n{}]\s*)e(?:\s|$|;)|^s(.).*\1.*\1[gIiMmp0-9w]*e/.test(w.text))) {
        return void push("sed's e command runs what it reads as a command");
      }
      return void push(null);
    }
    const interpreter = INTERPRETERS[/^python[0-9.]*$/.test(name) ? "python" : name];
    if (interpreter) {
      const inline = args.some(
        (w) =>
          interpreter.long?.some((l) => w.text === l || w.text.startsWith(`${l}=`)) ||
          (/^-[A-Za-z]+$/.test(w.text) && !w.text.startsWith("--") && interpreter.inline.some((f) => w.text.includes(f))),
      );
      if (inline || (name === "deno" && args[0]?.text === "eval")) return void push(`${name} runs inline code`);
      const operand = args.find((w) => !w.text.startsWith("-") || w.text === "-");
      const info = args.length > 0 && args.every((w) => INFO.test(w.text));
      if (operand?.text === "-" || (!operand && stdin && !info && !args.some((w) => w.text === "-m"))) {
        return void push(`${name} runs code it reads from stdin`);
      }
      // A file, a module (`-m pytest`) or the project's tests (`node --test`): code the line does not show.
      return void push(info ? null : `${name} runs ${operand?.text ?? "code"} the line does not show`);
    }
    push(null, chdirs);
  }

  private async git(
    args: Word[],
    at: { source: SimpleCommand; line: ParsedLine; vars: ReadonlyMap<string, readonly Word[]> },
    via: string[],
    depth: number,
    push: (unknown: string | null, chdir?: Word[]) => NormalCommand,
  ): Promise<void> {
    const chdir: Word[] = [];
    let unknown: string | null = null;
    const scripts: string[] = [];
    for (let i = 0; i < args.length; i++) {
      const w = args[i] as Word;
      if (w.text === "-C" && args[i + 1]) chdir.push(args[i + 1] as Word);
      if (w.text === "--config-env" || w.text.startsWith("--config-env="))
        unknown ??= "git --config-env sets configuration from the environment";
      if (w.text !== "-c") continue;
      const setting = args[i + 1];
      if (!setting) break;
      const key = setting.text.split("=")[0] as string;
      if (!setting.literal) unknown ??= "git -c sets configuration known only when it runs";
      else if (GIT_RUNS.test(key)) {
        unknown ??= `git -c ${key} makes git run a program`;
        const value = setting.text.slice(key.length + 1);
        if (value.startsWith("!")) scripts.push(value.slice(1));
      }
    }
    // `git -C . push` is `git push` to a rule: the global options go from the spelling.
    const command = push(unknown, chdir);
    let sub = 0;
    while (sub < args.length && args[sub]?.text.startsWith("-")) sub += GIT_VALUES.has(args[sub]?.text ?? "") ? 2 : 1;
    command.text = ["git", ...args.slice(sub).map((w) => w.text)].join(" ");
    for (const script of scripts) await this.script(script, [...via, "git alias"], depth);
  }
}

/** The commands a parsed line runs, read through wrappers and indirections, and what cannot be read. */
export async function normalizeLine(line: ParsedLine): Promise<NormalLine> {
  const n = new Normalizer();
  await n.line(line, [], 0);
  return n.out;
}
