import { keyRequired, PROVIDERS } from "./provider-table.js";
import { peekConfig, peekUserConfig, readConfigFile, type ConfigFile, type ConfigPeek } from "../../config/file.js";

// Light on purpose: session/new reads the configured model from here, so nothing heavy (zod,
// the AI SDK) may load with it. The full config validation runs on the first model turn.

/** A model id split into its provider and the provider's own model name (which may hold slashes). */
export interface ModelSpec {
  id: string;
  provider: string;
  model: string;
}

export type ModelSource = "session" | "env" | "config";

export interface ModelChoice {
  spec: ModelSpec;
  source: ModelSource;
}

/** The ACP config option's value when no model is configured at all. */
export const NO_MODEL = "none";

/** `provider/model` → its parts; the error says what a valid id looks like. */
export function parseModelId(raw: string): ModelSpec | { error: string } {
  const id = raw.trim();
  const slash = id.indexOf("/");
  if (slash <= 0 || slash === id.length - 1) {
    return {
      error: `"${raw}" is not a model id. Use provider/model, e.g. anthropic/claude-sonnet-4-5, openai/gpt-5, ollama/qwen3 or openai-compatible/<model>.`,
    };
  }
  return { id, provider: id.slice(0, slash).toLowerCase(), model: id.slice(slash + 1) };
}

export function isModelSpec(value: ModelSpec | { error: string }): value is ModelSpec {
  return !("error" in value);
}

/** A session's model setting: `none` is no model; else the id, or why it is not `provider/model`. */
export function sessionModelId(value: string): { id: string | undefined } | { error: string } {
  if (value === NO_MODEL) return { id: undefined };
  const spec = parseModelId(value);
  return isModelSpec(spec) ? { id: spec.id } : spec;
}

type Env = Record<string, string | undefined>;

/** The model without a session override: env TOOLHOST_MODEL, then the config file. */
export function defaultModelId(
  env: Env = process.env,
  peek: ConfigPeek = peekUserConfig(),
): { id: string; source: ModelSource } | undefined {
  const fromEnv = env.TOOLHOST_MODEL?.trim();
  if (fromEnv) return { id: fromEnv, source: "env" };
  if (peek.model) return { id: peek.model, source: "config" };
  return undefined;
}

/** The model of a turn, most specific first: the session's choice, env, config file. */
export function resolveModel(
  sessionChoice: string | undefined,
  env: Env = process.env,
  peek: ConfigPeek = peekUserConfig(),
): ModelChoice | { error: string } | undefined {
  const picked = sessionChoice ? { id: sessionChoice, source: "session" as const } : defaultModelId(env, peek);
  if (!picked) return undefined;
  const spec = parseModelId(picked.id);
  return isModelSpec(spec) ? { spec, source: picked.source } : spec;
}

/**
 * The model of a turn (the session's choice, env, the config file) with the config file it read:
 * read once per turn, the turn's provider settings come from the same read. Without a usable
 * model, the help to show instead (`explain` words why the configured one is not usable).
 */
export function turnModel(
  sessionChoice: string | undefined,
  explain: (error: string) => string = (error) => error,
  env: Env = process.env,
  config: ConfigFile = readConfigFile(),
): { spec: ModelSpec; config: ConfigFile } | { help: string } {
  const peek = peekConfig(config);
  const choice = resolveModel(sessionChoice, env, peek);
  if (!choice || "error" in choice) return { help: noModelHelp(peek, choice ? explain(choice.error) : undefined) };
  return { spec: choice.spec, config };
}

/**
 * Whether a prompt could reach a model now (without a session's choice): one is configured, and its
 * provider has the key or URL it needs, from the environment or the config file (with the stored
 * login merged in). What `authenticate` and `toolhost login --status` ask; `source` says where
 * the model id came from.
 */
