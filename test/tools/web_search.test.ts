import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { webSearchHosts } from "../../src/config/web-search.js";
import type { WebSearchProvider, WebSearchProviderType, WebSearchSettings } from "../../src/tool/services.js";
import { pickProvider, plainText } from "../../src/tools/web-search-providers.js";
import webSearch from "../../src/tools/web_search.js";
import { SHAPES, startFakeSearch, type FakeSearch, type SearchReply, type SearchRequest } from "../fixtures/fake-search.js";
import { call, errorOf, memoryWorkspace, output, useWorkspace } from "../helpers.js";

// web_search through the real pipeline (validation, scope, envelope), each provider's API served
// in its real shape by a local server.

const workspaces = useWorkspace();
let fake: FakeSearch | undefined;

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const KEYS: Record<WebSearchProviderType, string | undefined> = {
  searxng: undefined,
  brave: "bsa-key",
  tavily: "tvly-key",
  exa: "exa-key",
};

function settings(type: WebSearchProviderType, baseURL: string, more: Partial<WebSearchSettings> = {}): WebSearchSettings {
  const provider: WebSearchProvider = { type, baseURL, ...(KEYS[type] ? { apiKey: KEYS[type] } : {}) };
  return { providers: [provider], maxCallsPerSession: 25, timeoutMs: 15_000, ...more };
}

/** A session whose `{web-search}` variable names the fake's host (as AgentSession sets it from the config). */
async function session(hosts = ["127.0.0.1"]) {
  const ws = await workspaces.use(memoryWorkspace());
  ws.session.setVariable("web-search", hosts);
  return ws.session;
}

async function search(type: WebSearchProviderType, args: Record<string, unknown>, reply?: (r: SearchRequest) => SearchReply) {
  fake = await startFakeSearch(reply);
  const s = await session();
  return call(webSearch, args, s, { host: { webSearch: settings(type, fake.url) } });
}

