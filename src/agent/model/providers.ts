import type { LanguageModel } from "ai";
import type { UserConfig } from "../../config/schema.js";
import type { ModelSpec } from "./model-config.js";
import { DEFAULT_OLLAMA_URL } from "./provider-table.js";

// Each provider's SDK is imported when a model of it is first used: they are most of the agent's code.

/** A model that cannot be set up; the message tells the user what to change. */
export class ModelSetupError extends Error {
  override name = "ModelSetupError";
}

type Env = Record<string, string | undefined>;

/** `OLLAMA_HOST` is usually `host:port` or a URL without `/v1`; the OpenAI-compatible API lives under `/v1`. */
export function ollamaBaseURL(raw: string | undefined): string {
  const value = raw?.trim();
  if (!value) return DEFAULT_OLLAMA_URL;
  const withScheme = /^[a-z]+:\/\//i.test(value) ? value : `http://${value}`;
  const url = new URL(withScheme);
  if (url.hostname === "0.0.0.0") url.hostname = "localhost"; // a listen address, not a place to connect to
  const pathname = url.pathname.replace(/\/+$/, "");
  url.pathname = pathname.endsWith("/v1") ? pathname : `${pathname}/v1`;
  return url.toString().replace(/\/+$/, "");
}

function first(...values: (string | undefined)[]): string | undefined {
  return values.map((v) => v?.trim()).find((v) => v);
}

/** Creates the language model for `provider/model`. Keys come from env first, then the config file. */
export async function createLanguageModel(
  spec: ModelSpec,
  config: UserConfig,
  configPath: string,
  env: Env = process.env,
): Promise<LanguageModel> {
  const settings = config.providers?.[spec.provider] ?? {};
  const needKey = (variable: string) =>
    new ModelSetupError(
      `${spec.id} needs an API key: set ${variable} in the agent's environment, or "providers": {"${spec.provider}": {"apiKey": "..."}} in ${configPath}.`,
    );
  switch (spec.provider) {
    case "anthropic": {
      const apiKey = first(env.ANTHROPIC_API_KEY, settings.apiKey);
      if (!apiKey) throw needKey("ANTHROPIC_API_KEY");
      const { createAnthropic } = await import("@ai-sdk/anthropic");
      return createAnthropic({ apiKey, baseURL: first(settings.baseURL) })(spec.model);
    }
    case "openai": {
      const apiKey = first(env.OPENAI_API_KEY, settings.apiKey);
      if (!apiKey) throw needKey("OPENAI_API_KEY");
      const { createOpenAI } = await import("@ai-sdk/openai");
      return createOpenAI({ apiKey, baseURL: first(settings.baseURL) })(spec.model);
    }
    case "ollama": {
      const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
      return createOpenAICompatible({
        name: "ollama",
        baseURL: ollamaBaseURL(first(env.OLLAMA_HOST, settings.baseURL)),
        apiKey: first(settings.apiKey),
        includeUsage: true,
      })(spec.model);
    }
    case "openai-compatible": {
      const baseURL = first(env.TOOLHOST_BASE_URL, settings.baseURL);
      if (!baseURL) {
        throw new ModelSetupError(
          `${spec.id} needs the server's URL: set TOOLHOST_BASE_URL (e.g. http://localhost:8000/v1) in the agent's environment, or "providers": {"openai-compatible": {"baseURL": "..."}} in ${configPath}.`,
        );
      }
      const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
      return createOpenAICompatible({
        name: "openai-compatible",
        baseURL,
        apiKey: first(env.TOOLHOST_API_KEY, settings.apiKey),
        includeUsage: true,
      })(spec.model);
    }
    default: {
      // Any other provider name declared with a baseURL in the config file is an OpenAI-compatible endpoint.
      const baseURL = first(settings.baseURL);
      if (!baseURL) {
        throw new ModelSetupError(
          `Unknown provider "${spec.provider}" in ${spec.id}. Use anthropic/, openai/, ollama/ or openai-compatible/, or declare "providers": {"${spec.provider}": {"baseURL": "..."}} in ${configPath}.`,
        );
      }
      const { createOpenAICompatible } = await import("@ai-sdk/openai-compatible");
      return createOpenAICompatible({ name: spec.provider, baseURL, apiKey: first(settings.apiKey), includeUsage: true })(spec.model);
    }
  }
}
