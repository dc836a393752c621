import type { WebSearchProvider, WebSearchProviderType, WebSearchSettings } from "../tool/services.js";
import type { WebSearchConfig } from "./schema.js";

/** The RFC's bounds: 25 calls per session, 15 s per call. */
const WEB_SEARCH_DEFAULTS = { maxCallsPerSession: 25, timeoutMs: 15_000 } as const;

const DEFAULT_BASE_URL: Record<Exclude<WebSearchProviderType, "searxng">, string> = {
  brave: "https://api.search.brave.com",
  tavily: "https://api.tavily.com",
  exa: "https://api.exa.ai",
};

/** Where each provider's key is looked for by default. */
const WEB_SEARCH_KEY_ENV: Record<Exclude<WebSearchProviderType, "searxng">, string> = {
  brave: "BRAVE_API_KEY",
  tavily: "TAVILY_API_KEY",
  exa: "EXA_API_KEY",
};

/** How to turn web search on, for `toolhost doctor` and `toolhost tools`. */
export const WEB_SEARCH_HOWTO =
  'add "webSearch": { "providers": [{ "type": "searxng", "baseURL": "http://127.0.0.1:8888" }] } (or brave, tavily, exa with a key) to ~/.toolhost/config.json; see the README, "Web search"';

export interface ResolvedWebSearch {
  /** The usable providers and bounds; undefined when no provider is usable (web_search is then not offered). */
  settings?: WebSearchSettings;
  /** Configured providers that cannot be used (no key), each saying how to fix it. */
  problems: string[];
}

/**
 * The user's `webSearch` config with each provider's key resolved: the variable `apiKeyEnv` names,
 * else the provider's usual variable (BRAVE_API_KEY, TAVILY_API_KEY, EXA_API_KEY), else `apiKey`
 * from the file (the environment wins, as for model providers).
 */
export function resolveWebSearch(config: WebSearchConfig | undefined, env: NodeJS.ProcessEnv = process.env): ResolvedWebSearch {
  if (!config) return { problems: [] };
  const providers: WebSearchProvider[] = [];
  const problems: string[] = [];
  config.providers.forEach((entry, index) => {
    if (entry.type === "searxng") {
      providers.push({ type: "searxng", baseURL: entry.baseURL });
      return;
    }
    const variable = entry.apiKeyEnv ?? WEB_SEARCH_KEY_ENV[entry.type];
    const apiKey = env[variable] || entry.apiKey;
    if (!apiKey) {
      problems.push(
        `webSearch.providers[${index}] (${entry.type}) has no API key: set ${variable} in the environment, or "apiKey" in the config file; it is left out`,
      );
      return;
    }
    providers.push({ type: entry.type, baseURL: entry.baseURL ?? DEFAULT_BASE_URL[entry.type], apiKey });
  });
  if (!providers.length) return { problems };
  return {
    settings: {
      providers,
      maxCallsPerSession: config.maxCallsPerSession ?? WEB_SEARCH_DEFAULTS.maxCallsPerSession,
      timeoutMs: config.timeoutMs ?? WEB_SEARCH_DEFAULTS.timeoutMs,
    },
    problems,
  };
}

/**
 * The host patterns web_search may reach: the scope variable `{web-search}`. Each is literal (glob
 * characters escaped, so an IPv6 literal's brackets are not a class); an IPv6 host also comes
 * without its brackets, the spelling a check on the bare address uses.
 */
export function webSearchHosts(settings: WebSearchSettings | undefined): string[] {
  const literal = (host: string) => host.replace(/[\\[\]*?{}()!+@|^$]/g, (c) => `\\${c}`);
  return [
    ...new Set(
      (settings?.providers ?? []).flatMap((p) => {
        const host = new URL(p.baseURL).hostname;
        return host.startsWith("[") ? [literal(host), host.slice(1, -1)] : [literal(host)];
      }),
    ),
  ];
}

/** One line for `toolhost doctor`: what web_search uses, or how to turn it on. */
export function describeWebSearch(resolved: ResolvedWebSearch): string {
  const { settings } = resolved;
  if (!settings) return `off (web_search is not offered): ${WEB_SEARCH_HOWTO}`;
  const names = settings.providers.map((p) => `${p.type} (${new URL(p.baseURL).host})`).join(", ");
  return `${names}; at most ${settings.maxCallsPerSession} calls per session, ${settings.timeoutMs / 1000} s each`;
}
