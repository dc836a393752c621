import path from "node:path";
import type { Diagnostic } from "vscode-languageserver-protocol/node";
import type { LspConfig } from "../../config/schema.js";
import { ToolError } from "../../tool/errors.js";
import type { LanguageServers, LspAnswer, LspQuery } from "../../tool/services.js";
import type { LspClient, LspLaunch } from "./client.js";
import { newErrors, problemsBlock, type FileProblems } from "./diagnostics.js";
import { answerQuery } from "./queries.js";
import type { LspLauncher } from "./sandbox.js";
import { findCommand, languageId, serverDefinitions, serverFor, serverRoot, typescriptOptions, type LspServerDef } from "./servers.js";
import { fileUri, uriPath } from "./uri.js";

// A session's language servers: started lazily, one per (server, root), on the first file of
// their language the session reads or edits; always inside the sandbox (`sandbox.ts`), trusted
// project or not, and none where no sandbox can run.
// Around an edit: `beginEdit` takes each target's diagnostics before (opening it if need be, in
// the background while the call is approved), `after` sends the new text and waits for the
// server to settle — the first publish after the change and a quiet period, bounded by `waitMs`
// in all — and reports the errors that are new, in the file and in the server's other open files.
// A server that fails to start, crashes or stops answering is said once and skipped from then on.

/** The client and vscode-languageserver-protocol (150 KB), loaded when a session starts its first server. */
type ClientModule = typeof import("./client.js");
let clientModule: Promise<ClientModule> | undefined;
const loadClient = (): Promise<ClientModule> => (clientModule ??= import("./client.js"));

/** The default bound on an edit's wait for diagnostics, and the quiet period that ends it early. */
export const LSP_WAIT_MS = 3000;
export const LSP_QUIET_MS = 150;
/** The bound on a server's start and first diagnostics (a longer `waitMs` raises it: a loaded machine). */
const START_MS = 20_000;
const REQUEST_MS = 10_000;
/** Other open documents whose diagnostics an edit compares too (the most recently opened). */
const OTHER_DOCS = 9;
/** Settles that time out in a row before a server counts as hung. */
const HANG_STRIKES = 2;

export interface LspManagerOptions {
  workspace: string;
  config: LspConfig | undefined;
  /** Every launch goes through it (`LspSandbox`: the session's sandbox); closed after the servers stop. */
  sandbox: LspLauncher;
  /** A file's text as the session's tools see it (editor buffers included); undefined when it does not exist. */
  read: (abs: string) => Promise<string | undefined>;
  /** The servers' environment (the child allow-list). */
  env: Record<string, string>;
  /** Where commands are looked up (PATH), default process.env. */
  lookupEnv?: NodeJS.ProcessEnv;
  waitMs?: number;
  quietMs?: number;
  /** The bound on one of the lsp tool's requests (default 10 s). */
  requestMs?: number;
}

interface Running {
  def: LspServerDef;
  root: string;
  client: LspClient;
  strikes: number;
  /** false once the TypeScript server refused a tsserver request: its publishes are waited for instead. */
  pull?: boolean;
}

interface Baseline {
  running: Running;
  uri: string;
  /** Every open document's diagnostics before the edit; undefined when the server did not settle in time. */
  before: Map<string, Diagnostic[]> | undefined;
}

/** An edit under way: `after()` once the call has written its files. */
export interface PendingEdit {
  /** The block of new problems (and problems of the servers not said before); undefined for none. */
  after(): Promise<string | undefined>;
}

export class LspManager implements LanguageServers {
  private readonly servers: LspServerDef[];
  private readonly clients = new Map<string, Promise<Running | undefined>>();
  /** Every client started, so `close` stops one still starting too. */
  private readonly started = new Set<LspClient>();
  private readonly failed = new Set<string>();
  private readonly notes: string[] = [];
  private readonly said = new Set<string>();
  private closed = false;
  readonly waitMs: number;
  readonly quietMs: number;
  private readonly requestMs: number;
  private readonly startMs: number;

  constructor(private readonly options: LspManagerOptions) {
    const { servers, problems } = serverDefinitions(options.config);
    this.servers = servers;
    for (const problem of problems) this.note(problem, problem);
    this.waitMs = options.waitMs ?? LSP_WAIT_MS;
    this.quietMs = options.quietMs ?? LSP_QUIET_MS;
    this.requestMs = options.requestMs ?? REQUEST_MS;
    this.startMs = Math.max(START_MS, this.waitMs);
  }

  /** Whether some server serves the file. */
  serves(abs: string): boolean {
    return !this.closed && serverFor(this.servers, abs) !== undefined;
  }

  /** Problems not said yet, each once per session. */
  takeNotes(): string[] {
    return this.notes.splice(0);
  }

  private note(key: string, text: string): void {
    if (this.said.has(key)) return;
    this.said.add(key);
    this.notes.push(text);
  }

