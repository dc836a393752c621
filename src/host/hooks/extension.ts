import { DEFAULT_HOOK_TIMEOUT_MS, displayFile, type HookFunction, type HookLevel, type HookSpec } from "./config.js";
import type { HookReply } from "./command.js";
import { HOOK_EVENTS, type HookEventName, type HookInput } from "./events.js";
import { compileMatcher } from "./matcher.js";

// In-process hooks: an extension file's `export const hooks = { tool_call(event, ctx) {…} }`. Each
// event takes a function, `{ matcher?, handler, timeout?, failClosed? }`, or a list of these. A
// handler gets the event as an object in toolhost's names and `{ signal }`, and returns (or
// resolves to) nothing for no opinion, or what the event may answer.

/** What a handler may answer at each event (besides `message` for the user and `halt` to end the turn). */
export interface HookAnswers {
  session_start: { addContext?: string | string[] };
  prompt: { block?: boolean; reason?: string; addContext?: string | string[] };
  tool_call: {
    decision?: "allow" | "deny" | "ask";
    reason?: string;
    updatedArgs?: Record<string, unknown>;
    addContext?: string | string[];
  };
  tool_result: { annotation?: string; replaceModelResult?: unknown };
  stop: { continue?: string };
  compact: object;
  subagent_stop: { continue?: string };
  session_end: object;
}

type Handler<E extends HookEventName> = (
  event: HookInput<E> & { event: E },
  ctx: { signal: AbortSignal },
) =>
  | (HookAnswers[E] & { message?: string; halt?: string })
  | undefined
  | void
  | Promise<(HookAnswers[E] & { message?: string; halt?: string }) | undefined | void>;
type Entry<E extends HookEventName> = Handler<E> | { matcher?: string; handler: Handler<E>; timeout?: number; failClosed?: boolean };

/** The type of an extension file's `export const hooks = {…}` ("toolhost" exports it as `HooksExport`). */
export type HooksExport = { [E in HookEventName]?: Entry<E> | Entry<E>[] };

