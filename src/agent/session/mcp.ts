import type { GetPromptResult } from "@modelcontextprotocol/sdk/types.js";
import { peekConfig } from "../../config/file.js";
import type { McpSandbox } from "../../mcp/connection.js";
import type { McpPrompt, McpServers, ServerStatus } from "../../mcp/manager.js";
import { mergeServers, projectHasServers, projectServers, userServers, type McpServerSpec } from "../../mcp/servers.js";
import { mcpSource } from "../../mcp/tools.js";
import { mcpCommandName, parsePromptCommand, promptArguments, promptTurnText } from "../mcp-commands.js";
import type { SessionTools } from "./tools.js";
import type { ToolOffer, TurnStopReason } from "../turn/turn-types.js";

/** What the session's MCP servers need of their session. */
export interface SessionMcpHost {
  cwd: string;
  tools: SessionTools;
  say(text: string): void | Promise<void>;
  /** The slash commands changed (an MCP server's prompts); a front end batches them per `settled()`. */
  commandsChanged(): void | Promise<void>;
  /** Where the project's stdio servers run: the session's sandbox (without it they do not start). */
  sandbox?: McpSandbox;
}

/**
 * How long a model turn's first request (and a batched command update) waits for MCP servers
 * still connecting: TOOLHOST_MCP_READY_WAIT_MS, else the start-up timeout capped at 5 s.
 */
export function mcpReadyWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env.TOOLHOST_MCP_READY_WAIT_MS);
  if (env.TOOLHOST_MCP_READY_WAIT_MS !== undefined && Number.isFinite(value) && value >= 0) return value;
  // TOOLHOST_MCP_TIMEOUT_MS as mcp/manager.ts reads it (not imported: it loads the MCP SDK).
  const timeout = Number(env.TOOLHOST_MCP_TIMEOUT_MS);
  return Math.min(Number.isFinite(timeout) && timeout > 0 ? timeout : 30_000, 5000);
}

/** Resolves when `promise` settles, `ms` pass or `signal` aborts, whichever comes first. */
async function within(promise: Promise<unknown>, ms: number, signal?: AbortSignal): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  await Promise.race([
    promise.catch(() => {}),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      onAbort = () => resolve();
      signal?.addEventListener("abort", onAbort, { once: true });
    }),
  ]);
  clearTimeout(timer);
  signal?.removeEventListener("abort", onAbort);
}

/**
 * A session's MCP servers: the editor's, the user's and (trusted project) the project's, started
 * in the background. Their tools join the session's registry, their prompts become slash
 * commands. `settled()` (bounded) is what a model turn's first request, and a front end's batched
 * command update, wait for while servers are starting.
 */
export class SessionMcp {
  private servers: McpServers | null = null;
  /** The editor's servers (session/new), kept to start the project's later (trust) with the same precedence. */
  private editorServers: McpServerSpec[] = [];
  private readonly prompts = new Map<string, McpPrompt[]>();
  /** `start` ran (a session that runs MCP servers). */
  started = false;
  private untrustedNoted = false;
  private readonly noted = new Set<string>();
  private closed = false;
  /** Starts in flight, and the names they start (before the manager knows them). */
  private readonly inflight = new Set<Promise<void>>();
  private readonly starting = new Set<string>();

  constructor(private readonly host: SessionMcpHost) {}

  /** Starts the servers not running yet; resolves once each is ready or failed. Registered at once, so a prompt right after waits for it. */
  start(editor: McpServerSpec[] = this.editorServers): Promise<void> {
    this.editorServers = editor;
    this.started = true;
    return this.track(this.run(editor));
  }

  private track(run: Promise<void>): Promise<void> {
    this.inflight.add(run);
    const done = () => void this.inflight.delete(run);
    run.then(done, done);
    return run;
  }

