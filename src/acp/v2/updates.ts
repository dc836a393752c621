import { randomUUID } from "node:crypto";
import { createTwoFilesPatch } from "diff";
import type * as v1 from "@agentclientprotocol/sdk";
import type * as v2 from "@agentclientprotocol/sdk/experimental/v2/unstable";
import { configOptions } from "./handshake.js";

// The session's v1 `session/update`s as ACP v2 says them (acp/v2/README in acp/README.md):
// messages and thoughts carry a messageId (a run of chunks of one kind is one message), a tool
// call is one upsert (`tool_call_update` creates it too), a diff names its changes and carries a
// git patch, plans are `plan_update` with items, and what v2 dropped (modes) is left out.

/** A v1 update as it may come from the session: the stable ones, and the unstable plan operations. */
type V1Update =
  | v1.SessionUpdate
  | { sessionUpdate: "plan_update"; plan: { type: string; planId: string; entries?: v1.PlanEntry[] } }
  | { sessionUpdate: "plan_removed"; planId: string };

const CHUNK_KINDS = new Set(["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"]);

/** A v1 diff as v2's: the change it makes (add when there was no file) and its git patch. */
function diff(content: { path: string; oldText?: string | null; newText: string }): v2.ToolCallContent {
  const added = content.oldText === null || content.oldText === undefined;
  return {
    type: "diff",
    changes: [
      added ? { operation: "add", path: content.path, fileType: "text" } : { operation: "modify", path: content.path, fileType: "text" },
    ],
    patch: {
      format: "git_patch",
      text: createTwoFilesPatch(added ? "/dev/null" : content.path, content.path, content.oldText ?? "", content.newText, "", "", {
        context: 3,
      }),
    },
  };
}

/** v1 tool-call content as v2's (v2 has no client terminals: a terminal block never reaches a v2 client). */
export function toolCallContent(content: v1.ToolCallContent[] | null | undefined): v2.ToolCallContent[] | null | undefined {
  if (content === null || content === undefined) return content;
  return content.flatMap((c): v2.ToolCallContent[] => {
    if (c.type === "diff") return [diff(c)];
    if (c.type === "content") return [{ type: "content", content: c.content as v2.ContentBlock }];
    return [];
  });
}

/** A v1 tool call (or its update) as a v2 upsert: the same fields, content mapped. */
export function toolCall(call: v1.ToolCallUpdate | v1.ToolCall | Extract<v1.SessionUpdate, { toolCallId: string }>): v2.ToolCallUpdate {
  const { content, ...rest } = call;
  const mapped = toolCallContent(content);
  return { ...(rest as v2.ToolCallUpdate), ...(mapped === undefined ? {} : { content: mapped }) };
}

/**
 * One session's updates, translated in order. A run of chunks of one kind is one message: its
 * messageId holds until an update of another kind (a tool call, a thought) or the next prompt.
 */
export class UpdateMapper {
  private run: { kind: string; messageId: string } | null = null;
  /** Calls whose cancel capability went out (until their final status). */
  private readonly cancellable = new Set<string>();
  /** Calls the client cancelled (tool_call/cancel): their end is `cancelled`, unless they completed first. */
  private readonly cancelled = new Set<string>();
  /** A subagent's calls (they name their task call) until they end: not cancellable here. */
  private readonly children = new Set<string>();

  /** `callCancel`: the session's running calls take tool_call/cancel (its inner agent cancels one call). */
  constructor(private readonly callCancel: () => boolean = () => false) {}

  /** The client cancels this call: a failed end is its cancel's. */
  cancelling(toolCallId: string): void {
    this.cancelled.add(toolCallId);
  }

  /**
   * A replay (a resume from the start) is on: each message starts with its whole-message header
   * (`user_message`, `agent_message`, `agent_thought` with no content) before its chunks, as v2
   * asks of a replay.
   */
  replaying = false;

