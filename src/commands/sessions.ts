import * as fsp from "node:fs/promises";
import path from "node:path";
import { SessionTree, type EntryOf } from "../agent/record/session-format.js";
import { SessionStore, sessionFileText, type SessionSummary } from "../agent/record/session-store.js";
import { SessionHeldError } from "../agent/record/session-hold.js";
import { transcriptMarkdown } from "../agent/record/session-transcript.js";
import { restoredState } from "../agent/record/session-restore.js";
import type { StoredSession } from "../agent/record/session-store.js";
import type { TreeCommandOptions } from "./session-tree.js";

/** The options of every action; tree, rewind and fork take theirs from `TreeCommandOptions`. */
export interface SessionsOptions extends TreeCommandOptions {
  /** list (default), show, export, delete, tree, rewind or fork. */
  action: string;
  id?: string;
  cwd?: string;
  format?: string;
  limit?: number;
}

/** `toolhost sessions`: the saved sessions; show, export or delete one. Exit 1 for an unknown session. */
export async function runSessions(options: SessionsOptions): Promise<number> {
  const store = new SessionStore();
  const { action, out } = options;
  if (action === "list") {
    const page = await store.list({ cwd: options.cwd ? path.resolve(options.cwd) : undefined, limit: options.limit ?? 50 });
    if (options.json) {
      await out(`${JSON.stringify(page, null, 2)}\n`);
      return 0;
    }
    if (page.sessions.length === 0) {
      await out(`No saved sessions${options.cwd ? ` for ${path.resolve(options.cwd)}` : ""} (in ${store.root}).\n`);
      return 0;
    }
    const lines = page.sessions.map((s) =>
      s.problem
        ? `${s.updatedAt.slice(0, 16).replace("T", " ")}  ${s.id}  (cannot be opened: ${s.problem})  [${s.file}]`
        : `${s.updatedAt.slice(0, 16).replace("T", " ")}  ${s.id}  ${s.title ?? "(untitled)"}  [${s.cwd}]${s.note ? `  (note: ${s.note})` : ""}`,
    );
    if (page.nextCursor) lines.push(`… more: --limit ${(options.limit ?? 50) * 2}`);
    await out(`${lines.join("\n")}\n`);
    return 0;
  }
  if (!options.id) {
    process.stderr.write(`toolhost: sessions ${action} needs a session id (toolhost sessions list shows them)\n`);
    return 2;
  }
  // A delete cannot be undone: a short prefix could name another session tomorrow.
  if (action === "delete" && options.id.length < MIN_DELETE_PREFIX && !(await store.find(options.id))) {
    process.stderr.write(
      `toolhost: sessions delete takes the whole id or at least ${MIN_DELETE_PREFIX} of its characters, not ${JSON.stringify(options.id)}\n`,
    );
    return 2;
  }
  const id = await resolveSessionId(store, options.id);
  if ("error" in id) {
    process.stderr.write(`toolhost: ${id.error}\n`);
    return 1;
  }
  const stored = await store.read(id.id);
  if (!stored) {
    process.stderr.write(`toolhost: no saved session ${options.id} in ${store.root}\n`);
    return 1;
  }
  switch (action) {
    case "show": {
      // What the session is now: the path to its current position (a rewind's abandoned branches aside).
      const path = new SessionTree(stored.entries).pathTo();
      const calls = path.filter((e): e is EntryOf<"tool_result"> => e.type === "tool_result");
      const summary = {
        ...settingsAndUse(stored),
        id: stored.header.id,
        cwd: stored.header.cwd,
        created: stored.header.created,
        file: stored.file,
        title: path.findLast((e) => e.type === "title")?.title,
        prompts: path.filter((e) => e.type === "user").length,
        messages: path.filter((e) => e.type === "message").length,
        toolCalls: calls.length,
        failedCalls: calls.filter((c) => c.status !== "completed").length,
        unreadableLines: stored.skippedLines,
      };
      if (options.json) await out(`${JSON.stringify(summary, null, 2)}\n`);
      else
        await out(
          `${Object.entries(summary)
            .map(
              ([k, v]) =>
                `${k}: ${
                  v && typeof v === "object"
                    ? Object.entries(v)
                        .map(([n, c]) => `${n} ${c}`)
                        .join(", ")
                    : (v ?? "-")
                }`,
            )
            .join("\n")}\n`,
        );
      return 0;
    }
    case "export": {
      const format = options.format ?? "md";
      // A format-1 file is exported as it reads: format 2.
      if (format === "jsonl")
        await out(stored.migratedFrom ? sessionFileText(stored.header, stored.entries) : await fsp.readFile(stored.file, "utf8"));
      else if (format === "md") await out(transcriptMarkdown(stored));
      else {
        process.stderr.write(`toolhost: unknown export format ${JSON.stringify(format)}; formats: md, jsonl\n`);
        return 2;
      }
      return 0;
    }
    case "tree":
      return (await import("./session-tree.js")).runTree(stored, options);
    case "rewind":
      return (await import("./session-tree.js")).runRewind(store, stored, options);
    case "fork":
      return (await import("./session-tree.js")).runFork(store, stored, options);
    case "delete":
      try {
        await store.delete(stored.header.id);
      } catch (err) {
        // Open in another process (an editor): deleting it under that process would lose what it writes next.
        if (!(err instanceof SessionHeldError)) throw err;
        process.stderr.write(`toolhost: ${err.message}\n`);
        return 1;
      }
      {
        const title = new SessionTree(stored.entries).pathTo().findLast((e) => e.type === "title")?.title;
        await out(
          `Deleted session ${stored.header.id}${title ? ` (${JSON.stringify(title)})` : ""}: its file ${stored.file}, its large outputs and its checkpoints of ${stored.header.cwd}.\n`,
        );
      }
      return 0;
    default:
      process.stderr.write(
        `toolhost: sessions takes list, show ID, export ID, tree ID, rewind ID, fork ID or delete ID, not ${JSON.stringify(action)}\n`,
      );
      return 2;
  }
}