  private async run(editor: McpServerSpec[]): Promise<void> {
    const { report, configFile } = this.host.tools.toolset;
    const trusted = report.trusted;
    // The user's config as the session read it (its toolset's), not read again.
    const user = userServers(configFile);
    const project = trusted ? projectServers(this.host.cwd) : { servers: [], problems: [] };
    const merged = mergeServers(editor, user.servers, project.servers);
    const names = merged.servers.map((s) => s.name);
    for (const name of names) this.starting.add(name);
    try {
      const problems = [...user.problems, ...project.problems, ...merged.problems];
      // Said once: a second start (the project became trusted) adds only what is new.
      const notes = problems.map((p) => `- ${p.file ? `${p.file}: ` : ""}${p.message}`).filter((n) => !this.noted.has(n));
      for (const n of notes) this.noted.add(n);
      if (!trusted && !this.untrustedNoted && projectHasServers(this.host.cwd)) {
        this.untrustedNoted = true;
        notes.push(
          "- This project configures MCP servers (.mcp.json or .toolhost/config.json); they start only in a trusted project: /trust.",
        );
      }
      if (notes.length) await this.host.say(`MCP servers:\n${notes.join("\n")}`);
      if (merged.servers.length === 0 || this.closed) return;
      if (!this.servers) {
        const { McpServers } = await import("../../mcp/manager.js");
        // Closed while the module loaded: nothing may start after close() ran.
        if (this.closed) return;
        this.servers = new McpServers(
          this.host.cwd,
          {
            tools: (server, tools) => {
              const left = this.host.tools.setSourceTools(mcpSource(server), tools);
              if (left.length) void this.host.say(`MCP server "${server}": ${left.join("; ")}.`);
              void this.host.commandsChanged();
            },
            prompts: (server, prompts) => {
              if (prompts.length) this.prompts.set(server, prompts);
              else this.prompts.delete(server);
              void this.host.commandsChanged();
            },
            report: (message) => this.host.say(message),
          },
          undefined,
          peekConfig(configFile).sandboxEnv,
          this.host.sandbox,
        );
      }
      const started = this.servers.start(merged.servers);
      for (const name of names) this.starting.delete(name);
      await started;
    } finally {
      for (const name of names) this.starting.delete(name);
    }
  }

  /**
   * Servers that failed or stopped (a crash), started again for /reload and awaited (each bounded
   * by its start-up timeout): what came back, as lines for /reload's answer ("" when none was down).
   */
  async restartFailed(): Promise<string> {
    const servers = this.servers;
    if (!servers) return "";
    const down = servers.status().filter((s) => s.state !== "ready" && s.state !== "connecting");
    if (down.length === 0) return "";
    await this.track(servers.restartFailed());
    const now = new Map(servers.status().map((s) => [s.name, s]));
    const lines = down.map(({ name }) => {
      const s = now.get(name);
      if (s?.state === "ready")
        return `- ${name}: started again, ${s.tools} tool${s.tools === 1 ? "" : "s"}${s.prompts ? `, ${s.prompts} prompt${s.prompts === 1 ? "" : "s"}` : ""} back`;
      return `- ${name}: did not start again (${s?.error ?? s?.state ?? "gone"}); its tools stay unavailable`;
    });
    return `\nMCP servers that had stopped:\n${lines.join("\n")}`;
  }

  /** Resolves once no start is in flight (each server ready or failed), or after the ready wait. */
  async settled(signal?: AbortSignal, ms = mcpReadyWaitMs()): Promise<void> {
    if (this.inflight.size === 0) return;
    await within(Promise.all(this.inflight), ms, signal);
  }

  /** A slash command of an MCP tool or prompt (`/mcp__…`, `/<server>:<prompt>`) waits like a model turn for servers still starting. */
  async settledFor(text: string, signal: AbortSignal): Promise<void> {
    if (/^\/(mcp__|[^\s:]+:)/.test(text.trim())) await this.settled(signal);
  }

