import path from "node:path";
import type { Diagnostic } from "vscode-languageserver-protocol/node";

// What an edit changed in a file's diagnostics, and the block the model and the editor see. A
// diagnostic is old when the file had one with the same severity, code and message before the edit
// (first at the same line, then anywhere: lines above it may have moved), so only new errors show.

/** At most this many problems per file, and files, in one block. */
export const MAX_PER_FILE = 20;
export const MAX_FILES = 5;

/** A diagnostic's message as plain text (LSP 3.18 allows markup). */
export const messageOf = (d: Diagnostic): string => (typeof d.message === "string" ? d.message : d.message.value);

/** Errors, and with `warnings` warnings too (a diagnostic without a severity counts as an error). */
const counts = (warnings: boolean) => (d: Diagnostic) => (d.severity ?? 1) <= (warnings ? 2 : 1);
const keyOf = (d: Diagnostic) => `${d.severity ?? 1}\u0000${String(d.code ?? "")}\u0000${messageOf(d)}`;

/** The errors (and with `warnings`, warnings) of `after` the file did not have `before`. */
export function newErrors(before: readonly Diagnostic[], after: readonly Diagnostic[], warnings = false): Diagnostic[] {
  const pool = new Map<string, Diagnostic[]>();
  for (const d of before.filter(counts(warnings))) pool.set(keyOf(d), [...(pool.get(keyOf(d)) ?? []), d]);
  const candidates = after.filter(counts(warnings));
  const unmatched: Diagnostic[] = [];
  const take = (d: Diagnostic, sameLine: boolean) => {
    const olds = pool.get(keyOf(d));
    const at = olds?.findIndex((o) => !sameLine || o.range.start.line === d.range.start.line) ?? -1;
    if (at < 0) return false;
    olds!.splice(at, 1);
    return true;
  };
  const rest = candidates.filter((d) => !take(d, true));
  for (const d of rest) if (!take(d, false)) unmatched.push(d);
  return unmatched.sort((a, b) => a.range.start.line - b.range.start.line || a.range.start.character - b.range.start.character);
}

/** One file's new errors. */
export interface FileProblems {
  path: string;
  errors: Diagnostic[];
}

/** `path:line:col message`, 1-based, the message on one line. */
export function problemLine(display: string, d: Diagnostic): string {
  const message = messageOf(d)
    .replace(/\s*\n\s*/g, " ")
    .slice(0, 400);
  return `${display}:${d.range.start.line + 1}:${d.range.start.character + 1} ${d.severity === 2 ? "warning: " : ""}${message}`;
}

/** The block for the result: "New problems after this edit:" and a line each, within the caps; undefined for none. */
export function problemsBlock(files: readonly FileProblems[], workspace: string): string | undefined {
  const withErrors = files.filter((f) => f.errors.length > 0);
  if (!withErrors.length) return undefined;
  const lines = ["New problems after this edit:"];
  for (const file of withErrors.slice(0, MAX_FILES)) {
    const rel = path.relative(workspace, file.path);
    const display = rel && !rel.startsWith("..") && !path.isAbsolute(rel) ? rel.split(path.sep).join("/") : file.path;
    lines.push(...file.errors.slice(0, MAX_PER_FILE).map((d) => problemLine(display, d)));
    if (file.errors.length > MAX_PER_FILE) lines.push(`… and ${file.errors.length - MAX_PER_FILE} more in ${display}`);
  }
  if (withErrors.length > MAX_FILES) lines.push(`… and new problems in ${withErrors.length - MAX_FILES} more files`);
  return lines.join("\n");
}
