import type { AvailableCommand } from "@agentclientprotocol/sdk";
import { BUILTIN_COMMANDS, firstSentence } from "../agent/commands.js";
import type { ToolRegistry } from "../host/registry.js";

/**
 * Every tool but MCP servers' is a command (`/<tool> <json>` or the tool's plain-text shorthand),
 * then the built-in ones, then each skill, then the MCP prompts. An MCP tool still runs as
 * `/mcp__<server>__<tool>`; the menu leaves them out (a server may bring dozens).
 */
export function availableCommands(
  registry: ToolRegistry,
  skills: readonly { name: string; description: string }[] = [],
  mcpPrompts: readonly { name: string; description: string; hint: string | null }[] = [],
): AvailableCommand[] {
  const tools = registry
    .list()
    .filter(({ source }) => !source.startsWith("mcp:"))
    .map(({ tool }) => ({
      name: tool.id,
      description: firstSentence(tool.description),
      input: { hint: tool.shorthand ? `${tool.shorthandHint ?? "text"} or a JSON object` : "a JSON object of arguments" },
    }));
  const builtins = BUILTIN_COMMANDS.map(({ name, description, hint }) => ({ name, description, input: hint ? { hint } : null }));
  const taken = new Set([...tools, ...builtins].map((c) => c.name));
  const skillCommands = skills
    .filter((s) => !taken.has(s.name))
    .map((s) => ({ name: s.name, description: `Skill: ${firstSentence(s.description)}`, input: { hint: "what to do (optional)" } }));
  const prompts = mcpPrompts.map((p) => ({
    name: p.name,
    description: `MCP prompt: ${firstSentence(p.description)}`,
    input: p.hint ? { hint: p.hint } : null,
  }));
  return [...tools, ...builtins, ...skillCommands, ...prompts];
}
