/**
 * The edit tool's matching ladder, as pure functions. Every tier searches an LF view of the
 * file and maps its candidates back to exact spans of the ORIGINAL text, so an edit rewrites
 * only the bytes it matched. The first tier with a candidate decides; no looser tier is tried.
 */

import { editDistance } from "../tool/edit-distance.js";

export type MatchTier =
  "exact" | "bom" | "eof_newline" | "nfc" | "unicode" | "trailing_whitespace" | "indentation" | "unescaped" | "spaces" | "block";

export const TIER_DESCRIPTIONS: Record<MatchTier, string> = {
  exact: "exactly",
  bom: "after dropping the byte order mark (U+FEFF) copied into old_string",
  eof_newline: "without old_string's final newline, which the file lacks at its end (it still ends without one)",
  nfc: "after canonical Unicode normalization (NFC)",
  unicode: "after folding unicode quotes, dashes and spaces",
  trailing_whitespace: "after ignoring trailing whitespace",
  indentation: "after a uniform indentation shift",
  unescaped: "after unescaping \\n, \\t, \\\" and \\'",
  spaces: "after treating each run of spaces and tabs inside a line as one space",
  block: "by its first and last lines, with a few middle lines that differ slightly",
};

/** Tiers loose enough to be trusted with one place only: replace_all does not apply to them. */
const UNIQUE_ONLY: ReadonlySet<MatchTier> = new Set<MatchTier>(["spaces", "block"]);

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
  /** The tier is too loose for replace_all: more than one candidate is always an error. */
  uniqueOnly: boolean;
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

/** Length of a line's leading spaces and tabs (indentOf without a regex: it runs on every line of big files). */
function indentLength(line: string): number {
  let n = 0;
  for (let c = line.charCodeAt(0); c === 32 || c === 9; c = line.charCodeAt(++n));
  return n;
}

/** Whether `line` from `from` on is `body` (no leading or trailing blanks) plus only trailing spaces and tabs. */
function bodyAt(line: string, from: number, body: string): boolean {
  if (!line.startsWith(body, from)) return false;
  for (let i = from + body.length; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if (c !== 32 && c !== 9) return false;
  }
  return true;
}

