import { ErrorCode, McpError, type GetPromptResult, type Prompt } from "@modelcontextprotocol/sdk/types.js";
import type { AnyTool } from "../tool/define.js";
import { peekUserConfig } from "../config/file.js";
import { McpConnection, type McpSandbox } from "./connection.js";
import type { McpOrigin, McpServerSpec } from "./servers.js";
import { serverTools, type McpCaller } from "./tools.js";

/** How long a server may take to start and list its tools (TOOLHOST_MCP_TIMEOUT_MS; default 30 s). */
export function mcpTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env.TOOLHOST_MCP_TIMEOUT_MS);
  return Number.isFinite(value) && value > 0 ? value : 30_000;
}

export type ServerState = "connecting" | "ready" | "failed" | "stopped";

/** A server as `toolhost mcp list` and `/tools` show it. */
export interface ServerStatus {
  name: string;
  origin: McpOrigin;
  transport: McpServerSpec["transport"];
  /** The command line or URL. */
  target: string;
  file?: string;
  state: ServerState;
  tools: number;
  prompts: number;
  error?: string;
}

/** A server's prompt, as a slash command `/<server>:<prompt>` runs it. */
export interface McpPrompt {
  server: string;
  name: string;
  description?: string;
  arguments: { name: string; description?: string; required?: boolean }[];
}

/** What the session does with what the servers offer. */
export interface McpHooks {
  /** The server's tools now (replacing its earlier ones; empty when it failed or stopped). */
  tools(server: string, tools: AnyTool[]): void;
  /** The server's prompts now. */
  prompts(server: string, prompts: McpPrompt[]): void;
  /** Something the user should hear once: a server that failed, timed out or stopped. */
  report(message: string): void | Promise<void>;
}

interface Entry {
  spec: McpServerSpec;
  connection: McpConnection | null;
  status: ServerStatus;
  /** Bumps on every (re)start: answers of an older connection are dropped. */
  generation: number;
}

const targetOf = (spec: McpServerSpec) => (spec.transport === "stdio" ? [spec.command, ...spec.args].join(" ") : spec.url);
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * A session's MCP servers: all connected in parallel, each bounded by a timeout; a server that
 * fails is reported once and skipped, the others work. Tool and prompt lists go to the hooks,
 * again on every list_changed notification. `close()` stops them all (stdio servers with their
 * process trees).
 */
export class McpServers {
  private readonly entries = new Map<string, Entry>();
  private closed = false;

  constructor(
    private readonly workspace: string,
    private readonly hooks: McpHooks,
    private readonly timeoutMs = mcpTimeoutMs(),
    /** `sandbox.env` of the user's config: more variables stdio servers get (a session hands in its config's). */
    private readonly sandboxEnv: readonly string[] = peekUserConfig().sandboxEnv,
    /** Where the project's stdio servers run (the session's sandbox); without it they do not start. */
    private readonly sandbox?: McpSandbox,
  ) {}

  /** Starts servers not yet started (a name already running is left alone); resolves once each is ready or failed. */
  async start(specs: readonly McpServerSpec[]): Promise<void> {
    if (this.closed) return;
    const fresh = specs.filter((spec) => {
      const known = this.entries.get(spec.name);
      return !known || known.status.state === "failed" || known.status.state === "stopped";
    });
    await Promise.all(fresh.map((spec) => this.startOne(spec)));
  }

  /** Servers that failed or stopped, started again (/reload). */
  restartFailed(): Promise<void> {
    return this.start(
      [...this.entries.values()].filter((e) => e.status.state !== "ready" && e.status.state !== "connecting").map((e) => e.spec),
    );
  }

  status(): ServerStatus[] {
    return [...this.entries.values()].map((e) => ({ ...e.status }));
  }

