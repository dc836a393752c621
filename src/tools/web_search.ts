import * as z from "zod";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import { MAX_RESULTS, pickProvider, searchProvider, type SearchResult } from "./web-search-providers.js";

const DEFAULT_RESULTS = 8;

const parameters = z.object({
  query: z.string().trim().min(1).max(400).describe("What to search for"),
  max_results: z.number().int().min(1).max(MAX_RESULTS).optional().describe(`Default ${DEFAULT_RESULTS}`),
});

/** Calls made in this session (subagents share it): the RFC's per-session cap counts every call. */
const WEB_SEARCH_CALLS_KEY = "web_search.calls";

export interface WebSearchData {
  results: SearchResult[];
}

/**
 * web_search: a query to the search provider the user configured (`webSearch` in the config
 * file), chosen per session by hashing its id; results as `{ title, url, snippet }`.
 */
export default defineTool({
  id: "web_search",
  kind: "fetch",
  description: "Search the web. Returns result titles, URLs and snippets; use web_fetch to read a page.",
  parameters,
  // `{web-search}`: the configured providers' hosts; ctx.net refuses any other.
  requires: { net: { hosts: ["{web-search}"] } },
  output: { field: "results", maxItems: MAX_RESULTS },
  title: (args) => `Search the web: ${args.query}`,
  shorthand: (text) => ({ query: text.trim() }),
  shorthandHint: "a search query",
  isAvailable: (context) => (context.webSearch?.providers.length ?? 0) > 0,
  async execute(args, ctx): Promise<WebSearchData> {
    const settings = ctx.host.webSearch;
    if (!settings?.providers.length) {
      throw new ToolError("unavailable", "Web search is not configured in this session (webSearch in ~/.toolhost/config.json).");
    }
    const used = (ctx.session.store.get(WEB_SEARCH_CALLS_KEY) as number | undefined) ?? 0;
    if (used >= settings.maxCallsPerSession) {
      throw new ToolError(
        "unavailable",
        `The web search limit of this session is reached: ${settings.maxCallsPerSession} calls (webSearch.maxCallsPerSession). Work with the results you have, or ask the user.`,
      );
    }
    ctx.session.store.set(WEB_SEARCH_CALLS_KEY, used + 1);
    const provider = pickProvider(settings.providers, ctx.session.id);
    const results = await searchProvider(ctx.net, provider, args.query, args.max_results ?? DEFAULT_RESULTS, {
      timeoutMs: settings.timeoutMs,
      signal: ctx.signal,
    });
    return { results };
  },
  display: (data) => ({
    markdown: true,
    text: data.results.length
      ? data.results.map((r) => `- [${r.title.replace(/[[\]]/g, "\\$&")}](${r.url})${r.snippet ? `: ${r.snippet}` : ""}`).join("\n")
      : "No results.",
  }),
});
