import { readdirSync } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import type { Word } from "../bash-parse.js";
import { wordPath, type ShellCommand } from "./shell.js";

// The files a word names, as the shell would expand it before the command runs: variables the
// line set literally (`F=~/.ssh/id_rsa; cat $F`), `$HOME`, braces (`~/.{ssh,aws}`), and globs
// matched against the file system (`cat ~/.ss?/id_*`), under the command's working directory
// and any directory it is told to work in (`git -C D`, `tar -C D`). For the secret checks.

/** Most words a word may expand to before it counts as unknown. */
const MAX_EXPANSIONS = 256;

const VARIABLE = /\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** The texts a word stands for once the line's literal variables are put in; null when some other expansion remains. */
function substitute(word: Word, vars: ReadonlyMap<string, readonly Word[]>, home: string): string[] | null {
  if (word.literal) return [word.text];
  let texts = [word.text.replace(/["']/g, "")];
  // A value may name another variable (`D=$HOME/.ssh`): a few rounds, then give up.
  for (let round = 0; ; round++) {
    if (round > 8) return null;
    const next: string[] = [];
    let changed = false;
    for (const text of texts) {
      const m = VARIABLE.exec(text);
      VARIABLE.lastIndex = 0;
      if (!m) {
        next.push(text);
        continue;
      }
      changed = true;
      const name = (m[1] ?? m[2]) as string;
      const values = name === "HOME" && !vars.has("HOME") ? [{ text: home, literal: true, tilde: false }] : vars.get(name);
      if (!values?.length) return null;
      for (const v of values) {
        const raw = v.literal ? v.text : v.text.replace(/["']/g, "");
        const value = v.tilde && (raw === "~" || raw.startsWith("~/")) ? path.join(home, raw.slice(1)) : raw;
        next.push(text.slice(0, m.index) + value + text.slice(m.index + m[0].length));
      }
    }
    if (next.length > MAX_EXPANSIONS) return null;
    texts = next;
    if (!changed) break;
  }
  return texts.some((t) => /[$`]|<\(|>\(/.test(t)) ? null : texts;
}

/** `a{b,c}d` → `abd`, `acd` (nested braces too); a text without a list is itself. */
function braces(text: string): string[] {
  const open = text.search(/\{[^{}]*,[^{}]*\}/);
  if (open < 0) return [text];
  const close = text.indexOf("}", open);
  const parts = text.slice(open + 1, close).split(",");
  return parts.flatMap((p) => braces(text.slice(0, open) + p + text.slice(close + 1))).slice(0, MAX_EXPANSIONS);
}

/** The existing paths a glob (absolute) matches, one segment at a time, as bash would (no dot files unless the pattern says so). */
function glob(pattern: string): string[] {
  const segments = pattern.split(path.sep).filter(Boolean);
  let found: string[] = [path.sep];
  for (const segment of segments) {
    const next: string[] = [];
    const globbed = /[*?[]/.test(segment);
    for (const dir of found) {
      if (!globbed) {
        next.push(path.join(dir, segment));
        continue;
      }
      let names: string[];
      try {
        names = readdirSync(dir);
      } catch {
        continue;
      }
      const matches = picomatch(segment, { dot: segment.startsWith(".") });
      for (const name of names) if (matches(name)) next.push(path.join(dir, name));
    }
    if (next.length > MAX_EXPANSIONS) return next.slice(0, MAX_EXPANSIONS);
    found = next;
  }
  return found;
}

/**
 * The paths a word of the command may name: each expansion, resolved under each directory the
 * command may run in; a glob gives the folder it expands under and every existing match.
 * `unknown`: some expansion could not be worked out (another variable, a substitution, a
 * relative word under a directory only known when it runs).
 */
export function wordPaths(word: Word, command: ShellCommand, home: string): { paths: string[]; unknown: boolean } {
  const texts = substitute(word, command.vars, home);
  if (!texts) return { paths: [], unknown: true };
  const paths = new Set<string>();
  let unknown = false;
  for (const text of texts.flatMap((t) => (word.literal ? [t] : braces(t)))) {
    const plain: Word = { text, literal: word.literal || !/[*?[]/.test(text), tilde: word.tilde || text.startsWith("~") };
    for (const dir of [command.cwd, ...command.dirs]) {
      const named = wordPath(plain, dir, home);
      if (!named) {
        unknown = true;
        continue;
      }
      paths.add(named.path);
      if (named.exact) continue;
      // The glob itself, against the file system: `~/.ss?/id_*` finds ~/.ssh/id_rsa.
      let pattern = text.startsWith("~") ? path.join(home, text.slice(1)) : text;
      if (!path.isAbsolute(pattern)) pattern = path.resolve(dir ?? "/", pattern);
      for (const match of glob(pattern)) paths.add(match);
    }
  }
  return { paths: [...paths], unknown };
}
