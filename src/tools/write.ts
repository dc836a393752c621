import { diffLines } from "diff";
import * as z from "zod";
import { absolutize } from "../tool/paths.js";
import type { FileInfo, ToolContext, ToolEvent, WrittenFile } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import {
  SAMPLE_BYTES,
  binaryReason,
  decodeChecked,
  decodeText,
  diffEvent as textDiffEvent,
  detectLineEnding,
  encodeText,
  landedNotice,
  lossyRefusal,
  newPlaceholders,
  refuseReadOnly,
  type LineEnding,
  type TextEncoding,
} from "./text.js";

const parameters = z.object({
  path: z.string().min(1),
  content: z.string().describe("The COMPLETE new content of the file"),
  version: z.string().min(1).optional().describe("From your last read: refuses the write if the file changed since"),
  allow_lossy: z.boolean().optional().describe("Replace a lossy file anyway, only if the user accepts it"),
});

/** Lines in a text: line breaks, plus a last line without one. */
export function countLines(text: string): number {
  if (text === "") return 0;
  let n = 0;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return text.endsWith("\n") ? n : n + 1;
}

/**
 * Added and removed lines between two texts. Common head and tail lines are skipped first;
 * when the middle differs too much to diff cheaply, its line counts stand in (an upper bound).
 */
export function lineChanges(oldText: string, newText: string): { additions: number; deletions: number } {
  const a = oldText === "" ? [] : oldText.split(/(?<=\n)/);
  const b = newText === "" ? [] : newText.split(/(?<=\n)/);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const deleted = a.length - head - tail;
  const added = b.length - head - tail;
  if (deleted === 0 || added === 0) return { additions: added, deletions: deleted };
  const changes = diffLines(a.slice(head, a.length - tail).join(""), b.slice(head, b.length - tail).join(""), {
    maxEditLength: 200,
    timeout: 300,
  });
  if (!changes) return { additions: added, deletions: deleted };
  let additions = 0;
  let deletions = 0;
  for (const c of changes) {
    if (c.added) additions += c.count;
    else if (c.removed) deletions += c.count;
  }
  return { additions, deletions };
}

interface OldFile {
  text: string;
  encoding: TextEncoding;
  eol: LineEnding;
}

type WriteArgs = z.output<typeof parameters>;

export interface WriteResult {
  path: string;
  created: boolean;
  bytes: number;
  version: string;
  lines: number;
  additions: number;
  /** Null when the old content was not text (a replaced binary file). */
  deletions: number | null;
  notice?: string;
}

/** What a write will do, worked out without writing anything (shared by preview and execute). */
interface WritePlan {
  abs: string;
  info: FileInfo | null;
  /** The old text, null for a new file or a binary one. */
  old: OldFile | null;
  /** The text to write, in the kept line endings. */
  text: string;
  encoding: TextEncoding;
  notes: string[];
}

async function planWrite(args: WriteArgs, ctx: ToolContext): Promise<WritePlan> {
  const abs = await ctx.fs.resolve(args.path, "write");
  const info = await ctx.fs.stat(abs);
  if (info?.type === "directory") {
    throw new ToolError("is_directory", `${args.path} is a directory; give the path of a file inside it (e.g. ${args.path}/name.ext).`);
  }
  if (info && info.type !== "file") throw new ToolError("not_a_file", `${args.path} is not a regular file (${info.type}).`);
  if (info) refuseReadOnly(info, args.path);
  if (args.version !== undefined) {
    if (!info) {
      throw new ToolError(
        "stale_read",
        `${args.path} no longer exists: it was deleted or moved after you read it. Check with glob, or write without version to create it.`,
      );
    }
    if (info.version !== args.version) {
      throw new ToolError(
        "stale_read",
        `${args.path} changed since you read it (your version ${args.version}, now ${info.version}). Read it again and redo your change on the current content.`,
      );
    }
  }

  let old: OldFile | null = null;
  if (info) {
    const bytes = await ctx.fs.readFile(abs);
    // A binary file is simply replaced: there is no text to keep conventions from or to diff.
    if (!binaryReason(abs, bytes.subarray(0, SAMPLE_BYTES))) {
      const { text, encoding, lossy } = decodeChecked(bytes);
      // What read showed of such a file has U+FFFD for bytes no text can give back.
      if (lossy && !args.allow_lossy) throw lossyRefusal("write", args.path, encoding);
      old = { text, encoding, eol: detectLineEnding(text) };
    }
  }

  const placeholders = newPlaceholders(old?.text ?? null, args.content);
  if (placeholders.length) {
    throw new ToolError(
      "invalid_arguments",
      `content contains ${placeholders.map((p) => JSON.stringify(p)).join(", ")}: a placeholder for omitted code. ` +
        "write replaces the whole file, so that code would be lost. Write the complete content, or use edit to change part of the file.",
    );
  }

  let text = args.content;
  const notes: string[] = [];
  const encoding: TextEncoding = old?.encoding ?? "utf-8";
  if (old && encoding !== "utf-8") {
    if (text.startsWith("\uFEFF")) text = text.slice(1);
    notes.push(encoding === "utf-8-bom" ? "kept the file's UTF-8 BOM" : `kept the file's ${encoding.toUpperCase()} encoding`);
  }
  if (old?.eol === "crlf" && text.includes("\n") && !text.includes("\r\n")) {
    text = text.replace(/\n/g, "\r\n");
    notes.push("converted line breaks to CRLF like the rest of the file");
  }
  return { abs, info, old, text, encoding, notes };
}

