import { spawn, type ChildProcess } from "node:child_process";
import {
  client,
  ndJsonStream,
  type ClientCapabilities,
  type ClientConnection,
  type ClientContext,
  type CreateElicitationRequest,
  type CreateElicitationResponse,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionUpdate,
  type UpdateSessionNotification,
} from "@agentclientprotocol/sdk/experimental/v2";
import { client as unstableClient } from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { CLI_PATH, cleanEnv, until } from "../helpers.js";
import { checkedStdio, WireChecker } from "./wire.js";

// An ACP v2 client (the SDK's v2 client side) driving `node dist/cli.js` over real stdio, every
// message of both directions checked against schema/v2/schema.json.

export type V2PermissionHandler = (request: RequestPermissionRequest) => Promise<RequestPermissionResponse> | RequestPermissionResponse;

export type V2ElicitationHandler = (request: CreateElicitationRequest) => Promise<CreateElicitationResponse> | CreateElicitationResponse;

export interface V2HarnessOptions {
  /** The client's capabilities in `initialize` (default: none). */
  capabilities?: ClientCapabilities;
  /** Answers elicitation/create (advertise `elicitation: { form: {} }` too); default: decline. */
  elicitation?: V2ElicitationHandler;
  /** The SDK's unstable v2 client, and the wire checked against schema/v2/schema.unstable.json. */
  unstable?: boolean;
}

export class V2Harness {
  readonly checker: WireChecker;
  readonly updates: UpdateSessionNotification[] = [];
  readonly permissionRequests: RequestPermissionRequest[] = [];
  readonly elicitationRequests: CreateElicitationRequest[] = [];
  readonly stderr: string[] = [];
  readonly child: ChildProcess;
  readonly connection: ClientConnection;
  permission: V2PermissionHandler;

  constructor(
    env: Record<string, string>,
    permission?: V2PermissionHandler,
    private readonly options: V2HarnessOptions = {},
  ) {
    this.checker = new WireChecker(options.unstable === true, true);
    this.permission = permission ?? (() => ({ outcome: { outcome: "selected", optionId: "reject_once" } }));
    this.child = spawn(process.execPath, [CLI_PATH], { stdio: ["pipe", "pipe", "pipe"], env: { ...cleanEnv(), ...env } });
    this.child.stderr!.on("data", (d: Buffer) => this.stderr.push(d.toString()));
    const { toAgent, fromAgent } = checkedStdio(this.child.stdin!, this.child.stdout!, this.checker);
    // The unstable client is the same API over the unstable schema (its types are a superset).
    const app = (options.unstable ? (unstableClient as unknown as typeof client) : client)({ name: "toolhost-v2-test" })
      .onNotification("session/update", ({ params }) => {
        this.updates.push(params);
      })
      .onRequest("session/request_permission", async ({ params }) => {
        this.permissionRequests.push(params);
        return this.permission(params);
      })
      .onRequest("elicitation/create", async ({ params }) => {
        this.elicitationRequests.push(params);
        return options.elicitation ? options.elicitation(params) : { action: "decline" };
      });
    this.connection = app.connect(ndJsonStream(toAgent, fromAgent));
  }

  get agent(): ClientContext {
    return this.connection.agent;
  }

  initialize() {
    return this.agent.request("initialize", {
      protocolVersion: 2,
      info: { name: "toolhost-v2-test", version: "1.0.0" },
      capabilities: this.options.capabilities ?? {},
    });
  }

  /** Updates of one session of one kind. */
  updatesOf<K extends string>(sessionId: string, kind: K): Extract<SessionUpdate, { sessionUpdate: K }>[] {
    return this.updates
      .filter((n) => n.sessionId === sessionId && n.update.sessionUpdate === kind)
      .map((n) => n.update as Extract<SessionUpdate, { sessionUpdate: K }>);
  }

  /** The session's state updates, in order ("running", "idle:end_turn", …). */
  states(sessionId: string): string[] {
    return this.updatesOf(sessionId, "state_update").map((u) => {
      const s = u as { state: string; stopReason?: string | null };
      return s.stopReason ? `${s.state}:${s.stopReason}` : s.state;
    });
  }

  waitFor(predicate: () => boolean, timeoutMs = 15_000): Promise<void> {
    return until(predicate, timeoutMs);
  }

  /** Closes stdin and waits for the agent to exit; returns its exit code. */
  async close(): Promise<number | null> {
    if (this.child.exitCode !== null) return this.child.exitCode;
    const exited = new Promise<number | null>((resolve) => this.child.once("exit", (code) => resolve(code)));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 10_000);
    const code = await exited;
    clearTimeout(timer);
    return code;
  }
}
