import type { Envelope } from "../../tool/envelope.js";
import type { ToolDeclaration, ToolOffer } from "./turn-types.js";

// Deferral (issue 14): when the non-locked tools (extension files, MCP servers: every source but
// `builtin`) would take too much of the model's context, they are not declared up front. The
// system prompt lists them one short line each (or only their sources, with counts, when even the
// lines are too long), and the model loads the ones it needs through tool_search, which wires
// them: declared from the next request on, for the rest of the session. Decided per model
// request from the session's current tools, since MCP servers add tools at runtime.

/** Share of the model's context window the non-locked tools' declarations may take before they are deferred. */
export const DEFERRAL_SHARE = 0.1;
/** More non-locked tools than this are deferred whatever their size: models pick worse among many. */
export const DEFERRAL_MAX_TOOLS = 30;
/** Tokens are estimated as characters / 4, as the prompt budget test counts them. */
const CHARS_PER_TOKEN = 4;
/** One listed tool: its id and the first sentence of its description, cut here. */
const LINE_CHARS = 100;
/** The one-line list may take at most this share of the budget; past it only sources are listed. */
const LIST_SHARE = 0.5;
/** At most this many sources are named. */
const MAX_SOURCES = 40;

/** A tool the session could declare this request, with where it came from. */
export interface CandidateTool {
  declaration: ToolDeclaration;
  /** `builtin` (a locked tool, never deferred) or its file or server (`mcp:<server>`). */
  source: string;
}

const estimateTokens = (chars: number) => Math.ceil(chars / CHARS_PER_TOKEN);

/** What a declaration costs as the model is sent it (name, description, JSON Schema). */
function declarationChars(d: ToolDeclaration): number {
  return JSON.stringify({ name: d.id, description: d.description, parameters: d.inputSchema }).length;
}

/** The first sentence of a description, on one line, cut to fit. */
function firstSentence(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  const end = flat.search(/[.!?](\s|$)/);
  const sentence = end >= 0 ? flat.slice(0, end + 1) : flat;
  return sentence.length <= max ? sentence : `${sentence.slice(0, max - 1).trimEnd()}…`;
}

/** The system prompt's section for deferred tools: one line each, or the sources with counts when that is too long. */
export function deferredSection(tools: readonly CandidateTool[], budgetTokens: number): string {
  const head = [
    "# More tools (tool_search)",
    `This session has ${tools.length} more tools, not declared up front. To use one, call tool_search with \`select\` (exact names) or \`query\` (what you want to do): the tools it returns can be called from your next step on.`,
  ];
  const lines = tools.map(({ declaration: d }) => {
    const sentence = firstSentence(d.description, Math.max(20, LINE_CHARS - d.id.length - 4));
    return sentence ? `- ${d.id}: ${sentence}` : `- ${d.id}`;
  });
  if (estimateTokens(lines.join("\n").length) <= budgetTokens * LIST_SHARE) return [...head, ...lines].join("\n");
  const counts = new Map<string, number>();
  for (const { source } of tools) counts.set(source, (counts.get(source) ?? 0) + 1);
  const sources = [...counts].map(([source, n]) => `- ${source}: ${n} tool${n === 1 ? "" : "s"}`);
  const shown = sources.slice(0, MAX_SOURCES);
  if (sources.length > shown.length) shown.push(`- … and ${sources.length - shown.length} more sources`);
  return [...head, "They are too many to list; by source:", ...shown].join("\n");
}

/**
 * What the model is offered for one request. Locked tools are always declared. The others are
 * declared when they fit (at most DEFERRAL_MAX_TOOLS, together within DEFERRAL_SHARE of the
 * window); otherwise only those `wired` are, and the prompt section lists the rest. tool_search
 * is left out when there is nothing for it to find, and nothing is deferred when it is not
 * offered (a subagent without it could not reach them).
 */
export function planOffer(tools: readonly CandidateTool[], wired: ReadonlySet<string>, contextWindow: number): ToolOffer {
  const extra = tools.filter((t) => t.source !== "builtin");
  const all = tools.map((t) => t.declaration);
  if (!extra.length) return { declarations: all.filter((d) => d.id !== "tool_search"), deferred: [] };
  const budgetTokens = Math.floor(contextWindow * DEFERRAL_SHARE);
  const tokens = estimateTokens(extra.reduce((sum, t) => sum + declarationChars(t.declaration), 0));
  const searchable = all.some((d) => d.id === "tool_search");
  if (!searchable || (extra.length <= DEFERRAL_MAX_TOOLS && tokens <= budgetTokens)) return { declarations: all, deferred: [] };
  const deferred = extra.filter((t) => !wired.has(t.declaration.id)).map((t) => t.declaration.id);
  const hidden = new Set(deferred);
  return {
    declarations: all.filter((d) => !hidden.has(d.id)),
    // All of them, wired or not: the section stays the same from request to request (prompt caches hold).
    promptSection: deferredSection(extra, budgetTokens),
    deferred,
  };
}

/**
 * A deferred tool called before tool_search loaded it. Like Claude Code's ToolSearch, the call is
 * not refused: it runs with the same validation and approval as any other, and once it succeeded
 * the tool is wired. When the model got its arguments wrong (it never saw the schema) the error
 * says how to load it. Returns the envelope the model gets.
 */
export function deferredCallResult(toolId: string, envelope: Envelope, wire: (ids: string[]) => void): Envelope {
  if (envelope.type === "output") {
    wire([toolId]);
    return envelope;
  }
  if (envelope.metadata.error_code !== "invalid_arguments") return envelope;
  const hint = `${toolId} was not loaded, so its parameters were not known: call tool_search with select ["${toolId}"] to get its schema, then call it again.`;
  return { ...envelope, error_text: `${envelope.error_text}\n${hint}` };
}
