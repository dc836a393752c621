import { randomUUID } from "node:crypto";
import type { AgentContext, SessionUpdate } from "@agentclientprotocol/sdk";
import type { ClientCapabilities as UnstableCapabilities, SessionUpdate as UnstableSessionUpdate } from "@agentclientprotocol/sdk/unstable";
import type { SessionFrontEnd, SubagentView } from "../agent/session/front-end.js";
import type { TurnStopReason } from "../agent/turn/turn-types.js";
import type { UserQuestions } from "../tool/services.js";
import { ToolCallViews } from "./calls.js";
import { approveCall } from "./permission.js";

/** Whether the client advertises ACP subagent sessions (`clientCapabilities.subagents`, unstable). */
export function wantsSubagents(caps: object): boolean {
  const subagents = (caps as UnstableCapabilities).subagents;
  return typeof subagents === "object" && subagents !== null;
}

/** Just the `subagents` capability of raw capabilities (the stable SDK binding drops it when it parses them). */
export function withSubagents(caps: object | undefined): object {
  return caps && wantsSubagents(caps) ? { subagents: (caps as UnstableCapabilities).subagents } : {};
}

/**
 * ACP subagent sessions (unstable schema, behind `clientCapabilities.subagents`): each subagent
 * gets a session id of its own, announced and tracked on the parent by `subagent_update`
 * (running, then idle with its stop reason). The child's tool calls, text and approval requests
 * go out on its own id, and the client may `session/cancel` that id, which aborts the child alone.
 */
export class AcpSubagents {
  /** Each child's current run, by the child's session id. */
  private readonly runs = new Map<string, AbortController>();

  constructor(
    private readonly client: AgentContext,
    private readonly parentId: string,
    private readonly questions: UserQuestions,
  ) {}

  private notify(sessionId: string, update: SessionUpdate | UnstableSessionUpdate): Promise<void> {
    // The SDK validates against its unstable schema whatever the entry point; the stable type lacks subagent_update.
    return this.client.notify("session/update", { sessionId, update: update as SessionUpdate });
  }

  /** A new child session: its id, and a front end whose updates and approvals carry that id. */
  open(child: { description: string; agent: string }): SubagentView {
    const id = randomUUID();
    const update = (u: SessionUpdate) => this.notify(id, u);
    const views = new ToolCallViews(update);
    const text = (t: string) => update({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: t } });
    const frontEnd: SessionFrontEnd = {
      pending: (info) => views.pending(info),
      describe: (info) => views.describe(info),
      event: (callId, event) => views.event(callId, event),
      running: (callId) => views.running(callId),
      done: (callId, envelope, _info, display) => views.done(callId, envelope, display),
      text,
      thought: (t) => update({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: t } }),
      usage: () => {},
      say: text,
      approve: (request, signal) => approveCall(this.client, id, request, signal),
      questions: this.questions,
    };
    return {
      frontEnd,
      started: async (description) => {
        const run = new AbortController();
        this.runs.set(id, run);
        // The first update for an id announces the child, before any of its own traffic.
        await this.notify(this.parentId, {
          sessionUpdate: "subagent_update",
          sessionId: id,
          title: description,
          description: `Subagent (${child.agent})`,
          capabilities: { cancel: {} },
          state: { state: "running" },
        });
        return run.signal;
      },
      finished: async (stopReason: TurnStopReason, error?: string) => {
        this.runs.delete(id);
        await this.notify(this.parentId, {
          sessionUpdate: "subagent_update",
          sessionId: id,
          state: error ? { state: "idle", stopReason: "error", error: { code: -32603, message: error } } : { state: "idle", stopReason },
        });
      },
    };
  }

  /** session/cancel on a child: aborts its run (and what it started); false when the id is no running child. */
  cancel(sessionId: string): boolean {
    const run = this.runs.get(sessionId);
    if (!run) return false;
    run.abort();
    return true;
  }
}
