import os from "node:os";
import path from "node:path";
import { readConfigTextSync, userRoots } from "../../config/safe-read.js";
import { CLAUDE_EVENTS, HOOK_EVENTS, type HookDialect, type HookEventName } from "./events.js";
import { compileMatcher, type Matcher } from "./matcher.js";

// Hook entries as the files write them, read into one list. Every source takes one shape, Claude
// Code's (`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command":
// "…", "timeout": 60}]}]}}`), with toolhost's event names allowed beside Claude's and, in toolhost's
// own files, a flat entry (`{"matcher": "bash", "command": "…"}`) too. Each entry is checked on its
// own: a bad one is reported and left out, the others hold.

/** Whose hook it is; hooks run (and their verdicts count) in this order. */
export type HookLevel = "user" | "profile" | "project";

export const HOOK_LEVELS: readonly HookLevel[] = ["user", "profile", "project"];

/** How long a hook may run when its entry gives no `timeout` (seconds in the files). */
export const DEFAULT_HOOK_TIMEOUT_MS = 10_000;
const MAX_TIMEOUT_S = 3600;

/** An in-process handler (an extension file's `hooks` export): the event as an object, and `{ signal }`. */
export type HookFunction = (event: Record<string, unknown>, ctx: { signal: AbortSignal }) => unknown;

export type HookHandler = { type: "command"; command: string } | { type: "function"; run: HookFunction };

/** One hook, ready to run. */
export interface HookSpec {
  event: HookEventName;
  /** The event as its file writes it (`PreToolUse`, `tool_call`). */
  written: string;
  level: HookLevel;
  /** The file that defines it. */
  file: string;
  /** The names a command is spoken to in: Claude Code's for its files and event names, else toolhost's. */
  dialect: HookDialect;
  matcher?: string;
  match: Matcher;
  timeoutMs: number;
  /** A failure (exit code other than 0 and 2, a hang, garbage) blocks instead of counting as no opinion. */
  failClosed: boolean;
  handler: HookHandler;
  /** Where it is written, for messages and a verdict's why: `PreToolUse[0].hooks[1] in ~/.claude/settings.json`. */
  label: string;
}

/** A bad entry (left out), or one toolhost does not run (a Claude Code event or handler type it lacks). */
export interface HookProblem {
  file: string;
  message: string;
}