  /** The servers still connecting, by name. */
  stillStarting(): string[] {
    const connecting = (this.servers?.status() ?? []).filter((s) => s.state === "connecting").map((s) => s.name);
    return [...new Set([...this.starting, ...connecting])];
  }

  /** The offer of one request, with a note naming the servers still starting (their tools are not offered yet). */
  withStartingNote(offer: ToolOffer): ToolOffer {
    const names = this.stillStarting();
    if (names.length === 0) return offer;
    const note = `# MCP servers still starting\nThese MCP servers are still starting, so their tools are not available in this request: ${names.join(", ")}. Their tools appear once they are ready; say so if the task needs them.`;
    return { ...offer, promptSection: offer.promptSection ? `${offer.promptSection}\n\n${note}` : note };
  }

  status(): ServerStatus[] {
    return this.servers?.status() ?? [];
  }

  promptList(): McpPrompt[] {
    return [...this.prompts.values()].flat();
  }

  /** The MCP prompts as slash commands: `/<server>:<prompt>`, what it does, what it takes. */
  commands(): { name: string; description: string; hint: string | null }[] {
    return this.promptList().map((p) => ({
      name: mcpCommandName(p),
      description: p.description ?? `Prompt ${p.name} of the MCP server ${p.server}`,
      hint: p.arguments.length ? p.arguments.map((a) => (a.required ? a.name : `[${a.name}]`)).join(" ") : null,
    }));
  }

  getPrompt(prompt: McpPrompt, args: Record<string, string>, signal: AbortSignal): Promise<GetPromptResult> {
    if (!this.servers) throw new Error(`The MCP server "${prompt.server}" is not running.`);
    return this.servers.getPrompt(prompt.server, prompt.name, args, signal);
  }

  /** The project became trusted: its servers start too (in a session that runs MCP servers). */
  projectTrusted(): void {
    if (this.started) void this.start().catch((err: unknown) => process.stderr.write(`toolhost: MCP: ${String(err)}\n`));
  }

  /** Trusting the project would start servers: the session runs MCP servers and the project configures some. */
  projectWouldStart(): boolean {
    return this.started && projectHasServers(this.host.cwd);
  }

  /** The servers as lines for /tools: transport, origin, and their tools and prompts or what went wrong. */
  statusLines(): string[] {
    return this.status().map(
      (m) =>
        `- ${m.name} (${m.transport}, ${m.origin}): ${m.state === "ready" ? `${m.tools} tools, ${m.prompts} prompts` : (m.error ?? m.state)}`,
    );
  }

  /** `/<server>:<prompt> [arguments]` for one of the servers' prompts; null for any other text. */
  parsePrompt(text: string): { prompt: McpPrompt; rest: string } | null {
    return parsePromptCommand(text, this.promptList());
  }

  /** `/<server>:<prompt> [arguments]`: the prompt's messages, from its server, become the user turn (`turn`). */
  async promptTurn(
    prompt: McpPrompt,
    rest: string,
    signal: AbortSignal,
    turn: (text: string) => Promise<TurnStopReason>,
  ): Promise<TurnStopReason> {
    const args = promptArguments(prompt, rest);
    if ("error" in args) {
      await this.host.say(args.error);
      return "end_turn";
    }
    let text: string;
    try {
      const result = await this.getPrompt(prompt, args.values, signal);
      text = promptTurnText(result.messages);
    } catch (err) {
      if (signal.aborted) return "cancelled";
      await this.host.say(`/${mcpCommandName(prompt)} failed: ${err instanceof Error ? err.message : String(err)}`);
      return "end_turn";
    }
    return turn(text);
  }

  /** Stops every server (stdio ones with their process trees); nothing starts after. */
  async close(): Promise<void> {
    this.closed = true;
    await this.servers?.close();
  }

  /** Stops the servers (the session may start them again). */
  async stop(): Promise<void> {
    await this.servers?.close();
  }
}
