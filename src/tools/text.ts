import { constants } from "node:buffer";
import path from "node:path";
import type { FileInfo, ToolContext, ToolEvent } from "../tool/context.js";
import { ToolError } from "../tool/errors.js";
import { editDistance } from "../tool/edit-distance.js";

/** Shared text helpers of the file tools: binary sniffing, encodings, line endings, placeholders, near names. */

// Extensions that are binary whatever their first bytes say (opencode's list plus common media).
const BINARY_EXTENSIONS = new Set(
  (
    "zip tar gz tgz bz2 xz zst 7z rar exe dll so dylib class jar war ear doc docx xls xlsx ppt pptx " +
    "odt ods odp bin dat obj o a lib wasm pyc pyo png jpg jpeg gif webp ico bmp tif tiff psd heic avif " +
    "pdf mp3 mp4 m4a m4v mov avi mkv webm wav flac ogg aac woff woff2 ttf otf eot sqlite sqlite3 db " +
    "iso dmg img apk ipa deb rpm node pdb"
  ).split(" "),
);

export const SAMPLE_BYTES = 4096;

export type TextEncoding = "utf-8" | "utf-8-bom" | "utf-16le" | "utf-16be";

/** The encoding a file's first bytes announce (a BOM), UTF-8 otherwise. */
export function detectEncoding(head: Uint8Array): { encoding: TextEncoding; bomLength: number } {
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return { encoding: "utf-8-bom", bomLength: 3 };
  if (head[0] === 0xff && head[1] === 0xfe) return { encoding: "utf-16le", bomLength: 2 };
  if (head[0] === 0xfe && head[1] === 0xff) return { encoding: "utf-16be", bomLength: 2 };
  return { encoding: "utf-8", bomLength: 0 };
}

export function isUtf16(encoding: TextEncoding): boolean {
  return encoding === "utf-16le" || encoding === "utf-16be";
}

/**
 * Why a file is binary, or null for text: a known binary extension, else a sample with a NUL
 * byte or more than 30% control bytes. A UTF-16 BOM means text (its ASCII has NUL bytes).
 */
export function binaryReason(filePath: string, sample: Uint8Array): string | null {
  const ext = path.extname(filePath).slice(1).toLowerCase();
  if (BINARY_EXTENSIONS.has(ext)) return `.${ext} files are binary`;
  if (sample.length === 0 || isUtf16(detectEncoding(sample).encoding)) return null;
  const bytes = sample.subarray(0, SAMPLE_BYTES);
  let control = 0;
  for (const b of bytes) {
    if (b === 0) return "it contains NUL bytes";
    if (b < 9 || (b > 13 && b < 32)) control++;
  }
  if (control / bytes.length > 0.3) return `${Math.round((100 * control) / bytes.length)}% of its first bytes are control characters`;
  return null;
}

/** Swaps byte pairs (UTF-16BE ⇄ UTF-16LE), so every UTF-16 path runs through the LE codec. */
export function swapBytes(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length - (bytes.length % 2));
  for (let i = 0; i + 1 < bytes.length; i += 2) {
    out[i] = bytes[i + 1] as number;
    out[i + 1] = bytes[i] as number;
  }
  return out;
}

/** Decodes bytes that carry no BOM. `fatal` throws on invalid sequences instead of writing U+FFFD. */
export function decodeBody(body: Uint8Array, encoding: TextEncoding, fatal = false): string {
  if (isUtf16(encoding)) {
    const le = encoding === "utf-16be" ? swapBytes(body) : body;
    return new TextDecoder("utf-16le", { fatal, ignoreBOM: true }).decode(le);
  }
  return new TextDecoder("utf-8", { fatal, ignoreBOM: true }).decode(body);
}

export interface DecodedText {
  /** The text without its BOM. */
  text: string;
  encoding: TextEncoding;
}

/** Decodes a whole file. With `fatal`, a byte sequence invalid in the encoding throws a TypeError. */
export function decodeText(bytes: Uint8Array, fatal = false): DecodedText {
  const { encoding, bomLength } = detectEncoding(bytes);
  if (fatal && isUtf16(encoding) && (bytes.length - bomLength) % 2 !== 0) {
    throw new TypeError("odd number of bytes in a UTF-16 file");
  }
  return { text: decodeBody(bytes.subarray(bomLength), encoding, fatal), encoding };
}

