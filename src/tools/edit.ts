import { FILE_HEADERS_ONLY, formatPatch, structuredPatch, type StructuredPatchHunk } from "diff";
import * as z from "zod";
import { absolutize, displayPath } from "../tool/paths.js";
import type { ToolContext, ToolEvent, WrittenFile } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { ToolError } from "../tool/errors.js";
import { utf8Head } from "../tool/truncate.js";
import {
  TIER_DESCRIPTIONS,
  applyCandidates,
  findMatches,
  firstChangedLine,
  noMatchHint,
  nonOverlapping,
  type Candidate,
  type MatchTier,
} from "./edit-match.js";
import {
  SAMPLE_BYTES,
  binaryReason,
  decodeChecked,
  decodeText,
  diffEvent as textDiffEvent,
  encodeText,
  landedNotice,
  lossyRefusal,
  missingFileError,
  refuseReadOnly,
  textTooLarge,
  newPlaceholders,
  type TextEncoding,
} from "./text.js";

export const EDIT_DIFF_BYTES = 20 * 1024;

const parameters = z.object({
  path: z.string().min(1),
  old_string: z.string().describe("Exact text to replace (no line-number prefix)"),
  new_string: z.string(),
  replace_all: z.boolean().optional(),
  allow_lossy: z.boolean().optional().describe("Edit a lossy file anyway, only if the user accepts losing its invalid bytes"),
});

export interface EditResult {
  path: string;
  created?: boolean;
  replacements: number;
  first_changed_line: number;
  match: MatchTier;
  diff: string;
  version: string;
  notice?: string;
}

const CONTEXT = 3;
const MAX_REGION_LINES = 400;

function capDiff(text: string, complete: boolean): string {
  const total = Buffer.byteLength(text, "utf8");
  if (total <= EDIT_DIFF_BYTES && complete) return text;
  const head = total <= EDIT_DIFF_BYTES ? text : utf8Head(text, EDIT_DIFF_BYTES);
  const cut = head.lastIndexOf("\n");
  const where = total > EDIT_DIFF_BYTES ? ` at ${EDIT_DIFF_BYTES / 1024} KB` : "";
  return `${cut > 0 ? head.slice(0, cut + 1) : head}… (diff cut${where}; read the file to see the rest)\n`;
}

/** A unified diff with 3 lines of context of two whole texts (a created file). */
export function unifiedDiff(name: string, oldText: string, newText: string): string {
  const patch = structuredPatch(name, name, oldText, newText, undefined, undefined, {
    context: CONTEXT,
    stripTrailingCr: true,
    timeout: 2000,
  });
  if (!patch) return "(the diff took too long to compute; read the file to see the result)";
  return capDiff(formatPatch(patch, FILE_HEADERS_ONLY), true);
}

