import * as z from "zod";
import type { GrepHit, Sidecars } from "../tool/context.js";
import { defineTool } from "../tool/define.js";
import { selfTruncated } from "../tool/envelope.js";
import { ToolError } from "../tool/errors.js";

/** RFC default: the 201st match triggers truncation (the host writes the sidecar). */
export const GREP_MAX_SHOWN = 200;
/** Results asked of the engine at most, so memory stays bounded on a huge result. */
export const GREP_CEILING = 10_000;
const TIMEOUT_MS = 30_000;

const parameters = z.object({
  pattern: z.string().min(1).describe("Regex (ripgrep syntax), or plain text with literal"),
  path: z.string().min(1).optional().describe("File or directory (default: the workspace)"),
  glob: z.string().min(1).optional().describe('Files to search: "*.ts", "src/**/*.ts", "!*.min.js"'),
  literal: z.boolean().optional(),
  ignore_case: z.boolean().optional(),
  context: z.number().int().min(0).max(20).optional().describe("Lines around each match"),
  output_mode: z.enum(["content", "files", "count"]).optional().describe("Default content"),
  limit: z.number().int().min(1).max(GREP_MAX_SHOWN).optional().describe("Stop after this many results"),
});

type Args = z.output<typeof parameters>;

/** One result as the model sees it: a line (`context` marks a context line), a file, or a file's count. */
export interface GrepMatch {
  path: string;
  line?: number;
  text?: string;
  context?: true;
  count?: number;
}

export interface GrepData {
  mode: "content" | "files" | "count";
  pattern: string;
  matches: GrepMatch[];
  /** content: matching lines; files: matching files; count: the sum of the counts. A lower bound when limited. */
  total: number;
  /** The search stopped early: more results exist. */
  limited?: true;
  files_searched?: number;
  notice?: string;
}

function toMatch(hit: GrepHit): GrepMatch {
  switch (hit.type) {
    case "match":
      return { path: hit.path, line: hit.line, text: hit.text };
    case "context":
      return { path: hit.path, line: hit.line, text: hit.text, context: true };
    case "file":
      return { path: hit.path };
    case "count":
      return { path: hit.path, count: hit.count };
  }
}

/** One sidecar line per entry, as rg prints them: `path:line: text`, context as `path-line- text`. */
function formatMatch(item: unknown): string {
  const m = item as GrepMatch;
  if (m.line !== undefined) return `${m.path}${m.context ? "-" : ":"}${m.line}${m.context ? "-" : ":"} ${m.text}`;
  if (m.count !== undefined) return `${m.path}:${m.count}`;
  return String(m.path);
}

function noMatchNotice(args: Args, where: string, searched: number | undefined): string {
  const hints: string[] = [];
  if (!args.ignore_case) hints.push("ignore_case: true");
  if (!args.literal && /[.*+?()[\]{}|\\^$]/.test(args.pattern)) hints.push("literal: true if the pattern is plain text");
  if (args.glob) hints.push("a wider glob");
  const files = searched === undefined ? "" : ` (${searched} file${searched === 1 ? "" : "s"} searched)`;
  const tail = hints.length ? ` Try ${hints.join(", ")}, or a broader pattern.` : " Try a broader pattern or path.";
  return `No matches for ${JSON.stringify(args.pattern)} in ${where}${files}; files ignored by .gitignore and binary files are skipped.${tail}`;
}

/**
 * The search stopped at its ceiling: more exist, so neither "of N" nor "the full output" is
 * true. Keeps the first GREP_MAX_SHOWN, writes what was collected to a sidecar, and says so.
 */