/**
 * Whether a non-fatal decode lost bytes: `text` (decoded from `body`, no BOM) holds U+FFFD for a
 * sequence invalid in the encoding. A U+FFFD the file really contains is no loss.
 */
export function isLossy(body: Uint8Array, encoding: TextEncoding, text: string): boolean {
  if (!text.includes("\uFFFD")) return false;
  try {
    decodeBody(body, encoding, true);
    return isUtf16(encoding) && body.length % 2 !== 0;
  } catch {
    return true;
  }
}

/** The longest string V8 can hold (2^29 - 24 characters on 64-bit): the most text edit and write can handle. */
export const MAX_TEXT_CHARS = constants.MAX_STRING_LENGTH;

const mib = (n: number) => `${Math.round(n / (1024 * 1024))} MiB`;

/** too_large for a file whose text (or an edit's result) does not fit in one string. */
export function textTooLarge(bytes: number, maxChars = MAX_TEXT_CHARS): ToolError {
  return new ToolError(
    "too_large",
    `The file is ${bytes} bytes (${mib(bytes)}): too large to handle as text. The limit is ${maxChars} characters (about ${mib(maxChars)} ` +
      "of ASCII), the longest string the JavaScript engine can hold. Change the file with bash instead (e.g. sed -i), or split it.",
  );
}

/**
 * Decodes a whole file, saying whether the decode was lossy (invalid bytes became U+FFFD).
 * A text longer than `maxChars` is too_large, not "invalid".
 */
export function decodeChecked(bytes: Uint8Array, maxChars = MAX_TEXT_CHARS): DecodedText & { lossy: boolean } {
  const { encoding, bomLength } = detectEncoding(bytes);
  const body = bytes.subarray(bomLength);
  let text: string;
  try {
    text = decodeBody(body, encoding);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ERR_STRING_TOO_LONG") throw textTooLarge(bytes.length, maxChars);
    throw err;
  }
  if (text.length > maxChars) throw textTooLarge(bytes.length, maxChars);
  return { text, encoding, lossy: isLossy(body, encoding, text) };
}

/** Past this many characters of old + new text, a diff event carries the changed lines only. */
export const LARGE_DIFF_CHARS = 2 * 1024 * 1024;
/** The most characters of each side a diff event of a large file carries. */
const EXCERPT_CHARS = 32 * 1024;
const EXCERPT_CONTEXT = 3;

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  const step = 64 * 1024;
  let i = 0;
  while (i + step <= n && a.slice(i, i + step) === b.slice(i, i + step)) i += step;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

function commonSuffix(a: string, b: string, max: number): number {
  const step = 64 * 1024;
  let i = 0;
  while (i + step <= max && a.slice(a.length - i - step, a.length - i) === b.slice(b.length - i - step, b.length - i)) i += step;
  while (i < max && a.charCodeAt(a.length - 1 - i) === b.charCodeAt(b.length - 1 - i)) i++;
  return i;
}

/** The start of the line holding `pos`, moved back `lines` more lines. */
function lineStartBefore(text: string, pos: number, lines: number): number {
  let p = pos;
  for (let k = 0; k <= lines; k++) {
    const nl = text.lastIndexOf("\n", p - 1);
    if (nl < 0) return 0;
    p = nl;
  }
  return p + 1;
}

/** The end (after its line break) of the line holding `pos`, moved on `lines` more lines. */
function lineEndAfter(text: string, pos: number, lines: number): number {
  let p = pos;
  for (let k = 0; k <= lines; k++) {
    const nl = text.indexOf("\n", p);
    if (nl < 0) return text.length;
    p = nl + 1;
  }
  return p;
}

function capExcerpt(text: string): string {
  if (text.length <= EXCERPT_CHARS) return text;
  const cut = text.lastIndexOf("\n", EXCERPT_CHARS);
  return text.slice(0, cut > 0 ? cut + 1 : EXCERPT_CHARS);
}

/**
 * The diff event of a change: both whole texts when they are small, else only the changed lines
 * with a few lines of context (each side capped), so a huge file never travels whole to the editor.
 */
