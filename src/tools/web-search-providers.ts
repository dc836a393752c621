import type { ToolNet } from "../tool/context.js";
import { ToolError } from "../tool/errors.js";
import type { WebSearchProvider, WebSearchProviderType } from "../tool/services.js";

// The four search APIs web_search speaks: each one's request and the shape of its answer, mapped
// onto the RFC's `{ title, url, snippet }`. The HTTP goes through the call's `ctx.net`, so the
// runtime checks the host against the scope like any other fetch.

export interface SearchResult {
  title: string;
  url: string;
  snippet: string;
}

/** What each provider is called in messages. */
const PROVIDER_NAMES: Record<WebSearchProviderType, string> = {
  searxng: "SearXNG",
  brave: "Brave Search",
  tavily: "Tavily",
  exa: "Exa",
};

/** The most results a request asks for (Brave, Tavily and Exa's basic plans cap at 20 or 10). */
export const MAX_RESULTS = 20;

/** The provider a session uses: picked by hashing the session id (FNV-1a), so it is stable per session. */
export function pickProvider<T>(providers: readonly T[], sessionId: string): T {
  if (!providers.length) throw new Error("no providers to pick from");
  let hash = 0x811c9dc5;
  for (let i = 0; i < sessionId.length; i++) {
    hash ^= sessionId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return providers[(hash >>> 0) % providers.length] as T;
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: " ", "#39": "'", hellip: "…" };

/** One line of text: spaces collapsed; with `html` (Brave's `<strong>` highlights), tags dropped and entities decoded first. */
export function plainText(value: unknown, html = false): string {
  if (typeof value !== "string") return "";
  if (!html) return value.replace(/\s+/g, " ").trim();
  return value
    .replace(/<[^>]*>/g, "")
    .replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+[0-9]*);/gi, (whole, name: string) => {
      const lower = name.toLowerCase();
      if (lower.startsWith("#x")) return safeCodePoint(parseInt(lower.slice(2), 16), whole);
      if (lower.startsWith("#") && lower !== "#39") return safeCodePoint(parseInt(lower.slice(1), 10), whole);
      return ENTITIES[lower] ?? whole;
    })
    .replace(/\s+/g, " ")
    .trim();
}

function safeCodePoint(code: number, fallback: string): string {
  return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : fallback;
}

interface ProviderRequest {
  url: URL;
  init: RequestInit;
}

/** `baseURL` + `path`, keeping a base path (`https://host/searx` + `/search`). */
function endpoint(baseURL: string, path: string): URL {
  const base = new URL(baseURL);
  base.pathname = `${base.pathname.replace(/\/+$/, "")}${path}`;
  return base;
}

