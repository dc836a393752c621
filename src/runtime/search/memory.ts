import path from "node:path/posix";
import picomatch from "picomatch";
import type { FileQuery, GrepHit, GrepOutcome, GrepQuery } from "../../tool/context.js";
import { ToolError } from "../../tool/errors.js";
import type { SearchBackend, WalkableFs } from "../fs/backend.js";
import {
  MAX_LINE_CHARS,
  abortedError,
  byPath,
  cutLine,
  dropLeadingContext,
  invalidRegexError,
  listingNameGlob,
  planGlob,
  searchTarget,
  timeoutError,
} from "./common.js";

interface IgnoreRule {
  negate: boolean;
  dirOnly: boolean;
  match: (rel: string) => boolean;
}

/** Parses the simple subset of .gitignore rg would honour: globs, `!`, trailing `/`, anchoring by `/`. */
function parseGitignore(text: string): IgnoreRule[] {
  const rules: IgnoreRule[] = [];
  for (const raw of text.split(/\r?\n/)) {
    let line = raw.replace(/\s+$/, "");
    if (!line || line.startsWith("#")) continue;
    const negate = line.startsWith("!");
    if (negate) line = line.slice(1);
    const dirOnly = line.endsWith("/");
    if (dirOnly) line = line.slice(0, -1);
    const anchored = line.includes("/");
    if (line.startsWith("/")) line = line.slice(1);
    if (!line) continue;
    rules.push({ negate, dirOnly, match: picomatch(anchored ? line : `**/${line}`, { dot: true }) });
  }
  return rules;
}

/** The same file filter as the ripgrep backend's (see planGlob). */
function globFilter(glob: string | undefined, root: string): ((abs: string, shown: string) => boolean) | undefined {
  const plan = planGlob(glob);
  const name = plan.name ? picomatch(plan.name, { dot: true }) : undefined;
  const notName = plan.notName ? picomatch(plan.notName, { dot: true }) : undefined;
  if (!name && !notName && !plan.keep) return undefined;
  return (abs, shown) => {
    const base = path.basename(abs);
    if (name && !name(base)) return false;
    if (notName?.(base)) return false;
    return !plan.keep || plan.keep(shown, abs === root ? base : path.relative(root, abs));
  };
}

function isBinary(data: Uint8Array): boolean {
  return data.subarray(0, 8192).includes(0);
}

const decoder = new TextDecoder();

/** Search over an in-memory store with JS regular expressions, shaped like the ripgrep backend's results. */
export class MemorySearch implements SearchBackend {
  constructor(private readonly mem: WalkableFs) {}

  async files(root: string, query: FileQuery, signal: AbortSignal): Promise<{ files: string[]; limited: boolean }> {
    const kind = await this.kindOf(root);
    if (kind !== "directory") throw new ToolError("invalid_arguments", `${root} is a file, not a directory`);
    const max = query.maxResults ?? Number.POSITIVE_INFINITY;
    const deadline = Date.now() + query.timeoutMs;
    const files: string[] = [];
    const nameGlob = listingNameGlob(query);
    const name = nameGlob ? picomatch(nameGlob, { dot: true }) : undefined;
    for (const abs of this.visibleFiles(root)) {
      if (signal.aborted) throw abortedError();
      if (Date.now() > deadline) throw timeoutError(query.timeoutMs);
      if (name && !name(path.basename(abs))) continue;
      if (files.length >= max) return { files, limited: true };
      files.push(path.relative(root, abs));
    }
    return { files, limited: false };
  }