export function diffEvent(abs: string, oldText: string | null, newText: string, maxChars = LARGE_DIFF_CHARS): ToolEvent {
  if ((oldText?.length ?? 0) + newText.length <= maxChars) return { type: "diff", path: abs, oldText, newText };
  if (oldText === null) return { type: "diff", path: abs, oldText: null, newText: capExcerpt(newText) };
  const prefix = commonPrefix(oldText, newText);
  const suffix = commonSuffix(oldText, newText, Math.min(oldText.length, newText.length) - prefix);
  const from = lineStartBefore(oldText, prefix, EXCERPT_CONTEXT);
  return {
    type: "diff",
    path: abs,
    oldText: capExcerpt(oldText.slice(from, lineEndAfter(oldText, oldText.length - suffix, EXCERPT_CONTEXT))),
    newText: capExcerpt(newText.slice(from, lineEndAfter(newText, newText.length - suffix, EXCERPT_CONTEXT))),
  };
}

/** What a model must know about a lossy decode: what it sees, and what writing it back would do. */
export function lossyNotice(encoding: TextEncoding, where: string): string {
  const name = isUtf16(encoding) ? "UTF-16" : "UTF-8";
  return (
    `This file is not valid ${name} (first at ${where}; a legacy encoding such as Latin-1?): its invalid bytes show as U+FFFD (\uFFFD). ` +
    "Text written back would lose them, so edit and write refuse this file unless you pass allow_lossy: true (only if the user accepts that)."
  );
}

/** The refusal of edit and write for a file whose decode is lossy. */
export function lossyRefusal(tool: "edit" | "write", displayPath: string, encoding: TextEncoding): ToolError {
  const name = isUtf16(encoding) ? "UTF-16" : "UTF-8";
  return new ToolError(
    "binary_file",
    `${displayPath} is not valid ${name} text (a legacy encoding such as Latin-1?): its invalid bytes cannot be written back, and rewriting it ` +
      `would turn them into U+FFFD. If the user accepts that, call ${tool} again with allow_lossy: true; to keep the bytes, change the file ` +
      "with bash instead (e.g. sed, or iconv to convert it to UTF-8 first).",
  );
}

/** Encodes text in a file's encoding, with its BOM. A leading U+FEFF in `text` is not doubled. */
export function encodeText(text: string, encoding: TextEncoding): Uint8Array {
  if (encoding === "utf-8") return Buffer.from(text, "utf8");
  const body = text.startsWith("\uFEFF") ? text.slice(1) : text;
  if (encoding === "utf-8-bom") return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(body, "utf8")]);
  const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(body, "utf16le")]);
  return encoding === "utf-16be" ? swapBytes(le) : le;
}

export type LineEnding = "lf" | "crlf" | "mixed" | "none";

/** The file's line-break convention: only CRLF, only LF, both, or no break at all. */
export function detectLineEnding(text: string): LineEnding {
  let crlf = 0;
  let lf = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) {
    if (i > 0 && text.charCodeAt(i - 1) === 13) crlf++;
    else lf++;
  }
  if (crlf === 0 && lf === 0) return "none";
  if (crlf === 0) return "lf";
  return lf === 0 ? "crlf" : "mixed";
}

/**
 * Refuses a file whose mode grants no write permission (chmod 444) before anyone is asked to
 * approve the change; the fs refuses it again when writing (and checks what else the user may not write).
 */
export function refuseReadOnly(info: FileInfo, shownPath: string): void {
  if (info.mode === undefined || (info.mode & 0o222) !== 0) return;
  throw new ToolError(
    "permission_denied",
    `Permission denied: ${shownPath}: the file is read-only (mode ${info.mode.toString(8).padStart(4, "0")}). ` +
      "If it should change, ask the user to make it writable (chmod u+w); do not work around the permission.",
  );
}

/** The notice for a write whose text the editor changed as it saved it. */
export function landedNotice(sent: number, landed: number): string {
  return (
    `The editor changed the text as it saved it (${landed} bytes landed, not the ${sent} sent; e.g. a final newline): ` +
    "the file holds what the diff shows, not exactly what you gave."
  );
}

// --- Omission placeholders ---------------------------------------------------------------

const NOUN =
  "(?:code|content|contents|file|methods?|functions?|class(?:es)?|implementation|logic|lines?|imports?|" +
  "properties|props|fields|tests?|cases|components?|styles?|body|config|configuration|items|entries|" +
  "definitions?|sections?|text|html|markup|rules)";