/** The fewest characters of an id that `sessions delete` takes as a prefix. */
const MIN_DELETE_PREFIX = 8;

/**
 * The session an id names: the id itself, or the one saved session whose id starts with it (a
 * prefix that fits several is an error listing them, never a guess).
 */
export async function resolveSessionId(store: SessionStore, given: string): Promise<{ id: string } | { error: string }> {
  if (await store.find(given)) return { id: given };
  const { sessions } = given.trim() === "" ? { sessions: [] } : await store.list({ limit: Number.MAX_SAFE_INTEGER });
  const matches = sessions.filter((s) => s.id.startsWith(given));
  if (matches.length === 1) return { id: (matches[0] as SessionSummary).id };
  if (matches.length === 0) return { error: `no saved session ${given} in ${store.root} (toolhost sessions list shows them)` };
  const listed = matches.slice(0, 20).map((s) => `  ${s.id}  ${s.title ?? "(untitled)"}  [${s.cwd}]`);
  if (matches.length > 20) listed.push(`  … and ${matches.length - 20} more`);
  return { error: `${given} names ${matches.length} saved sessions; give more of the id:\n${listed.join("\n")}` };
}

/**
 * What `sessions show` says of a session's settings and use: the model (set, else the one its last
 * turn had), mode and thought level at its current position, and what it has used in all (the meter
 * never goes down: a rewind does not give back what was spent). Older files lack the token detail.
 */
function settingsAndUse(stored: StoredSession): Record<string, unknown> {
  const state = restoredState(stored);
  const ends = stored.entries.filter((e): e is EntryOf<"turn_end"> => e.type === "turn_end");
  const usage = ends.at(-1)?.usage;
  const detail = usage && typeof usage.inputTokens === "number";
  return {
    model: state.model ?? ends.findLast((e) => e.model)?.model,
    mode: state.mode,
    thoughtLevel: state.thoughtLevel,
    cost: usage && (usage.pricedRequests ?? (usage.amount > 0 ? 1 : 0)) > 0 ? `$${usage.amount.toFixed(4)}` : undefined,
    requests: usage?.requests,
    tokens: detail
      ? { input: usage.inputTokens, output: usage.outputTokens, cacheRead: usage.cacheReadTokens, cacheWrite: usage.cacheWriteTokens }
      : usage?.tokens,
  };
}
