import * as z from "zod";
import type { ToolContext } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { isToolError, ToolError } from "../tool/errors.js";

/** The RFC's cap, after extraction; the rest goes to the sidecar. */
const OUTPUT_MAX_BYTES = 200 * 1024;
/** A body past this is cut: never buffered whole. */
export const BODY_MAX_BYTES = 10 * 1024 * 1024;
/**
 * HTML past this many characters is cut before extraction: parsing, Readability and turndown take
 * about 2.5 s per MB on this project's machines and hold the event loop meanwhile
 * (docs/performance.md); a page's main content sits well inside it.
 */
const EXTRACT_MAX_CHARS = 2 * 1024 * 1024;
const DEFAULT_TIMEOUT_MS = 30_000;
/** Extraction gets what is left of the call's timeout_ms, at most this long. */
const EXTRACT_MAX_MS = 30_000;
const MAX_REDIRECTS = 5;
/** The same URL within this long is answered from the session's cache. */
const CACHE_TTL_MS = 15 * 60_000;
const CACHE_MAX_ENTRIES = 32;
const CACHE_MAX_CHARS = 16 * 1024 * 1024;
const CACHE_KEY = "web_fetch.cache";

const parameters = z.object({
  url: z.string().describe("http(s) URL"),
  format: z.enum(["markdown", "text", "html"]).optional().describe("Default markdown"),
  timeout_ms: z.number().int().min(1000).max(120_000).optional().describe("Default 30000"),
});
type Args = z.output<typeof parameters>;

export interface WebFetchResult {
  url: string;
  final_url: string;
  status: number;
  content_type: string;
  title?: string;
  content: string;
  /** The body was longer than the hard limit (10 MB; 2 M characters of HTML to extract from) and was cut there. */
  cut?: boolean;
  /** An image, for models that take images (the content then says what it is). */
  image?: { data: string; mimeType: string };
}

interface CacheEntry {
  at: number;
  chars: number;
  result: WebFetchResult;
}

/** The session's small cache: at most 32 results and 16 M characters, each for 15 minutes. */
function cacheOf(ctx: ToolContext): Map<string, CacheEntry> {
  let cache = ctx.session.store.get(CACHE_KEY) as Map<string, CacheEntry> | undefined;
  if (!cache) {
    cache = new Map();
    ctx.session.store.set(CACHE_KEY, cache);
  }
  return cache;
}

