import type { ModelMessage, ToolResultPart, UserContent } from "ai";

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

  addUser(content: UserContent): void {
    this.push({ role: "user", content });
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