function buildRequest(provider: WebSearchProvider, query: string, count: number): ProviderRequest {
  const json = { Accept: "application/json" };
  switch (provider.type) {
    case "searxng": {
      // SearXNG's JSON API (`search.formats` must list json); it has no count parameter: the list is cut here.
      const url = endpoint(provider.baseURL, "/search");
      url.searchParams.set("q", query);
      url.searchParams.set("format", "json");
      return { url, init: { headers: json } };
    }
    case "brave": {
      const url = endpoint(provider.baseURL, "/res/v1/web/search");
      url.searchParams.set("q", query);
      url.searchParams.set("count", String(count));
      return { url, init: { headers: { ...json, "X-Subscription-Token": provider.apiKey ?? "" } } };
    }
    case "tavily":
      return {
        url: endpoint(provider.baseURL, "/search"),
        init: {
          method: "POST",
          headers: { ...json, "Content-Type": "application/json", Authorization: `Bearer ${provider.apiKey ?? ""}` },
          body: JSON.stringify({ query, max_results: count, search_depth: "basic" }),
        },
      };
    case "exa":
      return {
        url: endpoint(provider.baseURL, "/search"),
        init: {
          method: "POST",
          headers: { ...json, "Content-Type": "application/json", "x-api-key": provider.apiKey ?? "" },
          body: JSON.stringify({ query, numResults: count, type: "auto", contents: { highlights: { maxCharacters: 400 } } }),
        },
      };
  }
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const list = (v: unknown): Json[] => (Array.isArray(v) ? v.filter(isObject) : []);

/** The results of a provider's answer, in its order, as `{ title, url, snippet }`. */
export function parseResults(type: WebSearchProviderType, body: unknown): SearchResult[] {
  if (!isObject(body)) throw new Error("the answer is not a JSON object");
  let raw: { title: unknown; url: unknown; snippet: unknown }[];
  switch (type) {
    case "searxng":
      raw = list(body.results).map((r) => ({ title: r.title, url: r.url, snippet: r.content }));
      break;
    case "brave":
      // No `web` key: Brave found no web results.
      raw = list(isObject(body.web) ? body.web.results : undefined).map((r) => ({ title: r.title, url: r.url, snippet: r.description }));
      break;
    case "tavily":
      raw = list(body.results).map((r) => ({ title: r.title, url: r.url, snippet: r.content }));
      break;
    case "exa":
      raw = list(body.results).map((r) => ({
        title: r.title,
        url: r.url,
        snippet: Array.isArray(r.highlights) && r.highlights.length ? r.highlights.join(" … ") : (r.summary ?? r.text),
      }));
      break;
  }
  if (type !== "brave" && !Array.isArray(body.results)) throw new Error("the answer has no results list");
  // Brave marks the query's words with <strong> and escapes entities; the others answer plain text.
  const html = type === "brave";
  return raw
    .filter((r): r is { title: unknown; url: string; snippet: unknown } => typeof r.url === "string" && /^https?:\/\//i.test(r.url))
    .map((r) => ({ title: plainText(r.title, html) || r.url, url: r.url, snippet: plainText(r.snippet, html) }));
}

/** The message a provider's error answer carries, in any of the shapes these APIs use. */
function errorDetail(text: string): string {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return text.replace(/\s+/g, " ").trim().slice(0, 300);
  }
  const pick = (...values: unknown[]) => values.find((v): v is string => typeof v === "string" && v.trim() !== "");
  if (isObject(body)) {
    const error = body.error;
    const detail = body.detail;
    const found = pick(
      isObject(error) ? error.detail : undefined,
      isObject(error) ? error.message : undefined,
      error,
      isObject(detail) ? detail.error : undefined,
      detail,
      body.message,
    );
    if (found) return found.slice(0, 300);
  }
  return text.slice(0, 300);
}

function httpError(provider: WebSearchProvider, status: number, detail: string): ToolError {
  const name = PROVIDER_NAMES[provider.type];
  const says = detail ? `: ${detail}` : "";
  if (status === 401 || status === 403) {
    const key = provider.type === "searxng" ? "the instance refuses API access (is json in its search.formats?)" : "check its API key";
    return new ToolError("execution_failed", `${name} refused the search (HTTP ${status}${says}); ${key}. Tell the user.`);
  }
  if (status === 429) {
    return new ToolError("execution_failed", `${name} is rate limiting the searches (HTTP 429${says}). Try again later, or do without.`);
  }
  if (status >= 500) return new ToolError("execution_failed", `${name} failed (HTTP ${status}${says}). Try again later.`);
  return new ToolError("execution_failed", `${name} answered HTTP ${status}${says}.`);
}

/**
 * One search through one provider: the request, a clear error for every failure (refused key,
 * rate limit, server error, timeout, an answer that is not the API's shape), the results mapped.
 */
export async function searchProvider(
  net: ToolNet,
  provider: WebSearchProvider,
  query: string,
  count: number,
  options: { timeoutMs: number; signal: AbortSignal },
): Promise<SearchResult[]> {
  const name = PROVIDER_NAMES[provider.type];
  const { url, init } = buildRequest(provider, query, count);
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  const timedOut = () => timeout.aborted && !options.signal.aborted;
  let response: Response;
  let text: string;
  try {
    response = await net.fetch(url, { ...init, signal });
    text = await response.text();
  } catch (err) {
    if (timedOut()) throw new ToolError("timeout", `${name} did not answer within ${options.timeoutMs / 1000} s (webSearch.timeoutMs).`);
    if (err instanceof ToolError) throw err;
    if (options.signal.aborted) throw new ToolError("aborted", "The search was cancelled.");
    const cause = err instanceof Error && err.cause instanceof Error ? ` (${err.cause.message})` : "";
    throw new ToolError("execution_failed", `${name} at ${url.origin} could not be reached: ${(err as Error).message}${cause}.`);
  }
  if (!response.ok) throw httpError(provider, response.status, errorDetail(text));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ToolError(
      "execution_failed",
      `${name} did not answer with JSON (${response.headers.get("content-type") ?? "no content type"})${provider.type === "searxng" ? "; enable json in the instance's search.formats" : ""}.`,
    );
  }
  try {
    return parseResults(provider.type, body).slice(0, count);
  } catch (err) {
    throw new ToolError("execution_failed", `${name}'s answer was not understood: ${(err as Error).message}.`);
  }
}
