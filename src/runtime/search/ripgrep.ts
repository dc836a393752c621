import * as fsp from "node:fs/promises";
import path from "node:path";
import type { FileQuery, GrepHit, GrepOutcome, GrepQuery } from "../../tool/context.js";
import { ToolError, isToolError } from "../../tool/errors.js";
import { startOffThread } from "../shell/spawn-thread.js";
import type { SearchBackend } from "../fs/backend.js";
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
  type GlobPlan,
} from "./common.js";

let bundled: Promise<string> | undefined;

/** The rg binary: $TOOLHOST_RG_PATH, else the one shipped in @vscode/ripgrep (loaded on first use). */
export function ripgrepPath(): Promise<string> {
  const override = process.env.TOOLHOST_RG_PATH;
  if (override) return Promise.resolve(override);
  bundled ??= import("@vscode/ripgrep").then(
    // Older releases are CommonJS (rgPath on the default export), newer ones ESM.
    (m: { rgPath?: string; default?: { rgPath?: string } }) => {
      const p = m.rgPath ?? m.default?.rgPath;
      if (!p) throw new Error("@vscode/ripgrep exports no rgPath");
      return p;
    },
    (err: unknown) => {
      bundled = undefined;
      throw new ToolError(
        "unavailable",
        `ripgrep is not available (${err instanceof Error ? err.message : String(err)}); reinstall toolhost or set TOOLHOST_RG_PATH`,
      );
    },
  );
  return bundled;
}

// Respect .gitignore even outside a git repository (a checked-out tarball still means it).
const COMMON_ARGS = ["--no-config", "--hidden", "--no-require-git", "--no-messages"];
// Last, because a later rg glob wins over an earlier one.
const SKIP_GIT = ["--glob", "!.git"];

/**
 * rg arguments for a file-name filter. A positive rg --glob would override .gitignore (it
 * whitelists ignored files); a file type built from the glob filters without doing so.
 */
function nameFilterArgs(plan: GlobPlan): string[] {
  const args: string[] = [];
  if (plan.name) args.push("--type-add", `toolhostglob:${plan.name}`, "--type", "toolhostglob");
  if (plan.notName) args.push("--glob", `!${plan.notName}`);
  return args;
}

interface RunOptions {
  args: string[];
  cwd: string;
  signal: AbortSignal;
  timeoutMs: number;
  separator: "\n" | "\0";
  /** Called per record as output arrives; returning false stops rg. */
  onRecord(record: string): boolean;
}

interface RunResult {
  exitCode: number | undefined;
  stderr: string;
  /** True when onRecord asked to stop. */
  stopped: boolean;
  records: number;
}

const MAX_STDERR = 8 * 1024;

