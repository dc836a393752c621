/**
 * The edit tool's matching ladder, as pure functions. Every tier searches an LF view of the
 * file and maps its candidates back to exact spans of the ORIGINAL text, so an edit rewrites
 * only the bytes it matched. The first tier with a candidate decides; no looser tier is tried.
 */

export type MatchTier = "exact" | "unicode" | "trailing_whitespace" | "indentation" | "unescaped";

export const TIER_DESCRIPTIONS: Record<MatchTier, string> = {
  exact: "exactly",
  unicode: "after folding unicode quotes, dashes and spaces",
  trailing_whitespace: "after ignoring trailing whitespace",
  indentation: "after a uniform indentation shift",
  unescaped: "after unescaping \\n, \\t, \\\" and \\'",
};

export interface Candidate {
  /** Span of the original text, [start, end). */
  start: number;
  end: number;
  /** What replaces the span, already in the line endings used at the match. */
  replacement: string;
  /** 1-based line of `start`. */
  line: number;
}

export interface MatchResult {
  tier: MatchTier;
  /** Every position the tier found, by start; they may overlap. */
  candidates: Candidate[];
}

/** A candidate in the LF view. */
interface Span {
  start: number;
  end: number;
  replacement: string;
}

/** Every start of `needle` in `hay`, overlapping ones included (ambiguity must count them). */
function positions(hay: string, needle: string): number[] {
  const out: number[] = [];
  if (needle === "") return out;
  for (let i = hay.indexOf(needle); i !== -1; i = hay.indexOf(needle, i + 1)) out.push(i);
  return out;
}

function literalSpans(hay: string, needle: string, replacement: string): Span[] {
  return positions(hay, needle).map((p) => ({ start: p, end: p + needle.length, replacement }));
}

// --- Tier 2: codex's narrow unicode fold (one char → one char, so offsets do not move) ---

const FOLD = /[\u2010-\u2015\u2212\u2018-\u201f\u00a0\u2002-\u200a\u202f\u205f\u3000]/g;

function foldChar(c: string): string {
  const code = c.charCodeAt(0);
  if ((code >= 0x2010 && code <= 0x2015) || code === 0x2212) return "-";
  if (code >= 0x2018 && code <= 0x201b) return "'";
  if (code >= 0x201c && code <= 0x201f) return '"';
  return " ";
}

export function foldUnicode(text: string): string {
  return text.replace(FOLD, foldChar);
}

// --- Tier 3: trailing whitespace, as deletions mapped back to the LF view ---

interface Stripped {
  text: string;
  /** Deletions: at `at` (a position of the stripped text) `length` characters were removed. */
  cuts: { at: number; total: number }[];
}

const TRAILING = /[ \t]+(?=\n|$)/g;

export function stripTrailing(text: string): Stripped {
  const cuts: { at: number; total: number }[] = [];
  let removed = 0;
  const out = text.replace(TRAILING, (run, offset: number) => {
    removed += run.length;
    cuts.push({ at: offset - (removed - run.length), total: removed });
    return "";
  });
  return { text: out, cuts };
}

