import type { PolicyCall } from "./call.js";
import { displayPath } from "../tool/paths.js";
import { commandPrefix, matchesPrefix } from "./command-prefix.js";

/** What an "always" answer covers. Narrow on purpose: never all of bash. */
export type RuleScope =
  | { kind: "command_prefix"; prefix: string[] }
  | { kind: "exact_command"; command: string }
  | { kind: "path"; path: string }
  | { kind: "tool" };

export interface SessionRule {
  toolId: string;
  scope: RuleScope;
  action: "allow" | "deny";
}

/** The one command line a call runs, when it runs exactly one. */
function commandOf(call: PolicyCall): string | null {
  return call.targets.commands.length === 1 ? (call.targets.commands[0] as string) : null;
}

/** The scope an "always" answer to this call would remember. */
export function alwaysScope(call: PolicyCall): RuleScope {
  const command = commandOf(call);
  if (command !== null && call.tool.kind === "execute") {
    const prefix = commandPrefix(command);
    return prefix ? { kind: "command_prefix", prefix } : { kind: "exact_command", command: command.trim() };
  }
  if (call.tool.kind === "edit" || call.tool.kind === "delete" || call.tool.kind === "move") {
    const [only, ...more] = call.targets.paths;
    if (only !== undefined && more.length === 0) return { kind: "path", path: only };
  }
  return { kind: "tool" };
}

/** A short human description of a scope, for permission option labels. */
export function describeScope(toolId: string, scope: RuleScope, workspace: string): string {
  switch (scope.kind) {
    case "command_prefix":
      return `\`${scope.prefix.join(" ")} …\` commands`;
    case "exact_command": {
      const shown = scope.command.length > 60 ? `${scope.command.slice(0, 57)}…` : scope.command;
      return `exactly \`${shown}\``;
    }
    case "path": {
      return `${toolId} on ${displayPath(scope.path, workspace)}`;
    }
    case "tool":
      return `the ${toolId} tool`;
  }
}

function covers(rule: SessionRule, call: PolicyCall): boolean {
  if (rule.toolId !== call.tool.id) return false;
  const { scope } = rule;
  switch (scope.kind) {
    case "command_prefix": {
      const command = commandOf(call);
      return command !== null && matchesPrefix(command, scope.prefix);
    }
    case "exact_command":
      return commandOf(call)?.trim() === scope.command;
    case "path":
      return call.targets.paths.length > 0 && call.targets.paths.every((p) => p === scope.path);
    case "tool":
      return true;
  }
}

/** The "always" answers of one session. A remembered reject wins over a remembered allow. */
export class SessionRules {
  private readonly rules: SessionRule[] = [];

  remember(call: PolicyCall, action: "allow" | "deny"): SessionRule {
    const rule: SessionRule = { toolId: call.tool.id, scope: alwaysScope(call), action };
    this.rules.push(rule);
    return rule;
  }

  lookup(call: PolicyCall): "allow" | "deny" | null {
    const matching = this.rules.filter((r) => covers(r, call));
    if (matching.some((r) => r.action === "deny")) return "deny";
    return matching.length ? "allow" : null;
  }

  list(): readonly SessionRule[] {
    return this.rules;
  }
}
