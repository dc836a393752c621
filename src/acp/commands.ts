import type { AvailableCommand } from "@agentclientprotocol/sdk";
import { BUILTIN_COMMANDS, firstSentence } from "../agent/commands.js";
import type { ToolRegistry } from "../host/registry.js";

/** Every tool is a command (`/<tool> <json>` or the tool's plain-text shorthand), then the built-in ones. */
export function availableCommands(registry: ToolRegistry): AvailableCommand[] {
  const tools = registry.list().map(({ tool }) => ({
    name: tool.id,
    description: firstSentence(tool.description),
    input: { hint: tool.shorthand ? `${tool.shorthandHint ?? "text"} or a JSON object` : "a JSON object of arguments" },
  }));
  const builtins = BUILTIN_COMMANDS.map(({ name, description, hint }) => ({ name, description, input: hint ? { hint } : null }));
  return [...tools, ...builtins];
}
