import type { PolicyCall } from "./call.js";
import { displayPath } from "../tool/paths.js";
import type { ParsedLine } from "./bash-parse.js";
import { bashCommandPrefix } from "./command-prefix.js";
import type { PermissionRule } from "./rules.js";
import type { SourcedRule } from "./ruleset.js";

/**
 * What an "always" answer to a call covers: permission rules (tool id, pattern) that the answer
 * adds with its action, and a label for the permission options. Narrow on purpose: never all of bash.
 * - a bash line that is one plain command: its arity-aware prefix from the parser (`git status`,
 *   `npm run test`, `docker compose up`), as two patterns, the prefix alone and the prefix followed
 *   by a space and anything (so `git status` never covers `git statusfoo`);
 * - any other bash line (compound, an interpreter or wrapper, a redirection): each of its simple
 *   commands exactly, plus the files it names outside the workspace;
 * - a file edit: the absolute paths it changes;
 * - a fetch (web_fetch): each host it reaches, exactly;
 * - any other tool: the tool (`*`).
 */
export interface AlwaysScope {
  rules: Omit<PermissionRule, "action">[];
  label: string;
}

/** A command line as a pattern that matches only itself (`*`, `?` and `\` made plain). */
export function exactCommandPattern(command: string): string {
  return command.trim().replace(/[\\*?]/g, "\\$&");
}

/** A path as a picomatch pattern that matches only itself. */
function exactPathPattern(p: string): string {
  return p.replace(/[\\*?[\]{}()!+@]/g, "\\$&");
}

/** A host as a pattern that matches only itself. */
function exactHostPattern(host: string): string {
  return host.replace(/[\\*?[\]{}()!+@]/g, "\\$&");
}

const short = (text: string) => (text.length > 60 ? `${text.slice(0, 57)}…` : text);

export interface CallFacts {
  /** Each command line, parsed (null: it does not parse). */
  lines: ReadonlyMap<string, ParsedLine | null>;
  /** Files the lines name outside the workspace. */
  outside: readonly { path: string; access: "read" | "write" }[];
}

/** The scope an "always" answer to this call would remember. */
export function alwaysScope(call: PolicyCall, facts: CallFacts, workspace: string): AlwaysScope {
  const tool = call.tool.id;
  const commands = call.targets.commands;
  if (commands.length > 0) {
    const rules: AlwaysScope["rules"] = [];
    const labels: string[] = [];
    for (const line of commands) {
      const parsed = facts.lines.get(line) ?? null;
      const prefix = parsed && bashCommandPrefix(parsed);
      if (prefix) {
        const head = exactCommandPattern(prefix.join(" "));
        rules.push({ permission: tool, pattern: head }, { permission: tool, pattern: `${head} *` });
        labels.push(`\`${prefix.join(" ")} …\` commands`);
      } else {
        const units = parsed?.commands.length ? parsed.commands.map((c) => c.text.trim()) : [line.trim()];
        for (const unit of new Set(units)) rules.push({ permission: tool, pattern: exactCommandPattern(unit) });
        labels.push(`exactly \`${short(line.trim())}\``);
      }
    }
    for (const f of facts.outside) if (f.access === "write") rules.push({ permission: tool, pattern: exactPathPattern(f.path) });
    return { rules, label: labels.join(", ") };
  }
  const kind = call.tool.kind;
  if ((kind === "edit" || kind === "delete" || kind === "move") && call.targets.paths.length > 0) {
    const paths = call.targets.paths;
    const label =
      paths.length === 1 ? `${tool} on ${displayPath(paths[0] as string, workspace)}` : `${tool} on these ${paths.length} files`;
    return { rules: paths.map((p) => ({ permission: tool, pattern: exactPathPattern(p) })), label };
  }
  // A fetch: the hosts it reaches, each exactly.
  const hosts = [...new Set(call.targets.hosts.map((h) => h.toLowerCase()))];
  if (hosts.length > 0 && call.targets.paths.length === 0) {
    return {
      rules: hosts.map((h) => ({ permission: tool, pattern: exactHostPattern(h) })),
      label: `fetches from ${hosts.join(", ")}`,
    };
  }
  return { rules: [{ permission: tool, pattern: "*" }], label: `the ${tool} tool` };
}

/**
 * The "always" answers of one session, as permission rules of source `session`: the ruleset
 * evaluates them with the manifest's, the user's and the project's (specificity, a manifest
 * deny wins). A remembered reject is a session deny rule.
 */
export class SessionRules {
  private readonly rules: SourcedRule[] = [];

  remember(scope: AlwaysScope, action: "allow" | "deny"): readonly SourcedRule[] {
    const added = scope.rules
      .filter((r) => !this.rules.some((o) => o.permission === r.permission && o.pattern === r.pattern && o.action === action))
      .map((r): SourcedRule => ({ ...r, action, source: "session" }));
    this.rules.push(...added);
    return added;
  }

  list(): readonly SourcedRule[] {
    return this.rules;
  }
}