/** Runs rg and streams its stdout record by record; kills it on stop, timeout or abort. */
async function runRipgrep(options: RunOptions): Promise<RunResult> {
  const { signal, separator } = options;
  if (signal.aborted) throw abortedError();
  const rg = await ripgrepPath();
  // On the spawner thread: its fork would hold the agent's.
  const child = startOffThread(rg, options.args, { cwd: options.cwd, env: { ...process.env } });
  const exited = new Promise<{ exitCode: number | undefined; error?: Error }>((resolve) => {
    child.once("error", (error) => resolve({ exitCode: undefined, error }));
    child.once("close", (code) => resolve({ exitCode: code ?? undefined }));
  });

  let why: "limit" | "timeout" | "abort" | undefined;
  let forceKill: NodeJS.Timeout | undefined;
  const stop = (reason: typeof why) => {
    if (why) return;
    why = reason;
    child.kill("SIGTERM");
    forceKill = setTimeout(() => child.kill("SIGKILL"), 1000);
  };
  const timer = setTimeout(() => stop("timeout"), options.timeoutMs);
  const onAbort = () => stop("abort");
  signal.addEventListener("abort", onAbort, { once: true });

  let records = 0;
  let stderr = "";
  // Records are cut from the bytes and decoded one by one: the separator is one ASCII byte, which
  // never occurs inside a UTF-8 sequence, and each record becomes a flat string (slices of one
  // decoded chunk sort several times slower).
  const sep = separator.charCodeAt(0);
  let pending: Buffer[] = [];
  let broken: unknown;
  const take = (record: string) => {
    records++;
    try {
      if (!options.onRecord(record)) stop("limit");
    } catch (err) {
      // A throw inside a stream listener would be uncaught: stop rg and rethrow after it exits.
      broken ??= err;
      stop("limit");
    }
  };
  child.stdout?.on("data", (chunk: Buffer) => {
    if (why) return;
    let start = 0;
    let at = chunk.indexOf(sep);
    // A long record spans chunks: collect the pieces and join once its end arrives.
    while (at !== -1 && !why) {
      if (pending.length) {
        pending.push(chunk.subarray(start, at));
        take(Buffer.concat(pending).toString("utf8"));
        pending = [];
      } else {
        take(chunk.toString("utf8", start, at));
      }
      start = at + 1;
      at = chunk.indexOf(sep, start);
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    if (stderr.length < MAX_STDERR) stderr += chunk.toString("utf8");
  });

  try {
    const result = await exited;
    if (why === "abort") throw abortedError();
    if (why === "timeout") throw timeoutError(options.timeoutMs);
    if (!why) {
      const tail = Buffer.concat(pending).toString("utf8");
      if (tail) take(tail);
    }
    if (broken) throw broken;
    if (result.exitCode === undefined && !why) {
      throw new ToolError("unavailable", `Could not run ripgrep (${rg}): ${result.error?.message ?? "it exited without a status"}`);
    }
    return { exitCode: result.exitCode, stderr: stderr.trim(), stopped: why === "limit", records };
  } finally {
    clearTimeout(timer);
    clearTimeout(forceKill);
    signal.removeEventListener("abort", onAbort);
  }
}

/** `12:5:` for a match (line, byte column), `12-` for a context line. */
const LINE_PREFIX = /^(\d+)(?::(\d+))?([:-])/;
const STATS_SEARCHED = /^(\d+) files searched$/;

function stripEol(line: string): string {
  if (line.endsWith("\n")) line = line.slice(0, -1);
  if (line.endsWith("\r")) line = line.slice(0, -1);
  return line;
}

/** Character index of a UTF-8 byte offset within `text`. */
function charIndex(text: string, byteOffset: number): number {
  return Buffer.from(text, "utf8").subarray(0, byteOffset).toString("utf8").length;
}

async function checkRoot(root: string): Promise<"file" | "directory"> {
  const s = await fsp.stat(root).catch(() => null);
  if (!s) throw new ToolError("not_found", `Path not found: ${root}`);
  return s.isDirectory() ? "directory" : "file";
}

function cleanPath(p: string): string {
  return p.startsWith("./") ? p.slice(2) : p;
}

const WRAPPER = "(?:";

/**
 * rg's regex error in the terms of the grep tool: the pattern as the model wrote it (rg shows it
 * inside a `(?:…)` group of its own, with the caret shifted to match), and no advice about a
 * `--pcre2` flag the tool does not offer.
 */
function regexMessage(message: string, pattern: string | undefined): string {
  const lines = message.split("\n");
  const shown = lines.findIndex((l) => l.trimStart().startsWith(WRAPPER));
  const quoted = lines[shown];
  if (pattern !== undefined && quoted !== undefined && !pattern.includes("\n") && quoted.trimStart() === `${WRAPPER}${pattern})`) {
    const indent = quoted.length - quoted.trimStart().length;
    lines[shown] = `${quoted.slice(0, indent)}${pattern}`;
    const caret = lines[shown + 1];
    if (caret !== undefined && /^\s*\^+\s*$/.test(caret)) {
      const at = caret.indexOf("^") - indent - WRAPPER.length;
      // A caret on the wrapper itself points at no character of the pattern.
      if (at >= 0) lines[shown + 1] = `${" ".repeat(indent + at)}${caret.trim().slice(0, Math.max(1, pattern.length - at))}`;
      else lines.splice(shown + 1, 1);
    }
  }
  let text = lines.join("\n");
  if (/--pcre2/.test(text)) {
    text = text.replace(/\n*Consider enabling PCRE2[\s\S]*$/, "");
    text +=
      "\ngrep's regex engine supports neither look-around nor backreferences: rewrite the pattern without them (search for a simpler pattern and check the matches).";
  }
  return text;
}

function failed(run: RunResult, pattern?: string): void {
  // Exit 1 is "nothing found"; 2 with nothing found and a message is a real error (2 alone can mean unreadable files).
  if (run.exitCode !== 2 || run.records > 0 || !run.stderr) return;
  const message = run.stderr.replace(/^rg: /gm, "");
  if (/regex|pattern|literal/i.test(message)) throw invalidRegexError(regexMessage(message, pattern));
  throw new ToolError("execution_failed", `ripgrep failed: ${message}`);
}

/** Search on the real disk with the bundled ripgrep. */
export class RipgrepSearch implements SearchBackend {
  async files(root: string, query: FileQuery, signal: AbortSignal): Promise<{ files: string[]; limited: boolean }> {
    const max = query.maxResults ?? Number.POSITIVE_INFINITY;
    const files: string[] = [];
    let limited = false;
    // No path argument: rg lists the cwd and prints paths without a "./" prefix.
    const listing = runRipgrep({
      // NUL-terminated: a newline is a legal character in a file name.
      args: [...COMMON_ARGS, ...nameFilterArgs({ name: listingNameGlob(query) }), ...SKIP_GIT, "--files", "--null"],
      cwd: root,
      signal,
      timeoutMs: query.timeoutMs,
      separator: "\0",
      onRecord(record) {
        if (files.length >= max) {
          limited = true;
          return false;
        }
        files.push(record);
        return true;
      },
    });
    // The root is looked at only when rg could not start in it (missing, or a file): one stat
    // less on every listing.
    const run = await listing.catch(async (err: unknown) => {
      if (isToolError(err) && err.code === "unavailable" && (await checkRoot(root)) !== "directory") {
        throw new ToolError("invalid_arguments", `${root} is a file, not a directory`);
      }
      throw err;
    });
    failed(run);
    return { files, limited };
  }

  async grep(root: string, cwd: string, query: GrepQuery, signal: AbortSignal): Promise<GrepOutcome> {
    const kind = await checkRoot(root);
    const plan = planGlob(query.glob);
    const args = [...COMMON_ARGS, ...nameFilterArgs(plan), ...SKIP_GIT];
    if (query.literal) args.push("--fixed-strings");
    if (query.ignoreCase) args.push("--ignore-case");
    const target = searchTarget(root, cwd);
    const keep = plan.keep;
    // Paths as rg prints them, and relative to the searched directory (for globs with a slash).
    const fromRoot = (shown: string) =>
      kind === "file"
        ? path.basename(shown)
        : target === "."
          ? shown
          : path.isAbsolute(target)
            ? path.relative(root, shown)
            : shown.slice(target.length + 1);
    const wanted = (shown: string) => !keep || keep(shown, fromRoot(shown));
    const base = { cwd, signal, timeoutMs: query.timeoutMs };
    const max = query.maxResults;
    let limited = false;

    if (query.mode === "content") {
      if (query.context) args.push("--context", String(query.context));
      // Plain output (path NUL line:column:text) costs rg and us less than --json; --stats adds the file count.
      args.push("--line-number", "--column", "--with-filename", "--null", "--no-heading", "--color", "never", "--stats");
      args.push("--regexp", query.pattern, "--", target);
      const hits: GrepHit[] = [];
      let matches = 0;
      let searched: number | undefined;
      const run = await runRipgrep({
        ...base,
        args,
        separator: "\n",
        onRecord(record) {
          const nul = record.indexOf("\0");
          if (nul === -1) {
            // Context group separators ("--") and the closing statistics.
            const stat = STATS_SEARCHED.exec(record);
            if (stat) searched = Number(stat[1]);
            return true;
          }
          const shown = cleanPath(record.slice(0, nul));
          if (!wanted(shown)) return true;
          const parsed = LINE_PREFIX.exec(record.slice(nul + 1, nul + 32));
          if (!parsed) return true;
          const line = Number(parsed[1]);
          const text = stripEol(record.slice(nul + 1 + parsed[0].length));
          if (parsed[3] === "-") {
            hits.push({ type: "context", path: shown, line, text: cutLine(text) });
            return true;
          }
          if (matches >= max) {
            limited = true;
            return false;
          }
          matches++;
          const at = text.length > MAX_LINE_CHARS ? charIndex(text, Number(parsed[2] ?? 1) - 1) : 0;
          hits.push({ type: "match", path: shown, line, text: cutLine(text, at) });
          return true;
        },
      });
      failed(run, query.literal ? undefined : query.pattern);
      if (limited) dropLeadingContext(hits, query.context ?? 0);
      hits.sort(byPath);
      return { hits, limited, ...(searched !== undefined ? { searched } : {}) };
    }

    // --json does not combine with these modes; --null keeps odd file names intact.
    const count = query.mode === "count";
    args.push(count ? "--count" : "--files-with-matches", "--with-filename", "--null", "--regexp", query.pattern, "--", target);
    const hits: GrepHit[] = [];
    const run = await runRipgrep({
      ...base,
      args,
      separator: count ? "\n" : "\0",
      onRecord(record) {
        const cut = count ? record.lastIndexOf("\0") : record.length;
        const shown = cleanPath(record.slice(0, cut));
        if (!wanted(shown)) return true;
        if (hits.length >= max) {
          limited = true;
          return false;
        }
        hits.push(count ? { type: "count", path: shown, count: Number(record.slice(cut + 1)) } : { type: "file", path: shown });
        return true;
      },
    });
    failed(run, query.literal ? undefined : query.pattern);
    hits.sort(byPath);
    return { hits, limited };
  }
}
