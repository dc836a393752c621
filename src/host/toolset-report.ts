import type { ToolKind } from "../tool/kinds.js";
import { formatContentChanges, type ContentChange } from "./trust-contents.js";
import type { LoadProblem } from "./loader.js";

/** A tool as the report shows it: `source` is `builtin` or the file it came from. */
export interface ToolEntry {
  id: string;
  kind: ToolKind;
  source: string;
}

/** A definition that lost to an earlier one with the same id (first found wins). */
export interface ShadowEntry {
  id: string;
  /** The losing file. */
  file: string;
  /** The winner: `builtin` or a file. */
  winner: string;
}

export interface SkippedFile {
  file: string;
  reason: string;
}

export interface DisabledTool extends ToolEntry {
  reason: string;
}

/** Where a tool folder comes from: the profile, a user package, config `toolDirs`, a project package, the project. */
export type FolderOrigin = "profile" | "user-package" | "config" | "project-package" | "project";

export interface FolderReport {
  dir: string;
  origin: FolderOrigin;
  status: "loaded" | "missing" | "untrusted" | "unreadable";
  files: number;
}

/** What a toolset build found: shown by `toolhost tools`, `toolhost doctor`, the editor. */
export interface ToolsetReport {
  cwd: string;
  profile: string;
  /** Whether the project's own tools were allowed to load. */
  trusted: boolean;
  /**
   * The project was trusted, but these of its trusted files (host/trust-contents.ts) changed
   * since, so nothing of it loads until the user trusts it again. Absent when there are none.
   */
  trustChanges?: ContentChange[];
  /** The project was trusted before toolhost recorded its files (trusted.json version 1): every file counts as added. */
  trustLegacy?: true;
  folders: FolderReport[];
  tools: ToolEntry[];
  shadowed: ShadowEntry[];
  /** Config, profile, trust store and extension problems: each names its file. */
  errors: LoadProblem[];
  /** Project tool files not imported (untrusted project). */
  skipped: SkippedFile[];
  /** Tools the profile leaves out. */
  disabled: DisabledTool[];
  /** Tools whose isAvailable said no for this workspace. */
  unavailable: ToolEntry[];
}

export interface ToolsetDiff {
  added: ToolEntry[];
  removed: ToolEntry[];
  /** Same id, now from another file. */
  moved: { id: string; from: string; to: string }[];
  /** Every shadowed definition after the reload. */
  shadowed: ShadowEntry[];
  /** Every load problem after the reload. */
  failed: LoadProblem[];
}

/** What a reload changed (for `/reload` and `toolhost tools` after an edit). */
export function diffToolsets(before: ToolsetReport, after: ToolsetReport): ToolsetDiff {
  const old = new Map(before.tools.map((t) => [t.id, t]));
  const now = new Map(after.tools.map((t) => [t.id, t]));
  return {
    added: after.tools.filter((t) => !old.has(t.id)),
    removed: before.tools.filter((t) => !now.has(t.id)),
    moved: after.tools.flatMap((t) => {
      const was = old.get(t.id);
      return was && was.source !== t.source ? [{ id: t.id, from: was.source, to: t.source }] : [];
    }),
    shadowed: after.shadowed,
    failed: after.errors,
  };
}

const problemLine = (p: LoadProblem) => `- ${p.file}: ${p.message.replace(/\n/g, "\n  ")}`;
const shadowLine = (s: ShadowEntry) => `- ${s.id}: ${s.file} is shadowed by ${s.winner}`;

/** The load problems worth telling the user once at session start; null when there are none. */
export function formatLoadProblems(report: ToolsetReport): string | null {
  const parts: string[] = [];
  if (report.errors.length) parts.push(`Some tools could not be loaded:\n${report.errors.map(problemLine).join("\n")}`);
  if (report.shadowed.length)
    parts.push(`Shadowed tool definitions (the first one found wins):\n${report.shadowed.map(shadowLine).join("\n")}`);
  const changed = trustChangeNotice(report);
  if (changed) parts.push(changed);
  else if (report.skipped.length) {
    const files = report.skipped.map((s) => `- ${s.file}`).join("\n");
    parts.push(
      `This project's own tools were not loaded, because the project is not trusted:\n${files}\nRun \`toolhost trust\` in the project to load them.`,
    );
  }
  return parts.length ? parts.join("\n\n") : null;
}

/** Why a once-trusted project's files did not load, naming what changed (capped); null when nothing did. */
export function trustChangeNotice(report: Pick<ToolsetReport, "trusted" | "trustChanges" | "trustLegacy">): string | null {
  if (report.trusted || !report.trustChanges?.length) return null;
  return [
    `This project's own tools, agents, skills, MCP servers, hooks and allow rules were not loaded: ${trustChangeReason(report)}`,
    formatContentChanges(report.trustChanges),
    "Its deny and ask rules still hold, and the calls its tool_call hooks would see ask (headless: they are refused).",
    "Run `toolhost trust` in the project (or type /trust always) to trust it as it is now.",
  ].join("\n");
}

/** Why a once-trusted project is asked about again, ending before the list of files. */
export function trustChangeReason(report: Pick<ToolsetReport, "trustLegacy">): string {
  return report.trustLegacy
    ? "the project was trusted by an older toolhost, which did not record its files, so each counts as new:"
    : "the project was trusted, but these files changed since:";
}

/** A reload's outcome in a few lines. */
export function formatDiff(diff: ToolsetDiff): string {
  const lines: string[] = [];
  const list = (entries: ToolEntry[]) => entries.map((t) => `${t.id} (${t.source})`).join(", ");
  if (diff.added.length) lines.push(`Added: ${list(diff.added)}`);
  if (diff.removed.length) lines.push(`Removed: ${list(diff.removed)}`);
  for (const m of diff.moved) lines.push(`${m.id} now comes from ${m.to} (was ${m.from})`);
  if (!lines.length) lines.push("No tools were added or removed.");
  if (diff.shadowed.length) lines.push(`Shadowed:\n${diff.shadowed.map(shadowLine).join("\n")}`);
  if (diff.failed.length) lines.push(`Failed:\n${diff.failed.map(problemLine).join("\n")}`);
  return lines.join("\n");
}
