import { providerInfo } from "./provider-table.js";

// Provider errors, read by shape (the AI SDK's APICallError carries statusCode, isRetryable,
// responseHeaders) so this stays free of SDK imports and works for wrapped errors too.

interface ErrorShape {
  name?: unknown;
  message?: unknown;
  statusCode?: unknown;
  isRetryable?: unknown;
  responseHeaders?: unknown;
  url?: unknown;
  cause?: unknown;
  lastError?: unknown;
}

export interface ProviderFailure {
  status?: number;
  retryable: boolean;
  /** What the provider asked for (retry-after-ms / retry-after), in ms. */
  retryAfterMs?: number;
  message: string;
  url?: string;
  /** The connection closed after the provider had answered (a 2xx whose body never finished). */
  streamCut?: boolean;
  /** toolhost gave up waiting (model/request-limits.ts): nothing came, or the stream stalled. */
  timedOut?: boolean;
}

function shape(err: unknown): ErrorShape {
  return typeof err === "object" && err !== null ? (err as ErrorShape) : {};
}

/** The messages of an error's cause chain ("terminated: other side closed"), for what cut a stream. */
function causeChain(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && e !== null && depth < 5; e = shape(e).cause, depth++) {
    const m = shape(e).message;
    if (typeof m === "string" && m && !parts.includes(m)) parts.push(m);
  }
  return parts.join(": ");
}

function retryAfter(headers: unknown): number | undefined {
  if (typeof headers !== "object" || headers === null) return undefined;
  const h = headers as Record<string, string | undefined>;
  const ms = Number.parseFloat(h["retry-after-ms"] ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const raw = h["retry-after"];
  if (!raw) return undefined;
  const seconds = Number.parseFloat(raw);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(raw) - Date.now();
  return Number.isFinite(date) && date >= 0 ? date : undefined;
}

export function classifyProviderError(err: unknown): ProviderFailure {
  // RetryError (from SDK-level retries) wraps the last attempt's error.
  const e = shape(err).lastError !== undefined ? shape(shape(err).lastError) : shape(err);
  const status = typeof e.statusCode === "number" ? e.statusCode : undefined;
  const retryable = e.isRetryable === true || status === 429 || (status !== undefined && status >= 500);
  const message = typeof e.message === "string" ? e.message : String(err);
  if (e.name === "ModelTimeoutError") return { retryable: true, timedOut: true, message };
  // The AI SDK reports a body that broke off after a 200 as "Failed to process successful response":
  // the answer had started, so what happened is that the connection was cut.
  if (status !== undefined && status >= 200 && status < 300) {
    const cause = causeChain(e.cause) || message;
    return {
      status,
      retryable: true,
      streamCut: true,
      message: `the connection closed mid-answer (${cause})`,
      url: typeof e.url === "string" ? e.url : undefined,
    };
  }
  return {
    status,
    retryable,
    retryAfterMs: retryAfter(e.responseHeaders),
    message,
    url: typeof e.url === "string" ? e.url : undefined,
  };
}

export interface ErrorContext {
  modelId: string;
  /** Where the key of this provider is set, for a 401. */
  keyHint: string;
  attempts: number;
}

/** The agent message for a failed model request: what happened and what to do. */
export function providerErrorMessage(failure: ProviderFailure, ctx: ErrorContext): string {
  const detail = failure.message.trim().replace(/\s+$/, "");
  const tries = ctx.attempts > 1 ? ` (tried ${ctx.attempts} times)` : "";
  switch (true) {
    case failure.timedOut === true:
      return `The model request for ${ctx.modelId} timed out${tries}: ${detail}.\nCheck that the model's server is up; a slow one needs a longer wait (\`modelRequest\` in the config file, or TOOLHOST_MODEL_FIRST_BYTE_TIMEOUT_MS / TOOLHOST_MODEL_IDLE_TIMEOUT_MS).`;
    case failure.streamCut === true:
      return `The model's stream for ${ctx.modelId} was cut${tries}: ${detail}\nSend the prompt again to retry.`;
    case failure.status === 401 || failure.status === 403:
      return `The model provider refused the request for ${ctx.modelId} (${failure.status}): ${detail}\nCheck the key: ${ctx.keyHint}, or run \`toolhost login\` to store another (a key set in the environment wins over it).`;
    case failure.status === 404:
      return `The model provider does not know ${ctx.modelId} (404): ${detail}\nCheck the model id and the provider's base URL.`;
    case failure.status === 429:
      return `The model provider is rate-limiting requests for ${ctx.modelId} (429)${tries}: ${detail}\nWait a moment and send the prompt again.`;
    case failure.status !== undefined && failure.status >= 500:
      return `The model provider failed for ${ctx.modelId} (${failure.status})${tries}: ${detail}\nSend the prompt again to retry.`;
    case failure.status !== undefined:
      return `The model request for ${ctx.modelId} failed (${failure.status}): ${detail}`;
    default:
      return `The model request for ${ctx.modelId} failed${tries}: ${detail}${failure.url ? ` (${failure.url})` : ""}`;
  }
}

/** The setting a 401 points at. */
export function keyHint(provider: string, configPath: string): string {
  const keyEnv = providerInfo(provider)?.keyEnv;
  const setting = /^[a-z]\w*$/.test(provider) ? `providers.${provider}.apiKey` : `providers["${provider}"].apiKey`;
  return keyEnv ? `${keyEnv} (or ${setting} in ${configPath})` : `${setting} in ${configPath}`;
}
