import type { ModelMessage } from "ai";

// What a session's file keeps of large values: tool inputs (a 25 MB `content`), previews (a diff's
// whole texts) and the replay of what the editor was shown. Results are cut in the recorder; here
// every string over the cap keeps its head and a note. The full content is in the workspace file.

/** The most of one string the record keeps (as results are cut: 16 KB). */
export const RECORD_STRING_CHARS = 16 * 1024;

function capString(value: string, max: number): string {
  if (value.length <= max) return value;
  let end = max;
  // Not half a surrogate pair.
  const code = value.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--;
  return `${value.slice(0, end)}\n… [the session record keeps the first ${max} of ${value.length} characters]`;
}

/** A JSON value with every string longer than `max` cut, a copy only where something was cut. */
export function capStrings<T>(value: T, max = RECORD_STRING_CHARS): T {
  if (typeof value === "string") return capString(value, max) as T;
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((item: unknown) => {
      const capped = capStrings(item, max);
      if (capped !== item) changed = true;
      return capped;
    });
    return (changed ? out : value) as T;
  }
  if (typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    let out: Record<string, unknown> | undefined;
    for (const [key, item] of Object.entries(value)) {
      const capped = capStrings(item, max);
      if (capped !== item) (out ??= { ...(value as Record<string, unknown>) })[key] = capped;
    }
    return (out ?? value) as T;
  }
  return value;
}

/**
 * A history message as the record keeps it: the inputs of an assistant's tool calls capped (a
 * restored model sees the head and the note; the written file holds the rest). Text and results
 * are kept: they are what the model said and saw, and results are already bounded.
 */
export function recordedMessage(message: ModelMessage): ModelMessage {
  if (message.role !== "assistant" || typeof message.content === "string") return message;
  let changed = false;
  const content = message.content.map((part) => {
    if (part.type !== "tool-call") return part;
    const input = capStrings(part.input);
    if (input === part.input) return part;
    changed = true;
    return { ...part, input };
  });
  return changed ? { ...message, content } : message;
}
