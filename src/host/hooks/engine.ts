import os from "node:os";
import { peekConfig, type ConfigFile } from "../../config/file.js";
import type { LoadedConfig } from "../../config/schema.js";
import { asWorkspace, type Workspace } from "../../config/workspace.js";
import { childEnvironment } from "../../runtime/sandbox/child-env.js";
import type { Sandboxed } from "../../runtime/sandbox/sandboxed-spawn.js";
import type { SpawnRequest } from "../../runtime/shell/scoped.js";
import { shellPath } from "../../runtime/shell/scoped.js";
import { readCommandRun, runHookCommand, type HookReply, type HookResult, type SentCall } from "./command.js";
import {
  DEFAULT_HOOK_TIMEOUT_MS,
  displayFile,
  hookFiles,
  HOOK_LEVELS,
  parseHooksValue,
  readHooksFile,
  type HookProblem,
  type HookSpec,
  type ParsedHooks,
} from "./config.js";
import {
  commandPayload,
  HOOK_EVENTS,
  matchSubject,
  type HookEventName,
  type HookInput,
  type HookOutcome,
  type HookOutcomes,
  type OutcomeBase,
} from "./events.js";
import { extensionSpecs, readFunctionReply, type ExtensionHooks } from "./extension.js";

// A session's hooks: every source read once (user → profile → project), and each event's hooks
// run together, their verdicts resolved in that order: the first block wins.

export interface HooksOptions {
  /** The user's config as the session read it (its `hooks`, and `sandbox.env` for the commands' environment). */
  config: LoadedConfig;
  configFile?: ConfigFile;
  /** The profile's `hooks` and its profile.json. */
  profile?: { hooks?: unknown; file?: string };
  /** Whether the project's hook files may run: a trusted project's only. */
  trusted: boolean;
  /**
   * Trusted once and changed since (these files, relative to the project): its hooks do not run,
   * but the calls its tool_call hooks would see ask (fail closed: a guard the project had holds).
   */
  stale?: readonly string[];
  /** The user's home folder, for `~/.claude/settings.json` (default: os.homedir()). */
  userHome?: string;
  /** In-process hooks of the session's extension files, in discovery order. */
  extensions?: readonly ExtensionHooks[];
  /** The environment the commands' is filtered from (default: this process's). */
  env?: NodeJS.ProcessEnv;
}

/** A project hook file that was not read: the project is not trusted. */
export interface WaitingHooks {
  file: string;
  count: number;
}

/**
 * Where `failClosed` means something: a failed hook refuses the call, blocks the prompt, or keeps
 * the result from the model (a redacting hook that fails must not let the secret through). At the
 * other events a failure is only reported: a stop hook that fails does not keep the turn going.
 */
const FAILS_CLOSED: ReadonlySet<HookEventName> = new Set(["tool_call", "prompt", "tool_result"]);

const emptyBase = (): OutcomeBase => ({ problems: [], messages: [] });

/** Wraps a project hook's command in the session's sandbox (`runtime/sandbox/sandboxed-spawn.ts`), or says why it cannot. */
export type HookSandbox = (request: SpawnRequest) => Promise<Sandboxed>;

export interface HookRunOptions {
  signal?: AbortSignal;
  /** Where the project's command hooks run; without it they do not run (as where no sandbox can). */
  sandbox?: HookSandbox;
}

/** A hook whose command comes from the project's files: it runs only inside the sandbox. */
const projectCommand = (hook: HookSpec) => hook.level === "project" && hook.handler.type === "command";

export class Hooks {
  /** Each event's hooks in order (user → profile → project). */
  private readonly byEvent = new Map<HookEventName, HookSpec[]>();
  /** Failures reported already (hook label and kind): each is said once per session. */
  private readonly reported = new Set<string>();

  private constructor(
    /** Every hook, in the order they run. */
    readonly list: readonly HookSpec[],
    /** Bad entries, left out. */
    readonly problems: readonly HookProblem[],
    /** Entries toolhost does not run (Claude Code events or handler types it lacks). */
    readonly skipped: readonly HookProblem[],
    /** Project hook files not read because the project is not trusted. */
    readonly waiting: readonly WaitingHooks[],
    private readonly env: Record<string, string>,
  ) {
    for (const event of HOOK_EVENTS) {
      const hooks = list.filter((h) => h.event === event);
      if (hooks.length) this.byEvent.set(event, hooks);
    }
  }

