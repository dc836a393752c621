import type { ToolCallContent } from "@agentclientprotocol/sdk";
import type { ToolDisplay } from "../tool/define.js";
import type { Envelope } from "../tool/envelope.js";
import { utf8Head, utf8Tail } from "../tool/truncate.js";

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

/**
 * Caps text for one frame: the head and the tail (where a command's last error line and its
 * exit code are), each cut at a line end when one is near, and between them how much was left
 * out and how to see it.
 */
export function capForFrame(text: string, hint: string, maxBytes = FRAME_TEXT_BYTES): string {
  const total = Buffer.byteLength(text, "utf8");
  if (total <= maxBytes) return text;
  const room = Math.max(0, maxBytes - 120);
  let head = utf8Head(text, Math.ceil(room * 0.6));
  const headCut = head.lastIndexOf("\n");
  if (headCut > head.length / 2) head = head.slice(0, headCut + 1);
  let tail = utf8Tail(text, room - Buffer.byteLength(head, "utf8"));
  const tailCut = tail.indexOf("\n");
  if (tailCut >= 0 && tailCut < tail.length / 2) tail = tail.slice(tailCut + 1);
  const dropped = total - Buffer.byteLength(head, "utf8") - Buffer.byteLength(tail, "utf8");
  return `${head.endsWith("\n") ? head : `${head}\n`}… (${dropped} bytes not shown; ${hint}) …\n${tail}`;
}

export function textContent(text: string): ToolCallContent {
  return { type: "content", content: { type: "text", text } };
}

/** What a finished call shows: the error text, or the tool's display as ACP content. */
export function resultContent(envelope: Envelope, display: ToolDisplay = {}): ToolCallContent[] {
  const hint = envelope.metadata.output_path
    ? `full output in ${envelope.metadata.output_path}`
    : "output shortened for display; the model received it whole";
  if (envelope.type === "error") return [textContent(capForFrame(envelope.error_text, hint))];
  const content: ToolCallContent[] = (display.diffs ?? []).map((d) => diffContent(d.path, d.oldText, d.newText));
  const text = display.text ?? "";
  if (text.trim() !== "") {
    const capped = capForFrame(text, hint);
    content.push(textContent(display.markdown ? capped : fenced(capped, display.language)));
  }
  for (const image of display.images ?? []) {
    content.push({ type: "content", content: { type: "image", data: image.data, mimeType: image.mimeType } });
  }
  for (const note of display.notes ?? []) content.push(textContent(note));
  return content;
}

/** A bounded copy of a JSON value for rawInput / rawOutput: long strings are cut. */
export function boundedJson(value: unknown, maxBytes = FRAME_TEXT_BYTES): unknown {
  const json = JSON.stringify(value);
  if (json === undefined || Buffer.byteLength(json, "utf8") <= maxBytes) return value;
  const perString = Math.max(200, Math.floor(maxBytes / 8));
  const cut = (v: unknown, depth: number): unknown => {
    if (typeof v === "string")
      return Buffer.byteLength(v, "utf8") > perString ? `${utf8Head(v, perString)}… (${Buffer.byteLength(v, "utf8")} bytes)` : v;
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
