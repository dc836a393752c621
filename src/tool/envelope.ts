import type { ErrorCode } from "./errors.js";

/** Envelope metadata, exactly as the RFC plus a stable error code. */
export interface EnvelopeMetadata {
  duration_ms: number;
  truncated?: boolean;
  output_path?: string;
  error_code?: ErrorCode;
}

export interface OutputEnvelope<T = unknown> {
  type: "output";
  data: T;
  metadata: EnvelopeMetadata;
}

export interface ErrorEnvelope {
  type: "error";
  error_text: string;
  metadata: EnvelopeMetadata;
}

/** The uniform tool result: one shape for the model, the recorder and the editor. */
export type Envelope<T = unknown> = OutputEnvelope<T> | ErrorEnvelope;

export function errorEnvelope(code: ErrorCode, text: string, durationMs: number): ErrorEnvelope {
  return { type: "error", error_text: text, metadata: { duration_ms: durationMs, error_code: code } };
}

const SELF_TRUNCATED = Symbol.for("toolhost.selfTruncated");

/** A result whose tool already capped its own output (bash keeps head + tail and wrote the sidecar). */
export interface SelfTruncated<T> {
  [SELF_TRUNCATED]: true;
  data: T;
  truncated: boolean;
  output_path?: string;
}

/** Return this from `execute` when the tool managed truncation itself; the host then leaves the data as it is. */
export function selfTruncated<T>(data: T, meta: { truncated: boolean; output_path?: string }): SelfTruncated<T> {
  return { [SELF_TRUNCATED]: true, data, truncated: meta.truncated, output_path: meta.output_path };
}

export function isSelfTruncated(value: unknown): value is SelfTruncated<unknown> {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[SELF_TRUNCATED] === true;
}

/** A field that reads best as a raw block: file content, command output, diffs. */
function isBlock(value: unknown): value is string {
  return typeof value === "string" && (value.includes("\n") || value.includes("\t") || value.length > 200);
}

/**
 * Compact text of an envelope for a model's context. Long or multi-line strings (file content,
 * stdout, diffs) stay raw, never JSON-escaped, so what the model quotes back in an edit matches
 * the file; lists go one compact entry per line; everything else is `key: value`.
 */
export function envelopeToText(envelope: Envelope): string {
  if (envelope.type === "error") {
    return `Error${envelope.metadata.error_code ? ` (${envelope.metadata.error_code})` : ""}: ${envelope.error_text}`;
  }
  const data = envelope.data;
  if (typeof data === "string") return data;
  if (typeof data !== "object" || data === null || Array.isArray(data)) return JSON.stringify(data) ?? "";
  const fields: string[] = [];
  const blocks: string[] = [];
  for (const [key, value] of Object.entries(data)) {
    if (value === undefined) continue;
    if (isBlock(value)) blocks.push(`${key}:\n${value}`);
    else if (Array.isArray(value) && value.some((item) => typeof item === "object" && item !== null)) {
      blocks.push(value.length ? `${key}:\n${value.map((item) => JSON.stringify(item)).join("\n")}` : `${key}: []`);
    } else fields.push(`${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`);
  }
  return [...fields, ...blocks].join("\n");
}

/** An image a result carries for the model: base64 data and its MIME type (web_fetch's fetched image). */
export interface ToolImage {
  data: string;
  mimeType: string;
}

/** The image of a result's data (an `image` field `{ data, mimeType }` with an `image/` type), if it has one. */
export function resultImage(data: unknown): ToolImage | undefined {
  if (typeof data !== "object" || data === null || Array.isArray(data)) return undefined;
  const image = (data as { image?: unknown }).image;
  if (typeof image !== "object" || image === null) return undefined;
  const { data: bytes, mimeType } = image as Partial<ToolImage>;
  return typeof bytes === "string" && typeof mimeType === "string" && mimeType.startsWith("image/") ? { data: bytes, mimeType } : undefined;
}
