import type { ModelMessage, ToolResultPart, UserContent } from "ai";

/** What the model is told of a call a turn left without a result, however it ended (a cancel, a client gone, an error). */
export const UNFINISHED_RESULT =
  "No result: the turn ended (cancelled, its client gone, or an error) before this call finished. It may have run in part or in full: check its effects before you run it again.";

/**
 * A session's conversation as the model sees it: user prompts, the model's replies (text,
 * reasoning, tool calls) and the tool results. Every tool call is followed by its result, so
 * the history can always be sent again, whatever stopped a turn.
 */
export class History {
  private readonly list: ModelMessage[] = [];
  private listener: ((message: ModelMessage) => void) | undefined;

  /** Calls `listener` with every message added from now on (the session's recorder). */
  onAppend(listener: (message: ModelMessage) => void): void {
    this.listener = listener;
  }

  /** Replaces the whole conversation (a loaded session, a compaction, a rewind); the listener is not told: each is recorded as what it is. */
  replace(messages: readonly ModelMessage[]): void {
    this.list.splice(0, this.list.length, ...messages);
  }

  private push(message: ModelMessage): void {
    this.list.push(message);
    this.listener?.(message);
  }

  get messages(): ModelMessage[] {
    return this.list;
  }

  get length(): number {
    return this.list.length;
  }

  /** A user message; a call of the last reply still without a result is answered first, as every provider requires. */
  addUser(content: UserContent): void {
    this.answerOpenCalls(UNFINISHED_RESULT);
    this.push({ role: "user", content });
  }

  /**
   * Answers each call of the last model reply that has no result yet with `text` (an error result,
   * recorded like any other), so the history can be sent again. True when a call needed one.
   */
  answerOpenCalls(text: string): boolean {
    const answered = new Set<string>();
    let i = this.list.length - 1;
    for (; i >= 0 && this.list[i]!.role === "tool"; i--) {
      const tool = this.list[i] as Extract<ModelMessage, { role: "tool" }>;
      for (const part of tool.content) if (part.type === "tool-result") answered.add(part.toolCallId);
    }
    const reply = this.list[i];
    if (reply?.role !== "assistant" || typeof reply.content === "string") return false;
    const open = reply.content.flatMap((part) =>
      part.type === "tool-call" && !part.providerExecuted && !answered.has(part.toolCallId) ? [part] : [],
    );
    this.addToolResults(
      open.map((call) => ({
        type: "tool-result" as const,
        toolCallId: call.toolCallId,
        toolName: call.toolName,
        output: { type: "error-text" as const, value: text },
      })),
    );
    return open.length > 0;
  }

  /** The model's reply of one step; anything but assistant messages is dropped (the loop adds the tool results). */
  addAssistant(messages: readonly ModelMessage[]): void {
    for (const message of messages) if (message.role === "assistant") this.push(message);
  }

  /** Text the model streamed before its request failed or was cancelled. */
  addPartialText(text: string): void {
    if (text.trim()) this.push({ role: "assistant", content: [{ type: "text", text }] });
  }

  addToolResults(results: ToolResultPart[]): void {
    if (results.length) this.push({ role: "tool", content: results });
  }

  /** The text of the last assistant message, when it has any (a subagent's answer). */
  lastAssistantText(): string | undefined {
    const last = this.list[this.list.length - 1];
    if (last?.role !== "assistant") return undefined;
    const text =
      typeof last.content === "string"
        ? last.content
        : last.content
            .filter((part): part is Extract<typeof part, { type: "text" }> => part.type === "text")
            .map((part) => part.text)
            .join("");
    return text.trim() ? text : undefined;
  }

  /** A rough token count (about four characters a token) for providers that report no usage. */
  estimateTokens(system: string): number {
    return Math.ceil((system.length + JSON.stringify(this.list).length) / 4);
  }
}
