import type * as v1 from "@agentclientprotocol/sdk";
import { client as v1Client } from "@agentclientprotocol/sdk/unstable";
import type { AgentContext, CreateElicitationRequest } from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { OWN_TURN, type OwnTurnParams } from "../own-turn.js";
import { toolCall } from "./updates.js";

// The v2 side's own v1 agent, and the v1 client it talks to: acp/server.ts's createAgent, connected
// in-process over a pair of message streams (the two apps come from different SDK entries). What
// that agent sends its client comes here: session updates are handed to the v2 side to map, and
// the requests that wait on the person (approvals, question forms) go to the v2 client as v2's,
// while the v2 side shows the turn as waiting on the user (`requires_action`).

/** The v1 agent a v2 connection drives: createAgent's app and its shutdown. */
export interface InnerAgent {
  app: v1.AgentApp;
  shutdown(): Promise<void>;
  /** Opens the sessions the early reader answered, with the connection's client (createAgent's). */
  adoptEarly?(client: v1.AgentContext): void;
}

/** Makes the inner agent; `writeLines` takes a load's replay, written beside its SDK (v1 session/update lines). */
export type InnerFactory = (writeLines: (lines: string) => Promise<void>) => InnerAgent;

/** What the bridge needs of the v2 side. */
export interface BridgeHost {
  /** The v2 client (known once it initialized). */
  client(): AgentContext;
  /** A v1 update of a session, sent as v2 (in order with everything else). */
  relay(sessionId: string, update: unknown): void;
  /** Resolves once everything handed to `relay` so far went out. */
  flushed(): Promise<void>;
  /** The inner agent starts or ends a turn of its own (acp/own-turn.ts). */
  ownTurn(params: OwnTurnParams): void;
  /** The session's turn waits on the client from now (said before it resolves); the function it gives says it no longer does. */
  waitOn(sessionId: string): Promise<() => void>;
}

function connectBridge(host: BridgeHost) {
  return v1Client({ name: "toolhost-v2" })
    .onNotification("session/update", ({ params }) => host.relay(params.sessionId, params.update))
    .onNotification(
      OWN_TURN,
      (raw) => raw as OwnTurnParams,
      ({ params }) => host.ownTurn(params),
    )
    .onRequest("session/request_permission", async ({ params, signal }) => {
      const meta = params._meta?.permission as { title?: string; description?: string } | undefined;
      const done = await host.waitOn(params.sessionId);
      try {
        const answer = await host.client().request(
          "session/request_permission",
          {
            sessionId: params.sessionId,
            title: meta?.title ?? params.toolCall.title ?? "Allow?",
            ...(meta?.description ? { description: meta.description } : {}),
            subject: { type: "tool_call", toolCall: toolCall(params.toolCall as v1.ToolCallUpdate) },
            options: params.options,
            ...(params._meta ? { _meta: params._meta } : {}),
          },
          { cancellationSignal: signal, stopWaitingOnCancel: true },
        );
        return answer.outcome.outcome === "selected" && "optionId" in answer.outcome
          ? { outcome: { outcome: "selected" as const, optionId: answer.outcome.optionId as string } }
          : { outcome: { outcome: "cancelled" as const } };
      } catch {
        return { outcome: { outcome: "cancelled" as const } };
      } finally {
        done();
      }
    })
    .onRequest("elicitation/create", async ({ params, signal }): Promise<v1.CreateElicitationResponse> => {
      // The question tool's form (acp/questions.ts): session-scoped, the same form in v2. The inner
      // agent asks only when the v2 client advertised form elicitation.
      const form = params as { mode: string; sessionId?: string; toolCallId?: string | null; message: string; requestedSchema?: unknown };
      if (form.mode !== "form" || typeof form.sessionId !== "string") return { action: "cancel" };
      const done = await host.waitOn(form.sessionId);
      try {
        const request = {
          mode: "form",
          sessionId: form.sessionId,
          ...(form.toolCallId ? { toolCallId: form.toolCallId } : {}),
          message: form.message,
          requestedSchema: form.requestedSchema,
        } as CreateElicitationRequest;
        const answer = await host
          .client()
          .request("elicitation/create", request, { cancellationSignal: signal, stopWaitingOnCancel: true });
        if (answer.action === "accept") {
          const content = (answer as { content?: v1.ElicitationAcceptAction["content"] }).content;
          return { action: "accept", ...(content ? { content } : {}) };
        }
        // An action v2 does not define is handled as a cancel (v2 says so).
        return { action: answer.action === "decline" ? "decline" : "cancel" };
      } finally {
        done();
      }
    });
}

/** The v1 agent as the bridge's client side reaches it. */
export type V1Agent = ReturnType<ReturnType<typeof connectBridge>["connect"]>["agent"];

/** Starts the inner agent (`make`) and connects it to the bridge: the v1 agent to send requests to, and its shutdown. */
export function startInner(make: InnerFactory, host: BridgeHost): { v1: V1Agent; shutdown(): Promise<void> } {
  const inner = make(async (lines) => {
    for (const line of lines.split("\n")) {
      if (line.trim() === "") continue;
      const message = JSON.parse(line) as { method?: string; params?: { sessionId: string; update: unknown } };
      if (message.method === "session/update" && message.params) host.relay(message.params.sessionId, message.params.update);
    }
    await host.flushed();
  });
  const toClient = new TransformStream<v1.AnyMessage, v1.AnyMessage>();
  const toAgent = new TransformStream<v1.AnyMessage, v1.AnyMessage>();
  const connection = inner.app.connect({ writable: toClient.writable, readable: toAgent.readable });
  // Same tick as connect: no queued message is dispatched before the early sessions exist.
  inner.adoptEarly?.(connection.client);
  const v1 = connectBridge(host).connect({ writable: toAgent.writable, readable: toClient.readable }).agent;
  return { v1, shutdown: () => inner.shutdown() };
}
