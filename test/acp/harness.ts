import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  client,
  ndJsonStream,
  type ClientCapabilities,
  type ClientContext,
  type ClientConnection,
  type CreateElicitationRequest,
  type CreateElicitationResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
  type SessionUpdate,
} from "@agentclientprotocol/sdk";
import { client as unstableClient } from "@agentclientprotocol/sdk/unstable";
import { beforeEach, expect } from "vitest";
import { CLI_PATH, cleanEnv, until, useAgentEnv, type AgentEnv, type AgentEnvOptions } from "../helpers.js";
import { checkedStdio, WireChecker } from "./wire.js";

export type PermissionHandler = (request: RequestPermissionRequest) => Promise<RequestPermissionResponse> | RequestPermissionResponse;

export type ElicitationHandler = (request: CreateElicitationRequest) => Promise<CreateElicitationResponse> | CreateElicitationResponse;

export interface HarnessOptions {
  capabilities?: ClientCapabilities;
  /** Check the wire against the SDK's unstable schema (a client opting into unstable capabilities). */
  unstable?: boolean;
  env?: Record<string, string>;
  /** Answers session/request_permission; default: reject once. */
  permission?: PermissionHandler;
  /** Answers elicitation/create (advertise `elicitation: { form: {} }` too); default: decline. */
  elicitation?: ElicitationHandler;
  /** Unsaved editor buffers by absolute path, seen through fs/read_text_file. */
  buffers?: Map<string, string>;
  /** The CLI's arguments (default: none, the ACP agent on stdio); `connect URL` drives a toolhost serve. */
  args?: string[];
}

interface TestTerminal {
  child: ChildProcess;
  output: string;
  exit: Promise<{ exitCode: number | null; signal: string | null }>;
  exitStatus: { exitCode: number | null; signal: string | null } | null;
  limit?: number | null;
}

/** A spawned `toolhost` driven by the SDK's client over real stdio, every line checked against the schema. */
export class Harness {
  readonly checker: WireChecker;
  readonly updates: SessionNotification[] = [];
  readonly permissionRequests: RequestPermissionRequest[] = [];
  readonly elicitationRequests: CreateElicitationRequest[] = [];
  readonly clientCalls: { method: string; params: unknown }[] = [];
  readonly terminals = new Map<string, TestTerminal>();
  readonly stderr: string[] = [];
  readonly child: ChildProcess;
  readonly connection: ClientConnection;
  private terminalSeq = 0;
  /** A fresh ~/.toolhost unless the test gives TOOLHOST_HOME. */
  private readonly home: string | null;
  permission: PermissionHandler;
  elicitation: ElicitationHandler;

  constructor(private readonly options: HarnessOptions = {}) {
    // A client that opts into unstable features (subagents, plan operations) is checked against the SDK's unstable schema.
    const unstable = options.unstable === true || (options.capabilities !== undefined && "subagents" in options.capabilities);
    this.checker = new WireChecker(unstable);
    this.permission = options.permission ?? (() => ({ outcome: { outcome: "selected", optionId: "reject_once" } }));
    this.elicitation = options.elicitation ?? (() => ({ action: "decline" }));
    this.home = options.env?.TOOLHOST_HOME ? null : mkdtempSync(path.join(os.tmpdir(), "toolhost-home-"));
    this.child = spawn(process.execPath, [CLI_PATH, ...(options.args ?? [])], {
      stdio: ["pipe", "pipe", "pipe"],
      env: { ...cleanEnv(), ...(this.home ? { TOOLHOST_HOME: this.home } : {}), ...options.env },
    });
    this.child.stderr!.on("data", (d: Buffer) => this.stderr.push(d.toString()));
    const { toAgent, fromAgent } = checkedStdio(this.child.stdin!, this.child.stdout!, this.checker);

    // The stable client refuses unstable session updates (subagent_update, plan_update): an opted-in client uses the unstable one.
    const app = (unstable ? (unstableClient as unknown as typeof client) : client)({ name: "toolhost-test" })
      .onNotification("session/update", ({ params }) => {
        this.updates.push(params);
      })
      .onRequest("session/request_permission", async ({ params }) => {
        this.permissionRequests.push(params);
        return this.permission(params);
      })
      .onRequest("elicitation/create", async ({ params }) => {
        this.elicitationRequests.push(params);
        return this.elicitation(params);
      })
      .onRequest("fs/read_text_file", async ({ params }) => {
        this.clientCalls.push({ method: "fs/read_text_file", params });
        const buffered = this.options.buffers?.get(params.path);
        const content = buffered ?? (await fsp.readFile(params.path, "utf8"));
        return { content };
      })
      .onRequest("fs/write_text_file", async ({ params }) => {
        this.clientCalls.push({ method: "fs/write_text_file", params });
        await fsp.writeFile(params.path, params.content);
        this.options.buffers?.delete(params.path);
        return {};
      })
      .onRequest("terminal/create", ({ params }) => {
        this.clientCalls.push({ method: "terminal/create", params });
        const id = `term_${++this.terminalSeq}`;
        const child = spawn(params.command, params.args ?? [], {
          cwd: params.cwd ?? undefined,
          env: { ...process.env, ...Object.fromEntries((params.env ?? []).map((e) => [e.name, e.value])) },
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
        });
        const terminal: TestTerminal = {
          child,
          output: "",
          exitStatus: null,
          limit: params.outputByteLimit,
          exit: new Promise((resolve) => {
            child.on("close", (code, signal) => {
              terminal.exitStatus = { exitCode: code, signal };
              resolve(terminal.exitStatus);
            });
            child.on("error", () => {
              terminal.exitStatus = { exitCode: 127, signal: null };
              resolve(terminal.exitStatus);
            });
          }),
        };
        const append = (d: Buffer) => {
          terminal.output += d.toString();
          if (terminal.limit && terminal.output.length > terminal.limit) terminal.output = terminal.output.slice(-terminal.limit);
        };
        child.stdout!.on("data", append);
        child.stderr!.on("data", append);
        this.terminals.set(id, terminal);
        return { terminalId: id };
      })
      .onRequest("terminal/output", ({ params }) => {
        this.clientCalls.push({ method: "terminal/output", params });
        const t = this.terminal(params.terminalId);
        return { output: t.output, truncated: false, exitStatus: t.exitStatus };
      })
      .onRequest("terminal/wait_for_exit", async ({ params }) => {
        this.clientCalls.push({ method: "terminal/wait_for_exit", params });
        return this.terminal(params.terminalId).exit;
      })
      .onRequest("terminal/kill", ({ params }) => {
        this.clientCalls.push({ method: "terminal/kill", params });
        killGroup(this.terminal(params.terminalId).child);
        return {};
      })
      .onRequest("terminal/release", ({ params }) => {
        this.clientCalls.push({ method: "terminal/release", params });
        const t = this.terminal(params.terminalId);
        killGroup(t.child);
        this.terminals.delete(params.terminalId);
        return {};
      });
    this.connection = app.connect(ndJsonStream(toAgent, fromAgent));
  }