/** One checked handler of an extension file. */
export interface ExtensionHook {
  event: HookEventName;
  run: HookFunction;
  matcher?: string;
  timeoutMs: number;
  failClosed: boolean;
  /** `tool_call[1]`: where in the export. */
  at: string;
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const ENTRY_KEYS = new Set(["matcher", "handler", "timeout", "failClosed"]);

/** The handlers of a `hooks` export, and what is wrong with the rest (each bad one is left out). */
export function checkExtensionHooks(value: unknown): { hooks: ExtensionHook[]; problems: string[] } {
  const hooks: ExtensionHook[] = [];
  const problems: string[] = [];
  if (!isRecord(value)) return { hooks, problems: ["the `hooks` export must be an object of events: { tool_call(event, ctx) {…} }"] };
  for (const [event, entries] of Object.entries(value)) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      problems.push(`hooks.${event}: unknown event (events: ${HOOK_EVENTS.join(", ")})`);
      continue;
    }
    const list = Array.isArray(entries) ? entries : [entries];
    list.forEach((entry: unknown, i) => {
      const at = Array.isArray(entries) ? `${event}[${i}]` : event;
      if (typeof entry === "function") {
        hooks.push({
          event: event as HookEventName,
          run: entry as HookFunction,
          timeoutMs: DEFAULT_HOOK_TIMEOUT_MS,
          failClosed: false,
          at,
        });
        return;
      }
      const bad = (message: string) => problems.push(`hooks.${at}: ${message} (left out)`);
      if (!isRecord(entry) || typeof entry.handler !== "function")
        return bad("must be a function, or { matcher?, handler, timeout?, failClosed? }");
      const unknown = Object.keys(entry).filter((k) => !ENTRY_KEYS.has(k));
      if (unknown.length) return bad(`unknown key${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);
      if (entry.matcher !== undefined && typeof entry.matcher !== "string") return bad("matcher must be a string");
      const compiled = compileMatcher(entry.matcher as string | undefined);
      if ("error" in compiled) return bad(compiled.error);
      const t = entry.timeout;
      if (t !== undefined && !(typeof t === "number" && t > 0 && t <= 3600))
        return bad("timeout must be a number of seconds from 0 to 3600");
      if (entry.failClosed !== undefined && typeof entry.failClosed !== "boolean") return bad("failClosed must be true or false");
      hooks.push({
        event: event as HookEventName,
        run: entry.handler as HookFunction,
        ...(typeof entry.matcher === "string" && entry.matcher.trim() !== "" ? { matcher: entry.matcher } : {}),
        timeoutMs: t === undefined ? DEFAULT_HOOK_TIMEOUT_MS : Math.round(t * 1000),
        failClosed: entry.failClosed === true,
        at,
      });
    });
  }
  return { hooks, problems };
}

/** An extension file's hooks, and whose they are (the folder it was found in). */
export interface ExtensionHooks {
  file: string;
  level: HookLevel;
  hooks: readonly ExtensionHook[];
}

/** An extension file's handlers as hooks to run. */
export function extensionSpecs(ext: ExtensionHooks): HookSpec[] {
  return ext.hooks.map((h) => ({
    event: h.event,
    written: h.event,
    level: ext.level,
    file: ext.file,
    dialect: "toolhost" as const,
    ...(h.matcher ? { matcher: h.matcher } : {}),
    match: (compileMatcher(h.matcher) as { match: HookSpec["match"] }).match,
    timeoutMs: h.timeoutMs,
    failClosed: h.failClosed,
    handler: { type: "function" as const, run: h.run },
    label: `hooks.${h.at} of ${displayFile(ext.file)}`,
  }));
}

const str = (v: unknown) => v === undefined || typeof v === "string";

/** What an in-process handler returned, as a reply; a string says what is wrong with it. */
export function readFunctionReply(value: unknown, event: HookEventName): HookReply | string {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) return `returned ${typeof value}, not an object`;
  const v = value;
  if (!str(v.reason) || !str(v.message) || !str(v.halt)) return "returned reason, message or halt that is not a string";
  const reply: HookReply = {
    ...(typeof v.reason === "string" ? { reason: v.reason } : {}),
    ...(typeof v.message === "string" ? { message: v.message } : {}),
    ...(typeof v.halt === "string" ? { halt: v.halt } : {}),
  };
  const context = v.addContext;
  if (context !== undefined) {
    if (typeof context !== "string" && !(Array.isArray(context) && context.every((c) => typeof c === "string")))
      return "returned addContext that is not a string (or a list of strings)";
    reply.context = typeof context === "string" ? [context] : context;
  }
  switch (event) {
    case "tool_call":
      if (v.decision !== undefined && v.decision !== "allow" && v.decision !== "deny" && v.decision !== "ask")
        return `returned an unknown decision (${JSON.stringify(v.decision)})`;
      if (v.decision !== undefined) reply.decision = v.decision;
      if (v.updatedArgs !== undefined) {
        if (!isRecord(v.updatedArgs)) return "returned updatedArgs that is not an object";
        reply.changes = v.updatedArgs;
      }
      break;
    case "tool_result":
      if (!str(v.annotation)) return "returned an annotation that is not a string";
      if (typeof v.annotation === "string") reply.context = [...(reply.context ?? []), v.annotation];
      if (v.replaceModelResult !== undefined) reply.replace = { value: v.replaceModelResult };
      break;
    case "prompt":
      if (v.block !== undefined && typeof v.block !== "boolean") return "returned block that is not true or false";
      if (v.block === true) reply.decision = "block";
      break;
    case "stop":
    case "subagent_stop":
      if (!str(v.continue)) return "returned continue that is not a string (the message the model goes on with)";
      if (typeof v.continue === "string") reply.decision = "block";
      if (typeof v.continue === "string") reply.reason = v.continue;
      break;
  }
  return reply;
}