// Phrases a model writes instead of code it did not want to retype; matched on the words of a line.
const PLACEHOLDER_PHRASES = new RegExp(
  "^(?:" +
    [
      `(?:the )?rest(?: of(?: the)?(?: \\w+)?(?: ${NOUN})?)?(?: (?:here|unchanged|remains unchanged|omitted|as before))?`,
      `(?:keep |keeping )?(?:the )?(?:existing|unchanged|remaining|previous|original|other) ${NOUN}(?: \\w+)?(?: (?:here|unchanged|omitted|as before))?`,
      `(?:(?:the )?${NOUN} |everything(?: else)? |all )?(?:remains? |stays? |is |are )?(?:unchanged|the same|as before)`,
      `same as (?:before|above|original)`,
      `(?:${NOUN} )?omitted(?: for brevity)?`,
    ].join("|") +
    ")$",
);

/** A line's placeholder form (`rest of code`), or null. Narrow: an ellipsis plus a known phrase, nothing else. */
export function placeholderOf(line: string): string | null {
  const trimmed = line.trim();
  if (trimmed.length > 120 || !/(\.\.\.|…)/.test(trimmed)) return null;
  const words = trimmed
    .toLowerCase()
    .replace(/<!--|-->|\/\*+|\*+\/|\/\/+|^#+|^--|^\*|^;+|^%+|…|\.{2,}|[()[\]{}:,.!'"`-]/g, " ")
    .replace(/\s+/g, " ")
    .trim();
  return words !== "" && PLACEHOLDER_PHRASES.test(words) ? words : null;
}

/** Every placeholder line in a text, in their normalised forms. */
export function detectPlaceholders(text: string): string[] {
  const found: string[] = [];
  for (const line of text.split("\n")) {
    const p = placeholderOf(line);
    if (p) found.push(p);
  }
  return found;
}

/** Placeholders in `next` that `previous` did not already contain. */
export function newPlaceholders(previous: string | null, next: string): string[] {
  const known = new Set(previous ? detectPlaceholders(previous) : []);
  return [...new Set(detectPlaceholders(next).filter((p) => !known.has(p)))];
}

// --- Near names for a missing file -------------------------------------------------------

function stem(name: string): string {
  const ext = path.extname(name);
  return ext && ext !== name ? name.slice(0, -ext.length) : name;
}

/** Up to `max` names close to `target`: same name in another case, same stem, small edit distance, substring. */
export function nearNames(target: string, names: readonly string[], max = 3): string[] {
  const t = target.toLowerCase();
  const cap = t.length <= 4 ? 1 : t.length <= 10 ? 2 : 3;
  const scored: { name: string; score: number }[] = [];
  for (const name of names) {
    if (name === target) continue;
    const n = name.toLowerCase();
    let score: number | null = null;
    if (n === t) score = 0;
    else if (stem(n) === stem(t)) score = 1;
    else {
      const d = editDistance(n, t, cap);
      if (d <= cap) score = 1 + d;
      else if ((t.length >= 3 && n.includes(t)) || (n.length >= 3 && t.includes(n))) score = 5;
    }
    if (score !== null) scored.push({ name, score });
  }
  scored.sort((a, b) => a.score - b.score || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return scored.slice(0, max).map((s) => s.name);
}

/** The not_found error for a missing file, with "Did you mean" names from its (existing) parent. */
export async function missingFileError(ctx: ToolContext, raw: string, abs: string): Promise<ToolError> {
  const parent = path.dirname(abs);
  let siblings: string[] | null = null;
  try {
    const info = await ctx.fs.stat(parent);
    if (info?.type === "directory") siblings = (await ctx.fs.readDir(parent)).map((e) => e.name);
  } catch {
    // An unreadable parent only costs the suggestions.
  }
  if (siblings === null) {
    return new ToolError(
      "not_found",
      `File not found: ${raw} (${abs}); its directory ${parent} does not exist either. Use glob to find the file.`,
    );
  }
  const near = nearNames(path.basename(abs), siblings);
  const shown = near.map((n) => {
    const rel = path.relative(ctx.workspace, path.join(parent, n));
    return rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel : path.join(parent, n);
  });
  const hint = near.length ? ` Did you mean ${shown.join(", ")}?` : " Use glob to find the file.";
  return new ToolError("not_found", `File not found: ${raw} (${abs}).${hint}`);
}