function indentationSpans(fLines: readonly string[], oldString: string, newString: string): Span[] {
  const oLines = oldString.split("\n");
  const trailingNewline = oldString.endsWith("\n");
  if (trailingNewline) oLines.pop();
  const first = oLines.findIndex((l) => !isBlank(l));
  if (first === -1) return [];
  const firstBody = rstrip(oLines[first] as string).replace(/^[ \t]+/, "");
  const oParts = oLines.map((l) => ({ blank: isBlank(l), indent: indentOf(l), body: rstrip(l).replace(/^[ \t]+/, "") }));
  const starts: number[] = [];
  for (let i = 0, at = 0; i < fLines.length; at += (fLines[i] as string).length + 1, i++) starts.push(at);
  const k = oLines.length;
  const spans: Span[] = [];
  for (let i = 0; i + k <= fLines.length; i++) {
    const head = fLines[i + first] as string;
    if (!head.includes(firstBody) || !bodyAt(head, indentLength(head), firstBody)) continue;
    if (trailingNewline && i + k - 1 >= fLines.length - 1) continue;
    let delta: string | null = null;
    let ok = true;
    for (let j = 0; j < k && ok; j++) {
      const o = oParts[j] as { blank: boolean; indent: string; body: string };
      const f = fLines[i + j] as string;
      if (o.blank) {
        ok = isBlank(f);
        continue;
      }
      const fi = indentLength(f);
      const d = bodyAt(f, fi, o.body) ? indentDelta(o.indent, f.slice(0, fi)) : null;
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

// --- Tier: a final newline the file lacks at its end ---

/**
 * old_string ends with a newline, the file ends without one, and old_string without it is the end
 * of the file. The file keeps its state: one final newline of new_string is dropped, and deleting
 * the last line(s) takes the line break before them.
 */
function eofSpans(hay: string, old: string, neu: string): Span[] {
  if (old.length < 2 || !old.endsWith("\n") || hay.endsWith("\n")) return [];
  const body = old.slice(0, -1);
  if (!hay.endsWith(body)) return [];
  let start = hay.length - body.length;
  const replacement = neu.endsWith("\n") ? neu.slice(0, -1) : neu;
  if (replacement === "" && start > 0 && hay.charCodeAt(start - 1) === 10) start--;
  return [{ start, end: hay.length, replacement }];
}

// --- Tier: canonically equivalent Unicode (NFC; NFKC would equate different characters) ---

const NON_ASCII = /[^\0-\x7f]+/g;
const MARK = /\p{M}/u;

/**
 * Whether NFC never joins this character with what comes before it: a cut before it splits the
 * text into parts that normalize independently (the joined result is checked anyway).
 */
function stableStarter(cp: number, ch: string): boolean {
  if (cp < 0x80) return true;
  if ((cp >= 0x1100 && cp <= 0x11ff) || (cp >= 0xa960 && cp <= 0xa97f) || (cp >= 0xd7b0 && cp <= 0xd7ff)) return false;
  return !MARK.test(ch) && ch.normalize("NFD") === ch;
}

/** A part of the text that NFC changes: [os, oe) of the text is [vs, ve) of the NFC view. */
interface Changed {
  os: number;
  oe: number;
  vs: number;
  ve: number;
}

/** The parts NFC changes, found by normalizing each character with its marks alone; null if that does not give `nfc`. */
function nfcChanges(text: string, nfc: string): Changed[] | null {
  const changed: Changed[] = [];
  const chunks: string[] = [];
  let copied = 0;
  let shift = 0;
  const piece = (from: number, to: number) => {
    const part = text.slice(from, to);
    const norm = part.normalize("NFC");
    if (norm === part) return;
    chunks.push(text.slice(copied, from), norm);
    copied = to;
    changed.push({ os: from, oe: to, vs: from + shift, ve: from + shift + norm.length });
    shift += norm.length - part.length;
  };
  for (const m of text.matchAll(NON_ASCII)) {
    const runEnd = m.index + m[0].length;
    // A base letter before the marks belongs to their piece.
    let from = m.index > 0 ? m.index - 1 : m.index;
    for (let i = m.index; i < runEnd;) {
      const cp = text.codePointAt(i) as number;
      const width = cp > 0xffff ? 2 : 1;
      if (i > from && stableStarter(cp, text.slice(i, i + width))) {
        piece(from, i);
        from = i;
      }
      i += width;
    }
    piece(from, runEnd);
  }
  chunks.push(text.slice(copied));
  return chunks.join("") === nfc ? changed : null;
}

/** NFC-view offset → text offset; null inside a changed part (a span must not split a character from its marks). */
function fromNfc(changed: readonly Changed[], x: number): number | null {
  let lo = 0;
  let hi = changed.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((changed[mid] as Changed).ve < x) lo = mid + 1;
    else hi = mid;
  }
  const at = changed[lo];
  if (at && at.vs < x) return x === at.ve ? at.oe : null;
  const before = changed[lo - 1];
  return before ? x + before.oe - before.ve : x;
}

function nfcSpans(hay: string, old: string, neu: string): Span[] {
  const nfcOld = old.normalize("NFC");
  const nfcHay = hay.normalize("NFC");
  if (nfcHay === hay) return nfcOld === old ? [] : literalSpans(hay, nfcOld, neu);
  const found = positions(nfcHay, nfcOld);
  if (found.length === 0) return [];
  const changed = nfcChanges(hay, nfcHay);
  if (!changed) return [];
  const spans: Span[] = [];
  for (const p of found) {
    const start = fromNfc(changed, p);
    const end = fromNfc(changed, p + nfcOld.length);
    if (start !== null && end !== null) spans.push({ start, end, replacement: neu });
  }
  return spans;
}

// --- Tier: runs of spaces and tabs inside lines (indentation is the indentation tier's) ---

/** A run that is not already one space, between two other characters of a line. */
const INNER_RUN = /(?<=[^ \t\n])(?:[ \t]{2,}|\t)(?=[^ \t\n])/g;

/** Each run of spaces and tabs between two other characters of a line, as one space (deletions as in stripTrailing). */
function collapseSpaces(text: string): Stripped {
  const cuts: { at: number; total: number }[] = [];
  let removed = 0;
  const out = text.replace(INNER_RUN, (run, offset: number) => {
    if (run.length > 1) {
      // The run's first character stays (as a space); the rest is cut right after it.
      cuts.push({ at: offset - removed + 1, total: removed + run.length - 1 });
      removed += run.length - 1;
    }
    return " ";
  });
  return { text: out, cuts };
}

function spaceSpans(hay: string, old: string, neu: string): Span[] {
  const o = collapseSpaces(old).text;
  if (o.trim() === "") return [];
  const h = collapseSpaces(hay);
  if (o === old && h.text === hay) return [];
  return positions(h.text, o).map((p) => ({
    start: p + removedBefore(h.cuts, p, true),
    end: p + o.length + removedBefore(h.cuts, p + o.length, false),
    replacement: neu,
  }));
}

// --- Tier: a block anchored by its first and last lines, with nearly identical middle lines ---

/** Each differing middle line must be this similar (1 - edit distance / longer length) to the file's. */
const BLOCK_SIMILARITY = 0.8;
/** Line comparisons and edit-distance cells the whole search may spend; past it the tier gives up (finds nothing). */
const BLOCK_BUDGET = 5_000_000;

/** Whether the edit distance of a and b is at most `max`, or null when the budget runs out. */
function withinDistance(a: string, b: string, max: number, budget: { left: number }): boolean | null {
  if (Math.abs(a.length - b.length) > max) return false;
  budget.left -= (a.length + 1) * (2 * max + 1);
  if (budget.left < 0) return null;
  return editDistance(a, b, max) <= max;
}

/**
 * old_string's first and last lines match whole file lines exactly after one indentation shift
 * (as in the indentation tier), with the same number of lines between them. Of the middle lines,
 * at most half (rounded down) may differ, each at most a little (BLOCK_SIMILARITY of their text
 * without indentation); blank lines must face blank lines. new_string is re-indented by the shift.
 * Unlike opencode's block anchor (any middle, any length, best of several), every candidate must
 * pass, and more than one is an error.
 */
function blockSpans(fLines: readonly string[], old: string, neu: string): Span[] {
  const oLines = old.split("\n");
  const trailingNewline = old.endsWith("\n");
  if (trailingNewline) oLines.pop();
  const k = oLines.length;
  if (k < 3) return [];
  const firstO = oLines[0] as string;
  const lastO = oLines[k - 1] as string;
  if (isBlank(firstO) || isBlank(lastO)) return [];
  const firstIndent = indentOf(firstO);
  const firstBody = rstrip(firstO.slice(firstIndent.length));
  const lastIndent = indentOf(lastO);
  const lastBody = rstrip(lastO.slice(lastIndent.length));
  const allowed = Math.floor((k - 2) / 2);
  const oBodies = oLines.map((l) => l.trim());
  const oBlank = oLines.map(isBlank);
  const shifted = new Map<string, string[]>();
  const memo = new Map<string, boolean>();
  const budget = { left: BLOCK_BUDGET };
  const spans: Span[] = [];
  for (let i = 0, at = 0; i + k <= fLines.length; at += (fLines[i] as string).length + 1, i++) {
    const f0 = fLines[i] as string;
    if (!f0.includes(firstBody)) continue;
    const fi = indentLength(f0);
    if (!bodyAt(f0, fi, firstBody)) continue;
    const delta = indentDelta(firstIndent, f0.slice(0, fi));
    if (delta === null) continue;
    const last = i + k - 1;
    const fl = fLines[last] as string;
    const li = indentLength(fl);
    if (!bodyAt(fl, li, lastBody) || indentDelta(lastIndent, fl.slice(0, li)) !== delta) continue;
    if (trailingNewline && last >= fLines.length - 1) continue;

    let want = shifted.get(delta);
    if (!want) shifted.set(delta, (want = oLines.map((l) => rstrip(reindent(l, delta)))));
    const differing: number[] = [];
    let ok = true;
    budget.left -= k;
    if (budget.left < 0) return [];
    for (let j = 1; j < k - 1 && ok; j++) {
      const f = fLines[i + j] as string;
      if (f === want[j]) continue;
      if (oBlank[j] || isBlank(f)) ok = oBlank[j] === true && isBlank(f);
      else if (rstrip(f) !== want[j]) ok = differing.push(j) <= allowed;
    }
    for (const j of ok ? differing : []) {
      const a = oBodies[j] as string;
      const b = (fLines[i + j] as string).trim();
      const key = `${j}\n${b}`;
      let similar = memo.get(key);
      if (similar === undefined) {
        const max = Math.floor((1 - BLOCK_SIMILARITY) * Math.max(a.length, b.length));
        const within = withinDistance(a, b, max, budget);
        if (within === null) return [];
        memo.set(key, (similar = within));
      }
      if (!similar) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    spans.push({
      start: at,
      end: at + fLines.slice(i, last + 1).reduce((n, l) => n + l.length + 1, 0) - 1 + (trailingNewline ? 1 : 0),
      replacement: reindent(neu, delta),
    });
  }
  return spans;
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

const BOM = "\uFEFF";

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
  // A BOM the model copied is never in the decoded text: the looser tiers search without it too.
  const bomCopied = old.startsWith(BOM) && old.length > 1;
  const o = bomCopied ? old.slice(1) : old;
  const n = bomCopied && neu.startsWith(BOM) ? neu.slice(1) : neu;
  let split: string[] | undefined;
  const lines = () => (split ??= hay.split("\n"));
  const tiers: [MatchTier, () => Span[]][] = [
    ["exact", () => literalSpans(hay, old, neu)],
    ["bom", () => (bomCopied ? literalSpans(hay, o, n) : [])],
    ["eof_newline", () => eofSpans(hay, o, n)],
    ["nfc", () => nfcSpans(hay, o, n)],
    [
      "unicode",
      () => {
        const foldedOld = foldUnicode(o);
        const foldedHay = foldUnicode(hay);
        return foldedOld === o && foldedHay === hay ? [] : literalSpans(foldedHay, foldedOld, n);
      },
    ],
    ["trailing_whitespace", () => trailingSpans(hay, o, n)],
    ["indentation", () => indentationSpans(lines(), o, n)],
    [
      "unescaped",
      () => {
        const unescaped = unescapeOverEscaped(o);
        return unescaped === o ? [] : literalSpans(hay, unescaped, unescapeOverEscaped(n));
      },
    ],
    ["spaces", () => spaceSpans(hay, o, n)],
    ["block", () => blockSpans(lines(), o, n)],
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
    return { tier, candidates, uniqueOnly: UNIQUE_ONLY.has(tier) };
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