const unchanged = (plan: WritePlan) => plan.old !== null && plan.old.text === plan.text;

function diffEvent(plan: WritePlan): ToolEvent {
  return textDiffEvent(plan.abs, plan.old?.text ?? null, plan.text);
}

/**
 * The plan to carry out, under the file's lock: the preview's own when the file has not changed
 * since (the editor already shows its diff), else a new one whose diff is sent.
 */
async function currentPlan(args: WriteArgs, ctx: ToolContext, abs: string): Promise<WritePlan> {
  const previewed = ctx.preview?.plan as WritePlan | undefined;
  const now = await ctx.fs.stat(abs);
  if (previewed && previewed.abs === abs && (previewed.info?.version ?? null) === (now?.version ?? null)) return previewed;
  const plan = await planWrite(args, ctx);
  if (!unchanged(plan)) ctx.emit(diffEvent(plan));
  return plan;
}

/** The result of a write that happened: line changes and size of what landed, and the notices. */
function reportWrite(ctx: ToolContext, plan: WritePlan, written: WrittenFile, sent: number): WriteResult {
  const { abs, info, old, text, notes } = plan;
  // What the file holds now: the editor may have changed the text as it saved it.
  const landed = written.landed ? decodeText(written.landed).text : text;
  if (written.landed) ctx.emit(textDiffEvent(abs, old?.text ?? null, landed));
  const landedLines = countLines(landed);
  const changes = old ? lineChanges(old.text, landed) : { additions: landedLines, deletions: info ? null : 0 };
  const notices = [
    info && !old ? "Replaced a binary file." : notes.length ? `Wrote the file; ${notes.join(" and ")}.` : "",
    written.landed ? landedNotice(sent, written.landed.length) : "",
  ].filter(Boolean);
  return {
    path: abs,
    created: !info,
    bytes: written.landed?.length ?? sent,
    version: written.version,
    lines: landedLines,
    additions: changes.additions,
    deletions: changes.deletions,
    ...(notices.length ? { notice: notices.join(" ") } : {}),
  };
}

/** write: a whole-file create or replace, atomic, keeping the old file's encoding, BOM and CRLF. */
export default defineTool({
  id: "write",
  kind: "edit",
  description: [
    "Create a file or replace its whole content (parent directories are created). Prefer edit for changes",
    'to part of an existing file. content must be complete: placeholders such as "// ... rest of code ..."',
    "are refused. Pass version (from your last read) to refuse the write if the file changed since.",
    "An existing file keeps its encoding, BOM and CRLF line endings.",
  ].join(" "),
  parameters,
  requires: { fs: { read: ["{workspace}/**"], write: ["{workspace}/**"] } },
  title: (args) => `Write ${args.path}`,
  locations: (args, { workspace }) => [{ path: absolutize(args.path, workspace), line: 1 }],
  async preview(args, ctx) {
    const plan = await planWrite(args, ctx);
    return { events: unchanged(plan) ? [] : [diffEvent(plan)], plan };
  },
  async execute(args, ctx): Promise<WriteResult> {
    const abs = await ctx.fs.resolve(args.path, "write");
    return ctx.fs.withLock(abs, async () => {
      const plan = await currentPlan(args, ctx, abs);
      const { info, text, encoding } = plan;
      const bytes = encodeText(text, encoding);
      const lines = countLines(text);
      if (info && unchanged(plan)) {
        ctx.session.readStamps.set(abs, info.version);
        return {
          path: abs,
          created: false,
          bytes: bytes.length,
          version: info.version,
          lines,
          additions: 0,
          deletions: 0,
          notice: "The file already had exactly this content; nothing was written.",
        };
      }
      const written = await ctx.fs.writeFile(abs, bytes);
      ctx.session.readStamps.set(abs, written.version);
      try {
        return reportWrite(ctx, plan, written, bytes.length);
      } catch (err) {
        // The file has changed: the call succeeded, whatever went wrong while describing it.
        return {
          path: abs,
          created: !info,
          bytes: bytes.length,
          version: written.version,
          lines,
          additions: lines,
          deletions: null,
          notice: `The file was written, but its line changes could not be counted (${err instanceof Error ? err.message : String(err)}).`,
        };
      }
    });
  },
  // Shown when there was no diff (the file already had this content): a line, not the result's JSON.
  display(data, args) {
    const size = `${data.lines} line${data.lines === 1 ? "" : "s"}, ${data.bytes} bytes`;
    const headline = data.created
      ? `Created ${args.path} (${size})`
      : data.deletions === null
        ? `Wrote ${args.path} (${size})`
        : data.additions === 0 && data.deletions === 0
          ? `${args.path} unchanged (${size})`
          : `Wrote ${args.path}: +${data.additions} -${data.deletions} lines (${size})`;
    return { text: [headline, data.notice].filter(Boolean).join("\n"), locations: [{ path: data.path }] };
  },
});
