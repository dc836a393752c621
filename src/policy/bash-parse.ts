import type { Node } from "web-tree-sitter";
import { bashParser } from "./bash-wasm.js";

/** One word of a command line, as the shell would see it before running it. */
export interface Word {
  /** The word after quote removal when `literal`; its source text otherwise. */
  text: string;
  /** Fixed before the line runs: no `$VAR`, `$(…)`, backticks, `<(…)`, arithmetic, globs or braces. */
  literal: boolean;
  /** Starts with an unquoted `~`, which the shell replaces with a home directory. */
  tilde: boolean;
}

/** `NAME=value`, before a command (`FOO=1 make`) or on its own (`PATH=/x; ls`). */
export interface Assignment {
  name: string;
  value: Word;
}

/**
 * A redirection. `file`: `>`, `>>`, `<`, `&>`, `>|`, `<>`, `>&` with a file target; `fd`: a
 * descriptor copy or close (`2>&1`, `>&-`); `heredoc`: `<<`/`<<-` (its target is the body fed in,
 * literal when the delimiter is quoted or nothing in it expands); `herestring`: `<<<` (its target
 * is the text fed in, not a file).
 */
export interface Redirect {
  kind: "file" | "fd" | "heredoc" | "herestring";
  op: string;
  /** The descriptor written before the operator (`2>`), when there is one. */
  fd: number | null;
  target: Word | null;
}

/** One simple command of the line: what the shell would execute, with its own redirections. */
export interface SimpleCommand {
  /** Its source text. */
  text: string;
  /** Leading `NAME=value` words (the command's environment). */
  assignments: Assignment[];
  /** The command name then its arguments. */
  words: Word[];
  /** The words' texts when all of them are literal, else null. */
  argv: string[] | null;
  redirects: Redirect[];
  /** Inside `$(…)`, backticks, `<(…)`/`>(…)`, or the script of a `bash -c` / `sh -c`. */
  nested: boolean;
  /** Its stdin is a pipe (`… | sh`): it is not the first command of a pipeline. */
  piped: boolean;
}

/** What a command line would run. */
export interface ParsedLine {
  /** Every simple command, outer ones before the ones substituted into them. */
  commands: SimpleCommand[];
  /** Assignments standing alone as statements (they change the shell for what follows). */
  assignments: Assignment[];
  /** Every redirection of the line, in source order. */
  redirects: Redirect[];
  /** Names of shell functions the line defines (a later word may call one). */
  functions: string[];
}

const SHELLS = new Set(["bash", "sh", "zsh", "dash", "ksh"]);
const MAX_SCRIPT_DEPTH = 3;

/**
 * Parses a bash command line into its simple commands across pipes, `&&`, `||`, `;`, subshells,
 * groups, control structures, substitutions and here-docs, and the scripts given to `bash -c`.
 * Returns null when the line does not parse cleanly: the caller must then ask.
 */
export function parseBash(line: string): Promise<ParsedLine | null> {
  // The rules, the watchdog and the approval each read the same line of one call: parse it once.
  let parsed = recent.get(line);
  if (parsed) {
    recent.delete(line);
  } else {
    parsed = bashParser().then((parser) => parseWith(parser, line, 0));
    // A failed load is not kept: the next call tries again.
    parsed.catch(() => recent.delete(line));
  }
  recent.set(line, parsed);
  if (recent.size > RECENT_LINES) recent.delete(recent.keys().next().value as string);
  return parsed;
}

/** The last lines parsed, oldest first; their results are shared, so callers must not change them. */
const recent = new Map<string, Promise<ParsedLine | null>>();
const RECENT_LINES = 64;

function parseWith(parser: Awaited<ReturnType<typeof bashParser>>, line: string, depth: number): ParsedLine | null {
  const tree = parser.parse(line);
  if (!tree) return null;
  try {
    const root = tree.rootNode;
    if (root.hasError) return null;
    const out: ParsedLine = { commands: [], assignments: [], redirects: [], functions: [] };
    const byNode = new Map<number, SimpleCommand>();
    const redirected: Node[] = [];
    const pipelines: Node[] = [];
    walk(root, depth > 0, out, byNode, redirected, pipelines);
    for (const pipeline of pipelines) {
      for (const part of named(pipeline).slice(1)) {
        for (const n of directCommands(part, false)) {
          const command = byNode.get(n.id);
          if (command) command.piped = true;
        }
      }
    }
    for (const statement of redirected) {
      const body = statement.childForFieldName("body");
      const redirects = statement.childrenForFieldName("redirect").flatMap((n) => (n ? redirectsOf(n) : []));
      if (!body) continue;
      for (const target of directCommands(body, true)) byNode.get(target.id)?.redirects.push(...redirects);
    }
    out.redirects = collectRedirects(root);
    for (const command of [...out.commands]) {
      const script = shellScript(command);
      if (script === undefined) continue;
      if (script === null || depth >= MAX_SCRIPT_DEPTH) return null;
      const inner = parseWith(parser, script, depth + 1);
      if (!inner) return null;
      for (const c of inner.commands) c.nested = true;
      out.commands.push(...inner.commands);
      out.assignments.push(...inner.assignments);
      out.redirects.push(...inner.redirects);
      out.functions.push(...inner.functions);
    }
    return out;
  } finally {
    tree.delete();
  }
}

