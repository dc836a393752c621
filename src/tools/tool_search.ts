import * as z from "zod";
import { defineTool } from "../tool/define.js";
import { editDistance } from "../tool/edit-distance.js";
import { ToolError } from "../tool/errors.js";
import type { IndexedTool } from "../tool/services.js";

const parameters = z.object({
  query: z.string().min(1).optional().describe("What you want to do, in a few words"),
  select: z.array(z.string().min(1)).min(1).optional().describe("Exact tool names to load"),
  max_results: z.number().int().min(1).max(20).optional().describe("Query results, default 5"),
});

/** Ids close to an unknown name: the same words in another order or with a server prefix, or a few typos. */
function closeMatches(name: string, ids: readonly string[]): string[] {
  const wanted = name.toLowerCase();
  const cap = Math.max(2, Math.floor(wanted.length / 4));
  return ids
    .map((id) => {
      const lower = id.toLowerCase();
      const contains = lower.includes(wanted) || wanted.includes(lower) ? 0 : undefined;
      return { id, distance: contains ?? editDistance(wanted, lower, cap) };
    })
    .filter((m) => m.distance <= cap)
    .sort((a, b) => a.distance - b.distance || a.id.localeCompare(b.id))
    .slice(0, 5)
    .map((m) => m.id);
}

const found = (t: IndexedTool) => ({ name: t.id, description: t.description, schema: t.inputSchema });

/** tool_search: finds the session's extension and MCP tools and wires the ones it returns. */
export default defineTool({
  id: "tool_search",
  kind: "search",
  description: [
    "Find and load tools that are not declared up front (extension and MCP tools; the system prompt lists them when deferred).",
    "`select` loads tools by exact name; `query` searches names, descriptions and parameters.",
    "Returns each tool's name, description and JSON schema: call them from your next step on.",
  ].join(" "),
  parameters,
  requires: {},
  title: (args) => (args.select ? `Load tools ${args.select.join(", ")}` : `Search tools: ${args.query ?? ""}`),
  shorthand: (text) => ({ query: text.trim() }),
  shorthandHint: "what you want to do",
  async execute(args, ctx) {
    const index = ctx.host.tools;
    if (!index) throw new ToolError("unavailable", "This host offers no tool index.");
    if (!args.select && !args.query)
      throw new ToolError("invalid_arguments", "Give `query` (what you want to do) or `select` (exact tool names).");
    const tools = index.list();
    const byId = new Map(tools.map((t) => [t.id, t]));
    const picked: IndexedTool[] = [];
    if (args.select) {
      const unknown = args.select.filter((name) => !byId.has(name));
      if (unknown.length) {
        const ids = [...byId.keys()];
        const lines = unknown.map((name) => {
          const close = closeMatches(name, ids);
          return `"${name}"${close.length ? ` (did you mean ${close.join(", ")}?)` : ""}`;
        });
        throw new ToolError(
          "not_found",
          `No tool named ${lines.join("; ")}. Nothing was loaded: select exact names from the system prompt's list, or search with query.`,
        );
      }
      for (const name of new Set(args.select)) picked.push(byId.get(name) as IndexedTool);
    }
    if (args.query) {
      const have = new Set(picked.map((t) => t.id));
      for (const hit of await index.search(args.query, args.max_results ?? 5)) if (!have.has(hit.id)) picked.push(hit);
    }
    const extra = tools.filter((t) => t.source !== "builtin").length;
    index.wire(picked.map((t) => t.id));
    if (!picked.length)
      return {
        tools: [],
        note: extra
          ? `No tool matched "${args.query}". Try other words, or select a name from the system prompt's list.`
          : "This session has no tools beyond those already declared.",
      };
    return { tools: picked.map(found) };
  },
  display: (data) => ({
    text: data.tools.length
      ? `Loaded ${data.tools.length} tool${data.tools.length === 1 ? "" : "s"}:\n${data.tools.map((t) => `- ${t.name}`).join("\n")}`
      : (data.note ?? "No tools found."),
  }),
});