  /** No hooks at all (a toolset built without them). */
  static none(): Hooks {
    return new Hooks([], [], [], [], {});
  }

  /**
   * Reads every source: the user's `~/.toolhost/config.json` and `~/.claude/settings.json`, the
   * profile's profile.json, then a trusted project's `.toolhost/config.json` and
   * `.claude/settings.json` and `.claude/settings.local.json`; each level's extension files' hooks after its files.
   */
  static load(workspace: string | Workspace, options: HooksOptions): Hooks {
    const ws = asWorkspace(workspace);
    const userHome = options.userHome ?? os.homedir();
    const files = hookFiles({ home: userHome, userHome, project: ws.cwd });
    const levels: Record<(typeof HOOK_LEVELS)[number], ParsedHooks[]> = {
      user: [
        parseHooksValue(options.config.config.hooks, { file: options.config.path, level: "user", claudeFile: false }),
        readHooksFile(files.user.claude, files.user.roots, "user", true),
      ],
      profile: options.profile?.file
        ? [parseHooksValue(options.profile.hooks, { file: options.profile.file, level: "profile", claudeFile: false })]
        : [],
      project: [],
    };
    const projectFiles = [files.project.toolhost, files.project.claude, files.project.claudeLocal];
    const project = projectFiles.map((file, i) => readHooksFile(file, files.project.roots, "project", i > 0));
    const waiting: WaitingHooks[] = [];
    if (options.trusted) levels.project.push(...project);
    else {
      for (const [i, parsed] of project.entries()) {
        if (parsed.hooks.length) waiting.push({ file: projectFiles[i]!, count: parsed.hooks.length });
      }
      if (options.stale?.length) levels.project.push(staleGuards(project, projectFiles, options.stale));
    }
    const list: HookSpec[] = [];
    const problems: HookProblem[] = [];
    const skipped: HookProblem[] = [];
    for (const level of HOOK_LEVELS) {
      for (const parsed of levels[level]) {
        list.push(...parsed.hooks);
        problems.push(...parsed.problems);
        skipped.push(...parsed.skipped);
      }
      for (const ext of options.extensions ?? []) if (ext.level === level) list.push(...extensionSpecs(ext));
    }
    const peek = options.configFile ? peekConfig(options.configFile) : undefined;
    const env = {
      ...childEnvironment(options.env ?? process.env, peek?.sandboxEnv ?? []),
      // bash reads ~/.bashrc when its stdin is a socket (Node's pipes are) and SHLVL says it is a
      // top-level shell, as if sshd had started it: a hook would pay for (and print) the user's
      // bashrc on every call. A shell-started parent always has SHLVL; the filter drops it.
      SHLVL: "1",
      TOOLHOST_PROJECT_DIR: ws.cwd,
      CLAUDE_PROJECT_DIR: ws.cwd,
    };
    return new Hooks(list, problems, skipped, waiting, env);
  }

  /** Whether any hook listens to the event (skip building its input when none does). */
  has(event: HookEventName): boolean {
    return this.byEvent.has(event);
  }

  /**
   * Runs the event's hooks whose matcher fits, all at once, and resolves their answers in order
   * (user → profile → project): the first block wins. A hook that fails, hangs or answers garbage
   * is reported once and has no opinion, unless its entry says `failClosed` (then it blocks).
   */
  async run<E extends HookEventName>(event: E, input: HookInput<E>, options: HookRunOptions = {}): Promise<HookOutcome<E>> {
    const subject = matchSubject(event, input);
    // Claude Code runs PostToolUse only after a call that succeeded; toolhost's tool_result hooks see every call.
    const failed = event === "tool_result" && (input as HookInput<"tool_result">).result.type === "error";
    const hooks = (this.byEvent.get(event) ?? []).filter((h) => (!subject || h.match(subject)) && !(failed && h.dialect === "claude"));
    if (!hooks.length) return emptyBase() as HookOutcome<E>;
    const signal = options.signal ?? new AbortController().signal;
    const notices: string[] = [];
    const results = await Promise.all(hooks.map((hook) => this.runOne(hook, event, input, signal, options.sandbox, notices)));
    const outcome = this.resolve(event, input, hooks, results);
    outcome.problems.push(...notices);
    return outcome;
  }