/** Removed characters before stripped position `x` (`inclusive`: also those cut right at `x`). */
function removedBefore(cuts: Stripped["cuts"], x: number, inclusive: boolean): number {
  let lo = 0;
  let hi = cuts.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const at = (cuts[mid] as { at: number }).at;
    if (at < x || (inclusive && at === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? 0 : (cuts[lo - 1] as { total: number }).total;
}

function trailingSpans(text: string, oldString: string, newString: string): Span[] {
  const old = stripTrailing(oldString).text;
  if (old.trim() === "") return [];
  const hay = stripTrailing(text);
  if (old === oldString && hay.text === text) return [];
  // Whitespace cut where a match starts or ends stays in the file, attached to its own line.
  return positions(hay.text, old).map((p) => ({
    start: p + removedBefore(hay.cuts, p, true),
    end: p + old.length + removedBefore(hay.cuts, p + old.length, false),
    replacement: newString,
  }));
}

// --- Tier 4: a uniform indentation shift over whole lines ---

const isBlank = (line: string) => /^[ \t]*$/.test(line);
const rstrip = (line: string) => line.replace(/[ \t]+$/, "");
const indentOf = (line: string) => /^[ \t]*/.exec(line)?.[0] ?? "";

/** Signed delta between an old_string line's indent and the file line's: "+d" adds d, "-d" removes d. */
function indentDelta(oldIndent: string, fileIndent: string): string | null {
  if (fileIndent.startsWith(oldIndent)) return "+" + fileIndent.slice(oldIndent.length);
  if (oldIndent.startsWith(fileIndent)) return "-" + oldIndent.slice(fileIndent.length);
  return null;
}

export function reindent(text: string, delta: string): string {
  const add = delta.startsWith("+");
  const d = delta.slice(1);
  if (d === "") return text;
  return text
    .split("\n")
    .map((line) => {
      if (isBlank(line)) return line;
      if (add) return d + line;
      let n = 0;
      while (n < d.length && n < line.length && line[n] === d[n]) n++;
      return line.slice(n);
    })
    .join("\n");
}

function indentationSpans(text: string, oldString: string, newString: string): Span[] {
  const oLines = oldString.split("\n");
  const trailingNewline = oldString.endsWith("\n");
  if (trailingNewline) oLines.pop();
  const first = oLines.findIndex((l) => !isBlank(l));
  if (first === -1) return [];
  const firstBody = rstrip(oLines[first] as string).replace(/^[ \t]+/, "");
  const fLines = text.split("\n");
  const starts: number[] = [];
  for (let i = 0, at = 0; i < fLines.length; at += (fLines[i] as string).length + 1, i++) starts.push(at);
  const k = oLines.length;
  const spans: Span[] = [];
  for (let i = 0; i + k <= fLines.length; i++) {
    if (rstrip(fLines[i + first] as string).replace(/^[ \t]+/, "") !== firstBody) continue;
    if (trailingNewline && i + k - 1 >= fLines.length - 1) continue;
    let delta: string | null = null;
    let ok = true;
    for (let j = 0; j < k && ok; j++) {
      const o = oLines[j] as string;
      const f = fLines[i + j] as string;
      if (isBlank(o)) {
        ok = isBlank(f);
        continue;
      }
      const oi = indentOf(o);
      const fi = indentOf(f);
      const d = rstrip(o.slice(oi.length)) === rstrip(f.slice(fi.length)) ? indentDelta(oi, fi) : null;
      if (d === null || (delta !== null && d !== delta)) ok = false;
      delta = d;
    }
    if (!ok || delta === null) continue;
    const last = i + k - 1;
    spans.push({
      start: starts[i] as number,
      end: (starts[last] as number) + (fLines[last] as string).length + (trailingNewline ? 1 : 0),
      replacement: reindent(newString, delta),
    });
  }
  return spans;
}

// --- Tier 5: over-escaped strings, unescaped in old and new together ---

export function unescapeOverEscaped(text: string): string {
  return text.replace(/\\(["'nt])/g, (_, c: string) => (c === "n" ? "\n" : c === "t" ? "\t" : c));
}

// --- The ladder ---

/** The LF view of a text, with the LF positions (in the view) whose CR was dropped. */
function lfView(text: string): { text: string; crs: number[] } {
  const crs: number[] = [];
  for (let i = text.indexOf("\r\n"); i !== -1; i = text.indexOf("\r\n", i + 2)) crs.push(i - crs.length);
  return { text: crs.length ? text.replace(/\r\n/g, "\n") : text, crs };
}

/** LF-view offset → original offset. A CR goes with its LF, so a span never splits a CRLF pair. */
function toOriginal(crs: number[], x: number): number {
  let lo = 0;
  let hi = crs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((crs[mid] as number) < x) lo = mid + 1;
    else hi = mid;
  }
  return x + lo;
}

/** The line break used at a span: its own first break, else the next one after it, else the last before it. */
export function lineBreakAt(text: string, start: number): "\n" | "\r\n" {
  let nl = text.indexOf("\n", start);
  if (nl === -1) nl = text.lastIndexOf("\n", start);
  if (nl === -1) return "\n";
  return nl > 0 && text.charCodeAt(nl - 1) === 13 ? "\r\n" : "\n";
}

function toLf(text: string): string {
  return text.replace(/\r\n/g, "\n");
}

/**
 * Finds where `oldString` is in `text`, tier by tier. Returns null when no tier finds it.
 * Candidates carry their own replacement (re-indented, unescaped, in the local line endings).
 */
export function findMatches(text: string, oldString: string, newString: string): MatchResult | null {
  const view = lfView(text);
  const hay = view.text;
  const old = toLf(oldString);
  const neu = toLf(newString);
  const tiers: [MatchTier, () => Span[]][] = [
    ["exact", () => literalSpans(hay, old, neu)],
    [
      "unicode",
      () => {
        const foldedOld = foldUnicode(old);
        const foldedHay = foldUnicode(hay);
        return foldedOld === old && foldedHay === hay ? [] : literalSpans(foldedHay, foldedOld, neu);
      },
    ],
    ["trailing_whitespace", () => trailingSpans(hay, old, neu)],
    ["indentation", () => indentationSpans(hay, old, neu)],
    [
      "unescaped",
      () => {
        const unescaped = unescapeOverEscaped(old);
        return unescaped === old ? [] : literalSpans(hay, unescaped, unescapeOverEscaped(neu));
      },
    ],
  ];
  for (const [tier, search] of tiers) {
    const spans = search();
    if (spans.length === 0) continue;
    const candidates = spans.map((s) => {
      const start = toOriginal(view.crs, s.start);
      const end = toOriginal(view.crs, s.end);
      const eol = lineBreakAt(text, start);
      return { start, end, replacement: eol === "\n" ? s.replacement : s.replacement.replace(/\n/g, "\r\n"), line: 0 };
    });
    numberLines(text, candidates);
    return { tier, candidates };
  }
  return null;
}

/** Fills in 1-based line numbers (candidates sorted by start). */
function numberLines(text: string, candidates: Candidate[]): void {
  let line = 1;
  let at = 0;
  for (const c of candidates) {
    for (let i = text.indexOf("\n", at); i !== -1 && i < c.start; i = text.indexOf("\n", at)) {
      line++;
      at = i + 1;
    }
    c.line = line;
  }
}

/** The candidates `replace_all` applies: left to right, skipping any that overlap an earlier one. */
export function nonOverlapping(candidates: readonly Candidate[]): Candidate[] {
  const out: Candidate[] = [];
  let end = -1;
  for (const c of candidates) {
    if (c.start >= end) {
      out.push(c);
      end = c.end;
    }
  }
  return out;
}

/** Splices the replacements in by concatenation: `$` and every other character stay literal. */
export function applyCandidates(text: string, candidates: readonly Candidate[]): string {
  let out = "";
  let from = 0;
  for (const c of candidates) {
    out += text.slice(from, c.start) + c.replacement;
    from = c.end;
  }
  return out + text.slice(from);
}

/** 1-based line of the first character the edit really changes (shared prefixes skipped). */
export function firstChangedLine(text: string, candidate: Candidate): number {
  const old = text.slice(candidate.start, candidate.end);
  let same = 0;
  while (same < old.length && same < candidate.replacement.length && old[same] === candidate.replacement[same]) same++;
  let line = candidate.line;
  for (let i = text.indexOf("\n", candidate.start); i !== -1 && i < candidate.start + same; i = text.indexOf("\n", i + 1)) line++;
  return line;
}

// --- Hints for a failed match ---

function quote(line: string): string {
  return JSON.stringify(line.length > 160 ? line.slice(0, 160) + "…" : line);
}

function bigrams(s: string): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i + 1 < s.length; i++) {
    const g = s.slice(i, i + 2);
    m.set(g, (m.get(g) ?? 0) + 1);
  }
  return m;
}

function similarity(a: string, b: string): number {
  if (a.length < 2 || b.length < 2) return a === b ? 1 : 0;
  const A = bigrams(a);
  let shared = 0;
  for (let i = 0; i + 1 < b.length; i++) {
    const g = b.slice(i, i + 2);
    const n = A.get(g) ?? 0;
    if (n > 0) {
      shared++;
      A.set(g, n - 1);
    }
  }
  return (2 * shared) / (a.length - 1 + (b.length - 1));
}

/** Why old_string was not found, as precisely as cheaply possible: where it starts to differ, or the closest line. */
export function noMatchHint(text: string, oldString: string): string {
  const lines = toLf(text).split("\n");
  const oLines = toLf(oldString).split("\n");
  const first = oLines.findIndex((l) => !isBlank(l));
  if (first === -1) return "old_string is only whitespace.";
  const head = (oLines[first] as string).trim();
  for (let i = 0; i < lines.length; i++) {
    if ((lines[i] as string).trim() !== head) continue;
    for (let j = first + 1; j < oLines.length; j++) {
      const fileLine = lines[i + j - first];
      const oLine = oLines[j] as string;
      if (fileLine === undefined) return `old_string's first line matches line ${i + 1}, but the file ends before old_string does.`;
      if (fileLine.trim() !== oLine.trim()) {
        return `old_string's first line matches line ${i + 1}, but line ${i + 1 + j - first} differs: the file has ${quote(fileLine)}, old_string has ${quote(oLine)}.`;
      }
    }
    return `old_string matches lines ${i + 1}-${i + oLines.length - first} except for whitespace that is not a uniform indentation shift (tabs vs spaces, or mixed indentation). Copy the whitespace exactly.`;
  }
  if (lines.length <= 50_000 && head.length <= 1000) {
    let best = -1;
    let score = 0;
    for (let i = 0; i < lines.length; i++) {
      const l = (lines[i] as string).trim();
      if (l.length > 2000) continue;
      const s = similarity(head, l);
      if (s > score) [best, score] = [i, s];
    }
    if (best >= 0 && score >= 0.6)
      return `The closest line to old_string's first line is line ${best + 1}: ${quote(lines[best] as string)}.`;
  }
  return "Nothing similar to old_string's first line was found.";
}