describe("web_search, each provider's API", () => {
  it("SearXNG: GET /search?format=json, content as the snippet, the list cut to max_results", async () => {
    const { envelope } = await search("searxng", { query: "rust async runtime", max_results: 2 });
    expect(output(envelope)).toEqual({
      results: [
        {
          title: "Tokio - An asynchronous Rust runtime",
          url: "https://tokio.rs/",
          snippet: "Tokio is an asynchronous runtime for the Rust programming language. It provides the building blocks.",
        },
        { title: "async-std", url: "https://async.rs/", snippet: "Async version of the Rust standard library." },
      ],
    });
    const [req] = fake!.requests;
    expect(req?.method).toBe("GET");
    expect(req?.path).toBe("/search");
    expect(Object.fromEntries(req!.query)).toEqual({ q: "rust async runtime", format: "json" });
  });

  it("SearXNG under a base path: the instance's path is kept", async () => {
    fake = await startFakeSearch();
    const s = await session();
    const { envelope } = await call(webSearch, { query: "x" }, s, { host: { webSearch: settings("searxng", `${fake.url}/searx/`) } });
    expect(output<{ results: unknown[] }>(envelope).results).toHaveLength(3);
    expect(fake.requests[0]?.path).toBe("/searx/search");
  });

  it("Brave: GET /res/v1/web/search with X-Subscription-Token and count; <strong> and entities stripped from titles and snippets", async () => {
    const { envelope } = await search("brave", { query: "rust async runtime", max_results: 5 });
    expect(output(envelope)).toEqual({
      results: [
        {
          title: "Asynchronous Programming in Rust",
          url: "https://rust-lang.github.io/async-book/",
          snippet: 'A thorough guide to asynchronous programming in Rust & its runtimes — "futures".',
        },
        { title: "Tokio", url: "https://tokio.rs/", snippet: "Build reliable network applications without compromising speed." },
      ],
    });
    const [req] = fake!.requests;
    expect(req?.method).toBe("GET");
    expect(req?.path).toBe("/res/v1/web/search");
    expect(Object.fromEntries(req!.query)).toEqual({ q: "rust async runtime", count: "5" });
    expect(req?.headers["x-subscription-token"]).toBe("bsa-key");
    expect(req?.headers.accept).toBe("application/json");
  });

  it("Brave with no web results (no `web` key) is an empty list", async () => {
    const { envelope } = await search("brave", { query: "zzzz" }, () => ({ json: { type: "search", query: { original: "zzzz" } } }));
    expect(output(envelope)).toEqual({ results: [] });
  });

  it("Tavily: POST /search with a bearer key and max_results; content as the snippet", async () => {
    const { envelope } = await search("tavily", { query: "rust async runtime", max_results: 3 });
    expect(output(envelope)).toEqual({
      results: [
        {
          title: "Tokio - An asynchronous Rust runtime",
          url: "https://tokio.rs/",
          snippet: SHAPES.tavily.results[0].content,
        },
        { title: "async_std - Rust", url: "https://docs.rs/async-std", snippet: "Async version of the Rust standard library" },
      ],
    });
    const [req] = fake!.requests;
    expect(req?.method).toBe("POST");
    expect(req?.path).toBe("/search");
    expect(req?.headers.authorization).toBe("Bearer tvly-key");
    expect(req?.body).toEqual({ query: "rust async runtime", max_results: 3, search_depth: "basic" });
  });

  it("Exa: POST /search with x-api-key, numResults and highlights; highlights (or text) as the snippet, the URL for a missing title", async () => {
    const { envelope } = await search("exa", { query: "rust async runtime", max_results: 4 });
    expect(output(envelope)).toEqual({
      results: [
        {
          title: "Tutorial | Tokio",
          url: "https://tokio.rs/tokio/tutorial",
          snippet: "Tokio is an asynchronous runtime for Rust. … It gives you the building blocks.",
        },
        { title: "https://smol.rs/", url: "https://smol.rs/", snippet: "smol is a small async runtime." },
      ],
    });
    const [req] = fake!.requests;
    expect(req?.method).toBe("POST");
    expect(req?.path).toBe("/search");
    expect(req?.headers["x-api-key"]).toBe("exa-key");
    expect(req?.body).toEqual({
      query: "rust async runtime",
      numResults: 4,
      type: "auto",
      contents: { highlights: { maxCharacters: 400 } },
    });
  });

  it("asks for 8 results by default and keeps at most max_results of a longer answer", async () => {
    const many = Array.from({ length: 30 }, (_, i) => ({ url: `https://example.com/${i}`, title: `r${i}`, content: `c${i}` }));
    const { envelope } = await search("tavily", { query: "q" }, () => ({ json: { results: many } }));
    expect(output<{ results: unknown[] }>(envelope).results).toHaveLength(8);
    expect((fake!.requests[0]?.body as { max_results: number }).max_results).toBe(8);
  });

  it("drops results without an http(s) URL", async () => {
    const results = [
      { url: "javascript:alert(1)", title: "bad", content: "" },
      { title: "no url", content: "" },
      { url: "https://ok.example/", title: "ok", content: "fine" },
    ];
    const { envelope } = await search("searxng", { query: "q" }, () => ({ json: { results } }));
    expect(output(envelope)).toEqual({ results: [{ title: "ok", url: "https://ok.example/", snippet: "fine" }] });
  });
});

