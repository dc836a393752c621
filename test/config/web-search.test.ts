import * as fsp from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { loadUserConfig } from "../../src/config/schema.js";
import { describeWebSearch, resolveWebSearch, webSearchHosts } from "../../src/config/web-search.js";
import { tempDir } from "../helpers.js";

let home: string | undefined;
afterEach(async () => {
  if (home) await fsp.rm(home, { recursive: true, force: true });
  home = undefined;
});

async function load(config: unknown) {
  home = await tempDir({ "config.json": JSON.stringify(config) });
  return loadUserConfig(home);
}

describe("webSearch in the config file", () => {
  it("accepts each provider type, with the bounds", async () => {
    const loaded = await load({
      webSearch: {
        providers: [
          { type: "searxng", baseURL: "http://127.0.0.1:8888" },
          { type: "brave" },
          { type: "tavily", apiKey: "tvly-file" },
          { type: "exa", apiKeyEnv: "MY_EXA", baseURL: "https://exa.internal/v1" },
        ],
        maxCallsPerSession: 10,
        timeoutMs: 5000,
      },
    });
    expect(loaded.error).toBeUndefined();
    expect(loaded.config.webSearch?.providers).toHaveLength(4);
  });

  it("is validated strictly, each problem with its path", async () => {
    const cases: [unknown, string][] = [
      [
        { providers: [{ type: "bing" }] },
        'each provider needs "type": "searxng", "brave", "tavily" or "exa"\n  → at webSearch.providers[0].type',
      ],
      [{ providers: [{ type: "searxng" }] }, "must be an http:// or https:// URL\n  → at webSearch.providers[0].baseURL"],
      [{ providers: [{ type: "searxng", baseURL: "file:///etc" }] }, "must be an http:// or https:// URL"],
      [{ providers: [{ type: "brave", key: "x" }] }, 'Unrecognized key: "key"\n  → at webSearch.providers[0]'],
      [{ providers: [{ type: "exa", apiKeyEnv: "not a name" }] }, "must be an environment variable name"],
      [{ providers: [] }, "list at least one provider"],
      [{ providers: [{ type: "brave" }], maxCallsPerSession: 0 }, "→ at webSearch.maxCallsPerSession"],
      [{ providers: [{ type: "brave" }], timeoutMs: 10 }, "→ at webSearch.timeoutMs"],
      [{ providers: [{ type: "brave" }], provider: "brave" }, 'Unrecognized key: "provider"'],
    ];
    for (const [webSearch, message] of cases) {
      const loaded = await load({ webSearch });
      expect(loaded.error, JSON.stringify(webSearch)).toContain(message);
      expect(loaded.config).toEqual({});
      await fsp.rm(home!, { recursive: true, force: true });
    }
  });
});

describe("resolveWebSearch", () => {
  it("takes keys from the provider's variable, else apiKeyEnv's, else the file; the environment wins over the file", () => {
    const resolved = resolveWebSearch(
      {
        providers: [
          { type: "brave", apiKey: "from-file" },
          { type: "tavily", apiKey: "tvly-file" },
          { type: "exa", apiKeyEnv: "MY_EXA" },
          { type: "searxng", baseURL: "http://127.0.0.1:8888/searx" },
        ],
      },
      { BRAVE_API_KEY: "from-env", MY_EXA: "exa-env", EXA_API_KEY: "ignored: apiKeyEnv names another" },
    );
    expect(resolved).toEqual({
      settings: {
        providers: [
          { type: "brave", baseURL: "https://api.search.brave.com", apiKey: "from-env" },
          { type: "tavily", baseURL: "https://api.tavily.com", apiKey: "tvly-file" },
          { type: "exa", baseURL: "https://api.exa.ai", apiKey: "exa-env" },
          { type: "searxng", baseURL: "http://127.0.0.1:8888/searx" },
        ],
        maxCallsPerSession: 25,
        timeoutMs: 15_000,
      },
      problems: [],
    });
    expect(webSearchHosts(resolved.settings)).toEqual(["api.search.brave.com", "api.tavily.com", "api.exa.ai", "127.0.0.1"]);
    expect(describeWebSearch(resolved)).toBe(
      "brave (api.search.brave.com), tavily (api.tavily.com), exa (api.exa.ai), searxng (127.0.0.1:8888); at most 25 calls per session, 15 s each",
    );
  });

  it("leaves out a provider without a key and says how to give one; none usable: off, with how to turn it on", () => {
    const resolved = resolveWebSearch({ providers: [{ type: "brave" }, { type: "exa", apiKeyEnv: "MY_EXA" }] }, {});
    expect(resolved.settings).toBeUndefined();
    expect(resolved.problems).toEqual([
      'webSearch.providers[0] (brave) has no API key: set BRAVE_API_KEY in the environment, or "apiKey" in the config file; it is left out',
      'webSearch.providers[1] (exa) has no API key: set MY_EXA in the environment, or "apiKey" in the config file; it is left out',
    ]);
    expect(describeWebSearch(resolved)).toMatch(/^off \(web_search is not offered\): add "webSearch": /);
    expect(resolveWebSearch(undefined)).toEqual({ problems: [] });
    expect(webSearchHosts(undefined)).toEqual([]);
  });

  it("keeps the configured bounds", () => {
    const resolved = resolveWebSearch({
      providers: [{ type: "searxng", baseURL: "https://s.example" }],
      maxCallsPerSession: 3,
      timeoutMs: 2000,
    });
    expect(resolved.settings).toMatchObject({ maxCallsPerSession: 3, timeoutMs: 2000 });
  });
});
