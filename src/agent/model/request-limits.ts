import type { UserConfig } from "../../config/schema.js";

// How long toolhost waits on a model request, and how often it asks again: toolhost's own
// bounds, so a server that accepts and never answers is not waited on for Node's 300 s.

export interface ModelRequestLimits {
  /** From the request until the stream's first part (the first event the server sends). */
  firstByteTimeoutMs: number;
  /** The longest gap between two parts of the stream once it has started. */
  idleTimeoutMs: number;
  /** Retries after the first attempt, while nothing reached the editor. */
  retries: number;
}

/**
 * 120 s each: well past a cold local model loading and reading a long prompt, or a reasoning
 * model thinking before its first token, and under Node's 300 s (codex's stream idle timeout);
 * 3 retries, as the AI SDK's own default.
 */
export const DEFAULT_REQUEST_LIMITS: ModelRequestLimits = { firstByteTimeoutMs: 120_000, idleTimeoutMs: 120_000, retries: 3 };

const ENV: Record<keyof ModelRequestLimits, string> = {
  firstByteTimeoutMs: "TOOLHOST_MODEL_FIRST_BYTE_TIMEOUT_MS",
  idleTimeoutMs: "TOOLHOST_MODEL_IDLE_TIMEOUT_MS",
  retries: "TOOLHOST_MODEL_RETRIES",
};

type Env = Record<string, string | undefined>;

/** The limits of a turn's requests: the environment, then the config file's `modelRequest`, then the defaults. */
export function requestLimits(config: UserConfig, env: Env = process.env): { limits: ModelRequestLimits; problems: string[] } {
  const limits = { ...DEFAULT_REQUEST_LIMITS, ...config.modelRequest };
  const problems: string[] = [];
  for (const key of Object.keys(ENV) as (keyof ModelRequestLimits)[]) {
    const raw = env[ENV[key]]?.trim();
    if (!raw) continue;
    const value = Number(raw);
    const min = key === "retries" ? 0 : 1;
    if (Number.isInteger(value) && value >= min) limits[key] = value;
    else problems.push(`${ENV[key]}=${raw} is ignored (${limits[key]} applies): must be a whole number of at least ${min}`);
  }
  return { limits, problems };
}

/** "60 s", "1.5 s", "300 ms": a wait as the user reads it. */
export function waitText(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 100) / 10} s`;
}

/** A model request that timed out: retryable, its message says what the model did not send. */
export class ModelTimeoutError extends Error {
  override name = "ModelTimeoutError";
  readonly isRetryable = true;
  constructor(
    readonly phase: "first-byte" | "idle",
    readonly ms: number,
  ) {
    super(
      phase === "first-byte" ? `the model sent nothing for ${waitText(ms)}` : `the model stopped sending for ${waitText(ms)} mid-answer`,
    );
  }
}
