import {
  createProtocolConnection,
  DidChangeTextDocumentNotification,
  DidOpenTextDocumentNotification,
  ExitNotification,
  InitializedNotification,
  InitializeRequest,
  PublishDiagnosticsNotification,
  ResponseError,
  ShutdownRequest,
  StreamMessageReader,
  StreamMessageWriter,
  type ClientCapabilities,
  type Diagnostic,
  type DiagnosticSeverity,
  type InitializeResult,
  type ProtocolConnection,
} from "vscode-languageserver-protocol/node";
import {
  groupExists,
  guardedCommand,
  killAtExitOf,
  killTree,
  releaseAtExit,
  signalGroup,
  terminateTree,
  waitForGroupExit,
} from "../process-groups.js";
import { startOffThread } from "../shell/spawn-thread.js";
import type { RemoteProcess } from "../shell/remote-process.js";
import { fileUri } from "./uri.js";

// One language server: a process group of its own spoken to over stdio through
// vscode-languageserver-protocol, the documents it has open, and the diagnostics it last published
// for each (with a counter, so a caller can wait for the first publish after a change and then a
// quiet period). The whole tree ends with `stop()`, an exit hook SIGKILLs every group still
// running when toolhost exits without stopping them, and the group guard ends it when toolhost
// ends without running any code (SIGKILL, a crash).

/** How to start one server, after the manager resolved its command (and wrapped it in the sandbox). */
export interface LspLaunch {
  file: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  /** The project root the server is started for. */
  root: string;
  initializationOptions?: unknown;
  /** Runs in the sandbox's own pid namespace: toolhost's pid means nothing there (a server watching it would exit). */
  sandboxed?: boolean;
}

/** Whether an error is the server's answer refusing a request (not a transport failure). */
export const isResponseError = (err: unknown): boolean => err instanceof ResponseError;

/** What one publish left for a document: its diagnostics, and when (the client's publish counter). */
export interface Published {
  items: Diagnostic[];
  seq: number;
}

const CAPABILITIES: ClientCapabilities = {
  general: { positionEncodings: ["utf-16"] },
  textDocument: {
    synchronization: { dynamicRegistration: false, didSave: false },
    publishDiagnostics: { versionSupport: true, relatedInformation: false },
    definition: { linkSupport: true },
    references: {},
    hover: { contentFormat: ["plaintext", "markdown"] },
    documentSymbol: { hierarchicalDocumentSymbolSupport: true },
  },
  workspace: { workspaceFolders: true, configuration: true, symbol: {} },
  window: { workDoneProgress: false },
};

export class LspClient {
  private readonly child: RemoteProcess;
  private readonly connection: ProtocolConnection;
  private readonly docs = new Map<string, { version: number; text: string }>();
  private readonly published = new Map<string, Published>();
  private seq = 0;
  private lastPublish = 0;
  private readonly waiters = new Set<() => void>();
  private stderrTail = "";
  private stopping = false;
  /** Why the server is gone (it exited or the stream broke); undefined while it runs. */
  failure: string | undefined;
  /** Resolves when the process has exited, with a sentence saying how. */
  readonly exited: Promise<string>;