  /** The running server for a file, started on first use; undefined when none may or can serve it. */
  private async server(abs: string): Promise<Running | undefined> {
    if (this.closed) return undefined;
    const def = serverFor(this.servers, abs);
    if (!def) return undefined;
    const root = serverRoot(def, abs, this.options.workspace);
    const key = `${def.name}\u0000${root}`;
    if (this.failed.has(key)) return undefined;
    let started = this.clients.get(key);
    if (!started) {
      started = this.start(def, root, key);
      this.clients.set(key, started);
    }
    const running = await started;
    if (running?.client.failure) return this.dropped(running, key, running.client.failure);
    return running;
  }

  private dropped(running: Running, key: string, reason: string): undefined {
    this.failed.add(key);
    if (this.closed) return undefined;
    this.clients.delete(key);
    this.note(key, `The ${running.def.name} language server ${reason}; it is skipped for the rest of the session.`);
    void running.client.stop();
    return undefined;
  }

  private async start(def: LspServerDef, root: string, key: string): Promise<Running | undefined> {
    const roots = [...new Set([root, this.options.workspace])];
    const command = findCommand(def.command, roots, this.options.lookupEnv);
    if (!command) {
      this.failed.add(key);
      // A built-in server the machine lacks is not a problem worth a word; a configured one is.
      const builtinDefault = ["typescript-language-server", "pyright-langserver", "bash-language-server"].includes(def.command);
      if (!builtinDefault) this.note(key, `The ${def.name} language server's command (${def.command}) was not found; it is skipped.`);
      return undefined;
    }
    const launch: LspLaunch = {
      file: command,
      args: def.args,
      cwd: root,
      env: this.options.env,
      root,
      initializationOptions: typescriptOptions(def, roots),
    };
    const sandboxed = await this.options.sandbox
      .launch(launch)
      .catch((err: unknown) => ({ reason: err instanceof Error ? err.message : String(err) }));
    if ("reason" in sandboxed) {
      this.failed.add(key);
      this.note(
        "no-sandbox",
        `Language servers run workspace code (node_modules/.bin, tsserver.js, pyright's config), so they run only inside the sandbox, trusted project or not, and no sandbox can run them here: ${sandboxed.reason}. None started.`,
      );
      return undefined;
    }
    const { LspClient } = await loadClient();
    if (this.closed) return undefined;
    const client = new LspClient(def.name, sandboxed);
    this.started.add(client);
    const running: Running = { def, root, client, strikes: 0 };
    try {
      await client.initialize(this.startMs);
    } catch (err) {
      return this.dropped(running, key, `failed to start (${err instanceof Error ? err.message : String(err)})`);
    }
    if (this.closed) {
      await client.stop();
      return undefined;
    }
    void client.exited.then(() => {
      if (!this.closed && this.clients.get(key))
        this.note(key, `The ${def.name} language server ${client.failure}; it is skipped for the rest of the session.`);
      this.failed.add(key);
      this.clients.delete(key);
    });
    return running;
  }

  /** The file as the server should see it (`text`: as read before); the publish counter to settle from (undefined: nothing changed). */
  private async sync(running: Running, abs: string, text?: string): Promise<number | undefined> {
    text ??= await this.read(abs);
    if (text === undefined) return undefined;
    return running.client.sync(fileUri(abs), languageId(abs), text);
  }

  private read(abs: string): Promise<string | undefined> {
    return this.options.read(abs).catch(() => undefined);
  }

  /** A file the session read: its server starts and opens it, in the background, so an edit finds it warm. */
  touch(abs: string): void {
    if (!this.serves(abs)) return;
    void this.read(abs)
      .then((text) => this.baseline(abs, text, performance.now() + this.startMs))
      .catch(() => undefined);
  }

  /** The file's diagnostics for `text` (what it holds before an edit; undefined: it does not exist yet). */
  private async baseline(
    abs: string,
    text: string | undefined,
    deadline: number,
    started?: { running?: Running },
  ): Promise<Baseline | undefined> {
    const running = await this.server(abs);
    if (!running) return undefined;
    if (started) started.running = running;
    const uri = fileUri(abs);
    const since = text === undefined ? undefined : await this.sync(running, abs, text);
    // An open document with no publish yet is waited for like a change.
    const from = since ?? (running.client.isOpen(uri) && !running.client.diagnostics(uri) ? 0 : undefined);
    return { running, uri, before: await this.current(running, uri, from, deadline) };
  }

  /**
   * The diagnostics of the document and the server's other open ones (the most recent few) once
   * the server has caught up with a change (`since`: the publish counter before it; undefined: no
   * change to wait for); undefined when it did not within the deadline.
   */
  private async current(
    running: Running,
    uri: string,
    since: number | undefined,
    deadline: number,
  ): Promise<Map<string, Diagnostic[]> | undefined> {
    const { client } = running;
    const docs = [
      uri,
      ...client
        .openDocuments()
        .filter((doc) => doc !== uri)
        .slice(-OTHER_DOCS),
    ];
    if (running.def.typescript && running.pull !== false) {
      try {
        const pulled = await Promise.all(docs.map((doc) => client.pullTsserver(doc, Math.max(1, deadline - performance.now()))));
        return new Map(docs.map((doc, i) => [doc, pulled[i]!]));
      } catch (err) {
        // A server that does not take tsserver requests (another one configured as "typescript"): its publishes.
        if (client.failure || !(await loadClient()).isResponseError(err)) return undefined;
        running.pull = false;
      }
    }
    if (since !== undefined && !(await client.settle(uri, since, deadline, this.quietMs))) return undefined;
    return new Map(client.openDocuments().map((doc) => [doc, client.diagnostics(doc)?.items ?? []]));
  }

