import type { ClientCapabilities, SessionUpdate, ToolCallContent } from "@agentclientprotocol/sdk";
import type { ToolEvent } from "../tool/context.js";
import type { ToolDisplay } from "../tool/define.js";
import type { Envelope } from "../tool/envelope.js";
import type { ToolCallInfo } from "../agent/turn/tool-runner.js";
import { boundedJson, diffContent, fenced, resultContent, textContent } from "./content.js";
import { PlanViews } from "./plans.js";

const LIVE_OUTPUT_INTERVAL_MS = 250;
const LIVE_TAIL_CHARS = 8 * 1024;

interface CallView {
  info: ToolCallInfo;
  diffs: ToolCallContent[];
  terminal: ToolCallContent | null;
  liveTail: string;
  liveTimer: NodeJS.Timeout | null;
}

/** A subagent's call names the task call that started it (clients without ACP subagent sessions nest it). */
function parentMeta(info: ToolCallInfo): { _meta?: { parentToolCallId: string } } {
  return info.parentCallId ? { _meta: { parentToolCallId: info.parentCallId } } : {};
}

/**
 * The editor's view of the session's tool calls: tool_call → diffs, terminal or live output →
 * in_progress → completed / failed, each as a session/update.
 */
export class ToolCallViews {
  private readonly calls = new Map<string, CallView>();
  private readonly plans: PlanViews;

  constructor(
    private readonly update: (update: SessionUpdate) => Promise<void>,
    capabilities: ClientCapabilities = {},
  ) {
    this.plans = new PlanViews(capabilities, update);
  }

  async pending(info: ToolCallInfo): Promise<void> {
    this.calls.set(info.callId, { info, diffs: [], terminal: null, liveTail: "", liveTimer: null });
    await this.update({
      sessionUpdate: "tool_call",
      toolCallId: info.callId,
      name: info.toolId,
      title: info.title,
      kind: info.kind,
      status: "pending",
      locations: info.locations,
      ...(info.args === undefined ? {} : { rawInput: boundedJson(info.args) }),
      ...parentMeta(info),
    });
  }

  async describe(info: ToolCallInfo): Promise<void> {
    const view = this.calls.get(info.callId);
    if (view) view.info = info;
    await this.update({
      sessionUpdate: "tool_call_update",
      toolCallId: info.callId,
      title: info.title,
      locations: info.locations,
      rawInput: boundedJson(info.args),
      ...parentMeta(info),
    });
  }

  async running(callId: string): Promise<void> {
    await this.update({ sessionUpdate: "tool_call_update", toolCallId: callId, status: "in_progress" });
  }

  async done(callId: string, envelope: Envelope, display?: ToolDisplay): Promise<void> {
    const view = this.calls.get(callId);
    this.calls.delete(callId);
    if (view?.liveTimer) clearTimeout(view.liveTimer);
    const content = [...(view?.diffs ?? []), ...(view?.terminal ? [view.terminal] : [])];
    // A terminal already shows the output; a diff already shows the change.
    if (!view?.terminal && !(view?.diffs.length && envelope.type === "output")) content.push(...resultContent(envelope, display));
    // What the host adds (the new problems after an edit) shows under the diff or the terminal too.
    else if (envelope.type === "output") content.push(...(display?.notes ?? []).map(textContent));
    const locations = display?.locations?.map((l) => ({ path: l.path, line: l.line ?? null }));
    // Only the diffs, already shown: left out (unchanged), so a preview is sent once.
    const unchanged = view !== undefined && view.diffs.length > 0 && content.length === view.diffs.length && !view.terminal;
    await this.update({
      sessionUpdate: "tool_call_update",
      toolCallId: callId,
      status: envelope.type === "output" && !display?.failed ? "completed" : "failed",
      ...(unchanged ? {} : { content }),
      ...(locations?.length ? { locations } : {}),
      rawOutput: boundedJson(envelope),
    });
  }

  async event(callId: string, event: ToolEvent): Promise<void> {
    const view = this.calls.get(callId);
    switch (event.type) {
      case "plan":
        // A subagent's plan is its own: its calls name the task call that started it.
        await this.plans.show(event.entries, view?.info.parentCallId);
        return;
      case "diff": {
        if (!view) return;
        view.diffs.push(diffContent(event.path, event.oldText, event.newText));
        await this.update({ sessionUpdate: "tool_call_update", toolCallId: callId, content: view.diffs });
        return;
      }
      case "terminal": {
        if (!view) return;
        view.terminal = { type: "terminal", terminalId: event.terminalId };
        await this.update({ sessionUpdate: "tool_call_update", toolCallId: callId, content: [view.terminal] });
        return;
      }
      case "progress": {
        if (!view) return;
        // A subagent's calls, one line each (title — status): the whole list replaces the last.
        await this.update({
          sessionUpdate: "tool_call_update",
          toolCallId: callId,
          content: [textContent(event.lines.map((line) => `- ${line}`).join("\n"))],
        });
        return;
      }
      case "output": {
        if (!view) return;
        // Live output without an editor terminal: a throttled, bounded tail.
        view.liveTail = (view.liveTail + event.chunk).slice(-LIVE_TAIL_CHARS);
        view.liveTimer ??= setTimeout(() => {
          view.liveTimer = null;
          if (!this.calls.has(callId)) return;
          void this.update({
            sessionUpdate: "tool_call_update",
            toolCallId: callId,
            content: [textContent(fenced(view.liveTail, "console"))],
          }).catch(() => {});
        }, LIVE_OUTPUT_INTERVAL_MS);
        return;
      }
    }
  }
}
