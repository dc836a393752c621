import type { AvailableCommand } from "@agentclientprotocol/sdk";
import { BUILTIN_COMMANDS, firstSentence } from "../agent/commands.js";
import type { ToolRegistry } from "../host/registry.js";

/** Every tool is a command (`/<tool> <json>` or the tool's plain-text shorthand), then the built-in ones. */
export function availableCommands(registry: ToolRegistry): AvailableCommand[] {
  const tools = registry.list().map(({ tool }) => ({
    name: tool.id,
    description: firstSentence(tool.description),
    input: { hint: tool.shorthand ? `${shorthandHint(tool.id)} or a JSON object` : "a JSON object of arguments" },
  }));
  return [...tools, ...BUILTIN_COMMANDS.map((c) => ({ ...c, input: null }))];
}

function shorthandHint(id: string): string {
  switch (id) {
    case "read":
      return "a path (src/a.ts or src/a.ts:10-40)";
    case "grep":
      return "a pattern";
    case "glob":
      return "a glob pattern";
    case "bash":
      return "a command line";
    default:
      return "text";
  }
}

