import type { AnyTool, ToolLocation } from "../../tool/define.js";
import type { ToolRegistry } from "../../host/registry.js";

// What the editor first shows of a call. Some clients keep a call's first title, so the first
// report carries the title the tool's own hooks give (`Edit src/a.ts`), or at least a label a
// person reads ("x: echo" for an MCP tool, "Web fetch"), never the bare tool id.

/** A label for a tool id: an MCP tool's `<server>: <tool>`, otherwise the id as words. */
export function toolLabel(toolId: string): string {
  const mcp = /^mcp__(.+?)__(.+)$/.exec(toolId);
  if (mcp) return `${mcp[1]}: ${mcp[2]}`;
  const words = toolId.replace(/_+/g, " ").trim();
  return words ? `${words[0]!.toUpperCase()}${words.slice(1)}` : toolId;
}

/** The title to show: a title that is only the tool's id becomes its label. */
export function shownTitle(title: string, toolId: string): string {
  return title === toolId || title === "" ? toolLabel(toolId) : title;
}

/**
 * Title and locations of a call whose arguments are complete, before it is prepared: the
 * tool's hooks on its validated arguments; a label when they do not validate or a hook throws.
 */
export function callTitle(
  registry: ToolRegistry,
  toolId: string,
  args: unknown,
  workspace: string,
): { title: string; locations: ToolLocation[] } {
  const tool: AnyTool | undefined = registry.get(toolId);
  if (!tool) return { title: `${toolLabel(toolId)} (unknown tool)`, locations: [] };
  const parsed = tool.parameters.safeParse(args ?? {});
  if (!parsed.success) return { title: toolLabel(toolId), locations: [] };
  try {
    const valid = parsed.data as Record<string, unknown>;
    return { title: shownTitle(tool.title?.(valid) ?? toolId, toolId), locations: tool.locations?.(valid, { workspace }) ?? [] };
  } catch {
    return { title: toolLabel(toolId), locations: [] };
  }
}
