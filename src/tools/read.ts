import path from "node:path";
import * as z from "zod";
import { absolutize } from "../tool/paths.js";
import type { FileInfo, ToolContext } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import { utf8Head, utf8HeadEnd, utf8TailStart } from "../tool/truncate.js";
import {
  SAMPLE_BYTES,
  binaryReason,
  decodeBody,
  detectEncoding,
  isLossy,
  isUtf16,
  lossyNotice,
  missingFileError,
  type TextEncoding,
} from "./text.js";

/** The RFC's read cap; the line window stops below it, so the host cap normally never triggers. */
export const READ_MAX_BYTES = 200 * 1024;
export const READ_DEFAULT_LINES = 2000;
export const READ_LINE_CHARS = 2000;
// Raw bytes kept of one line: enough for READ_LINE_CHARS characters of any encoding, plus a CR.
const LINE_KEEP_BYTES = READ_LINE_CHARS * 4 + 8;

const parameters = z.object({
  path: z.string().min(1).describe("File or directory"),
  offset: z.number().int().min(1).optional().describe("1-based first line (or entry)"),
  limit: z.number().int().min(1).optional().describe(`Default ${READ_DEFAULT_LINES}`),
  byte_offset: z.number().int().min(0).optional().describe("Byte mode: raw text from this byte"),
  byte_limit: z.number().int().min(1).max(READ_MAX_BYTES).optional().describe(`Byte mode; default and max ${READ_MAX_BYTES}`),
});

type ReadArgs = z.output<typeof parameters>;

async function readHead(ctx: ToolContext, abs: string, bytes: number): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of ctx.fs.readStream(abs, { start: 0, end: bytes - 1 })) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** Start of the next line break at or after `from`; `buf` starts on a code-unit boundary. */
function findNewline(buf: Uint8Array, from: number, encoding: TextEncoding): number {
  if (!isUtf16(encoding)) return buf.indexOf(0x0a, from);
  const le = encoding === "utf-16le";
  for (let i = buf.indexOf(0x0a, from); i !== -1; i = buf.indexOf(0x0a, i + 1)) {
    if (le && i % 2 === 0 && buf[i + 1] === 0) return i;
    if (!le && i % 2 === 1 && buf[i - 1] === 0) return i - 1;
  }
  return -1;
}

