import type { AgentContext, SessionUpdate } from "@agentclientprotocol/sdk";
import type { Confirmation } from "../agent/session/front-end.js";
import { textContent } from "./content.js";
import { askClient } from "./permission.js";

let confirmSeq = 0;

/**
 * A yes/no question of the agent's own (go on past a budget's cap?), as the trust question is
 * asked: a tool call of kind `other` carrying the question, session/request_permission with the
 * two answers, then the call completed (yes) or failed (no, or no answer within the approval timeout).
 */
export async function confirmWithClient(
  client: AgentContext,
  sessionId: string,
  update: (update: SessionUpdate) => Promise<void>,
  question: Confirmation,
  signal: AbortSignal,
): Promise<boolean> {
  const toolCallId = `confirm_${++confirmSeq}`;
  const { title } = question;
  const content = [textContent(question.text)];
  await update({ sessionUpdate: "tool_call", toolCallId, title, kind: "other", status: "pending", content });
  const choice = await askClient(
    client,
    sessionId,
    { toolCallId, title, kind: "other", status: "pending", content },
    [
      { optionId: "yes", name: question.yes, kind: "allow_once" },
      { optionId: "no", name: question.no, kind: "reject_once" },
    ],
    signal,
  );
  const yes = choice === "yes" && !signal.aborted;
  await update({
    sessionUpdate: "tool_call_update",
    toolCallId,
    status: yes ? "completed" : "failed",
    content: [textContent(`Answer: ${yes ? question.yes : question.no}`)],
  });
  return yes;
}
