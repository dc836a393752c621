import type { AvailableCommand } from "@agentclientprotocol/sdk";
import { BUILTIN_COMMANDS, firstSentence } from "../agent/commands.js";
import type { ToolRegistry } from "../host/registry.js";

/** Every tool is a command (`/<tool> <json>` or the tool's plain-text shorthand), then the built-in ones, then each skill. */
export function availableCommands(
  registry: ToolRegistry,
  skills: readonly { name: string; description: string }[] = [],
): AvailableCommand[] {
  const tools = registry.list().map(({ tool }) => ({
    name: tool.id,
    description: firstSentence(tool.description),
    input: { hint: tool.shorthand ? `${tool.shorthandHint ?? "text"} or a JSON object` : "a JSON object of arguments" },
  }));
  const builtins = BUILTIN_COMMANDS.map(({ name, description, hint }) => ({ name, description, input: hint ? { hint } : null }));
  const taken = new Set([...tools, ...builtins].map((c) => c.name));
  const skillCommands = skills
    .filter((s) => !taken.has(s.name))
    .map((s) => ({ name: s.name, description: `Skill: ${firstSentence(s.description)}`, input: { hint: "what to do (optional)" } }));
  return [...tools, ...builtins, ...skillCommands];
}