  /** The v2 updates for a v1 one: its mapping, after its message's header when a replayed message starts. */
  mapAll(update: V1Update): v2.SessionUpdate[] {
    const before = this.run;
    const mapped = this.map(update);
    if (!mapped) return [];
    if (!this.replaying || !CHUNK_KINDS.has(update.sessionUpdate) || this.run === before) return [mapped];
    const header = { sessionUpdate: update.sessionUpdate.slice(0, -"_chunk".length), messageId: this.run!.messageId, content: [] };
    return [header as v2.SessionUpdate, mapped];
  }

  /** A new user message begins (a prompt): the agent's next words are a new message. */
  endRun(): void {
    this.run = null;
  }

  /** A recorded user message keeps its own id (its prompt's messageId, in `_meta`). */
  private messageId(kind: string, meta?: unknown): string {
    const recorded = (meta as { messageId?: unknown } | null | undefined)?.messageId;
    if (typeof recorded === "string" && this.run?.messageId !== recorded) this.run = { kind, messageId: recorded };
    if (this.run?.kind !== kind) this.run = { kind, messageId: `msg_${randomUUID()}` };
    return this.run.messageId;
  }

  /**
   * A call's cancel capability, as v2 says: advertised while it runs (a subagent's calls, which
   * name their task call, are the child's and are not), withdrawn at its final status; a call the
   * client cancelled that then failed ends `cancelled`.
   */
  private callControls(call: v2.ToolCallUpdate, meta: unknown): v2.ToolCallUpdate {
    const id = call.toolCallId;
    if ((meta as { parentToolCallId?: unknown } | null | undefined)?.parentToolCallId !== undefined) this.children.add(id);
    if (call.status === "in_progress" && this.callCancel() && !this.children.has(id) && !this.cancellable.has(id)) {
      this.cancellable.add(id);
      return { ...call, capabilities: { cancel: {} } };
    }
    if (call.status !== "completed" && call.status !== "failed") return call;
    this.children.delete(id);
    const cancelled = this.cancelled.delete(id) && call.status === "failed";
    return {
      ...call,
      ...(cancelled ? { status: "cancelled" as const } : {}),
      ...(this.cancellable.delete(id) ? { capabilities: null } : {}),
    };
  }

  /** The v2 update for a v1 one, or null for what v2 does not have (modes). */
  map(update: V1Update): v2.SessionUpdate | null {
    if (!CHUNK_KINDS.has(update.sessionUpdate)) this.run = null;
    switch (update.sessionUpdate) {
      case "user_message_chunk":
      case "agent_message_chunk":
      case "agent_thought_chunk":
        return {
          sessionUpdate: update.sessionUpdate,
          messageId: this.messageId(update.sessionUpdate, update._meta),
          content: update.content as v2.ContentBlock,
          ...(update._meta ? { _meta: update._meta } : {}),
        } as v2.SessionUpdate;
      case "tool_call":
      case "tool_call_update":
        return { ...this.callControls(toolCall(update), update._meta), sessionUpdate: "tool_call_update" };
      case "plan":
        // Not sent to a v2 session (it asks for plan operations); kept as the one plan if it were.
        return { sessionUpdate: "plan_update", plan: { type: "items", planId: "plan", entries: update.entries } };
      case "plan_update":
        return { sessionUpdate: "plan_update", plan: { type: "items", planId: update.plan.planId, entries: update.plan.entries ?? [] } };
      case "plan_removed":
        // v2 has no removal: the plan becomes empty.
        return { sessionUpdate: "plan_update", plan: { type: "items", planId: update.planId, entries: [] } };
      case "available_commands_update":
        return {
          sessionUpdate: "available_commands_update",
          availableCommands: update.availableCommands.map(({ input, ...command }) => ({
            type: "command",
            ...command,
            ...(input && "hint" in input ? { input: { type: "text", hint: input.hint } } : {}),
          })),
        };
      case "config_option_update":
        return { sessionUpdate: "config_option_update", configOptions: configOptions(update.configOptions) };
      case "current_mode_update":
        // No modes API in v2: the mode is the `mode` config option, updated with config_option_update.
        return null;
      default:
        // session_info_update, usage_update, notice, compaction_*: the same in v2.
        return update as v2.SessionUpdate;
    }
  }
}
