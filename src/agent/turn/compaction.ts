import { streamText, type ModelMessage } from "ai";
import type { History } from "./history.js";
import type { TurnOptions } from "./turn-types.js";

// Compaction: when the context nears the model's window, old tool outputs are pruned first
// (each replaced by a one-line stub that names its sidecar file), then, if that is not enough,
// the older turns are summarised by the model into one message. Recent turns stay verbatim.

/** Compaction starts when the context passes this share of the window. */
export const COMPACT_AT = 0.85;
/** What compaction aims for: the context under this share of the window. */
const COMPACT_TO = 0.5;
/** The recent part of the history kept verbatim, as a share of the window. */
const KEEP_RECENT = 0.25;
/** Tool outputs shorter than this are not worth pruning. */
const PRUNE_MIN_CHARS = 1000;

export const SUMMARY_PREFIX = "[Summary of the earlier conversation, written when it was compacted]";

const SUMMARY_INSTRUCTIONS = `Summarize the conversation above so that the work can continue from the summary alone: the older messages will be replaced by it.
Keep: the user's requests and constraints, decisions made and why, files read or changed (with paths) and what changed, commands run and their important results, errors met and how they were solved, and what remains to be done.
Leave out pleasantries and tool output that no longer matters. Write plain Markdown, at most about 600 words.`;

/** How a compaction went, for the front end and the record. */
export interface CompactionResult {
  /** Tool outputs replaced by stubs. */
  pruned: number;
  /** The model's summary of the older turns, when one was needed. */
  summary?: string;
  /** Estimated tokens before and after. */
  before: number;
  after: number;
  /** The result would not have been smaller: the history was left as it was. */
  kept?: true;
}

const estimate = (messages: readonly ModelMessage[]) => Math.ceil(JSON.stringify(messages).length / 4);

/** Where the recent part starts: a message that is not a tool result, whose tail fits the recent share. */
function recentStart(messages: readonly ModelMessage[], keepTokens: number): number {
  let tokens = 0;
  let start = messages.length;
  for (let i = messages.length - 1; i > 0; i--) {
    tokens += estimate([messages[i]!]);
    if (tokens > keepTokens) break;
    // A tool result must stay with the call before it.
    if (messages[i]!.role !== "tool") start = i;
  }
  // Nothing fits: keep at least the last prompt and what followed it.
  if (start === messages.length) {
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i]!.role === "user") return i;
    }
  }
  return start;
}

/** A tool result's output replaced by a stub that says where the full output is, when it was saved. */
function pruneResults(messages: ModelMessage[], end: number): number {
  let pruned = 0;
  for (let i = 0; i < end; i++) {
    const message = messages[i]!;
    if (message.role !== "tool") continue;
    messages[i] = {
      ...message,
      content: message.content.map((part) => {
        if (part.type !== "tool-result") return part;
        const output = part.output;
        if (output.type === "content") {
          // Images (a screenshot, a fetched picture) weigh the most: the text stays, each image becomes a note.
          const images = output.value.filter((v) => v.type === "image-data" || v.type === "media").length;
          if (images === 0) return part;
          pruned++;
          const value = output.value.map((v) =>
            v.type === "image-data" || v.type === "media"
              ? { type: "text" as const, text: "[An image, pruned when the conversation was compacted.]" }
              : v,
          );
          return { ...part, output: { type: "content" as const, value } };
        }
        if ((output.type !== "text" && output.type !== "error-text") || output.value.length < PRUNE_MIN_CHARS) return part;
        pruned++;
        const saved = /"output_path":\s*"((?:[^"\\]|\\.)*)"/.exec(output.value)?.[1];
        const stub = `[Output pruned when the conversation was compacted (${output.value.length} characters).${
          saved ? ` The full output is in ${JSON.parse(`"${saved}"`) as string}.` : " Run the tool again if you need it."
        }]`;
        return { ...part, output: { type: output.type, value: stub } };
      }),
    };
  }
  return pruned;
}

/** What a compaction will do, decided before anything is sent: null when there is nothing to gain. */
export interface CompactionPlan {
  /** The history with old tool outputs pruned. */
  messages: ModelMessage[];
  /** Where the verbatim recent part starts. */
  start: number;
  pruned: number;
  /** The older part must be summarized too. */
  summarize: boolean;
  before: number;
}

/**
 * Plans a compaction: prune old tool outputs, and summarize the older turns when pruning alone
 * does not bring the context under half the window (or when `force`d: /compact, or a provider
 * that said the context is too long).
 */
export function planCompaction(history: History, window: number, force = false): CompactionPlan | null {
  const messages = [...history.messages];
  const before = estimate(messages);
  const start = recentStart(messages, window * KEEP_RECENT);
  const pruned = pruneResults(messages, start);
  const summarize = start > 0 && (force || estimate(messages) > window * COMPACT_TO);
  if (pruned === 0 && !summarize) return null;
  return { messages, start, pruned, summarize, before };
}

/** Carries out a plan on the history; throws if the summary request fails (the history is then unchanged). */
export async function compactHistory(
  options: Pick<TurnOptions, "model" | "history"> & {
    plan: CompactionPlan;
    signal: AbortSignal;
    /** The summary as it streams in. */
    onSummary?: (delta: string) => void | Promise<void>;
  },
): Promise<CompactionResult> {
  const { history, plan } = options;
  const { messages, start, pruned, before } = plan;
  if (!plan.summarize) {
    const after = estimate(messages);
    if (after >= before) return { pruned: 0, before, after, kept: true };
    history.replace(messages);
    return { pruned, before, after };
  }
  const older = messages.slice(0, start);
  // Streamed, as every request of the session is (some servers speak nothing else).
  let failure: unknown;
  const stream = streamText({
    model: options.model,
    messages: [...older, { role: "user", content: SUMMARY_INSTRUCTIONS }],
    abortSignal: options.signal,
    maxRetries: 1,
    onError: ({ error }) => {
      failure = error;
    },
  });
  let text = "";
  for await (const delta of stream.textStream) {
    text += delta;
    await options.onSummary?.(delta);
  }
  if (failure !== undefined) throw failure instanceof Error ? failure : new Error(String(failure));
  const summary = text.trim() || "(The model gave no summary.)";
  // Deep in one long turn, its prompt is among the summarized messages: the task itself stays verbatim.
  const lastPrompt = messages.findLastIndex((m) => m.role === "user");
  const prompt = lastPrompt >= 0 && lastPrompt < start ? promptText(messages[lastPrompt]!) : undefined;
  const content = `${SUMMARY_PREFIX}\n\n${summary}${prompt ? `\n\nThe user's current request, verbatim:\n\n${prompt}` : ""}`;
  const compacted: ModelMessage[] = [{ role: "user", content }, ...messages.slice(start)];
  const after = estimate(compacted);
  // A summary longer than what it replaces (a short conversation, a wordy model): keep the original.
  if (after >= before) return { pruned: 0, summary, before, after, kept: true };
  history.replace(compacted);
  return { pruned, summary, before, after };
}

function promptText(message: ModelMessage): string {
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => (part.type === "text" ? part.text : "")).join("\n");
}
