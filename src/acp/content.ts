import type { ToolCallContent } from "@agentclientprotocol/sdk";
import type { Envelope } from "../tool/envelope.js";
import { utf8Head } from "../tool/truncate.js";

/** The most text one update frame carries: a huge frame must never reach the client. */
export const FRAME_TEXT_BYTES = 10 * 1024;
/** Diffs past this size are summarised: the editor cannot review a multi-megabyte file inline anyway. */
export const MAX_DIFF_BYTES = 2 * 1024 * 1024;

/** Markdown fence that cannot be closed by backticks inside the text. */
export function fenced(text: string, lang = ""): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${lang}\n${text.endsWith("\n") ? text : `${text}\n`}${fence}`;
}

/** Caps text for one frame, saying how to see the rest. */
export function capForFrame(text: string, hint: string, maxBytes = FRAME_TEXT_BYTES): string {
  if (Buffer.byteLength(text, "utf8") <= maxBytes) return text;
  const head = utf8Head(text, maxBytes);
  const cut = head.lastIndexOf("\n");
  return `${cut > maxBytes / 2 ? head.slice(0, cut) : head}\n… (${hint})`;
}

export function textContent(text: string): ToolCallContent {
  return { type: "content", content: { type: "text", text } };
}

interface DataShapes {
  content?: string;
  matches?: { path: string; line?: number; text?: string; count?: number; context?: boolean }[];
  files?: string[];
  stdout?: string;
  stderr?: string;
  exit_code?: number | null;
  signal?: string | null;
  timed_out?: boolean;
  notice?: string;
  summary?: string;
  diff?: string;
}

function readableText(data: unknown): string {
  if (typeof data === "string") return data;
  if (typeof data !== "object" || data === null) return JSON.stringify(data);
  const d = data as DataShapes;
  if (typeof d.stdout === "string" || typeof d.stderr === "string") {
    const parts = [d.stdout ?? ""];
    if (d.stderr) parts.push(d.stderr);
    const status = d.timed_out ? "timed out" : d.signal ? `killed by ${d.signal}` : `exit code ${d.exit_code}`;
    parts.push(`[${status}]`);
    return parts.filter(Boolean).join(parts[0]?.endsWith("\n") ? "" : "\n");
  }
  if (typeof d.content === "string") return d.content;
  if (Array.isArray(d.matches)) {
    const lines = d.matches.map((m) =>
      m.count !== undefined ? `${m.path}: ${m.count}` : m.line !== undefined ? `${m.path}:${m.line}${m.context ? "-" : ":"} ${m.text ?? ""}` : m.path,
    );
    return [...lines, d.notice].filter(Boolean).join("\n") || "(no matches)";
  }
  if (Array.isArray(d.files)) return [...d.files, d.notice].filter(Boolean).join("\n") || "(no files)";
  if (typeof d.diff === "string") return d.diff;
  if (typeof d.summary === "string") return d.summary;
  return JSON.stringify(data, null, 2);
}

/** The text block shown for a finished call (diffs and terminals are sent separately). */
export function resultContent(envelope: Envelope): ToolCallContent[] {
  const hint = envelope.metadata.output_path
    ? `full output in ${envelope.metadata.output_path}`
    : "output shortened for display; the model received it whole";
  if (envelope.type === "error") return [textContent(capForFrame(envelope.error_text, hint))];
  const text = readableText(envelope.data);
  if (text.trim() === "") return [];
  return [textContent(fenced(capForFrame(text, hint)))];
}

/** A bounded copy of a JSON value for rawInput / rawOutput: long strings are cut. */
export function boundedJson(value: unknown, maxBytes = FRAME_TEXT_BYTES): unknown {
  const json = JSON.stringify(value);
  if (json === undefined || Buffer.byteLength(json, "utf8") <= maxBytes) return value;
  const perString = Math.max(200, Math.floor(maxBytes / 8));
  const cut = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return Buffer.byteLength(v, "utf8") > perString ? `${utf8Head(v, perString)}… (${Buffer.byteLength(v, "utf8")} bytes)` : v;
    if (Array.isArray(v)) {
      const items = v.slice(0, 20).map((x) => cut(x, depth + 1));
      return v.length > 20 ? [...items, `… ${v.length - 20} more`] : items;
    }
    if (typeof v === "object" && v !== null) {
      if (depth > 4) return "…";
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cut(x, depth + 1)]));
    }
    return v;
  };
  return cut(value, 0);
}

/** A diff block, or a note when the file is too large to review inline. */
export function diffContent(path: string, oldText: string | null, newText: string): ToolCallContent {
  const size = Buffer.byteLength(newText, "utf8") + (oldText ? Buffer.byteLength(oldText, "utf8") : 0);
  if (size > MAX_DIFF_BYTES) {
    return textContent(`${path}: ${oldText === null ? "created" : "changed"} (${size} bytes — too large to show as a diff)`);
  }
  return { type: "diff", path, oldText, newText };
}
