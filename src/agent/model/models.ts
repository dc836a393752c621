import type { ModelSpec } from "./model-config.js";

/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
  /** Cached input reads; the input price when absent. */
  cachedInput?: number;
}

export interface ModelInfo {
  /** Context window in tokens. */
  contextWindow: number;
  /** Known only for the exact models below; no guessed prices. */
  price?: Price;
  /** Whether prompt images can be sent. */
  images: boolean;
}

/** When the window of a model is not known (local and compatible servers mostly). */
export const DEFAULT_CONTEXT_WINDOW = 128_000;

// Published list prices of well-known models, keyed by the id without a date suffix.
const PRICES: Record<string, Price> = {
  "anthropic/claude-opus-4-5": { input: 5, output: 25, cachedInput: 0.5 },
  "anthropic/claude-opus-4-1": { input: 15, output: 75, cachedInput: 1.5 },
  "anthropic/claude-opus-4-0": { input: 15, output: 75, cachedInput: 1.5 },
  "anthropic/claude-opus-4": { input: 15, output: 75, cachedInput: 1.5 },
  "anthropic/claude-sonnet-4-5": { input: 3, output: 15, cachedInput: 0.3 },
  "anthropic/claude-sonnet-4-0": { input: 3, output: 15, cachedInput: 0.3 },
  "anthropic/claude-sonnet-4": { input: 3, output: 15, cachedInput: 0.3 },
  "anthropic/claude-haiku-4-5": { input: 1, output: 5, cachedInput: 0.1 },
  "anthropic/claude-3-5-haiku": { input: 0.8, output: 4, cachedInput: 0.08 },
  "openai/gpt-5": { input: 1.25, output: 10, cachedInput: 0.125 },
  "openai/gpt-5-mini": { input: 0.25, output: 2, cachedInput: 0.025 },
  "openai/gpt-5-nano": { input: 0.05, output: 0.4, cachedInput: 0.005 },
  "openai/gpt-4.1": { input: 2, output: 8, cachedInput: 0.5 },
  "openai/gpt-4.1-mini": { input: 0.4, output: 1.6, cachedInput: 0.1 },
  "openai/gpt-4.1-nano": { input: 0.1, output: 0.4, cachedInput: 0.025 },
  "openai/gpt-4o": { input: 2.5, output: 10, cachedInput: 1.25 },
  "openai/gpt-4o-mini": { input: 0.15, output: 0.6, cachedInput: 0.075 },
  "openai/o3": { input: 2, output: 8, cachedInput: 0.5 },
  "openai/o4-mini": { input: 1.1, output: 4.4, cachedInput: 0.275 },
};

// Context windows by model-name prefix, most specific first.
const WINDOWS: [provider: string, prefix: string, tokens: number][] = [
  ["anthropic", "claude-", 200_000],
  ["openai", "gpt-5", 400_000],
  ["openai", "gpt-4.1", 1_047_576],
  ["openai", "gpt-4o", 128_000],
  ["openai", "o3", 200_000],
  ["openai", "o4", 200_000],
  ["openai", "o1", 200_000],
  ["openai", "gpt-3.5", 16_385],
];

// Names of open models that take images (Ollama, vLLM, LM Studio …).
const VISION_NAMES = /llava|vision|[-_.]vl\b|vl[:-]|gemma3|pixtral|minicpm-v|moondream|llama4|mistral-small3|bakllava|granite3\.2-vision/i;

function withoutDate(model: string): string {
  return model.replace(/-(\d{4}-\d{2}-\d{2}|\d{8})$/, "");
}

function takesImages(spec: ModelSpec): boolean {
  const name = spec.model.toLowerCase();
  if (spec.provider === "anthropic") return true;
  if (spec.provider === "openai") return !/^(gpt-3\.5|o1-mini|o3-mini)/.test(name);
  return VISION_NAMES.test(name);
}

/** The window TOOLHOST_CONTEXT_WINDOW sets (a local or proxied model the table does not know), if valid. */
function windowFromEnv(env: NodeJS.ProcessEnv): number | undefined {
  const value = Number(env.TOOLHOST_CONTEXT_WINDOW);
  return Number.isInteger(value) && value > 0 ? value : undefined;
}

export function modelInfo(spec: ModelSpec, env: NodeJS.ProcessEnv = process.env): ModelInfo {
  const name = withoutDate(spec.model);
  const window = WINDOWS.find(([provider, prefix]) => provider === spec.provider && name.startsWith(prefix));
  return {
    contextWindow: windowFromEnv(env) ?? window?.[2] ?? DEFAULT_CONTEXT_WINDOW,
    price: PRICES[`${spec.provider}/${name}`],
    images: takesImages(spec),
  };
}

export interface StepTokens {
  /** All input tokens, cached ones included. */
  input: number;
  /** Of those, read from the prompt cache. */
  cachedInput: number;
  /** Of those, written to the prompt cache (Anthropic bills them at 1.25× the input price). */
  cacheWrite?: number;
  output: number;
}

/** What writing a token to the prompt cache costs, in input prices (Anthropic's 5-minute cache). */
const CACHE_WRITE_FACTOR = 1.25;

/** The cost of one request in USD, or undefined when the price is not known. */
export function stepCost(info: ModelInfo, tokens: StepTokens): number | undefined {
  const price = info.price;
  if (!price) return undefined;
  const cached = Math.min(tokens.cachedInput, tokens.input);
  const written = Math.min(tokens.cacheWrite ?? 0, tokens.input - cached);
  const fresh = tokens.input - cached - written;
  const inputCost = fresh * price.input + cached * (price.cachedInput ?? price.input) + written * price.input * CACHE_WRITE_FACTOR;
  return (inputCost + tokens.output * price.output) / 1_000_000;
}
