import type MiniSearch from "minisearch";
import type { AnyTool } from "../tool/define.js";
import type { IndexedTool, ToolIndex } from "../tool/services.js";
import type { ToolRegistry } from "../host/registry.js";

// The session's tools as tool_search sees them: BM25 (minisearch's BM25+) over three fields of
// each non-locked tool — its id (split at `_`, `__` and camelCase), its description and the names
// of its parameters — with id hits weighing most. Locked tools are always declared, so they are
// never search results.

/** Field weights: a word of the id says more about a tool than one of its description. */
const BOOST = { name: 3, params: 1.5, description: 1 };

/** Words that say nothing about which tool is meant ("a tool to send a message to …"). */
const STOP_WORDS = new Set(
  "a an and are as at be by can do does for from how i in into is it its me my of on or that the this to tool tools use using want what when which with".split(
    " ",
  ),
);

/** Words of a text: split at anything that is not a letter or digit, and between camelCase humps. */
const tokenize = (text: string): string[] => text.split(/[^\p{L}\p{N}]+|(?<=\p{Ll})(?=\p{Lu})/u).filter(Boolean);

const processTerm = (term: string): string | null => {
  const word = term.toLowerCase();
  return word.length > 1 && !STOP_WORDS.has(word) ? word : null;
};

/** The names of a JSON Schema's top-level properties. */
function parameterNames(schema: Record<string, unknown>): string {
  const properties = schema.properties;
  return properties && typeof properties === "object" ? Object.keys(properties).join(" ") : "";
}

interface Built {
  key: string;
  search: MiniSearch<{ id: string; name: string; description: string; params: string }>;
}

/** One built index per registry, rebuilt when its list of searchable tools changes (MCP servers add tools at runtime). */
const built = new WeakMap<ToolRegistry, Built>();

async function searchIndex(registry: ToolRegistry, tools: IndexedTool[]): Promise<Built["search"]> {
  const key = tools.map((t) => `${t.id}\u0000${t.description}`).join("\u0001");
  const cached = built.get(registry);
  if (cached?.key === key) return cached.search;
  // Loaded on the first search: nothing of it on the session/new path.
  const { default: MiniSearchClass } = await import("minisearch");
  const search = new MiniSearchClass<{ id: string; name: string; description: string; params: string }>({
    fields: ["name", "description", "params"],
    tokenize,
    processTerm,
  });
  search.addAll(tools.map((t) => ({ id: t.id, name: t.id, description: t.description, params: parameterNames(t.inputSchema) })));
  built.set(registry, { key, search });
  return search;
}

/**
 * The session's visible tools as an index for tool_search. `wire` declares tools to the model
 * from its next request on (the session keeps the set).
 */
export function registryIndex(
  registry: ToolRegistry,
  visible: (tool: AnyTool) => boolean,
  wire: (ids: readonly string[]) => void,
): ToolIndex {
  const list = (): IndexedTool[] =>
    registry
      .list()
      .filter(({ tool }) => visible(tool))
      .map(({ tool, source }) => ({ id: tool.id, kind: tool.kind, description: tool.description, source, inputSchema: tool.inputSchema }));
  return {
    list,
    async search(query, limit = 5) {
      const candidates = list().filter((t) => t.source !== "builtin");
      if (!candidates.length) return [];
      const index = await searchIndex(registry, candidates);
      const byId = new Map(candidates.map((t) => [t.id, t]));
      return index
        .search(query, {
          boost: BOOST,
          combineWith: "OR",
          // "calend" finds calendar_*, "isue" still finds issues; short words match whole.
          prefix: (term) => term.length >= 3,
          fuzzy: (term) => (term.length >= 5 ? 0.2 : false),
        })
        .sort((a, b) => b.score - a.score || String(a.id).localeCompare(String(b.id)))
        .slice(0, limit)
        .flatMap((hit) => byId.get(String(hit.id)) ?? []);
    },
    wire,
  };
}