  private async runOne<E extends HookEventName>(
    hook: HookSpec,
    event: E,
    input: HookInput<E>,
    signal: AbortSignal,
    sandbox: HookSandbox | undefined,
    notices: string[],
  ): Promise<HookResult> {
    if (hook.handler.type === "function") return runFunction(hook, event, input, signal);
    const command = hook.handler.command;
    // A project's command (and any script it names) is workspace code: inside the sandbox or not at all.
    let wrapped: SpawnRequest | undefined;
    if (projectCommand(hook)) {
      const request = { file: shellPath(), args: ["-c", command], cwd: input.cwd, env: this.env };
      const result: Sandboxed = sandbox ? await sandbox(request) : { unavailable: "this session runs no sandbox for hooks" };
      if ("unavailable" in result) return { failure: result.unavailable, kind: "unsandboxed" };
      wrapped = result.request;
    }
    const payload = commandPayload(event, input, hook.dialect);
    const sent: SentCall | undefined =
      event === "tool_call"
        ? { toolId: (input as HookInput<"tool_call">).tool.id, toolInput: payload.tool_input as Record<string, unknown> }
        : undefined;
    let run;
    try {
      run = await runHookCommand(command, JSON.stringify(payload), {
        cwd: input.cwd,
        env: this.env,
        timeoutMs: hook.timeoutMs,
        signal,
        ...(wrapped ? { spawn: wrapped } : {}),
      });
    } finally {
      // What the command left in the workspace that other programs run later is moved to quarantine.
      const notice = await wrapped?.settle?.().catch((err: unknown) => `its check after the run failed: ${String(err)}`);
      if (notice) notices.push(`The hook ${hook.label}: ${notice}`);
    }
    return readCommandRun(run, event, hook.dialect, sent);
  }

  /**
   * A project hook that could not run: said once (which hooks, and why). A tool_call hook's calls
   * ask (headless: refused), never silently allowed: its refusal is what guarded them. Elsewhere
   * it is a failure as any other (a `failClosed` prompt or tool_result hook blocks).
   */
  private unsandboxed(hook: HookSpec, event: HookEventName, why: string, out: OutcomeBase): HookReply | null {
    const key = "\0unsandboxed";
    if (!this.reported.has(key)) {
      this.reported.add(key);
      const skipped = this.list.filter(projectCommand).map((h) => h.label);
      out.problems.push(
        `The project's hooks were not run: a project's hook runs only inside the sandbox, and ${why}. Not run: ${skipped.join("; ")}. A call one of its PreToolUse (tool_call) hooks covers is asked about (headless: refused).`,
      );
    }
    if (event === "tool_call") return { decision: "ask", reason: `the project's hook could not run (${why}), and it guards this call` };
    if (!(hook.failClosed && FAILS_CLOSED.has(event))) return null;
    const reason = `the project's hook ${hook.label} could not run (${why}) and fails closed`;
    if (event === "tool_result") return { replace: { value: `The result is withheld: ${reason}.`, withheld: true } };
    return { decision: "block", reason };
  }

  /** A failure as a reply: a block when the entry fails closed (and the event can block), else none; said once. */
  private failed(hook: HookSpec, event: HookEventName, failure: string, kind: string, out: OutcomeBase): HookReply | null {
    const key = `${hook.label}\0${kind}`;
    const closed = hook.failClosed && FAILS_CLOSED.has(event);
    if (!this.reported.has(key)) {
      this.reported.add(key);
      out.problems.push(
        `The hook ${hook.label} ${failure}; ${closed ? "its entry says failClosed, so it blocks" : "it counts as no opinion"}.`,
      );
    }
    if (!closed) return null;
    const reason = `the hook ${hook.label} failed (${failure}) and fails closed`;
    if (event === "tool_result") return { replace: { value: `The result is withheld: ${reason}.`, withheld: true } };
    return { decision: "block", reason };
  }