export function modelReadiness(
  env: Env = process.env,
  config: ConfigFile = readConfigFile(),
): { ready: true; id: string; source: ModelSource | "login" } | { ready: false; reason: string } {
  const peek = peekConfig(config);
  const picked = defaultModelId(env, peek);
  if (!picked) return { ready: false, reason: "no model is configured" };
  const spec = parseModelId(picked.id);
  if (!isModelSpec(spec)) return { ready: false, reason: spec.error };
  const source = picked.source === "config" && config.login?.credentials?.model === picked.id ? "login" : picked.source;
  const json = config.json as { providers?: Record<string, { apiKey?: unknown; baseURL?: unknown } | undefined> } | undefined;
  const saved = json?.providers?.[spec.provider];
  const has = (value: unknown) => typeof value === "string" && value.trim() !== "";
  const needs = (what: string) => ({ ready: false as const, reason: `${spec.id} needs ${what}` });
  switch (spec.provider) {
    case "anthropic":
    case "openai": {
      const variable = keyRequired(spec.provider) as string;
      return has(env[variable]) || has(saved?.apiKey) ? { ready: true, id: spec.id, source } : needs(`an API key (${variable})`);
    }
    case "ollama":
      return { ready: true, id: spec.id, source };
    case "openai-compatible":
      return has(env.TOOLHOST_BASE_URL) || has(saved?.baseURL)
        ? { ready: true, id: spec.id, source }
        : needs("the server's URL (TOOLHOST_BASE_URL)");
    default:
      return has(saved?.baseURL) ? { ready: true, id: spec.id, source } : needs(`a base URL for the provider "${spec.provider}"`);
  }
}

export interface ModelOptionState {
  current: string;
  values: string[];
}

/** The `model` config option: the current model, the configured one, and suggestions for keyed providers. */
export function modelOptionState(
  sessionChoice: string | undefined,
  env: Env = process.env,
  peek: ConfigPeek = peekUserConfig(),
): ModelOptionState {
  const configured = defaultModelId(env, peek)?.id;
  const current = sessionChoice ?? configured ?? NO_MODEL;
  const values = [current, ...(configured ? [configured] : [])];
  // The table's well-known models, for each provider that takes a key and has one.
  for (const { id, asks, keyEnv, models } of PROVIDERS) {
    const keyed = asks === "key" && (Boolean(keyEnv && env[keyEnv]) || peek.keyed.includes(id));
    if (keyed) values.push(...models.map((model) => `${id}/${model}`));
  }
  return { current, values: [...new Set(values)] };
}

/** The agent message for a prompt when no model is configured: exactly how to set one. */
export function noModelHelp(peek: ConfigPeek = peekUserConfig(), problem?: string): string {
  const lines = [
    problem ?? "No model is configured, so this prompt was not sent to one.",
    "",
    "Run `toolhost login` in a terminal (or your editor's login for toolhost): it asks for a provider, its key or URL, and a model, and every session after uses them.",
    "",
    "Or configure a model in one of these ways (the first one found wins):",
    "1. This session's **Model** option (ACP config option `model`): any `provider/model` id.",
    "2. The environment of the agent process (in Zed: `env` of the agent server in settings.json):",
    "   - `TOOLHOST_MODEL=anthropic/claude-sonnet-4-5` with `ANTHROPIC_API_KEY`",
    "   - `TOOLHOST_MODEL=openai/gpt-5` with `OPENAI_API_KEY`",
    "   - `TOOLHOST_MODEL=ollama/qwen3` for a local Ollama (`OLLAMA_HOST`, default http://localhost:11434/v1)",
    "   - `TOOLHOST_MODEL=openai-compatible/<model>` with `TOOLHOST_BASE_URL=http://host:port/v1` (and `TOOLHOST_API_KEY` if the server needs one)",
    `3. The config file ${peek.path}:`,
    '   `{"model": "anthropic/claude-sonnet-4-5", "providers": {"anthropic": {"apiKey": "sk-ant-..."}}}`',
  ];
  if (peek.error) lines.push("", `Note: ${peek.error}.`);
  lines.push("", "Slash commands run tools directly, without a model (`/help` lists them).");
  return lines.join("\n");
}
