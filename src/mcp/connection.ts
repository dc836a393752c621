import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  PromptListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type GetPromptResult,
  type Prompt,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import { version } from "../config/paths.js";
import { childEnvironment } from "../runtime/sandbox/child-env.js";
import type { Sandboxed } from "../runtime/sandbox/sandboxed-spawn.js";
import type { SpawnRequest } from "../runtime/shell/scoped.js";
import type { McpServerSpec, StdioSpec } from "./servers.js";
import { StdioProcessTransport } from "./stdio-process.js";

/** Writes a server's stderr to toolhost's, each line prefixed with the server's name. */
function prefixLines(name: string): (chunk: Buffer | string) => void {
  let rest = "";
  return (chunk) => {
    const lines = (rest + chunk.toString()).split("\n");
    rest = lines.pop() ?? "";
    for (const line of lines) process.stderr.write(`[mcp ${name}] ${line}\n`);
  };
}

export interface ConnectionEvents {
  /** The server's tool list changed (notifications/tools/list_changed): call `listTools` again. */
  toolsChanged(): void;
  /** The prompt list changed. */
  promptsChanged(): void;
  /** The connection ended without `close()` (the process exited, the server went away). */
  closed(): void;
  /** What the sandbox's project guard did about what a project's server left in the workspace. */
  notice(text: string): void;
}

/**
 * Wraps a project's stdio server in the session's sandbox (`runtime/sandbox/sandboxed-spawn.ts`),
 * with the network its entry's `allowedHosts` names, or says why it cannot.
 */
export type McpSandbox = (request: SpawnRequest, spec: StdioSpec) => Promise<Sandboxed>;

/** One MCP server, connected through the SDK's client: its tools, prompts, calls, and its end. */
export class McpConnection {
  private client: Client | null = null;
  private transport: Transport | null = null;
  private closing = false;
  /** A sandboxed server's check of what it leaves behind, ended (and settled once) with its process. */
  private guard: { watch?: { close(): Promise<void> }; settle?: () => Promise<string | undefined>; done?: Promise<void> } | undefined;

  constructor(
    readonly spec: McpServerSpec,
    private readonly workspace: string,
    /** `sandbox.env` of the user's config: more variable names (or `PREFIX_*`) the server's process gets. */
    private readonly sandboxEnv: readonly string[],
    private readonly events: ConnectionEvents,
    /** Where a project's stdio server runs; without it, such a server does not start. */
    private readonly sandbox?: McpSandbox,
  ) {}

  /**
   * What runs: the entry's command, or for a project's server that command inside the sandbox
   * (its command line and whatever it loads are workspace files). Throws when no sandbox can run it.
   */
  private async launch(spec: StdioSpec): Promise<SpawnRequest> {
    // Never toolhost's whole environment (provider keys…): the allow-list every child gets
    // (child-env.ts, with the user's sandbox.env names) plus what the entry sets itself. The
    // SDK would put its own defaults (HOME, PATH, …) under it anyway; they are in the list.
    const env = { ...childEnvironment(process.env, this.sandboxEnv), ...spec.env };
    const request: SpawnRequest = { file: spec.command, args: spec.args, env, cwd: spec.cwd ?? this.workspace };
    if (spec.origin !== "project") return request;
    const wrapped: Sandboxed = this.sandbox ? await this.sandbox(request, spec) : { unavailable: "this session runs no sandbox for it" };
    if ("unavailable" in wrapped)
      throw new Error(
        `not started: it is the project's, and a project's stdio server runs only inside the sandbox (${wrapped.unavailable})`,
      );
    const { watch, settle } = wrapped.request;
    this.guard = { watch: watch?.((note) => this.events.notice(note)), settle };
    return wrapped.request;
  }