  private resolve<E extends HookEventName>(event: E, input: HookInput<E>, hooks: HookSpec[], results: HookResult[]): HookOutcome<E> {
    const base = emptyBase();
    const replies: [HookSpec, HookReply][] = [];
    hooks.forEach((hook, i) => {
      const result = results[i] as HookResult;
      if ("aborted" in result) return;
      const reply =
        "failure" in result
          ? result.kind === "unsandboxed"
            ? this.unsandboxed(hook, event, result.failure, base)
            : this.failed(hook, event, result.failure, result.kind, base)
          : result.reply;
      if (!reply) return;
      if (reply.message) base.messages.push(reply.message);
      if (reply.halt !== undefined) base.halt ??= { reason: reply.halt, source: hook.label };
      replies.push([hook, reply]);
    });
    const context = replies.flatMap(([, r]) => r.context ?? []);
    const first = (test: (r: HookReply) => boolean) => replies.find(([, r]) => test(r));
    const blocks = (r: HookReply) => r.decision === "block" || r.decision === "deny";
    const why = (r: HookReply, fallback: string) => r.reason?.trim() || fallback;
    const outcomes: { [K in HookEventName]: () => HookOutcomes[K] } = {
      tool_call: () => {
        const denied = first(blocks);
        const asked = first((r) => r.decision === "ask");
        const allowed = first((r) => r.decision === "allow");
        const decided = denied ?? asked ?? allowed;
        const out: HookOutcomes["tool_call"] = { ...base, ...(context.length ? { addContext: context } : {}) };
        // A hook that ends the turn refuses the call it was asked about, whatever another allowed.
        if (!denied && base.halt) Object.assign(out, { decision: "deny", reason: base.halt.reason, source: base.halt.source });
        else if (decided) {
          out.decision = decided === denied ? "deny" : decided === asked ? "ask" : "allow";
          out.source = decided[0].label;
          const reason = decided[1].reason?.trim();
          if (reason || out.decision === "deny") out.reason = why(decided[1], "the hook refused the call");
        }
        const rewrite = out.decision === "deny" ? undefined : first((r) => r.changes !== undefined && !blocks(r));
        if (rewrite) {
          const args = { ...(input as HookInput<"tool_call">).args };
          for (const [key, value] of Object.entries(rewrite[1].changes ?? {})) {
            if (value === null) delete args[key];
            else args[key] = value;
          }
          out.updatedArgs = args;
          out.updatedBy = rewrite[0].label;
        }
        return out;
      },
      prompt: () => {
        const blocked = first(blocks);
        const out: HookOutcomes["prompt"] = { ...base, ...(context.length ? { addContext: context } : {}) };
        if (blocked) return { ...out, block: true, reason: why(blocked[1], "a hook blocked the prompt"), source: blocked[0].label };
        if (base.halt) return { ...out, block: true, reason: base.halt.reason, source: base.halt.source };
        return out;
      },
      tool_result: () => {
        const notes = [...replies.filter(([, r]) => blocks(r)).map(([, r]) => why(r, "")), ...context].filter(Boolean);
        // A hook that failed closed withholds the result whatever another put in its place.
        const replaced = first((r) => r.replace?.withheld === true) ?? first((r) => r.replace !== undefined);
        return {
          ...base,
          ...(notes.length ? { annotation: notes.join("\n\n") } : {}),
          ...(replaced ? { replaceModelResult: replaced[1].replace?.value, source: replaced[0].label } : {}),
        };
      },
      stop: () => this.stopOutcome(base, first(blocks)),
      subagent_stop: () => this.stopOutcome(base, first(blocks)),
      session_start: () => this.informational(base, replies, context),
      compact: () => this.informational(base, replies, []),
      session_end: () => this.informational(base, replies, []),
    };
    return outcomes[event]() as HookOutcome<E>;
  }

  private stopOutcome(base: OutcomeBase, blocked: [HookSpec, HookReply] | undefined): HookOutcomes["stop"] {
    // A halt ends the turn whatever another hook asked.
    if (!blocked || base.halt) return base;
    return { ...base, continue: blocked[1].reason?.trim() || "A stop hook asked you to continue.", source: blocked[0].label };
  }