async function ceilingResult(data: GrepData, sidecars: Sidecars) {
  const unit = data.mode === "content" ? "matching lines" : data.mode === "files" ? "matching files" : "files with matches";
  const collected = data.mode === "count" ? data.matches.length : data.total;
  const stopped = `The search stopped at ${collected} ${unit}, so more exist${data.mode === "count" ? " and the counts are incomplete" : ""}.`;
  const narrow = "Narrow path, glob or pattern for a complete answer.";
  if (data.matches.length <= GREP_MAX_SHOWN) {
    data.notice = `${stopped} ${narrow}`;
    return data;
  }
  const file = await sidecars.writeText("grep", data.matches.map(formatMatch).join("\n") + "\n");
  const shown = data.matches.length;
  data.matches = data.matches.slice(0, GREP_MAX_SHOWN);
  data.notice = `${stopped} Showing ${GREP_MAX_SHOWN}; the first ${collected} ${unit}${shown !== collected ? ` (${shown} lines with context)` : ""} are in ${file}: read it with the read tool (offset/limit) or search it with grep. ${narrow}`;
  return selfTruncated(data, { truncated: true, output_path: file });
}

/** grep: regex or literal content search with ripgrep (JS regex on the memory backend). */
export default defineTool({
  id: "grep",
  kind: "search",
  description: [
    "Search file contents with a regex (ripgrep syntax) or plain text (literal: true); respects .gitignore, skips binary files.",
    "Returns {path, line, text} matches (lines cut at 500 chars); output_mode files lists matching files, count counts per file.",
    "Narrow with path and glob. Use glob to find files by name.",
  ].join(" "),
  parameters,
  requires: { fs: { read: ["{workspace}/**", "{ad-hoc}/**"] } },
  output: { field: "matches", maxItems: GREP_MAX_SHOWN, formatItem: formatMatch },
  title: (args) => `grep ${JSON.stringify(args.pattern)}${args.path ? ` in ${args.path}` : ""}`,
  shorthand: (text) => ({ pattern: text.trim() }),
  shorthandHint: "a pattern",
  async execute(args: Args, ctx) {
    const mode = args.output_mode ?? "content";
    const where = args.path ?? ".";
    const info = await ctx.fs.stat(where);
    if (!info) throw new ToolError("not_found", `Path not found: ${where}. Check the spelling, or find it with glob.`);
    // A FIFO or a device would block the search (or never end): only files and directories are searched.
    if (info.type === "other") {
      throw new ToolError(
        "invalid_arguments",
        `${where} is not a regular file or a directory (a FIFO, socket or device), so grep cannot search it. Pass a file or a directory as path.`,
      );
    }

    const maxResults = args.limit ?? GREP_CEILING;
    const outcome = await ctx.search.grep({
      pattern: args.pattern,
      path: where,
      glob: args.glob,
      literal: args.literal,
      ignoreCase: args.ignore_case,
      context: mode === "content" ? args.context : undefined,
      mode,
      maxResults,
      timeoutMs: TIMEOUT_MS,
    });

    const matches = outcome.hits.map(toMatch);
    let total = 0;
    for (const hit of outcome.hits) {
      if (hit.type === "count") total += hit.count;
      else if (hit.type !== "context") total++;
    }
    const data: GrepData = { mode, pattern: args.pattern, matches, total };
    if (outcome.searched !== undefined) data.files_searched = outcome.searched;
    if (outcome.limited) {
      data.limited = true;
      if (args.limit !== undefined) {
        data.notice = `Stopped after ${args.limit} results; more exist. Raise limit (max ${GREP_MAX_SHOWN}), omit it to collect every result, or narrow path, glob or pattern.`;
      } else {
        return ceilingResult(data, ctx.sidecars);
      }
    } else if (total === 0) {
      data.notice = noMatchNotice(args, where, outcome.searched);
    }
    return data;
  },
  display(data) {
    const lines = data.matches.map((m) =>
      "count" in m ? `${m.path}: ${m.count}` : "line" in m ? `${m.path}:${m.line}${m.context ? "-" : ":"} ${m.text}` : m.path,
    );
    return { text: [...lines, data.notice].filter(Boolean).join("\n") || "(no matches)" };
  },
});
