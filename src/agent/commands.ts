import type { AnyTool } from "../tool/define.js";
import type { ToolRegistry } from "../host/registry.js";

// The slash grammar and its meaning, shared by every front end: `/tool args`, `/help`, `/tools`, `/reload`.

/** The commands that are not tools, with what they do. */
export const BUILTIN_COMMANDS: readonly { name: string; description: string; hint?: string }[] = [
  { name: "tools", description: "List the tools of this session with their kinds" },
  { name: "reload", description: "Re-scan the tool folders and re-import extension tools" },
  { name: "help", description: "How slash commands run tools directly" },
  { name: "compact", description: "Summarize the conversation so far to free the model's context" },
  {
    name: "trust",
    description: "Load this project's own tools (.toolhost/tools/) for this session; `always` trusts the project",
    hint: "nothing, or always",
  },
];

/**
 * `/trust` or `/trust <arg>`: the argument (empty for none), or null for any other text. Read
 * before anything else in a turn: typing it is the consent the trust question asks for.
 */
export function parseTrust(text: string): string | null {
  const match = /^\/trust(?:\s+([\s\S]*))?$/.exec(text.trim());
  return match ? (match[1]?.trim() ?? "") : null;
}

/** How to call a tool that has required parameters, for its slash command typed alone; null when it needs none. */
export function usageText(tool: AnyTool): string | null {
  const schema = tool.inputSchema as { properties?: Record<string, { description?: unknown }>; required?: unknown };
  const required = Array.isArray(schema.required) ? (schema.required as string[]) : [];
  if (required.length === 0) return null;
  const how = tool.shorthand ? `${tool.shorthandHint ?? "text"}, or a JSON object` : "a JSON object";
  const example = `/${tool.id} {${required.map((k) => `"${k}": …`).join(", ")}}`;
  const params = Object.entries(schema.properties ?? {}).map(([key, p]) => {
    const description = typeof p.description === "string" ? `: ${p.description}` : "";
    return `- \`${key}\`${required.includes(key) ? " (required)" : ""}${description}`;
  });
  return [`/${tool.id} needs arguments: ${how}, e.g. \`${example}\`. Parameters:`, ...params].join("\n");
}

export type SlashCommand =
  | { type: "tool"; toolId: string; args: unknown }
  | { type: "help" }
  | { type: "tools" }
  | { type: "reload" }
  | { type: "compact" }
  | { type: "skill"; name: string; args: string }
  | { type: "invalid"; message: string };

export function firstSentence(text: string): string {
  const sentence = text.split(/(?<=[.!?])\s/)[0] ?? text;
  return sentence.length > 160 ? `${sentence.slice(0, 157)}…` : sentence;
}

/** Parses `/name rest`; null when the text is not a slash command. A tool's name wins over a skill's. */
export function parseSlash(text: string, registry: ToolRegistry, skills: readonly string[] = []): SlashCommand | null {
  const match = /^\/([A-Za-z][\w-]*)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return null;
  const name = match[1] as string;
  const rest = (match[2] ?? "").trim();
  if (name === "help") return { type: "help" };
  if (name === "tools") return { type: "tools" };
  if (name === "reload") return { type: "reload" };
  if (name === "compact") return { type: "compact" };
  const tool = registry.get(name);
  if (!tool && skills.includes(name)) return { type: "skill", name, args: rest };
  if (!tool) return { type: "invalid", message: `Unknown command /${name}. ${helpText(registry)}` };
  if (rest.startsWith("{")) {
    const parsed = parseJsonObject(rest);
    if (parsed.ok) return { type: "tool", toolId: name, args: parsed.value };
    // Not a JSON object: `/glob {a,b}.txt`, `/bash { cmd; }` mean their shorthand. Text that was
    // meant as JSON (`{"key"…`, `{}`) gets the parse error instead.
    if (!tool.shorthand || /^\{\s*("|\}|$)/.test(rest)) {
      return { type: "invalid", message: `The arguments of /${name} are not valid JSON: ${parsed.error}` };
    }
    return { type: "tool", toolId: name, args: tool.shorthand(rest) };
  }
  if (rest === "") return { type: "tool", toolId: name, args: {} };
  if (!tool.shorthand) {
    return { type: "invalid", message: `/${name} takes a JSON object of arguments, e.g. /${name} {"…": …}` };
  }
  return { type: "tool", toolId: name, args: tool.shorthand(rest) };
}

/** Text that starts with "{" parses, if at all, to an object. */
function parseJsonObject(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  }
}

export function helpText(registry: ToolRegistry): string {
  return [
    "Slash commands run a tool directly, with no model, through the same validation, approval and reporting as a model's call:",
    "",
    '- `/<tool> {json}` — any tool with a JSON object of arguments, e.g. `/edit {"path":"a.ts","old_string":"x","new_string":"y"}`',
    "- `/read src/a.ts:10-40`, `/grep TODO`, `/glob **/*.ts`, `/bash ls -la` — plain-text shorthands",
    "- `/tools` — the tools of this session; `/reload` — re-scan and re-import tool files; `/help` — this text",
    "- `/trust` — load this project's own tools for this session (`/trust always`: in every session)",
    "- `/<skill> [text]` — a model turn with an Agent Skill loaded (`toolhost skills` lists them)",
    "",
    `Tools: ${registry.ids().join(", ")}`,
  ].join("\n");
}

export function toolsText(registry: ToolRegistry): string {
  const rows = registry.list().map(({ tool, source }) => `| ${tool.id} | ${tool.kind} | ${source} | ${firstSentence(tool.description)} |`);
  return ["| tool | kind | source | what it does |", "|---|---|---|---|", ...rows].join("\n");
}
