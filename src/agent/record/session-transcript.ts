import { createTwoFilesPatch } from "diff";
import type { Envelope } from "../../tool/envelope.js";
import type { SessionEntry, StoredSession } from "./session-store.js";
import type { ToolCallInfo } from "../../host/invoke.js";

/** How much of a call's result a transcript shows. */
const RESULT_CHARS = 2000;

/**
 * A stored session as a readable Markdown transcript: each prompt, the agent's text, every tool
 * call with its input, its diffs and (the head of) its result, and the agent's own messages.
 */
export function transcriptMarkdown(session: StoredSession): string {
  const title = session.entries.find((e): e is Extract<SessionEntry, { type: "title" }> => e.type === "title")?.title;
  const out: string[] = [`# ${title ?? `Session ${session.header.id}`}`, "", `- Session: ${session.header.id}`];
  out.push(`- Folder: ${session.header.cwd}`, `- Started: ${session.header.created}`, "");
  let speaker: "user" | "agent" | null = null;
  const shownCalls = new Set<string>();
  const agentSection = () => {
    if (speaker !== "agent") out.push("## toolhost", "");
    speaker = "agent";
  };
  for (const entry of session.entries) {
    if (entry.type === "turn" && entry.phase === "start" && entry.prompt) {
      out.push("## You", "", entry.prompt.trim(), "");
      speaker = "user";
    } else if (entry.type === "setting") {
      out.push(`*${entry.name} set to ${entry.value}*`, "");
    } else if (entry.type === "view") {
      const { method, args } = entry.call;
      if (method === "text") {
        agentSection();
        out.push(String(args[0]).trim(), "");
      } else if (method === "say" || method === "failed") {
        agentSection();
        out.push(
          ...String(args[0])
            .split("\n")
            .map((line) => `> ${line}`),
          "",
        );
      } else if (method === "describe" || method === "pending") {
        const info = args[0] as ToolCallInfo;
        // A model's call is announced before its arguments are complete: it is shown once they are.
        if (info.args === undefined || shownCalls.has(info.callId)) continue;
        shownCalls.add(info.callId);
        agentSection();
        out.push(`### ${info.title} (${info.toolId})`, "", fenced(JSON.stringify(info.args, null, 2), "json"), "");
      } else if (method === "event") {
        const event = args[1] as { type: string; path?: string; oldText?: string | null; newText?: string };
        if (event.type === "diff" && event.path !== undefined) {
          const patch = createTwoFilesPatch(event.path, event.path, event.oldText ?? "", event.newText ?? "", "", "", { context: 3 });
          out.push(fenced(patch.split("\n").slice(1).join("\n").trimEnd(), "diff"), "");
        }
      } else if (method === "done") {
        const envelope = args[1] as Envelope;
        out.push(resultLine(envelope), "");
      }
    }
  }
  return `${out.join("\n").trimEnd()}\n`;
}

function resultLine(envelope: Envelope): string {
  if (envelope.type === "error") {
    return `**Failed** (${envelope.metadata.error_code ?? "error"}): ${envelope.error_text}`;
  }
  const data = typeof envelope.data === "string" ? envelope.data : JSON.stringify(envelope.data, null, 2);
  const shown = data.length > RESULT_CHARS ? `${data.slice(0, RESULT_CHARS)}\n… (${data.length - RESULT_CHARS} more characters)` : data;
  return `Result:\n\n${fenced(shown, typeof envelope.data === "string" ? "" : "json")}`;
}

/** A fenced block whose fence is longer than any backtick run inside it. */
function fenced(text: string, language: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${language}\n${text}\n${fence}`;
}
