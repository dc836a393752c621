import path from "node:path";
import picomatch from "picomatch";
import type { FileQuery, GrepHit } from "../../tool/context.js";
import { ToolError } from "../../tool/errors.js";

// What both search engines (ripgrep on disk, JS over memory) share, so neither depends on the other.

/** Longest line text a grep hit carries; the rest is cut with a marker (pi's number). */
export const MAX_LINE_CHARS = 500;

/**
 * Cuts a long line to MAX_LINE_CHARS. When the match sits past the cut, the window moves
 * so the match stays visible. `matchAt` is a character index into `text`.
 */
export function cutLine(text: string, matchAt = 0): string {
  if (text.length <= MAX_LINE_CHARS) return text;
  const start = matchAt + 100 > MAX_LINE_CHARS ? Math.max(0, Math.min(matchAt - 100, text.length - MAX_LINE_CHARS)) : 0;
  const end = start + MAX_LINE_CHARS;
  const head = start > 0 ? "…" : "";
  return `${head}${text.slice(start, end)}… [line cut: ${text.length} chars]`;
}

/** An error message for a search that could not finish in time. */
export function timeoutError(timeoutMs: number): ToolError {
  return new ToolError(
    "timeout",
    `The search was stopped after ${Math.round(timeoutMs / 1000)} s; narrow the path or pattern (or add a glob filter) and try again.`,
  );
}

export function abortedError(): ToolError {
  return new ToolError("aborted", "The search was cancelled");
}

export function invalidRegexError(message: string): ToolError {
  return new ToolError(
    "invalid_arguments",
    `Invalid regex: ${message.trim()}\nEscape special characters such as ( [ { . * + ? | with a backslash, or pass literal: true to search for the text as written.`,
  );
}

/**
 * How a grep glob filters files. Without a slash it matches the file name at any depth; with one,
 * the path relative to the workspace or to the searched directory; a leading `!` excludes.
 */
export interface GlobPlan {
  /** A positive file-name glob. */
  name?: string;
  /** A negative file-name glob (without its `!`). */
  notName?: string;
  /** For globs with a slash: decides on the workspace-relative (or absolute) and root-relative paths. */
  keep?: (shown: string, fromRoot: string) => boolean;
}

export function planGlob(glob: string | undefined): GlobPlan {
  if (!glob) return {};
  const negate = glob.startsWith("!");
  const body = negate ? glob.slice(1) : glob;
  if (!body.includes("/")) return negate ? { notName: body } : { name: body };
  const match = picomatch(body.replace(/^\.?\//, ""), { dot: true });
  const name = negate ? undefined : fileNameGlob(body);
  return { ...(name ? { name } : {}), keep: (shown, fromRoot) => (match(shown) || match(fromRoot)) !== negate };
}

/**
 * The last segment of a path glob when every file it can match must have a name matching that
 * segment in rg's syntax too ("src/**\/*.{ts,tsx}" → "*.{ts,tsx}"); undefined when unsure.
 */
export function fileNameGlob(pattern: string): string | undefined {
  const segment = pattern.slice(pattern.lastIndexOf("/") + 1);
  if (!segment || segment.includes("**") || segment.includes("..") || !/^[\w.*?{},[\]-]+$/.test(segment)) return undefined;
  // A brace that spans a slash leaves an unmatched "}" in the segment.
  if (segment.split("{").length !== segment.split("}").length) return undefined;
  return segment;
}

/** The file-name pre-filter a listing may apply: what every file the caller's glob keeps must match. */
export function listingNameGlob(query: FileQuery): string | undefined {
  return query.glob === undefined ? undefined : fileNameGlob(query.glob);
}

/** The path an engine searches: relative to cwd when inside it, so results come back workspace-relative. */
export function searchTarget(root: string, cwd: string): string {
  const rel = path.relative(cwd, root);
  if (rel === "") return ".";
  if (rel.startsWith("..") || path.isAbsolute(rel)) return root;
  return rel;
}

export function byPath(a: { path: string }, b: { path: string }): number {
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

/** After an early stop, context lines past the last kept match belong to the next (dropped) match. */
export function dropLeadingContext(hits: GrepHit[], context: number): void {
  let last = hits.length - 1;
  while (last >= 0 && hits[last]?.type !== "match") last--;
  const anchor = hits[last];
  let keep = last + 1;
  while (keep < hits.length) {
    const h = hits[keep];
    if (!anchor || !h || h.path !== anchor.path || !("line" in h) || !("line" in anchor) || h.line > anchor.line + context) break;
    keep++;
  }
  hits.length = keep;
}