  private terminal(id: string): TestTerminal {
    const t = this.terminals.get(id);
    if (!t) throw new Error(`unknown terminal ${id}`);
    return t;
  }

  get agent(): ClientContext {
    return this.connection.agent;
  }

  async initialize(): Promise<void> {
    await this.agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: this.options.capabilities ?? {},
      clientInfo: { name: "toolhost-test", version: "1.0.0" },
    });
  }

  async newSession(cwd: string): Promise<string> {
    const { sessionId } = await this.agent.request("session/new", { cwd, mcpServers: [] });
    return sessionId;
  }

  /** Updates of one session of one kind. */
  updatesOf<K extends SessionUpdate["sessionUpdate"]>(sessionId: string, kind: K): Extract<SessionUpdate, { sessionUpdate: K }>[] {
    return this.updates
      .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === kind)
      .map((n) => n.update as Extract<SessionUpdate, { sessionUpdate: K }>);
  }

  /** Sends a raw line to the agent (bypassing the SDK), for malformed-input tests. */
  sendRaw(line: string): void {
    this.checker.record("client->agent", line);
    this.child.stdin!.write(`${line}\n`);
  }

  /** Waits until a predicate over the updates holds. */
  waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
    return until(predicate, timeoutMs);
  }

  /** Closes stdin and waits for the agent to exit; returns its exit code. */
  async close(): Promise<number | null> {
    for (const t of this.terminals.values()) killGroup(t.child);
    const removeHome = () => {
      if (this.home) rmSync(this.home, { recursive: true, force: true });
    };
    if (this.child.exitCode !== null) {
      removeHome();
      return this.child.exitCode;
    }
    const exited = new Promise<number | null>((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    const code = await exited;
    clearTimeout(timer);
    removeHome();
    return code;
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    child.kill("SIGKILL");
  }
}

export function selected(optionId: string): RequestPermissionResponse {
  return { outcome: { outcome: "selected", optionId } };
}

/** The end of every wire test: the agent exits 0 on stdin EOF and no line broke the ACP schema. */
export async function closeAndCheck(h: Harness | undefined): Promise<void> {
  if (!h) return;
  expect(await h.close()).toBe(0);
  expect(h.checker.problems).toEqual([]);
}

export type ToolCallUpdate = Extract<SessionUpdate, { sessionUpdate: "tool_call_update" }>;

/** The last update of one call. */
export function lastUpdate(h: Harness, sessionId: string, callId: string): ToolCallUpdate {
  return h
    .updatesOf(sessionId, "tool_call_update")
    .filter((u) => u.toolCallId === callId)
    .at(-1)!;
}

/** The text blocks of an update's content, one per line. */
export function textOf(update: ToolCallUpdate): string {
  return (update.content ?? []).map((c) => (c.type === "content" && c.content.type === "text" ? c.content.text : "")).join("\n");
}

/** A text prompt, answered. */
export const prompt = (h: Harness, sessionId: string, text: string) =>
  h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

/** Everything the agent said in a session, its messages joined by newlines. */
export function messageText(h: Harness, sessionId: string, separator = "\n"): string {
  return h
    .updatesOf(sessionId, "agent_message_chunk")
    .map((u) => (u.content.type === "text" ? u.content.text : ""))
    .join(separator);
}

/** What one ACP test starts: useAgentEnv()'s workspace, home and model server (`fake`), and the harness. */
export interface AcpTest extends AgentEnv {
  h?: Harness;
}

/**
 * Per test: useAgentEnv() with a workspace of `files`; after the test, the harness is closed (its
 * exit code and wire checked) first, then the rest of useAgentEnv()'s clean-up (`fake` included).
 * Tests assign `fake` and `h` as they start them.
 */
export function useAcpTest(files: Record<string, string> = {}, options: Omit<AgentEnvOptions, "files" | "shared"> = {}): AcpTest {
  const t: AcpTest = useAgentEnv({ ...options, files });
  beforeEach(() =>
    t.defer(async () => {
      const { h } = t;
      t.h = undefined;
      await closeAndCheck(h);
    }),
  );
  return t;
}