function cutLine(text: string, startByte: number, bytes: number): string {
  let cut = text.slice(0, READ_LINE_CHARS);
  const last = cut.charCodeAt(cut.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut = cut.slice(0, -1);
  return `${cut}… (line truncated to ${READ_LINE_CHARS} chars; it is ${bytes} bytes from byte ${startByte}: use byte_offset/byte_limit to read it whole)`;
}

interface LineWindow {
  lines: string[];
  /** Whole-file line count, when the scan reached the end. */
  total: number | null;
  more: boolean;
  cappedByBytes: boolean;
  /** The first line of the window whose bytes are not valid in the encoding (shown with U+FFFD). */
  lossyLine: number | null;
}

/**
 * Streams the file and keeps lines offset..offset+limit-1. Lines before the window are only
 * counted (never decoded); the stream is dropped as soon as the window is full.
 */
async function scanLines(
  ctx: ToolContext,
  abs: string,
  encoding: TextEncoding,
  bomLength: number,
  offset: number,
  limit: number,
): Promise<LineWindow> {
  const unit = isUtf16(encoding) ? 2 : 1;
  const width = String(offset + limit - 1).length;
  const lines: string[] = [];
  let contentBytes = 0;
  let lineNo = 1;
  let lineStart = bomLength;
  let lineBytes = 0;
  let pieces: Uint8Array[] = [];
  let kept = 0;
  let full = false;
  let more = false;
  let cappedByBytes = false;
  let lossyLine: number | null = null;
  let eof = true;
  let pending: Uint8Array | null = null;

  const take = (seg: Uint8Array) => {
    lineBytes += seg.length;
    if (lineNo >= offset && kept < LINE_KEEP_BYTES) {
      const part = seg.subarray(0, LINE_KEEP_BYTES - kept);
      pieces.push(part);
      kept += part.length;
    }
  };
  /** Ends the current line; false when it no longer fits the byte cap (the window stops before it). */
  const finish = (): boolean => {
    if (lineNo >= offset) {
      const raw = Buffer.concat(pieces);
      let text = decodeBody(raw, encoding);
      if (lossyLine === null && text.includes("\uFFFD")) {
        // A line cut short may end inside a character: check only whole ones.
        const whole = lineBytes === kept ? raw : raw.subarray(0, unit === 2 ? raw.length - 2 : utf8HeadEnd(raw, raw.length));
        if (isLossy(whole, encoding, decodeBody(whole, encoding))) lossyLine = lineNo;
      }
      if (lineBytes === kept && text.endsWith("\r")) text = text.slice(0, -1);
      if (lineBytes > kept || text.length > READ_LINE_CHARS) text = cutLine(text, lineStart, lineBytes);
      const bytes = width + 1 + Buffer.byteLength(text, "utf8") + (lines.length ? 1 : 0);
      if (lines.length > 0 && contentBytes + bytes > READ_MAX_BYTES) {
        cappedByBytes = true;
        return false;
      }
      lines.push(text);
      contentBytes += bytes;
      if (lines.length === limit) full = true;
    }
    lineNo++;
    lineStart += lineBytes + unit;
    lineBytes = 0;
    pieces = [];
    kept = 0;
    return true;
  };

  scan: for await (const chunk of ctx.fs.readStream(abs, { start: bomLength })) {
    if (ctx.signal.aborted) throw new ToolError("aborted", "The read was cancelled");
    let buf = chunk;
    if (full) {
      if (buf.length === 0) continue;
      more = true;
      eof = false;
      break;
    }
    if (unit === 2) {
      // Keep UTF-16 code units whole across chunks.
      if (pending) buf = Buffer.concat([pending, buf]);
      pending = buf.length % 2 ? buf.subarray(buf.length - 1) : null;
      if (pending) buf = buf.subarray(0, buf.length - 1);
    }
    let at = 0;
    while (at < buf.length) {
      const nl = findNewline(buf, at, encoding);
      const end = nl === -1 ? buf.length : nl;
      if (end > at) take(buf.subarray(at, end));
      if (nl === -1) break;
      at = nl + unit;
      if (!finish()) {
        more = true;
        eof = false;
        break scan;
      }
      if (full) {
        if (at < buf.length) {
          more = true;
          eof = false;
          break scan;
        }
        break;
      }
    }
  }
  if (eof) {
    if (pending) take(pending);
    // A last line without a final line break.
    if (lineBytes > 0 && (full || !finish())) more = true;
  }
  const total = eof ? (cappedByBytes ? lineNo : more ? null : lineNo - 1) : null;
  return { lines, total, more, cappedByBytes, lossyLine };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

async function readLines(ctx: ToolContext, args: ReadArgs, abs: string, info: FileInfo, encoding: TextEncoding, bomLength: number) {
  const offset = args.offset ?? 1;
  const limit = args.limit ?? READ_DEFAULT_LINES;
  const window = await scanLines(ctx, abs, encoding, bomLength, offset, limit);
  const base = { path: abs, type: "file" as const, version: info.version, encoding };
  if (window.lines.length === 0) {
    const total = window.total ?? 0;
    if (offset > 1 || total > 0) {
      throw new ToolError(
        "invalid_arguments",
        total === 0
          ? `offset ${offset} is past the end of ${args.path}: the file is empty.`
          : `offset ${offset} is past the end of ${args.path}: it has ${plural(total, "line")}. Use an offset from 1 to ${total}.`,
      );
    }
    return { ...base, content: "", start_line: 0, end_line: 0, total_lines: 0, next_offset: null, notice: "The file is empty (0 lines)." };
  }
  const end = offset + window.lines.length - 1;
  const width = String(end).length;
  const content = window.lines.map((text, i) => `${String(offset + i).padStart(width)}\t${text}`).join("\n");
  const shown = window.more
    ? `Showing lines ${offset}-${end}${window.cappedByBytes ? ` (output capped at ${READ_MAX_BYTES / 1024} KB)` : ""}. Continue with offset=${end + 1}.`
    : `Showing lines ${offset}-${end}. End of file (${plural(window.total ?? end, "line")}).`;
  const notice = window.lossyLine === null ? shown : `${shown} ${lossyNotice(encoding, `line ${window.lossyLine}`)}`;
  return {
    ...base,
    ...(window.lossyLine === null ? {} : { lossy: true }),
    content,
    start_line: offset,
    end_line: end,
    total_lines: window.total,
    next_offset: window.more ? end + 1 : null,
    notice,
  };
}

/** The bytes [start, start+limit) of a text file, trimmed to whole characters. */
async function readBytes(ctx: ToolContext, args: ReadArgs, abs: string, info: FileInfo, encoding: TextEncoding, bomLength: number) {
  const base = { path: abs, type: "file" as const, version: info.version, encoding, total_bytes: info.size };
  const utf16 = isUtf16(encoding);
  let start = Math.max(args.byte_offset ?? 0, bomLength);
  if (utf16 && (start - bomLength) % 2) start--;
  if (info.size <= bomLength) {
    return { ...base, content: "", byte_offset: start, byte_end: start, next_byte_offset: null, notice: "The file is empty." };
  }
  if (start >= info.size) {
    throw new ToolError("invalid_arguments", `byte_offset ${args.byte_offset} is past the end of ${args.path}: it has ${info.size} bytes.`);
  }
  const limit = args.byte_limit ?? READ_MAX_BYTES;
  const chunks: Uint8Array[] = [];
  for await (const chunk of ctx.fs.readStream(abs, { start, end: start + limit - 1 })) chunks.push(chunk);
  const bytes = Buffer.concat(chunks);
  const atEof = start + bytes.length >= info.size;
  let skip = 0;
  let len = bytes.length;
  if (utf16) {
    const unitAt = (i: number) => (encoding === "utf-16le" ? bytes.readUInt16LE(i) : bytes.readUInt16BE(i));
    len -= len % 2;
    if (len >= 2 && unitAt(0) >= 0xdc00 && unitAt(0) <= 0xdfff) skip = 2;
    if (!atEof && len - skip >= 2 && unitAt(len - 2) >= 0xd800 && unitAt(len - 2) <= 0xdbff) len -= 2;
  } else {
    // Start and stop on character boundaries, never inside a multi-byte sequence.
    skip = utf8TailStart(bytes, 0);
    if (!atEof) len = skip + utf8HeadEnd(bytes.subarray(skip), len - skip);
  }
  let content = decodeBody(bytes.subarray(skip, len), encoding);
  if (utf16 && Buffer.byteLength(content, "utf8") > READ_MAX_BYTES) {
    // UTF-16 can grow in UTF-8; stop where the host cap would, so next_byte_offset stays exact.
    content = utf8Head(content, READ_MAX_BYTES);
    len = skip + content.length * 2;
  }
  const from = start + skip;
  const to = start + len;
  const next = to < info.size ? to : null;
  const lossy = isLossy(bytes.subarray(skip, len), encoding, content);
  const shown =
    next === null
      ? `Bytes ${from}-${to - 1} of ${info.size}. End of file.`
      : `Bytes ${from}-${to - 1} of ${info.size}. Continue with byte_offset=${to}.`;
  const notice = lossy ? `${shown} ${lossyNotice(encoding, `bytes ${from}-${to - 1}`)}` : shown;
  return { ...base, ...(lossy ? { lossy: true } : {}), content, byte_offset: from, byte_end: to, next_byte_offset: next, notice };
}

async function listDirectory(ctx: ToolContext, args: ReadArgs, abs: string) {
  const entries = (await ctx.fs.readDir(abs)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const total = entries.length;
  const offset = args.offset ?? 1;
  const limit = args.limit ?? READ_DEFAULT_LINES;
  if (total > 0 && offset > total) {
    throw new ToolError(
      "invalid_arguments",
      `offset ${offset} is past the end of ${args.path}: it has ${total} ${total === 1 ? "entry" : "entries"}.`,
    );
  }
  const page = entries.slice(offset - 1, offset - 1 + limit);
  const names = await Promise.all(
    page.map(async (e) => {
      if (e.type === "directory") return `${e.name}/`;
      if (e.type !== "symlink") return e.name;
      // A link to a directory reads like one; a link that leads outside the scope stays a plain name.
      const target = await ctx.fs.stat(path.join(abs, e.name)).catch(() => null);
      return target?.type === "directory" ? `${e.name}/` : e.name;
    }),
  );
  const end = offset - 1 + names.length;
  const more = end < total;
  const notice =
    total === 0
      ? "The directory is empty."
      : more
        ? `Showing entries ${offset}-${end} of ${total}. Continue with offset=${end + 1}.`
        : `Showing entries ${offset}-${end} of ${total}.`;
  return {
    path: abs,
    type: "directory" as const,
    entries: names,
    total,
    content: names.join("\n"),
    next_offset: more ? end + 1 : null,
    notice,
  };
}

/** `src/a.ts`, `src/a.ts:10` or `src/a.ts:10-20` → arguments. */
function parseShorthand(text: string): Record<string, unknown> {
  const trimmed = text.trim();
  const m = /^(.+?):(\d+)(?:-(\d+))?$/.exec(trimmed);
  if (!m) return { path: trimmed };
  const offset = Number(m[2]);
  const args: Record<string, unknown> = { path: m[1], offset };
  if (m[3] !== undefined && Number(m[3]) < offset) {
    throw new ToolError(
      "invalid_arguments",
      `${trimmed}: the range ends before it starts; write ${m[1]}:${m[3]}-${m[2]} to read lines ${m[3]} to ${m[2]}`,
    );
  }
  if (m[3] !== undefined) args.limit = Number(m[3]) - offset + 1;
  return args;
}

/** read: a line window (or byte range) of a text file, or a directory listing; records a read stamp. */
export default defineTool({
  id: "read",
  kind: "read",
  description: [
    `Read a text file: returns up to ${READ_DEFAULT_LINES} numbered lines ("<line>\\t<text>") from offset (1-based),`,
    `at most ${READ_MAX_BYTES / 1024} KB; the notice says how to continue (offset=N). Lines over ${READ_LINE_CHARS} chars are cut;`,
    "read those (or minified files) with byte_offset/byte_limit (raw text). Never copy the line-number prefix into edit.",
    "A directory returns its entries (directories end with /). Binary files are refused; invalid UTF-8 comes back lossy.",
  ].join(" "),
  parameters,
  requires: { fs: { read: ["{workspace}/**", "{ad-hoc}/**"] } },
  output: { field: "content", maxBytes: READ_MAX_BYTES },
  title(args) {
    if (args.byte_offset !== undefined || args.byte_limit !== undefined) {
      const from = args.byte_offset ?? 0;
      return `Read ${args.path} (bytes ${from}-${from + (args.byte_limit ?? READ_MAX_BYTES) - 1})`;
    }
    if (args.offset === undefined && args.limit === undefined) return `Read ${args.path}`;
    const from = args.offset ?? 1;
    return `Read ${args.path}:${from}-${from + (args.limit ?? READ_DEFAULT_LINES) - 1}`;
  },
  locations: (args, { workspace }) => [{ path: absolutize(args.path, workspace), line: args.offset ?? 1 }],
  shorthand: parseShorthand,
  shorthandHint: "a path (src/a.ts or src/a.ts:10-40)",
  async execute(args, ctx) {
    const abs = await ctx.fs.resolve(args.path, "read");
    const info = await ctx.fs.stat(abs);
    if (!info) throw await missingFileError(ctx, args.path, abs);
    const byteMode = args.byte_offset !== undefined || args.byte_limit !== undefined;
    if (byteMode && (args.offset !== undefined || args.limit !== undefined)) {
      throw new ToolError("invalid_arguments", "Use either offset/limit (lines) or byte_offset/byte_limit (bytes), not both.");
    }
    if (info.type === "directory") {
      if (byteMode) throw new ToolError("is_directory", `${args.path} is a directory; byte_offset/byte_limit only apply to files.`);
      return listDirectory(ctx, args, abs);
    }
    if (info.type !== "file") {
      throw new ToolError("not_a_file", `${args.path} is not a regular file (${info.type}); read only reads files and directories.`);
    }
    const head = await readHead(ctx, abs, SAMPLE_BYTES);
    const reason = binaryReason(abs, head);
    if (reason) {
      throw new ToolError(
        "binary_file",
        `${args.path} is a binary file (${reason}); it cannot be read as text. Inspect it with bash (file, xxd, unzip -l …) if you need to.`,
      );
    }
    const { encoding, bomLength } = detectEncoding(head);
    const result = byteMode
      ? await readBytes(ctx, args, abs, info, encoding, bomLength)
      : await readLines(ctx, args, abs, info, encoding, bomLength);
    ctx.session.readStamps.set(abs, info.version);
    return result;
  },
  display: (data) => ({
    text: data.content,
    // A directory or a byte range has no line to point at.
    locations: [{ path: data.path, ...("start_line" in data ? { line: data.start_line } : {}) }],
  }),
});
