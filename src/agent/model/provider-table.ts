// The providers toolhost knows, in one table: what `toolhost login` offers and asks, the variable
// that holds each one's key or URL, the models the login and the editor's picker suggest, and what
// `doctor` and a failed request point at. Light: no provider SDK is loaded from here.

export const DEFAULT_OLLAMA_URL = "http://localhost:11434/v1";

export interface ProviderInfo {
  id: string;
  /** How `toolhost login` names it. */
  label: string;
  /** The environment variable with its key (it wins over a saved one). */
  keyEnv?: string;
  /** The environment variable with its server's URL. */
  urlEnv?: string;
  /** What the login asks: a key, or a server URL (with an optional key). */
  asks: "key" | "url";
  defaultURL?: string;
  /** Well-known models, the first the default: offered by the login, and in the editor's picker when the provider has a key. */
  models: readonly string[];
}

export const PROVIDERS: readonly ProviderInfo[] = [
  {
    id: "anthropic",
    label: "Anthropic (API key)",
    keyEnv: "ANTHROPIC_API_KEY",
    asks: "key",
    models: ["claude-sonnet-4-5", "claude-opus-4-5", "claude-haiku-4-5"],
  },
  { id: "openai", label: "OpenAI (API key)", keyEnv: "OPENAI_API_KEY", asks: "key", models: ["gpt-5", "gpt-5-mini", "gpt-4.1"] },
  {
    id: "openai-compatible",
    label: "An OpenAI-compatible server (its URL, and a key if it needs one)",
    keyEnv: "TOOLHOST_API_KEY",
    urlEnv: "TOOLHOST_BASE_URL",
    asks: "url",
    models: [],
  },
  {
    id: "ollama",
    label: "Ollama on this machine or your network (its URL)",
    urlEnv: "OLLAMA_HOST",
    asks: "url",
    defaultURL: DEFAULT_OLLAMA_URL,
    models: [],
  },
];

/** A provider of the table, by id. */
export function providerInfo(id: string): ProviderInfo | undefined {
  return PROVIDERS.find((p) => p.id === id);
}

/** The providers whose key must be there before a request: a key is all they take. */
export function keyRequired(id: string): string | undefined {
  const info = providerInfo(id);
  return info?.asks === "key" ? info.keyEnv : undefined;
}
