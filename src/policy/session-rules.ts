import { commandPrefix, matchesPrefix } from "./command-prefix.js";
import { targetPath, type PolicyCall } from "./modes.js";

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

function commandOf(call: PolicyCall): string | null {
  return typeof call.args.command === "string" ? call.args.command : null;
}

/** The scope an "always" answer to this call would remember. */
export function alwaysScope(call: PolicyCall, workspace: string): RuleScope {
  const command = commandOf(call);
  if (command !== null && call.tool.kind === "execute") {
    const prefix = commandPrefix(command);
    return prefix ? { kind: "command_prefix", prefix } : { kind: "exact_command", command: command.trim() };
  }
  if (call.tool.kind === "edit" || call.tool.kind === "delete" || call.tool.kind === "move") {
    const target = targetPath(call, workspace);
    if (target) return { kind: "path", path: target };
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
      const rel = scope.path.startsWith(workspace + "/") ? scope.path.slice(workspace.length + 1) : scope.path;
      return `${toolId} on ${rel}`;
    }
    case "tool":
      return `the ${toolId} tool`;
  }
}

function covers(rule: SessionRule, call: PolicyCall, workspace: string): boolean {
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
      return targetPath(call, workspace) === scope.path;
    case "tool":
      return true;
  }
}

/** The "always" answers of one session. A remembered reject wins over a remembered allow. */
export class SessionRules {
  private readonly rules: SessionRule[] = [];

  constructor(private readonly workspace: string) {}

  remember(call: PolicyCall, action: "allow" | "deny"): SessionRule {
    const rule: SessionRule = { toolId: call.tool.id, scope: alwaysScope(call, this.workspace), action };
    this.rules.push(rule);
    return rule;
  }

  lookup(call: PolicyCall): "allow" | "deny" | null {
    const matching = this.rules.filter((r) => covers(r, call, this.workspace));
    if (matching.some((r) => r.action === "deny")) return "deny";
    return matching.length ? "allow" : null;
  }

  list(): readonly SessionRule[] {
    return this.rules;
  }
}