  private async startOne(spec: McpServerSpec): Promise<void> {
    const previous = this.entries.get(spec.name);
    const entry: Entry = {
      spec,
      connection: null,
      generation: (previous?.generation ?? 0) + 1,
      status: {
        name: spec.name,
        origin: spec.origin,
        transport: spec.transport,
        target: targetOf(spec),
        ...(spec.file ? { file: spec.file } : {}),
        state: "connecting",
        tools: 0,
        prompts: 0,
      },
    };
    this.entries.set(spec.name, entry);
    const current = () => this.entries.get(spec.name) === entry && !this.closed;
    const connection = new McpConnection(
      spec,
      this.workspace,
      this.sandboxEnv,
      {
        toolsChanged: () => void this.refreshTools(entry).catch(() => {}),
        promptsChanged: () => void this.refreshPrompts(entry).catch(() => {}),
        closed: () => {
          if (!current() || entry.status.state === "failed") return;
          const wasReady = entry.status.state === "ready";
          this.fail(entry, wasReady ? "stopped" : "failed", "the server closed the connection (its process exited?)");
          if (wasReady) void this.hooks.report(`The MCP server "${spec.name}" stopped; its tools were removed. /reload starts it again.`);
        },
        notice: (text) => void this.hooks.report(`The MCP server "${spec.name}": ${text}`),
      },
      this.sandbox,
    );
    entry.connection = connection;
    const timeoutMs = spec.startupTimeoutMs ?? this.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    try {
      await connection.connect(timeout);
      const tools = connection.listTools();
      const prompts = connection.listPrompts().catch(() => []);
      const bounded = Promise.race([
        Promise.all([tools, prompts]),
        new Promise<never>((_, reject) => {
          if (timeout.aborted) reject(timeout.reason);
          timeout.addEventListener("abort", () => reject(timeout.reason), { once: true });
        }),
      ]);
      const [toolList, promptList] = await bounded;
      if (!current()) return void (await connection.close());
      entry.status.state = "ready";
      this.applyTools(entry, toolList);
      this.applyPrompts(entry, promptList);
    } catch (err) {
      if (!current()) return void (await connection.close());
      const why = timeout.aborted
        ? `did not answer within ${Math.round(timeoutMs / 100) / 10} s (${spec.startupTimeoutMs ? "its startupTimeoutMs" : "TOOLHOST_MCP_TIMEOUT_MS"})`
        : `could not start: ${errorText(err)}`;
      this.fail(entry, "failed", why);
      await connection.close();
      await this.hooks.report(`The MCP server "${spec.name}" ${why}; it was skipped (the other servers work).`);
    }
  }

  private fail(entry: Entry, state: "failed" | "stopped", error: string): void {
    entry.status.state = state;
    entry.status.error = error;
    entry.status.tools = 0;
    entry.status.prompts = 0;
    this.hooks.tools(entry.spec.name, []);
    this.hooks.prompts(entry.spec.name, []);
  }

  private caller(entry: Entry): McpCaller {
    const name = entry.spec.name;
    return {
      callTool: (tool, args, signal, timeoutMs) => {
        if (!entry.connection || entry.status.state !== "ready")
          throw new Error(`The MCP server "${name}" is not running (${entry.status.error ?? entry.status.state}).`);
        return entry.connection.callTool(tool, args, signal, timeoutMs);
      },
      describeFailure: (err) => {
        if (err instanceof McpError) {
          if (err.code === ErrorCode.ConnectionClosed)
            return `The MCP server "${name}" stopped during the call (its connection closed), so the call did not finish. Its tools are gone until /reload starts it again.`;
          if (err.code === ErrorCode.RequestTimeout) return `The MCP server "${name}" did not answer the call in time.`;
          return `The MCP server "${name}" refused the call: ${err.message}`;
        }
        return `The call to the MCP server "${name}" failed: ${errorText(err)}`;
      },
    };
  }

  private applyTools(entry: Entry, list: Awaited<ReturnType<McpConnection["listTools"]>>): void {
    const { tools, problems } = serverTools(entry.spec.name, list, this.caller(entry));
    entry.status.tools = tools.length;
    this.hooks.tools(entry.spec.name, tools);
    if (problems.length) void this.hooks.report(`MCP server "${entry.spec.name}": ${problems.join("; ")}.`);
  }

  private applyPrompts(entry: Entry, list: Prompt[]): void {
    entry.status.prompts = list.length;
    this.hooks.prompts(
      entry.spec.name,
      list.map((p) => ({
        server: entry.spec.name,
        name: p.name,
        ...(p.description ? { description: p.description } : {}),
        arguments: (p.arguments ?? []).map((a) => ({
          name: a.name,
          ...(a.description ? { description: a.description } : {}),
          ...(a.required ? { required: true } : {}),
        })),
      })),
    );
  }

  private async refreshTools(entry: Entry): Promise<void> {
    if (entry.status.state !== "ready" || !entry.connection) return;
    const generation = entry.generation;
    const list = await entry.connection.listTools();
    if (entry.generation === generation && this.entries.get(entry.spec.name) === entry && !this.closed) this.applyTools(entry, list);
  }

  private async refreshPrompts(entry: Entry): Promise<void> {
    if (entry.status.state !== "ready" || !entry.connection) return;
    const list = await entry.connection.listPrompts();
    if (this.entries.get(entry.spec.name) === entry && !this.closed) this.applyPrompts(entry, list);
  }

  /** A prompt's messages, for `/<server>:<prompt>`. */
  getPrompt(server: string, name: string, args: Record<string, string>, signal: AbortSignal): Promise<GetPromptResult> {
    const entry = this.entries.get(server);
    if (!entry?.connection || entry.status.state !== "ready") throw new Error(`The MCP server "${server}" is not running.`);
    return entry.connection.getPrompt(name, args, signal);
  }

  /** Stops every server (stdio ones with their process trees). */
  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.entries.values()];
    await Promise.allSettled(all.map((e) => e.connection?.close()));
  }
}