  constructor(
    readonly name: string,
    private readonly launch: LspLaunch,
  ) {
    // Behind the group guard (process-groups.ts), never released while the server runs: its group
    // ends with toolhost even when toolhost is SIGKILLed. stdin and stdout stay the protocol's.
    // Started on the spawner thread: its fork would hold the agent's thread (spawn-thread.ts).
    const command = guardedCommand("toolhost-lsp", launch.file, launch.args, { env: launch.env, cwd: launch.cwd });
    this.child = startOffThread(command.file, command.args, { cwd: launch.cwd, env: launch.env, detached: true, stdin: true, guard: true });
    this.child.once("spawn", () => killAtExitOf(this.child.pid!));
    this.child.stderr?.on("data", (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString("utf8")).slice(-2000);
    });
    this.exited = new Promise((resolve) => {
      this.child.once("error", (err) => {
        this.fail(`could not start: ${err.message}`);
        resolve(this.failure!);
      });
      this.child.once("exit", (code, signal) => {
        if (this.child.pid) releaseAtExit(this.child.pid);
        this.fail(`exited (${signal ?? `code ${code}`})${this.stderrTail.trim() ? `: ${lastLines(this.stderrTail)}` : ""}`);
        resolve(this.failure!);
      });
    });
    this.connection = createProtocolConnection(new StreamMessageReader(this.child.stdout!), new StreamMessageWriter(this.child.stdin!));
    this.connection.onNotification(PublishDiagnosticsNotification.type, ({ uri, diagnostics }) => {
      this.published.set(uri, { items: diagnostics, seq: ++this.seq });
      this.lastPublish = performance.now();
      for (const wake of [...this.waiters]) wake();
    });
    // Requests a server makes of its client: settings (none: its defaults), registrations, progress.
    this.connection.onRequest("workspace/configuration", (params: { items?: unknown[] }) => (params.items ?? []).map(() => null));
    this.connection.onRequest("workspace/workspaceFolders", () => [{ uri: fileUri(launch.root), name: launch.root }]);
    for (const method of [
      "client/registerCapability",
      "client/unregisterCapability",
      "window/workDoneProgress/create",
      "window/showMessageRequest",
    ])
      this.connection.onRequest(method, () => null);
    this.connection.onRequest("workspace/applyEdit", () => ({ applied: false }));
    // The stream's end comes before the exit: a moment for the exit to say how, then the end itself.
    const later = (reason: string) => setTimeout(() => this.fail(reason), 200).unref();
    this.connection.onError(([err]) => later(`broke the protocol (${err.message})`));
    this.connection.onClose(() => later("closed its connection"));
    this.child.stdin?.on("error", () => this.fail("closed its input"));
    this.connection.listen();
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  private fail(reason: string): void {
    if (this.failure || this.stopping) return;
    this.failure = reason;
    for (const wake of [...this.waiters]) wake();
  }

  /** The initialize handshake, bounded by `timeoutMs`: the server's answer; throws with the reason when it fails. */
  async initialize(timeoutMs: number): Promise<InitializeResult> {
    const root = fileUri(this.launch.root);
    const handshake = this.connection.sendRequest(InitializeRequest.type, {
      processId: this.launch.sandboxed ? null : process.pid,
      rootUri: root,
      rootPath: this.launch.root,
      workspaceFolders: [{ uri: root, name: this.launch.root }],
      capabilities: CAPABILITIES,
      initializationOptions: this.launch.initializationOptions,
    });
    const answer = await bounded(handshake, timeoutMs, this.exited, `did not answer initialize within ${timeoutMs} ms`);
    await this.connection.sendNotification(InitializedNotification.type, {});
    return answer;
  }

  /** A request, bounded; rejects when the server fails, is gone, or takes longer. */
  request<R>(method: string, params: unknown, timeoutMs: number): Promise<R> {
    if (this.failure) return Promise.reject(new Error(this.failure));
    return bounded(
      this.connection.sendRequest(method, params) as Promise<R>,
      timeoutMs,
      this.exited,
      `did not answer ${method} within ${timeoutMs} ms`,
    );
  }

  isOpen(uri: string): boolean {
    return this.docs.has(uri);
  }

  /** The open documents' URIs. */
  openDocuments(): string[] {
    return [...this.docs.keys()];
  }

  /**
   * Opens the document or sends its new text; the publish counter before the change (0 when the
   * text was already what the server has: nothing to wait for).
   */
  async sync(uri: string, languageId: string, text: string): Promise<number | undefined> {
    if (this.failure) return undefined;
    const doc = this.docs.get(uri);
    if (doc && doc.text === text) return undefined;
    const before = this.seq;
    if (!doc) {
      this.docs.set(uri, { version: 1, text });
      await this.connection.sendNotification(DidOpenTextDocumentNotification.type, { textDocument: { uri, languageId, version: 1, text } });
    } else {
      doc.version += 1;
      doc.text = text;
      await this.connection.sendNotification(DidChangeTextDocumentNotification.type, {
        textDocument: { uri, version: doc.version },
        contentChanges: [{ text }],
      });
    }
    return before;
  }

  /** The diagnostics last published for a document. */
  diagnostics(uri: string): Published | undefined {
    return this.published.get(uri);
  }