function named(node: Node): Node[] {
  return node.namedChildren.filter((n): n is Node => n !== null);
}

function walk(
  node: Node,
  nested: boolean,
  out: ParsedLine,
  byNode: Map<number, SimpleCommand>,
  redirected: Node[],
  pipelines: Node[],
): void {
  switch (node.type) {
    case "command":
    case "declaration_command":
    case "unset_command": {
      const command = toCommand(node, nested);
      out.commands.push(command);
      byNode.set(node.id, command);
      break;
    }
    case "variable_assignment": {
      const parent = node.parent?.type;
      if (parent !== "command" && parent !== "declaration_command") out.assignments.push(toAssignment(node));
      break;
    }
    case "function_definition": {
      const name = node.childForFieldName("name");
      if (name) out.functions.push(name.text);
      break;
    }
    case "redirected_statement":
      redirected.push(node);
      break;
    case "pipeline":
      pipelines.push(node);
      break;
  }
  const inner = nested || node.type === "command_substitution" || node.type === "process_substitution";
  for (const child of named(node)) walk(child, inner, out, byNode, redirected, pipelines);
}

/** The commands a redirection written after `body` applies to. */
function directCommands(body: Node, top: boolean): Node[] {
  switch (body.type) {
    case "command":
    case "declaration_command":
    case "unset_command":
      return [body];
    case "command_substitution":
    case "process_substitution":
      return [];
    case "redirected_statement": {
      const inner = body.childForFieldName("body");
      return inner ? directCommands(inner, top) : [];
    }
    case "list":
    case "pipeline":
      // The grammar hangs `a && b > f` and `a | b > f` off the whole list; bash gives it to `b`.
      if (top) {
        const last = named(body)
          .filter((n) => !n.type.endsWith("redirect") && n.type !== "comment")
          .at(-1);
        return last ? directCommands(last, true) : [];
      }
  }
  return named(body).flatMap((n) => directCommands(n, false));
}

function collectRedirects(node: Node): Redirect[] {
  const found: Redirect[] = [];
  const visit = (n: Node): void => {
    if (n.type === "file_redirect" || n.type === "heredoc_redirect" || n.type === "herestring_redirect") {
      found.push(toRedirect(n));
    }
    for (const child of named(n)) visit(child);
  };
  visit(node);
  return found;
}

function toCommand(node: Node, nested: boolean): SimpleCommand {
  const assignments: Assignment[] = [];
  const words: Word[] = [];
  const redirects: Redirect[] = [];
  if (node.type !== "command") {
    // `export`, `declare`, `local`, `readonly`, `typeset`, `unset`: the keyword, then its operands.
    const keyword = node.child(0);
    if (keyword) words.push({ text: keyword.text, literal: true, tilde: false });
  }
  for (const child of named(node)) {
    if (child.type === "variable_assignment") {
      if (node.type === "command") assignments.push(toAssignment(child));
      else words.push(assignmentWord(child));
    } else if (child.type.endsWith("redirect")) {
      redirects.push(...redirectsOf(child));
    } else if (child.type === "command_name") {
      const word = named(child)[0];
      words.push(word ? toWord(word) : { text: child.text, literal: false, tilde: false });
    } else if (child.type !== "comment") {
      words.push(toWord(child));
    }
  }
  const argv = words.every((w) => w.literal && !w.tilde) ? words.map((w) => w.text) : null;
  return { text: node.text, assignments, words, argv, redirects, nested, piped: false };
}

function toAssignment(node: Node): Assignment {
  const name = node.childForFieldName("name")?.text ?? node.text.split("=")[0] ?? "";
  const value = node.childForFieldName("value");
  return { name, value: value ? toWord(value) : { text: "", literal: true, tilde: false } };
}

function assignmentWord(node: Node): Word {
  const { name, value } = toAssignment(node);
  const op = node.text.slice(name.length).startsWith("+=") ? "+=" : "=";
  return { text: value.literal ? `${name}${op}${value.text}` : node.text, literal: value.literal, tilde: false };
}

const OPERATOR = /^(?:&>>|&>|>>|>\||>&|<&|<>|<<<|<<-|<<|>|<)$/;