describe("web_search, provider failures are clear tool errors", () => {
  it("401: the provider refused the key, with its own message", async () => {
    const { envelope } = await search("brave", { query: "q" }, () => ({
      status: 401,
      json: {
        type: "ErrorResponse",
        error: { id: "x", status: 401, code: "SUBSCRIPTION_TOKEN_INVALID", detail: "The provided subscription token is invalid." },
      },
    }));
    const text = errorOf(envelope, "execution_failed");
    expect(text).toContain("Brave Search refused the search (HTTP 401: The provided subscription token is invalid.)");
    expect(text).toContain("check its API key");
  });

  it("429: rate limited", async () => {
    const { envelope } = await search("tavily", { query: "q" }, () => ({
      status: 429,
      json: { detail: { error: "Your request has been blocked due to excessive requests." } },
    }));
    expect(errorOf(envelope, "execution_failed")).toBe(
      "Tavily is rate limiting the searches (HTTP 429: Your request has been blocked due to excessive requests.). Try again later, or do without.",
    );
  });

  it("500: the provider failed", async () => {
    const { envelope } = await search("exa", { query: "q" }, () => ({ status: 500, json: { error: "Internal error", tag: "INTERNAL" } }));
    expect(errorOf(envelope, "execution_failed")).toBe("Exa failed (HTTP 500: Internal error). Try again later.");
  });

  it("a provider that does not answer in time: timeout, naming the setting", async () => {
    fake = await startFakeSearch(() => ({ hang: true }));
    const s = await session();
    const started = Date.now();
    const { envelope } = await call(webSearch, { query: "q" }, s, {
      host: { webSearch: settings("searxng", fake.url, { timeoutMs: 300 }) },
    });
    expect(errorOf(envelope, "timeout")).toBe("SearXNG did not answer within 0.3 s (webSearch.timeoutMs).");
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it("a SearXNG instance without the JSON format enabled (HTML or 403) says what to change", async () => {
    const { envelope } = await search("searxng", { query: "q" }, () => ({ text: "<html>search page</html>", contentType: "text/html" }));
    expect(errorOf(envelope, "execution_failed")).toBe(
      "SearXNG did not answer with JSON (text/html); enable json in the instance's search.formats.",
    );
    await fake!.close();
    const second = await search("searxng", { query: "q" }, () => ({ status: 403, text: "Forbidden", contentType: "text/plain" }));
    expect(errorOf(second.envelope, "execution_failed")).toContain("is json in its search.formats?");
  });

  it("an answer that is not the API's shape", async () => {
    const { envelope } = await search("tavily", { query: "q" }, () => ({ json: { hits: [] } }));
    expect(errorOf(envelope, "execution_failed")).toBe("Tavily's answer was not understood: the answer has no results list.");
  });

  it("a provider nobody listens on", async () => {
    fake = await startFakeSearch();
    const url = fake.url;
    await fake.close();
    fake = undefined;
    const s = await session();
    const { envelope } = await call(webSearch, { query: "q" }, s, { host: { webSearch: settings("searxng", url) } });
    expect(errorOf(envelope, "execution_failed")).toMatch(
      /^SearXNG at http:\/\/127\.0\.0\.1:\d+ could not be reached: fetch failed \(.*ECONNREFUSED/,
    );
  });
});

describe("web_search, bounds and scope", () => {
  it("allows 25 calls per session by default; the 26th is a clear error and reaches no provider", async () => {
    fake = await startFakeSearch();
    const s = await session();
    const host = { webSearch: settings("searxng", fake.url) };
    for (let i = 1; i <= 25; i++) output((await call(webSearch, { query: `q${i}` }, s, { host })).envelope);
    const { envelope } = await call(webSearch, { query: "q26" }, s, { host });
    expect(errorOf(envelope, "unavailable")).toBe(
      "The web search limit of this session is reached: 25 calls (webSearch.maxCallsPerSession). Work with the results you have, or ask the user.",
    );
    expect(fake.requests).toHaveLength(25);
  });

  it("the limit is the configured one, and failed calls count too", async () => {
    fake = await startFakeSearch(() => ({ status: 500 }));
    const s = await session();
    const host = { webSearch: settings("searxng", fake.url, { maxCallsPerSession: 2 }) };
    errorOf((await call(webSearch, { query: "a" }, s, { host })).envelope, "execution_failed");
    errorOf((await call(webSearch, { query: "b" }, s, { host })).envelope, "execution_failed");
    expect(errorOf((await call(webSearch, { query: "c" }, s, { host })).envelope, "unavailable")).toContain("2 calls");
  });

  it("a provider host outside `{web-search}` is refused by the runtime (nothing configured: nothing reachable)", async () => {
    fake = await startFakeSearch();
    const ws = await workspaces.use(memoryWorkspace());
    const { envelope } = await call(webSearch, { query: "q" }, ws.session, { host: { webSearch: settings("searxng", fake.url) } });
    expect(errorOf(envelope, "capability_denied")).toBe("Host 127.0.0.1 is outside this tool's net.hosts (none)");
    expect(fake.requests).toHaveLength(0);
  });

  it("a provider on an IPv6 literal: the session's `{web-search}` pattern matches it exactly", async () => {
    const server = http.createServer((_req, res) => res.end(JSON.stringify(SHAPES.searxng)));
    await new Promise<void>((resolve) => server.listen(0, "::1", resolve));
    try {
      const webSearch6 = settings("searxng", `http://[::1]:${(server.address() as AddressInfo).port}`);
      const ws = await workspaces.use(memoryWorkspace());
      ws.session.setVariable("web-search", webSearchHosts(webSearch6));
      const { envelope } = await call(webSearch, { query: "q", max_results: 1 }, ws.session, { host: { webSearch: webSearch6 } });
      expect(output<{ results: unknown[] }>(envelope).results).toHaveLength(1);
      // A pattern, not a class: "[::1]" must not let a one-character host through.
      expect(webSearchHosts(webSearch6)).toEqual(["\\[::1\\]", "::1"]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("without the web search service (not configured): unavailable", async () => {
    const s = await session();
    const { envelope } = await call(webSearch, { query: "q" }, s);
    expect(errorOf(envelope, "unavailable")).toContain("not configured");
  });

  it("an empty query is refused before anything is sent", async () => {
    const s = await session();
    errorOf((await call(webSearch, { query: "   " }, s)).envelope, "invalid_arguments");
    errorOf((await call(webSearch, { query: "q", max_results: 50 }, s)).envelope, "invalid_arguments");
  });

  it("is offered only when a provider is configured", async () => {
    const context = { workspace: "/w", profile: "default", exists: async () => false };
    expect(await webSearch.isAvailable!(context)).toBe(false);
    expect(await webSearch.isAvailable!({ ...context, webSearch: settings("searxng", "http://127.0.0.1:1") })).toBe(true);
  });

  it("title, slash shorthand and display", () => {
    expect(webSearch.title!({ query: "rust async" })).toBe("Search the web: rust async");
    expect(webSearch.shorthand!(" rust async runtime ")).toEqual({ query: "rust async runtime" });
    expect(webSearch.shorthandHint).toBe("a search query");
    expect(webSearch.kind).toBe("fetch");
    const shown = webSearch.display!({ results: [{ title: "A [b]", url: "https://a.example/", snippet: "s" }] }, { query: "q" });
    expect(shown).toEqual({ markdown: true, text: "- [A \\[b\\]](https://a.example/): s" });
    expect(webSearch.display!({ results: [] }, { query: "q" })).toEqual({ markdown: true, text: "No results." });
  });
});

describe("the provider choice", () => {
  const providers = ["searxng", "brave", "tavily", "exa"];

  it("is stable per session id", () => {
    for (const id of ["a", "session-1", "4f7c1a2e-0000-4000-8000-000000000000"]) {
      const first = pickProvider(providers, id);
      for (let i = 0; i < 5; i++) expect(pickProvider(providers, id)).toBe(first);
    }
  });

  it("spreads sessions over every provider", () => {
    const seen = new Map<string, number>();
    for (let i = 0; i < 400; i++) {
      const p = pickProvider(providers, `session-${i}`);
      seen.set(p, (seen.get(p) ?? 0) + 1);
    }
    expect([...seen.keys()].sort()).toEqual([...providers].sort());
    for (const count of seen.values()) expect(count).toBeGreaterThan(50);
  });

  it("a session sends every search to its one provider", async () => {
    const a = await startFakeSearch();
    const b = await startFakeSearch();
    try {
      const s = await session();
      const host = {
        webSearch: {
          providers: [
            { type: "searxng" as const, baseURL: a.url },
            { type: "searxng" as const, baseURL: b.url },
          ],
          maxCallsPerSession: 25,
          timeoutMs: 15_000,
        },
      };
      for (let i = 0; i < 4; i++) output((await call(webSearch, { query: `q${i}` }, s, { host })).envelope);
      const chosen = pickProvider(host.webSearch.providers, s.id).baseURL;
      expect([a.requests.length, b.requests.length].sort()).toEqual([0, 4]);
      expect((chosen === a.url ? a : b).requests).toHaveLength(4);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describe("plainText", () => {
  it("strips tags and decodes entities only for HTML snippets", () => {
    expect(plainText("<b>a</b> &lt;b&gt; &#x41;&#66; &amp;amp; &bogus;", true)).toBe("a <b> AB &amp; &bogus;");
    expect(plainText("Array<string> &amp;\n  x", false)).toBe("Array<string> &amp; x");
    expect(plainText(undefined)).toBe("");
  });
});