  async grep(root: string, cwd: string, query: GrepQuery, signal: AbortSignal): Promise<GrepOutcome> {
    const kind = await this.kindOf(root);
    let regex: RegExp;
    try {
      const source = query.literal ? query.pattern.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") : query.pattern;
      regex = new RegExp(source, query.ignoreCase ? "i" : "");
    } catch (err) {
      throw invalidRegexError(err instanceof Error ? err.message : String(err));
    }
    const target = searchTarget(root, cwd);
    const display = (abs: string) => (path.isAbsolute(target) ? abs : path.relative(cwd, abs));
    const filter = globFilter(query.glob, root);
    const candidates = kind === "file" ? [root] : this.visibleFiles(root);
    const deadline = Date.now() + query.timeoutMs;
    const context = query.mode === "content" ? (query.context ?? 0) : 0;
    const hits: GrepHit[] = [];
    let found = 0;
    let searched = 0;
    let limited = false;

    for (const abs of candidates) {
      if (signal.aborted) throw abortedError();
      if (Date.now() >= deadline) throw timeoutError(query.timeoutMs);
      const shown = display(abs);
      if (filter && !filter(abs, shown)) continue;
      const data = await this.mem.readFile(abs);
      // Like rg when walking a tree, binary files are skipped.
      if (kind === "directory" && isBinary(data)) continue;
      searched++;
      const lines = decoder.decode(data).split("\n");
      if (lines.at(-1) === "") lines.pop();
      const matched: number[] = [];
      for (let i = 0; i < lines.length; i++) {
        const line = (lines[i] as string).replace(/\r$/, "");
        lines[i] = line;
        if (regex.test(line)) matched.push(i);
      }
      if (!matched.length) continue;

      if (query.mode === "files" || query.mode === "count") {
        if (found >= query.maxResults) {
          limited = true;
          break;
        }
        found++;
        hits.push(query.mode === "files" ? { type: "file", path: shown } : { type: "count", path: shown, count: matched.length });
        continue;
      }

      const room = query.maxResults - found;
      if (room <= 0) {
        limited = true;
        break;
      }
      const isMatch = new Set(matched);
      const kept = matched.slice(0, room);
      const cutAt = matched[room] ?? Number.POSITIVE_INFINITY;
      let shownUntil = -1;
      for (const m of kept) {
        // Context stops at the first match past the limit, as rg's output does when it is stopped there.
        for (let i = Math.max(m - context, shownUntil + 1); i <= Math.min(m + context, lines.length - 1, cutAt - 1); i++) {
          const text = lines[i] as string;
          if (isMatch.has(i)) {
            const at = text.length > MAX_LINE_CHARS ? (text.search(regex) ?? 0) : 0;
            hits.push({ type: "match", path: shown, line: i + 1, text: cutLine(text, Math.max(0, at)) });
          } else {
            hits.push({ type: "context", path: shown, line: i + 1, text: cutLine(text) });
          }
          shownUntil = i;
        }
      }
      found += kept.length;
      if (matched.length > room) {
        limited = true;
        dropLeadingContext(hits, context);
        break;
      }
    }
    hits.sort(byPath);
    // rg reports the count only with --json (content mode); keep the shapes alike.
    return { hits, limited, ...(query.mode === "content" ? { searched } : {}) };
  }

  private async kindOf(root: string): Promise<"file" | "directory"> {
    const s = await this.mem.stat(root);
    if (!s) throw new ToolError("not_found", `Path not found: ${root}`);
    return s.type === "directory" ? "directory" : "file";
  }

  /** Files below `root` in path order, without .git and what .gitignore files (here or above) exclude. */
  private *visibleFiles(root: string): Generator<string> {
    const rules = new Map<string, IgnoreRule[]>();
    const ignoredDirs = new Map<string, boolean>();
    const rulesOf = (dir: string): IgnoreRule[] => {
      let found = rules.get(dir);
      if (!found) {
        const text = this.mem.text(path.join(dir, ".gitignore"));
        found = text === undefined ? [] : parseGitignore(text);
        rules.set(dir, found);
      }
      return found;
    };
    const ignoredBy = (abs: string, isDir: boolean): boolean => {
      const dirs: string[] = [];
      for (let dir = path.dirname(abs); ; dir = path.dirname(dir)) {
        dirs.unshift(dir);
        if (dir === "/") break;
      }
      // Top-down, so a deeper .gitignore (and a later line) has the last word.
      let ignored = false;
      for (const dir of dirs) {
        const rel = path.relative(dir, abs);
        for (const rule of rulesOf(dir)) {
          if ((!rule.dirOnly || isDir) && rule.match(rel)) ignored = !rule.negate;
        }
      }
      return ignored;
    };
    // A file inside an ignored directory stays ignored, as in git.
    const dirIgnored = (dir: string): boolean => {
      if (dir === root || dir === "/" || !dir.startsWith(root)) return false;
      let known = ignoredDirs.get(dir);
      if (known === undefined) {
        known = path.basename(dir) === ".git" || dirIgnored(path.dirname(dir)) || ignoredBy(dir, true);
        ignoredDirs.set(dir, known);
      }
      return known;
    };
    for (const entry of this.mem.walk(root)) {
      if (entry.type !== "file") continue;
      if (path.basename(entry.path) === ".git" || dirIgnored(path.dirname(entry.path)) || ignoredBy(entry.path, false)) continue;
      yield entry.path;
    }
  }
}