  /**
   * Waits until the server has published for `uri` after `since` (the counter `sync` returned) and
   * then stayed quiet for `quietMs`, or until `deadline` (a performance.now() time) or a failure.
   * True when it settled.
   */
  async settle(uri: string, since: number, deadline: number, quietMs: number): Promise<boolean> {
    for (;;) {
      if (this.failure || this.stopping) return false;
      const now = performance.now();
      const fresh = (this.published.get(uri)?.seq ?? 0) > since;
      const quietFor = now - this.lastPublish;
      if (fresh && quietFor >= quietMs) return true;
      if (now >= deadline) return false;
      const wait = fresh ? Math.min(quietMs - quietFor, deadline - now) : deadline - now;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.max(1, wait));
        this.waiters.add(wake);
      });
    }
  }

  /**
   * A document's diagnostics asked of typescript-language-server's tsserver directly (syntactic and
   * semantic, as tsserver checks them now): it publishes nothing for a file that stays clean, so a
   * wait for a publish could not tell "no problems" from "not checked yet".
   */
  async pullTsserver(uri: string, timeoutMs: number): Promise<Diagnostic[]> {
    const ask = async (command: string) => {
      const response = await this.request<{ body?: TsDiagnostic[] } | undefined>(
        "workspace/executeCommand",
        { command: "typescript.tsserverRequest", arguments: [command, { file: uri }] },
        timeoutMs,
      );
      return (response?.body ?? []).map(fromTsserver);
    };
    const [syntactic, semantic] = await Promise.all([ask("syntacticDiagnosticsSync"), ask("semanticDiagnosticsSync")]);
    return [...syntactic, ...semantic];
  }

  /** Asks the server to shut down (bounded), then ends its whole process tree. */
  async stop(graceMs = 1000): Promise<void> {
    const pid = this.child.pid;
    const alive = !this.failure && this.child.exitCode === null && this.child.signalCode === null;
    this.stopping = true;
    for (const wake of [...this.waiters]) wake();
    if (alive) {
      try {
        await bounded(this.connection.sendRequest(ShutdownRequest.type), Math.min(500, graceMs), this.exited, "shutdown");
        await this.connection.sendNotification(ExitNotification.type);
      } catch {
        // A server that does not answer is ended below all the same.
      }
    }
    this.connection.dispose();
    this.child.stdin?.destroy();
    if (!pid) return;
    if (groupExists(pid)) {
      const leaderAlive = this.child.exitCode === null && this.child.signalCode === null;
      if (leaderAlive) terminateTree(pid);
      else signalGroup(pid, "SIGTERM");
      await waitForGroupExit(pid, graceMs);
      if (groupExists(pid)) killTree(pid, this.child.exitCode === null && this.child.signalCode === null);
      await waitForGroupExit(pid, 2000);
    }
    releaseAtExit(pid);
    this.child.stdout?.destroy();
    this.child.stderr?.destroy();
  }
}

/** A diagnostic as tsserver's protocol gives it (1-based lines and offsets). */
interface TsDiagnostic {
  start: { line: number; offset: number };
  end: { line: number; offset: number };
  text: string;
  code?: number;
  category?: string;
}

const TS_SEVERITY: Record<string, DiagnosticSeverity> = { error: 1, warning: 2, message: 3, suggestion: 4 };

function fromTsserver(d: TsDiagnostic): Diagnostic {
  return {
    range: {
      start: { line: d.start.line - 1, character: d.start.offset - 1 },
      end: { line: d.end.line - 1, character: d.end.offset - 1 },
    },
    message: d.text,
    severity: TS_SEVERITY[d.category ?? "error"] ?? 1,
    ...(d.code !== undefined ? { code: d.code } : {}),
    source: "typescript",
  };
}

function lastLines(text: string): string {
  return text.trim().split("\n").slice(-3).join(" | ").slice(0, 300);
}

/** `promise`, or a rejection after `ms` or once the process has exited. */
function bounded<T>(promise: Promise<T>, ms: number, exited: Promise<string>, timeoutText: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(timeoutText)), ms);
  });
  const gone = exited.then((reason) => Promise.reject(new Error(reason)));
  gone.catch(() => {});
  return Promise.race([promise, timeout, gone]).finally(() => clearTimeout(timer));
}
