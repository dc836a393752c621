import type { OutputLimit } from "./define.js";

// Every UTF-8 cut in toolhost goes through these two, so none can split a character.

const isContinuation = (byte: number | undefined) => ((byte ?? 0) & 0xc0) === 0x80;

/**
 * `end` moved back so `bytes[0, end)` does not stop inside a UTF-8 character. Only the bytes
 * before `end` are looked at, so it works on a window whose next byte is unknown; invalid
 * input is cut as is (at most 3 bytes are stepped over).
 */
export function utf8HeadEnd(bytes: Uint8Array, end: number): number {
  const stop = Math.max(0, Math.min(end, bytes.length));
  // Back over the continuation bytes of the last sequence to its lead byte.
  let lead = stop - 1;
  while (lead >= 0 && stop - lead <= 3 && isContinuation(bytes[lead])) lead--;
  if (lead < 0) return stop;
  const b = bytes[lead] as number;
  const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
  return stop - lead >= need ? stop : lead;
}

/** `start` moved forward past continuation bytes, so `bytes[start, …)` begins on a character. */
export function utf8TailStart(bytes: Uint8Array, start: number): number {
  const from = Math.max(0, start);
  let s = from;
  while (s < bytes.length && s - from < 3 && isContinuation(bytes[s])) s++;
  return s;
}

/** The longest prefix of `text` that fits in `maxBytes` of UTF-8, never splitting a character. */
export function utf8Head(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  return bytes.subarray(0, utf8HeadEnd(bytes, maxBytes)).toString("utf8");
}

/** The longest suffix of `text` that fits in `maxBytes` of UTF-8, never splitting a character. */
export function utf8Tail(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  return bytes.subarray(utf8TailStart(bytes, bytes.length - Math.max(0, maxBytes))).toString("utf8");
}

/** Cuts back to the last line break when one is near the end, so a head does not end mid-line. */
function toLineBoundary(head: string): string {
  const cut = head.lastIndexOf("\n");
  return cut >= head.length * 0.8 ? head.slice(0, cut + 1) : head;
}

export interface TruncationOutcome {
  data: unknown;
  truncated: boolean;
  output_path?: string;
}

/** Writes the whole output somewhere readable and returns its path. */
export type SidecarSink = (text: string) => Promise<string>;

function readOnHint(path: string): string {
  return `The full output is in ${path}; read it with the read tool (offset/limit), or search it with grep.`;
}

function capText(text: string, maxBytes: number, keep: "head" | "head_tail", path: string): string {
  const total = Buffer.byteLength(text, "utf8");
  if (keep === "head_tail") {
    const half = Math.floor(maxBytes / 2);
    const head = toLineBoundary(utf8Head(text, half));
    const tail = utf8Tail(text, half);
    const omitted = total - Buffer.byteLength(head, "utf8") - Buffer.byteLength(tail, "utf8");
    return `${head}\n… [${omitted} bytes omitted of ${total}; ${readOnHint(path)}] …\n${tail}`;
  }
  const head = toLineBoundary(utf8Head(text, maxBytes));
  return `${head}\n… [output truncated at ${Buffer.byteLength(head, "utf8")} of ${total} bytes; ${readOnHint(path)}]`;
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
}

/**
 * Applies a tool's output cap. Runs in the host for every tool (locked or extension), so no
 * tool can forget its cap. The whole output goes to the sidecar; the data keeps the head and
 * a `notice` that names the sidecar and how to read on.
 */
export async function applyOutputLimit(data: unknown, limit: OutputLimit, sink: SidecarSink): Promise<TruncationOutcome> {
  const keep = limit.keep ?? "head";
  const holder = limit.field && isPlainObject(data) ? data : undefined;
  const target = holder ? holder[limit.field as string] : data;

  if (typeof target === "string") {
    const maxBytes = limit.maxBytes;
    if (maxBytes === undefined || Buffer.byteLength(target, "utf8") <= maxBytes) {
      return { data, truncated: false };
    }
    const path = await sink(target);
    const capped = capText(target, maxBytes, keep, path);
    if (holder) return { data: { ...holder, [limit.field as string]: capped }, truncated: true, output_path: path };
    return { data: capped, truncated: true, output_path: path };
  }

  if (Array.isArray(target)) {
    let kept = target.length;
    if (limit.maxItems !== undefined) kept = Math.min(kept, limit.maxItems);
    if (limit.maxBytes !== undefined) {
      // Drop entries from the end until the kept list fits the byte cap too.
      let bytes = 2;
      let fit = 0;
      for (; fit < kept; fit++) {
        bytes += jsonBytes(target[fit]) + 1;
        if (bytes > limit.maxBytes) break;
      }
      kept = fit;
    }
    if (kept >= target.length) return { data, truncated: false };
    const format = limit.formatItem ?? ((item: unknown) => (typeof item === "string" ? item : JSON.stringify(item)));
    const path = await sink(target.map(format).join("\n") + "\n");
    const notice = `Showing ${kept} of ${target.length} entries. ${readOnHint(path)} (one entry per line)`;
    if (holder) {
      return {
        data: { ...holder, [limit.field as string]: target.slice(0, kept), notice },
        truncated: true,
        output_path: path,
      };
    }
    return { data: { head: target.slice(0, kept), notice }, truncated: true, output_path: path };
  }

  // Anything else: measure its JSON; past the cap keep a head of the pretty text (RFC: data.head).
  const maxBytes = limit.maxBytes;
  if (maxBytes === undefined || data === undefined || jsonBytes(data) <= maxBytes) {
    return { data, truncated: false };
  }
  const text = JSON.stringify(data, null, 2);
  const path = await sink(text);
  return {
    data: { head: utf8Head(text, maxBytes), notice: `Output truncated at ${maxBytes} bytes. ${readOnHint(path)}` },
    truncated: true,
    output_path: path,
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
