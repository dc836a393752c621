import picomatch from "picomatch";
import { TOOL_KINDS } from "../../tool/kinds.js";

// A hook entry's `matcher`: which calls (or which start sources, compact triggers) it runs for.
//   absent, "" or "*"       everything
//   "bash|Edit"             names, exact: a tool's id or Claude Code's name for it (Bash = bash)
//   "kind:execute"          a tool kind (in a list too: "kind:edit|write")
//   "mcp__github__*"        a glob on names (picomatch)
//   "mcp__.*", "^Web"       anything with a regex character (. ( ) [ ] { } ^ $ + \) is a
//                           JavaScript regex tested against each name, unanchored, as Claude Code does

/** What a matcher looks at: a tool's names (id, Claude's name) and kind, or the event's one word. */
export interface MatchSubject {
  names: readonly string[];
  kind?: string;
}

export type Matcher = (subject: MatchSubject) => boolean;

const REGEX_CHARS = /[.()[\]{}^$+\\]/;
const KINDS: ReadonlySet<string> = new Set(TOOL_KINDS);

/** A matcher as a function, or why it cannot be one. */
export function compileMatcher(matcher: string | undefined): { match: Matcher } | { error: string } {
  const text = matcher?.trim() ?? "";
  if (text === "" || text === "*") return { match: () => true };
  if (REGEX_CHARS.test(text)) {
    let regex: RegExp;
    try {
      regex = new RegExp(text);
    } catch (err) {
      return { error: `matcher ${JSON.stringify(matcher)} is not a valid regular expression (${(err as Error).message})` };
    }
    return { match: (s) => s.names.some((name) => regex.test(name)) };
  }
  const tests: Matcher[] = [];
  for (const alternative of text.split("|").map((a) => a.trim())) {
    if (alternative === "") return { error: `matcher ${JSON.stringify(matcher)} has an empty alternative` };
    if (alternative.startsWith("kind:")) {
      const kind = alternative.slice(5);
      if (!KINDS.has(kind)) return { error: `matcher ${JSON.stringify(matcher)}: ${kind} is not a tool kind (${TOOL_KINDS.join(", ")})` };
      tests.push((s) => s.kind === kind);
    } else if (/[*?]/.test(alternative)) {
      const glob = picomatch(alternative);
      tests.push((s) => s.names.some((name) => glob(name)));
    } else tests.push((s) => s.names.includes(alternative));
  }
  return { match: (s) => tests.some((test) => test(s)) };
}