function remember(cache: Map<string, CacheEntry>, key: string, result: WebFetchResult): void {
  const chars = result.content.length + (result.image?.data.length ?? 0);
  if (chars > CACHE_MAX_CHARS) return;
  cache.delete(key);
  cache.set(key, { at: Date.now(), chars, result });
  let total = 0;
  for (const entry of cache.values()) total += entry.chars;
  // Oldest first (a Map keeps insertion order).
  for (const [k, entry] of cache) {
    if (cache.size <= CACHE_MAX_ENTRIES && total <= CACHE_MAX_CHARS) break;
    cache.delete(k);
    total -= entry.chars;
  }
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ToolError("invalid_arguments", `Not a valid URL: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ToolError("invalid_arguments", `Only http and https URLs can be fetched, not ${url.protocol}`);
  }
  return url;
}

/** The host as the policy matches it: lower case, no IPv6 brackets. */
const hostOf = (url: URL) => url.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");

/** Reads a body up to `max` bytes, then stops reading (the rest is never downloaded whole). */
async function readBounded(body: ReadableStream<Uint8Array> | null, max: number): Promise<{ bytes: Uint8Array; cut: boolean }> {
  if (!body) return { bytes: new Uint8Array(0), cut: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      const room = max - size;
      if (value.byteLength >= room) {
        chunks.push(value.subarray(0, room));
        size += room;
        cut = value.byteLength > room || !(await reader.read().then((r) => r.done));
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return { bytes, cut };
}

/** What a binary type is, in words, for the refusal. */
function binaryName(mime: string): string | undefined {
  if (mime === "application/pdf") return "a PDF document";
  if (/zip|x-tar|gzip|x-bzip|x-xz|x-7z|x-rar|zstd|java-archive|x-compress/.test(mime)) return `an archive (${mime})`;
  if (mime.startsWith("audio/")) return `audio (${mime})`;
  if (mime.startsWith("video/")) return `a video (${mime})`;
  if (mime.startsWith("font/")) return `a font (${mime})`;
  if (/msword|officedocument|opendocument|ms-excel|ms-powerpoint|rtf/.test(mime)) return `an office document (${mime})`;
  if (mime === "application/octet-stream" || mime === "application/wasm" || /x-executable|x-msdownload|x-sharedlib/.test(mime)) {
    return `binary data (${mime})`;
  }
  return undefined;
}

/** The type from the first bytes, when the server sent none or a generic one. */
function sniff(bytes: Uint8Array): string | undefined {
  const starts = (...sig: number[]) => sig.every((b, i) => bytes[i] === b);
  if (starts(0x25, 0x50, 0x44, 0x46, 0x2d)) return "application/pdf";
  if (starts(0x89, 0x50, 0x4e, 0x47)) return "image/png";
  if (starts(0xff, 0xd8, 0xff)) return "image/jpeg";
  if (starts(0x47, 0x49, 0x46, 0x38)) return "image/gif";
  if (starts(0x52, 0x49, 0x46, 0x46) && bytes[8] === 0x57 && bytes[9] === 0x45) return "image/webp";
  if (starts(0x50, 0x4b, 0x03, 0x04)) return "application/zip";
  if (starts(0x1f, 0x8b)) return "application/gzip";
  const head = new TextDecoder().decode(bytes.subarray(0, 512)).trimStart().toLowerCase();
  if (head.startsWith("<!doctype html") || head.startsWith("<html")) return "text/html";
  if (head.startsWith("{") || head.startsWith("[")) return "application/json";
  if (bytes.subarray(0, 1024).includes(0)) return "application/octet-stream";
  return undefined;
}

/** Bytes as text in the response's charset (the header's, then an HTML meta tag's, then UTF-8). */
function decode(bytes: Uint8Array, contentType: string, html: boolean): string {
  let charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType)?.[1];
  if (!charset && html) {
    const head = new TextDecoder("latin1").decode(bytes.subarray(0, 2048));
    charset = /<meta[^>]+charset\s*=\s*["']?([\w.:-]+)/i.exec(head)?.[1];
  }
  try {
    return new TextDecoder(charset ?? "utf-8").decode(bytes);
  } catch {
    return new TextDecoder("utf-8").decode(bytes);
  }
}

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** HTML → main content, in a worker thread with a deadline (tools/web-extract-pool.ts). */
type Extract = (html: string, format: "markdown" | "text") => Promise<{ title?: string; content: string }>;

/** The response's body as the model reads it. */
async function convert(
  bytes: Uint8Array,
  mime: string,
  contentType: string,
  url: string,
  format: "markdown" | "text" | "html",
  extract: Extract,
): Promise<Pick<WebFetchResult, "title" | "content" | "image" | "cut">> {
  if (IMAGE_TYPES.has(mime)) {
    return {
      content: `[image: ${mime}, ${bytes.byteLength} bytes]`,
      image: { data: Buffer.from(bytes).toString("base64"), mimeType: mime },
    };
  }
  const binary = binaryName(mime) ?? (mime.startsWith("image/") ? `an image of a type models do not take (${mime})` : undefined);
  if (binary) {
    throw new ToolError(
      "binary_file",
      `${url} is ${binary}, ${bytes.byteLength} bytes: web_fetch reads HTML, text, JSON and PNG, JPEG, GIF or WebP images`,
    );
  }
  const html = mime === "text/html" || mime === "application/xhtml+xml";
  const text = decode(bytes, contentType, html);
  if (html) {
    if (format === "html") return { content: text };
    const long = text.length > EXTRACT_MAX_CHARS;
    return { ...(await extract(long ? text.slice(0, EXTRACT_MAX_CHARS) : text, format)), ...(long ? { cut: true } : {}) };
  }
  if (mime === "application/json" || mime.endsWith("+json")) {
    try {
      return { content: JSON.stringify(JSON.parse(text), null, 2) };
    } catch {
      return { content: text };
    }
  }
  return { content: text };
}

/** web_fetch: one URL, its main content as Markdown, through the runtime's guarded fetch. */
export default defineTool({
  id: "web_fetch",
  kind: "fetch",
  description:
    "Fetch an http(s) URL. HTML comes back as its main content in Markdown (format text or html for other forms), JSON pretty-printed, images as images. Private and local addresses are refused. Results are cached for 15 minutes.",
  parameters,
  requires: { net: { hosts: ["*"] } },
  output: { field: "content", maxBytes: OUTPUT_MAX_BYTES },
  title: (args) => `Fetch ${args.url}`,
  shorthand: (text) => ({ url: text.trim() }),
  shorthandHint: "a URL",
  targets: (args) => ({ hosts: [hostOf(parseUrl(args.url))] }),
  async execute(args: Args, ctx) {
    const url = parseUrl(args.url);
    const format = args.format ?? "markdown";
    const cache = cacheOf(ctx);
    const key = `${format} ${url.href}`;
    const hit = cache.get(key);
    if (hit && Date.now() - hit.at < CACHE_TTL_MS) return hit.result;

    const timeoutMs = args.timeout_ms ?? DEFAULT_TIMEOUT_MS;
    const started = performance.now();
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), timeoutMs);
    const signal = AbortSignal.any([ctx.signal, timer.signal]);
    try {
      const response = await ctx.net.fetch(url, {
        signal,
        maxRedirects: MAX_REDIRECTS,
        headers: {
          accept: "text/markdown, text/html;q=0.9, application/json;q=0.8, text/*;q=0.7, image/*;q=0.6, */*;q=0.1",
          "user-agent": "Mozilla/5.0 (compatible; toolhost web_fetch)",
        },
      });
      const contentType = response.headers.get("content-type") ?? "";
      const { bytes, cut } = await readBounded(response.body, BODY_MAX_BYTES);
      const declared = contentType.split(";")[0]?.trim().toLowerCase() ?? "";
      const mime =
        !declared || declared === "application/octet-stream" || declared === "text/plain" ? (sniff(bytes) ?? declared) : declared;
      const finalUrl = response.url || url.href;
      // The download's timer stops here: the extraction has its own deadline, what is left of timeout_ms.
      clearTimeout(timeout);
      const extract: Extract = async (html, as) => {
        const { extractInWorker } = await import("./web-extract-pool.js");
        const left = Math.max(0, Math.round(timeoutMs - (performance.now() - started)));
        return extractInWorker(html, finalUrl, as, { timeoutMs: Math.min(left, EXTRACT_MAX_MS), signal: ctx.signal });
      };
      const converted = await convert(bytes, mime || "text/plain", contentType, finalUrl, format, extract);
      const result: WebFetchResult = {
        url: url.href,
        final_url: finalUrl,
        status: response.status,
        content_type: contentType || mime,
        ...converted,
        ...(cut || converted.cut ? { cut: true } : {}),
      };
      if (response.ok) remember(cache, key, result);
      return result;
    } catch (err) {
      if (ctx.signal.aborted) throw new ToolError("aborted", `Fetching ${url.href} was cancelled`);
      if (timer.signal.aborted) throw new ToolError("timeout", `${url.href} did not answer within ${timeoutMs} ms`);
      if (isToolError(err)) throw err;
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
      throw new ToolError("execution_failed", `Fetching ${url.href} failed: ${err instanceof Error ? err.message : String(err)}${cause}`);
    } finally {
      clearTimeout(timeout);
    }
  },
  display: (data, args) =>
    data.image
      ? { text: `${data.final_url} (${data.content_type})`, images: [data.image] }
      : { text: data.content, markdown: (args.format ?? "markdown") === "markdown" && /markdown|html/.test(data.content_type) },
});