  /** Events that cannot block: a block's reason is shown to the user. */
  private informational(base: OutcomeBase, replies: [HookSpec, HookReply][], context: string[]): OutcomeBase & { addContext?: string[] } {
    for (const [hook, r] of replies) if (r.decision === "block") base.messages.push(`${hook.label}: ${r.reason ?? "blocked"}`);
    return context.length ? { ...base, addContext: context } : base;
  }
}

/**
 * A stale project's tool_call hooks as guards that do not run its commands (untrusted code now)
 * but ask about every call their matcher covers; a hook file that could not be read whole asks
 * about every call, since what it guarded is unknown.
 */
function staleGuards(project: readonly ParsedHooks[], files: readonly string[], changed: readonly string[]): ParsedHooks {
  const shown = changed.slice(0, 3).join(", ") + (changed.length > 3 ? ` and ${changed.length - 3} more` : "");
  const reason = (what: string) =>
    `this project's trust is stale (changed since it was trusted: ${shown}), so toolhost does not run its hooks, and ${what} would see this call. Run \`toolhost trust\` in the project to review it`;
  const guard = (hook: Omit<HookSpec, "handler" | "failClosed" | "label">, label: string, why: string): HookSpec => ({
    ...hook,
    failClosed: true,
    handler: { type: "function", run: () => ({ decision: "ask", reason: why }) },
    label: `${label} (a stale project's hook, not run)`,
  });
  const hooks: HookSpec[] = [];
  project.forEach((parsed, i) => {
    for (const hook of parsed.hooks) if (hook.event === "tool_call") hooks.push(guard(hook, hook.label, reason(`its hook ${hook.label}`)));
    if (parsed.problems.length) {
      const file = files[i] as string;
      const label = displayFile(file);
      const every = {
        event: "tool_call" as const,
        written: "tool_call",
        level: "project" as const,
        file,
        dialect: "toolhost" as const,
        match: () => true,
        timeoutMs: DEFAULT_HOOK_TIMEOUT_MS,
      };
      hooks.push(guard(every, label, reason(`the hooks of ${label}, which could not be read whole,`)));
    }
  });
  return { hooks, problems: [], skipped: [] };
}

/** Calls an in-process handler with the event in toolhost's names, bounded by its timeout. */
async function runFunction<E extends HookEventName>(
  hook: HookSpec,
  event: E,
  input: HookInput<E>,
  signal: AbortSignal,
): Promise<HookResult> {
  if (hook.handler.type !== "function") throw new Error("not a function hook");
  const run = hook.handler.run;
  let timer: NodeJS.Timeout | undefined;
  const controller = new AbortController();
  const onAbort = () => controller.abort(signal.reason);
  if (signal.aborted) return { aborted: true };
  signal.addEventListener("abort", onAbort, { once: true });
  // The handler gets its own copy of the arguments (and result): it changes them only by its answer.
  const seen: Record<string, unknown> = { ...input };
  if ("args" in input) seen.args = structuredClone((input as HookInput<"tool_call">).args);
  if ("result" in input) seen.result = structuredClone((input as HookInput<"tool_result">).result);
  try {
    const value = await Promise.race([
      Promise.resolve().then(() => run({ event, ...seen }, { signal: controller.signal })),
      new Promise<typeof TIMED_OUT>((resolve) => {
        timer = setTimeout(() => resolve(TIMED_OUT), hook.timeoutMs);
        controller.signal.addEventListener("abort", () => resolve(TIMED_OUT), { once: true });
      }),
    ]);
    if (signal.aborted) return { aborted: true };
    if (value === TIMED_OUT) {
      controller.abort(new Error("the hook timed out"));
      return { failure: `did not answer within ${hook.timeoutMs / 1000} s`, kind: "timeout" };
    }
    const reply = readFunctionReply(value, event);
    return typeof reply === "string" ? { failure: reply, kind: "garbage" } : { reply };
  } catch (err) {
    if (signal.aborted) return { aborted: true };
    return { failure: `threw: ${err instanceof Error ? err.message : String(err)}`, kind: "error" };
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}

const TIMED_OUT = Symbol("timed out");