/** A redirection, and those the grammar nests in a here-doc's (`cat <<EOF > out`). */
function redirectsOf(node: Node): Redirect[] {
  const nested = named(node).filter((n) => n.type.endsWith("redirect"));
  return [toRedirect(node), ...nested.flatMap(redirectsOf)];
}

function toRedirect(node: Node): Redirect {
  let op = "";
  for (let i = 0; i < node.childCount; i++) {
    const child = node.child(i);
    if (child && !child.isNamed && OPERATOR.test(child.type)) {
      op = child.type;
      break;
    }
  }
  const descriptor = node.childForFieldName("descriptor");
  const fd = descriptor ? Number(descriptor.text) : null;
  if (node.type === "heredoc_redirect") return { kind: "heredoc", op: op || "<<", fd, target: heredocBody(node) };
  const targetNode =
    node.childForFieldName("destination") ?? named(node).find((n) => n.type !== "file_descriptor" && n.type !== "comment") ?? null;
  const target = targetNode ? toWord(targetNode) : null;
  if (node.type === "herestring_redirect") return { kind: "herestring", op: op || "<<<", fd, target };
  const copies = (op === ">&" || op === "<&") && target !== null && /^(?:\d+|-)$/.test(target.text);
  return { kind: copies ? "fd" : "file", op, fd, target };
}

/** A here-doc's body as the text fed in: literal when its delimiter is quoted or nothing in it expands. */
function heredocBody(node: Node): Word | null {
  const body = named(node).find((n) => n.type === "heredoc_body");
  if (!body) return null;
  const quoted = /['"\\]/.test(named(node).find((n) => n.type === "heredoc_start")?.text ?? "");
  const literal = quoted || named(body).every((n) => n.type === "heredoc_content");
  return { text: body.text, literal, tilde: false };
}

function toWord(node: Node): Word {
  const tilde = (node.type === "word" ? node : node.type === "concatenation" ? named(node)[0] : undefined)?.text.startsWith("~") ?? false;
  const piece = wordText(node);
  return piece === null ? { text: node.text, literal: false, tilde } : { text: piece, literal: true, tilde };
}

/** A static word's text after quote removal, or null when the shell expands something in it. */
function wordText(node: Node): string | null {
  const text = node.text;
  switch (node.type) {
    case "word":
      if (hasGlobOrBrace(text)) return null;
      return text.replace(/\\(\n|.)/gs, (_, c: string) => (c === "\n" ? "" : c));
    case "number":
      return text;
    case "raw_string":
      return text.slice(1, -1);
    case "string":
      if (named(node).some((n) => n.type !== "string_content")) return null;
      return text.slice(1, -1).replace(/\\([$`"\\\n])/g, (_, c: string) => (c === "\n" ? "" : c));
    case "ansi_c_string":
      return ansiC(text.slice(2, -1));
    case "concatenation": {
      // The grammar splits `a{b,c}` into words `a`, `{`, `b,c`, `}`, and `$"…"` has a bare `$`.
      const parts = node.children.filter((n): n is Node => n !== null);
      if (parts.some((n) => !n.isNamed || (n.type === "word" && /^[{}]$/.test(n.text)))) return null;
      let joined = "";
      for (const part of parts) {
        const piece = wordText(part);
        if (piece === null) return null;
        joined += piece;
      }
      return joined;
    }
    default:
      return null;
  }
}

function hasGlobOrBrace(raw: string): boolean {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i];
    if (c === "\\") i++;
    else if (c === "*" || c === "?" || c === "[") return true;
    else if (c === "{" && /[,]|\.\./.test(raw.slice(i))) return true;
  }
  return false;
}

const ANSI_ESCAPES: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", "'": "'", '"': '"' };

function ansiC(inner: string): string | null {
  let ok = true;
  const text = inner.replace(/\\(.)/gs, (_, c: string) => {
    const decoded = ANSI_ESCAPES[c];
    if (decoded === undefined) ok = false;
    return decoded ?? "";
  });
  return ok ? text : null;
}

/**
 * The script a `bash -c SCRIPT` (sh, zsh, dash, ksh) command runs: undefined when the command is
 * not one, null when the script is not a literal word.
 */
function shellScript(command: SimpleCommand): string | null | undefined {
  const [name, ...rest] = command.words;
  if (!name?.literal || !SHELLS.has(name.text.split("/").at(-1) ?? "")) return undefined;
  let sawC = false;
  for (const word of rest) {
    if (!word.literal) return sawC ? null : undefined;
    if (word.text === "--") continue;
    if (/^[-+][A-Za-z]+$/.test(word.text)) {
      if (word.text.startsWith("-") && word.text.includes("c")) sawC = true;
      continue;
    }
    if (/^[-+]o$/.test(word.text)) continue;
    return sawC ? word.text : undefined;
  }
  return sawC ? null : undefined;
}