  /**
   * Before a call writes `paths`: their text is read now (resolves once it is), their diagnostics
   * for it are taken in the background and awaited by `after`.
   */
  async beginEdit(paths: readonly string[]): Promise<PendingEdit | undefined> {
    const targets = [...new Set(paths)].filter((p) => this.serves(p));
    if (!targets.length) return undefined;
    const texts = await Promise.all(targets.map((abs) => this.read(abs)));
    const baselines = targets.map((abs, i) => {
      const started: { running?: Running } = {};
      const baseline = this.baseline(abs, texts[i], performance.now() + this.startMs, started).catch(() => undefined);
      return { abs, baseline, started };
    });
    return { after: () => this.afterEdit(baselines) };
  }

  private async afterEdit(
    baselines: { abs: string; baseline: Promise<Baseline | undefined>; started: { running?: Running } }[],
  ): Promise<string | undefined> {
    const deadline = performance.now() + this.waitMs;
    const found = new Map<string, Diagnostic[]>();
    await Promise.all(
      baselines.map(async ({ abs, baseline, started }) => {
        const base = await Promise.race([baseline, sleep(deadline - performance.now()).then(() => undefined)]);
        // A server still starting is not waited for; one that runs and gave nothing in time is a strike.
        if (!base?.before) return void (started.running && this.strike(started.running, false));
        const { running, uri, before } = base;
        const since = await this.sync(running, abs);
        const after = await this.current(running, uri, since, deadline);
        if (running.client.failure) return void this.server(abs);
        if (!this.strike(running, after !== undefined)) return;
        for (const [doc, items] of after ?? []) {
          const old = before.get(doc) ?? (doc === uri ? [] : undefined);
          const docPath = uriPath(doc);
          if (!old || !docPath) continue;
          const fresh = newErrors(old, items, running.def.warnings);
          if (fresh.length) found.set(docPath, [...(found.get(docPath) ?? []), ...fresh]);
        }
      }),
    );
    // The edited files first, then the others it broke.
    const edited = baselines.map((b) => b.abs);
    const files: FileProblems[] = [...found].map(([p, errors]) => ({ path: p, errors }));
    files.sort((a, b) => rank(edited, a.path) - rank(edited, b.path));
    const block = problemsBlock(files, this.options.workspace);
    const notes = this.takeNotes();
    const text = [block, ...notes].filter(Boolean).join("\n");
    return text || undefined;
  }

  /** Counts a server's timeouts in a row; the second drops it (said once). False when it is dropped. */
  private strike(running: Running, answered: boolean): boolean {
    running.strikes = answered ? 0 : running.strikes + 1;
    if (running.strikes < HANG_STRIKES) return true;
    this.dropped(running, `${running.def.name}\u0000${running.root}`, `did not give diagnostics within ${this.waitMs} ms twice in a row`);
    return false;
  }

  /** The lsp tool's question. */
  async query(query: LspQuery, signal: AbortSignal): Promise<LspAnswer> {
    const def = serverFor(this.servers, query.path);
    if (!def) throw new ToolError("unavailable", `No language server serves ${path.basename(query.path)} (configure one under "lsp").`);
    const running = await this.server(query.path);
    const note = this.takeNotes().join("\n") || undefined;
    if (!running) throw new ToolError("unavailable", note ?? `The ${def.name} language server is not available in this session.`);
    const since = await this.sync(running, query.path);
    const uri = fileUri(query.path);
    let diagnostics: Diagnostic[] | undefined;
    if (query.action === "diagnostics") {
      const from = since ?? (running.client.diagnostics(uri) ? undefined : 0);
      diagnostics = (await this.current(running, uri, from, performance.now() + this.requestMs))?.get(uri);
    }
    if (signal.aborted) throw new ToolError("aborted", "The call was cancelled.");
    const answer = await answerQuery(running.client, query, this.requestMs, diagnostics);
    return { server: def.name, ...answer, ...(note ? { note } : {}) };
  }

  /** Stops every server (their whole trees). */
  async close(): Promise<void> {
    this.closed = true;
    this.clients.clear();
    await Promise.all([...this.started].map((client) => client.stop()));
    this.started.clear();
    await this.options.sandbox.close?.();
  }
}

const rank = (edited: readonly string[], p: string) => {
  const at = edited.indexOf(p);
  return at < 0 ? edited.length : at;
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