const splitLines = (text: string) => (text === "" ? [] : text.split(/(?<=\n)/));
function countBreaks(text: string, from = 0, to = text.length): number {
  let n = 0;
  for (let i = text.indexOf("\n", from); i !== -1 && i < to; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

/**
 * The unified diff of an edit. Only the lines each replacement touches (plus context) are
 * diffed, so a one-line edit of a huge file, or a replace_all over thousands of lines, stays fast.
 */
export function editDiff(name: string, oldText: string, newText: string, chosen: readonly Candidate[]): string {
  // Line ranges [start, end) each replacement touches in the old and the new text; merged when their contexts meet.
  const regions: { oldStart: number; oldEnd: number; newStart: number; newEnd: number }[] = [];
  let shift = 0;
  let size = 0;
  let complete = true;
  for (const c of chosen) {
    // Past twice the cap the rest would be cut anyway: stop before diffing it.
    size += c.end - c.start + c.replacement.length;
    if (size > 2 * EDIT_DIFF_BYTES && regions.length > 0) {
      complete = false;
      break;
    }
    const oldBreaks = countBreaks(oldText, c.start, c.end);
    const newBreaks = countBreaks(c.replacement);
    const oldStart = c.line - 1;
    const region = { oldStart, oldEnd: oldStart + oldBreaks + 1, newStart: oldStart + shift, newEnd: oldStart + shift + newBreaks + 1 };
    shift += newBreaks - oldBreaks;
    const last = regions[regions.length - 1];
    if (last && region.oldStart <= last.oldEnd + 2 * CONTEXT) {
      // Myers is quadratic on a long run of changed lines; such a diff would be cut anyway.
      if (region.oldEnd - last.oldStart > MAX_REGION_LINES) {
        complete = false;
        break;
      }
      last.oldEnd = Math.max(last.oldEnd, region.oldEnd);
      last.newEnd = Math.max(last.newEnd, region.newEnd);
    } else regions.push(region);
  }
  const oldLines = splitLines(oldText);
  const newLines = splitLines(newText);
  const hunks: StructuredPatchHunk[] = [];
  let bytes = 0;
  for (const r of regions) {
    if (bytes > EDIT_DIFF_BYTES) {
      complete = false;
      break;
    }
    const os = Math.max(0, r.oldStart - CONTEXT);
    const ns = r.newStart - (r.oldStart - os);
    const oldPart = oldLines.slice(os, Math.min(oldLines.length, r.oldEnd + CONTEXT)).join("");
    const newPart = newLines.slice(ns, Math.min(newLines.length, r.newEnd + CONTEXT)).join("");
    const patch = structuredPatch(name, name, oldPart, newPart, undefined, undefined, {
      context: CONTEXT,
      stripTrailingCr: true,
      timeout: 1000,
    });
    if (!patch) return "(the diff took too long to compute; read the file to see the result)";
    for (const h of patch.hunks) {
      hunks.push({ ...h, oldStart: h.oldStart + os, newStart: h.newStart + ns });
      for (const line of h.lines) bytes += line.length + 1;
    }
  }
  const text = formatPatch({ oldFileName: name, newFileName: name, oldHeader: undefined, newHeader: undefined, hunks }, FILE_HEADERS_ONLY);
  return capDiff(text, complete);
}

function refusePlaceholders(previous: string | null, next: string): void {
  const found = newPlaceholders(previous, next);
  if (found.length) {
    throw new ToolError(
      "invalid_arguments",
      `new_string contains ${found.map((p) => JSON.stringify(p)).join(", ")}: a placeholder for omitted code. ` +
        "edit puts new_string in literally, so the code it stands for would be lost. Write out the real text.",
    );
  }
}

type EditArgs = z.output<typeof parameters>;

/** What an edit will do, worked out without writing anything (shared by preview and execute). */
type EditPlan =
  | { kind: "create"; abs: string; newText: string; version: null }
  | {
      kind: "replace";
      abs: string;
      oldText: string;
      newText: string;
      encoding: TextEncoding;
      /** The file was not valid in its encoding: its invalid bytes are written as U+FFFD. */
      lossy: boolean;
      tier: MatchTier;
      chosen: Candidate[];
      /** The file's version the plan was made from. */
      version: string;
    };

async function planEdit(args: EditArgs, ctx: ToolContext): Promise<EditPlan> {
  const abs = await ctx.fs.resolve(args.path, "write");
  const info = await ctx.fs.stat(abs);
  if (!info) {
    if (args.old_string !== "") throw await missingFileError(ctx, args.path, abs);
    // Like Claude Code: an empty old_string on a missing file creates it.
    refusePlaceholders(null, args.new_string);
    return { kind: "create", abs, newText: args.new_string, version: null };
  }
  if (info.type === "directory") throw new ToolError("is_directory", `${args.path} is a directory; edit changes files.`);
  if (info.type !== "file") throw new ToolError("not_a_file", `${args.path} is not a regular file (${info.type}).`);
  refuseReadOnly(info, args.path);
  if (args.old_string === "") {
    throw new ToolError(
      "invalid_arguments",
      `old_string is empty, but ${args.path} already exists. Give the exact text to replace, or use write to replace the whole file.`,
    );
  }
  if (args.old_string === args.new_string) {
    throw new ToolError("no_change", "old_string and new_string are identical, so the edit would change nothing.");
  }
  const stamp = ctx.session.readStamps.get(abs);
  if (stamp !== undefined && stamp !== info.version) {
    throw new ToolError(
      "stale_read",
      `${args.path} was modified since you last read it (by the user, a command or another tool). Read it again, then redo the edit against its current content.`,
    );
  }

  const bytes = await ctx.fs.readFile(abs);
  const reason = binaryReason(abs, bytes.subarray(0, SAMPLE_BYTES));
  if (reason) throw new ToolError("binary_file", `${args.path} is a binary file (${reason}); edit only changes text files.`);
  const decoded = decodeChecked(bytes);
  // Re-encoding a lossy decode would corrupt bytes outside the edit: only when told to.
  if (decoded.lossy && !args.allow_lossy) throw lossyRefusal("edit", args.path, decoded.encoding);
  const text = decoded.text;
  refusePlaceholders(args.old_string, args.new_string);

  const found = findMatches(text, args.old_string, args.new_string);
  if (!found) {
    throw new ToolError(
      "no_match",
      `old_string was not found in ${args.path}. ${noMatchHint(text, args.old_string)} Read the file again and copy old_string exactly as it is there (without the line-number prefix).`,
    );
  }
  const { tier, candidates } = found;
  if (candidates.length > 1 && (!args.replace_all || found.uniqueOnly)) {
    const how = tier === "exact" ? "" : ` (${TIER_DESCRIPTIONS[tier]})`;
    const lines = candidates.slice(0, 20).map((c) => c.line);
    throw new ToolError(
      "ambiguous_match",
      `old_string matches ${candidates.length} places in ${args.path}${how}: lines ${lines.join(", ")}${candidates.length > 20 ? ", …" : ""}. ` +
        (found.uniqueOnly
          ? "Add surrounding lines to old_string so it matches exactly one place (replace_all does not apply to a match this loose: to change several places, copy old_string exactly from the file)."
          : "Add surrounding lines to old_string so it matches exactly one place, or set replace_all: true to change all of them."),
    );
  }
  const chosen = args.replace_all ? nonOverlapping(candidates) : candidates;
  let newText: string;
  try {
    newText = applyCandidates(text, chosen);
  } catch (err) {
    if (err instanceof RangeError) throw textTooLarge(bytes.length);
    throw err;
  }
  if (newText === text) {
    throw new ToolError("no_change", `The edit would not change ${args.path}: line ${chosen[0]?.line} already reads like new_string.`);
  }
  return {
    kind: "replace",
    abs,
    oldText: text,
    newText,
    encoding: decoded.encoding,
    lossy: decoded.lossy,
    tier,
    chosen,
    version: info.version,
  };
}

function diffEvent(plan: EditPlan): ToolEvent {
  return textDiffEvent(plan.abs, plan.kind === "create" ? null : plan.oldText, plan.newText);
}

/**
 * The plan to carry out, under the file's lock: the preview's own when the file has not changed
 * since (the editor already shows its diff), else a new one whose diff is sent.
 */
async function currentPlan(args: EditArgs, ctx: ToolContext, abs: string): Promise<EditPlan> {
  const previewed = ctx.preview?.plan as EditPlan | undefined;
  if (previewed && previewed.abs === abs && previewed.version === ((await ctx.fs.stat(abs))?.version ?? null)) return previewed;
  const plan = await planEdit(args, ctx);
  ctx.emit(diffEvent(plan));
  return plan;
}

/** edit: string replacement with strict ambiguity, a careful fallback ladder and byte-exact splicing. */
export default defineTool({
  id: "edit",
  kind: "edit",
  description: [
    "Replace old_string with new_string in a file. old_string must match exactly one place (copy it from read output and",
    "include enough surrounding lines to make it unique), or set replace_all. Near misses (quotes, whitespace, indentation)",
    "are matched carefully. Refused if the file changed since you read it. An empty old_string creates a new file.",
  ].join(" "),
  parameters,
  requires: { fs: { read: ["{workspace}/**"], write: ["{workspace}/**"] } },
  output: { field: "diff", maxBytes: 50 * 1024 },
  title: (args) => `Edit ${args.path}`,
  locations: (args, { workspace }) => [{ path: absolutize(args.path, workspace) }],
  async preview(args, ctx) {
    const plan = await planEdit(args, ctx);
    return { events: [diffEvent(plan)], plan };
  },
  async execute(args, ctx): Promise<EditResult> {
    const abs = await ctx.fs.resolve(args.path, "write");
    return ctx.fs.withLock(abs, async () => {
      const plan = await currentPlan(args, ctx, abs);
      if (plan.kind === "create") {
        const written = await ctx.fs.writeFile(abs, plan.newText);
        ctx.session.readStamps.set(abs, written.version);
        const created = {
          path: abs,
          created: true,
          replacements: 1,
          first_changed_line: 1,
          match: "exact" as const,
          version: written.version,
        };
        try {
          const landed = written.landed ? decodeText(written.landed).text : plan.newText;
          if (written.landed) ctx.emit(textDiffEvent(abs, null, landed));
          return {
            ...created,
            diff: unifiedDiff(displayPath(abs, ctx.workspace), "", landed),
            ...(written.landed ? { notice: landedNotice(Buffer.byteLength(plan.newText, "utf8"), written.landed.length) } : {}),
          };
        } catch (err) {
          return { ...created, diff: "", notice: writtenButNotDescribed(err) };
        }
      }
      const { tier, chosen } = plan;
      const bytes = encodeText(plan.newText, plan.encoding);
      const written = await ctx.fs.writeFile(abs, bytes);
      ctx.session.readStamps.set(abs, written.version);
      try {
        return reportEdit(ctx, plan, written, bytes.length);
      } catch (err) {
        // The file has changed: the call succeeded, whatever went wrong while describing it.
        return {
          path: abs,
          replacements: chosen.length,
          first_changed_line: chosen[0]?.line ?? 1,
          match: tier,
          diff: "",
          version: written.version,
          notice: writtenButNotDescribed(err),
        };
      }
    });
  },
  display: (data) => ({ text: data.diff, language: "diff", locations: [{ path: data.path, line: data.first_changed_line }] }),
});

function writtenButNotDescribed(err: unknown): string {
  return `The edit was written, but its diff could not be made (${err instanceof Error ? err.message : String(err)}). Read the file to check the change.`;
}

/** The result of an edit that was written: the diff of what landed, the first changed line, the notices. */
function reportEdit(ctx: ToolContext, plan: Extract<EditPlan, { kind: "replace" }>, written: WrittenFile, bytes: number): EditResult {
  const { abs, oldText, newText, tier, chosen } = plan;
  const changed = chosen.find((c) => oldText.slice(c.start, c.end) !== c.replacement) ?? chosen[0];
  const name = displayPath(abs, ctx.workspace);
  let diff: string;
  if (written.landed) {
    // The editor changed the text as it saved it: show the diff of what really landed.
    const landed = decodeText(written.landed).text;
    ctx.emit(textDiffEvent(abs, oldText, landed));
    diff = unifiedDiff(name, oldText, landed);
  } else diff = editDiff(name, oldText, newText, chosen);
  const notices = [
    tier === "exact" ? "" : `old_string matched only ${TIER_DESCRIPTIONS[tier]}; just the matched text was replaced. Check the diff.`,
    plan.lossy ? "The file was not valid text in its encoding: its invalid bytes were written as U+FFFD, as allowed." : "",
    written.landed ? landedNotice(bytes, written.landed.length) : "",
  ].filter(Boolean);
  return {
    path: abs,
    replacements: chosen.length,
    first_changed_line: changed ? firstChangedLine(oldText, changed) : 1,
    match: tier,
    diff,
    version: written.version,
    ...(notices.length ? { notice: notices.join(" ") } : {}),
  };
}
