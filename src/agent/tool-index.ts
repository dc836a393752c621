import type { AnyTool } from "../tool/define.js";
import type { IndexedTool, ToolIndex } from "../tool/services.js";
import type { ToolRegistry } from "../host/registry.js";

const words = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 1);

/** How well a tool matches the query's words: id hits count most, then description hits. */
function score(tool: IndexedTool, query: string[]): number {
  const id = tool.id.toLowerCase();
  const idWords = new Set(words(tool.id));
  const description = new Set(words(tool.description));
  let total = 0;
  for (const word of query) {
    if (id === word) total += 10;
    else if (idWords.has(word)) total += 5;
    else if (id.includes(word)) total += 3;
    if (description.has(word)) total += 2;
    else if ([...description].some((d) => d.startsWith(word))) total += 1;
  }
  return total;
}

/** The session's tools as an index: what `tool_search` and similar tools list and search. */
export function registryIndex(registry: ToolRegistry, visible: (tool: AnyTool) => boolean): ToolIndex {
  const list = (): IndexedTool[] =>
    registry
      .list()
      .filter(({ tool }) => visible(tool))
      .map(({ tool, source }) => ({ id: tool.id, kind: tool.kind, description: tool.description, source }));
  return {
    list,
    search(query, limit = 10) {
      const terms = words(query);
      if (!terms.length) return [];
      return list()
        .map((tool) => ({ tool, score: score(tool, terms) }))
        .filter((hit) => hit.score > 0)
        .sort((a, b) => b.score - a.score || a.tool.id.localeCompare(b.tool.id))
        .slice(0, limit)
        .map((hit) => hit.tool);
    },
  };
}
