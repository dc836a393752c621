import type { PromptMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpPrompt } from "../mcp/manager.js";

// MCP prompts as slash commands, as editors' users expect them: `/<server>:<prompt> [arguments]`.

/** The command's name (without the slash): `<server>:<prompt>`, spaces made dashes. */
export function mcpCommandName(prompt: Pick<McpPrompt, "server" | "name">): string {
  return `${prompt.server}:${prompt.name}`.replace(/\s+/g, "-");
}

/** `/<server>:<prompt> rest` for a known prompt: the prompt and the rest of the text; null otherwise. */
export function parsePromptCommand(text: string, prompts: readonly McpPrompt[]): { prompt: McpPrompt; rest: string } | null {
  const match = /^\/(\S+:\S+)(?:\s+([\s\S]*))?$/.exec(text.trim());
  if (!match) return null;
  const prompt = prompts.find((p) => mcpCommandName(p) === match[1]);
  return prompt ? { prompt, rest: (match[2] ?? "").trim() } : null;
}

/**
 * The prompt's arguments from the command's text: a JSON object, `name=value` pairs, or (for a
 * prompt with one argument) the whole text; otherwise words in the arguments' order, the last
 * taking the rest. A required argument left out is an error that says how to call it.
 */
export function promptArguments(prompt: McpPrompt, rest: string): { values: Record<string, string> } | { error: string } {
  const names = prompt.arguments.map((a) => a.name);
  const values: Record<string, string> = {};
  const usage = () =>
    `/${mcpCommandName(prompt)} takes ${names.length ? names.map((n) => (prompt.arguments.find((a) => a.name === n)?.required ? n : `[${n}]`)).join(" ") : "no arguments"}` +
    (names.length ? ` (words in this order, name=value pairs, or a JSON object)` : "");
  if (rest.startsWith("{")) {
    try {
      const parsed = JSON.parse(rest) as unknown;
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return { error: usage() };
      for (const [k, v] of Object.entries(parsed)) values[k] = typeof v === "string" ? v : JSON.stringify(v);
    } catch (err) {
      return { error: `The arguments are not valid JSON (${(err as Error).message}). ${usage()}` };
    }
  } else if (rest !== "") {
    const pairs = [...rest.matchAll(/(\w[\w-]*)=("(?:[^"\\]|\\.)*"|\S+)/g)];
    if (pairs.length && pairs.every((m) => names.includes(m[1] as string))) {
      for (const m of pairs) {
        const raw = m[2] as string;
        values[m[1] as string] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
      }
    } else if (names.length === 1) {
      values[names[0] as string] = rest;
    } else if (names.length === 0) {
      return { error: usage() };
    } else {
      const words = rest.split(/\s+/);
      names.forEach((name, i) => {
        if (i >= words.length) return;
        values[name] = i === names.length - 1 ? words.slice(i).join(" ") : (words[i] as string);
      });
    }
  }
  const missing = prompt.arguments.filter((a) => a.required && values[a.name] === undefined).map((a) => a.name);
  if (missing.length) return { error: `Missing ${missing.join(", ")}. ${usage()}` };
  return { values };
}

/** The prompt's messages as one user turn: each message's text (and what it embeds), marked by role when both speak. */
export function promptTurnText(messages: readonly PromptMessage[]): string {
  const roles = new Set(messages.map((m) => m.role));
  const parts = messages.map((m) => {
    const c = m.content;
    let text: string;
    if (c.type === "text") text = c.text;
    else if (c.type === "resource")
      text = "text" in c.resource ? `<resource uri="${c.resource.uri}">\n${c.resource.text}\n</resource>` : `[resource ${c.resource.uri}]`;
    else if (c.type === "resource_link") text = `[resource ${c.uri}]`;
    else text = `[${c.type} ${"mimeType" in c ? c.mimeType : ""}]`;
    return roles.size > 1 ? `${m.role === "user" ? "User" : "Assistant"}: ${text}` : text;
  });
  return parts.join("\n\n");
}