export interface ParsedHooks {
  hooks: HookSpec[];
  problems: HookProblem[];
  /** Entries that are fine but not for toolhost: notes, not problems. */
  skipped: HookProblem[];
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A file's name for messages: under the home folder as `~/…`. */
export function displayFile(file: string): string {
  const home = os.homedir();
  return home && file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
}

interface Where {
  file: string;
  level: HookLevel;
  /** Claude Code's settings file: its hooks speak Claude's names, whatever the event key. */
  claudeFile: boolean;
}

const HANDLER_KEYS = new Set(["type", "command", "timeout", "failClosed"]);

/** One handler object (`{type: "command", command, timeout?, failClosed?}`) of an entry. */
function parseHandler(
  value: unknown,
  at: string,
  where: Where,
  out: ParsedHooks,
): { command: string; timeoutMs: number; failClosed: boolean } | null {
  const bad = (message: string) => (out.problems.push({ file: where.file, message: `hooks.${at}: ${message} (left out)` }), null);
  if (!isRecord(value)) return bad("must be an object with a command");
  if (value.type !== undefined && value.type !== "command") {
    out.skipped.push({
      file: where.file,
      message: `hooks.${at}: "type": ${JSON.stringify(value.type)} hooks are not run by toolhost (only "command")`,
    });
    return null;
  }
  if (typeof value.command !== "string" || value.command.trim() === "") return bad('needs "command": the command line to run');
  const timeout = value.timeout;
  if (timeout !== undefined && !(typeof timeout === "number" && timeout > 0 && timeout <= MAX_TIMEOUT_S))
    return bad(`"timeout" must be a number of seconds from 0 to ${MAX_TIMEOUT_S}`);
  if (value.failClosed !== undefined && typeof value.failClosed !== "boolean") return bad('"failClosed" must be true or false');
  // Claude Code's files carry keys toolhost has no use for (statusMessage, async…); toolhost's own are checked.
  if (!where.claudeFile) {
    const unknown = Object.keys(value).filter((k) => !HANDLER_KEYS.has(k) && k !== "matcher" && k !== "hooks");
    if (unknown.length) return bad(`unknown key${unknown.length > 1 ? "s" : ""} ${unknown.map((k) => JSON.stringify(k)).join(", ")}`);
  }
  return {
    command: value.command,
    timeoutMs: timeout === undefined ? DEFAULT_HOOK_TIMEOUT_MS : Math.round(timeout * 1000),
    failClosed: value.failClosed === true,
  };
}

/** The event a key names, in which dialect; null (reported) when toolhost has no such event. */
function eventOf(key: string, where: Where, out: ParsedHooks): { event: HookEventName; dialect: HookDialect } | null {
  const claude = CLAUDE_EVENTS[key];
  if (claude) return { event: claude, dialect: "claude" };
  if ((HOOK_EVENTS as readonly string[]).includes(key))
    return { event: key as HookEventName, dialect: where.claudeFile ? "claude" : "toolhost" };
  if (/^[A-Z]/.test(key))
    out.skipped.push({ file: where.file, message: `hooks.${key}: toolhost has no such event (its hooks are not run)` });
  else
    out.problems.push({
      file: where.file,
      message: `hooks.${key}: unknown event (events: ${HOOK_EVENTS.join(", ")}, or Claude Code's names)`,
    });
  return null;
}

/**
 * The hooks of one `hooks` value (a config file's, a profile's, a Claude Code settings file's),
 * each entry checked on its own.
 */
export function parseHooksValue(value: unknown, where: Where): ParsedHooks {
  const out: ParsedHooks = { hooks: [], problems: [], skipped: [] };
  if (value === undefined) return out;
  if (!isRecord(value)) {
    out.problems.push({ file: where.file, message: "hooks must be an object of events, each a list of entries (left out)" });
    return out;
  }
  const shown = displayFile(where.file);
  for (const [key, entries] of Object.entries(value)) {
    const found = eventOf(key, where, out);
    if (!found) continue;
    if (!Array.isArray(entries)) {
      out.problems.push({ file: where.file, message: `hooks.${key} must be a list of entries (left out)` });
      continue;
    }
    entries.forEach((entry: unknown, i) => {
      const at = `${key}[${i}]`;
      if (!isRecord(entry)) {
        out.problems.push({ file: where.file, message: `hooks.${at} must be an object (left out)` });
        return;
      }
      const matcher = entry.matcher;
      if (matcher !== undefined && typeof matcher !== "string") {
        out.problems.push({ file: where.file, message: `hooks.${at}: "matcher" must be a string (left out)` });
        return;
      }
      const compiled = compileMatcher(matcher);
      if ("error" in compiled) {
        out.problems.push({ file: where.file, message: `hooks.${at}: ${compiled.error} (left out)` });
        return;
      }
      // `{matcher, hooks: [...]}` (Claude Code's), or one flat handler `{matcher, command}`.
      const handlers: [unknown, string][] = Array.isArray(entry.hooks)
        ? entry.hooks.map((h: unknown, j): [unknown, string] => [h, `${at}.hooks[${j}]`])
        : entry.hooks === undefined && entry.command !== undefined
          ? [[entry, at]]
          : [];
      if (!handlers.length && entry.hooks === undefined) {
        out.problems.push({ file: where.file, message: `hooks.${at} needs "hooks": [{ "type": "command", "command": "…" }] (left out)` });
        return;
      }
      if (entry.hooks !== undefined && !Array.isArray(entry.hooks)) {
        out.problems.push({ file: where.file, message: `hooks.${at}.hooks must be a list (left out)` });
        return;
      }
      for (const [handler, place] of handlers) {
        const parsed = parseHandler(handler, place, where, out);
        if (!parsed) continue;
        out.hooks.push({
          event: found.event,
          written: key,
          level: where.level,
          file: where.file,
          dialect: found.dialect,
          ...(matcher !== undefined && matcher.trim() !== "" ? { matcher } : {}),
          match: compiled.match,
          timeoutMs: parsed.timeoutMs,
          failClosed: parsed.failClosed,
          handler: { type: "command", command: parsed.command },
          label: `${place} in ${shown}`,
        });
      }
    });
  }
  return out;
}

/** Reads a JSON settings file (a regular file inside `roots` only) and parses its `hooks`. Missing: none. */
export function readHooksFile(file: string, roots: readonly string[], level: HookLevel, claudeFile: boolean): ParsedHooks {
  const where = { file, level, claudeFile };
  const { text, error } = readConfigTextSync(file, roots);
  if (error) return { hooks: [], problems: [{ file, message: `${error}; its hooks are not run` }], skipped: [] };
  if (text === null) return { hooks: [], problems: [], skipped: [] };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    return {
      hooks: [],
      problems: [{ file, message: `is not valid JSON (${(err as Error).message}); its hooks are not run` }],
      skipped: [],
    };
  }
  if (!isRecord(json)) return { hooks: [], problems: [{ file, message: "is not a JSON object; its hooks are not run" }], skipped: [] };
  // Claude Code's switch for all of its hooks: honoured for the file that sets it.
  if (claudeFile && json.disableAllHooks === true) {
    const skipped = json.hooks === undefined ? [] : [{ file, message: '"disableAllHooks": true: its hooks are not run' }];
    return { hooks: [], problems: [], skipped };
  }
  return parseHooksValue(json.hooks, where);
}

/** The hook files of each level: toolhost's own, then Claude Code's. */
export function hookFiles(options: { home: string; userHome: string; project: string }) {
  return {
    user: { claude: path.join(options.userHome, ".claude", "settings.json"), roots: [options.userHome, ...userRoots()] },
    project: {
      toolhost: path.join(options.project, ".toolhost", "config.json"),
      claude: path.join(options.project, ".claude", "settings.json"),
      // Claude Code's personal project settings (not committed), read after the shared ones.
      claudeLocal: path.join(options.project, ".claude", "settings.local.json"),
      roots: [options.project],
    },
  };
}