  /** The sandboxed server ended: its guard stops watching and settles once (plants moved to quarantine). */
  private settle(): Promise<void> {
    const guard = this.guard;
    if (!guard) return Promise.resolve();
    guard.done ??= (async () => {
      await guard.watch?.close();
      const note = await guard.settle?.().catch((err: unknown) => `its check after it ended failed: ${String(err)}`);
      if (note) this.events.notice(note);
    })();
    return guard.done;
  }

  /** Starts the server (or opens the remote connection) and runs MCP's initialize. */
  async connect(signal: AbortSignal): Promise<void> {
    const spec = this.spec;
    let transport: Transport;
    if (spec.transport === "stdio") {
      const run = await this.launch(spec);
      // The server's whole process tree, from spawn to close (stdio-process.ts).
      const stdio = new StdioProcessTransport({ command: run.file, args: run.args, env: run.env, cwd: run.cwd, stderr: "pipe" });
      stdio.stderr.on("data", prefixLines(spec.name));
      transport = stdio;
    } else {
      const requestInit = { headers: spec.headers };
      transport =
        spec.transport === "http"
          ? new StreamableHTTPClientTransport(new URL(spec.url), { requestInit })
          : new SSEClientTransport(new URL(spec.url), {
              requestInit,
              eventSourceInit: { fetch: (url, init) => fetch(url, { ...init, headers: { ...spec.headers, ...(init?.headers ?? {}) } }) },
            });
    }
    this.transport = transport;
    const client = new Client({ name: "toolhost", version }, { capabilities: {} });
    client.onclose = () => {
      void this.settle();
      if (!this.closing) this.events.closed();
    };
    client.onerror = () => {};
    this.client = client;
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
      if (signal.aborted) fail();
      else signal.addEventListener("abort", fail, { once: true });
    });
    aborted.catch(() => {});
    const started = client.connect(transport, { signal });
    started.catch(() => {});
    await Promise.race([started, aborted]);
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.events.toolsChanged());
    client.setNotificationHandler(PromptListChangedNotificationSchema, () => this.events.promptsChanged());
  }

  private get live(): Client {
    if (!this.client) throw new Error(`the MCP server "${this.spec.name}" is not connected`);
    return this.client;
  }

  /** Every tool of the server (all pages). */
  async listTools(): Promise<Tool[]> {
    const tools: Tool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.live.listTools(cursor ? { cursor } : undefined);
      tools.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return tools;
  }

  /** Every prompt of the server; none when it offers no prompts. */
  async listPrompts(): Promise<Prompt[]> {
    if (!this.live.getServerCapabilities()?.prompts) return [];
    const prompts: Prompt[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.live.listPrompts(cursor ? { cursor } : undefined);
      prompts.push(...page.prompts);
      cursor = page.nextCursor;
    } while (cursor);
    return prompts;
  }

  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal, timeoutMs: number): Promise<CallToolResult> {
    return this.live.callTool({ name, arguments: args }, undefined, {
      signal,
      timeout: timeoutMs,
      resetTimeoutOnProgress: true,
    }) as Promise<CallToolResult>;
  }

  getPrompt(name: string, args: Record<string, string>, signal: AbortSignal): Promise<GetPromptResult> {
    return this.live.getPrompt({ name, arguments: args }, { signal });
  }

  /** Closes the connection; a stdio server is stopped with its whole process tree, whether it ever answered or not. */
  async close(): Promise<void> {
    this.closing = true;
    const client = this.client;
    this.client = null;
    // The tree first, and awaited (a CLI exits right after): the transport knows it from spawn.
    if (this.transport instanceof StdioProcessTransport) await this.transport.close();
    // A streamable HTTP session is ended on the server too (DELETE), if it answers soon.
    const transport = this.transport;
    if (client && transport instanceof StreamableHTTPClientTransport && transport.sessionId) {
      const wait = new Promise<void>((resolve) => setTimeout(resolve, 1000).unref());
      await Promise.race([transport.terminateSession().catch(() => {}), wait]);
    }
    await (client ? client.close() : this.transport?.close())?.catch(() => {});
    await this.settle();
  }
}
