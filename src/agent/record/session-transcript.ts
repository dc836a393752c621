import { createTwoFilesPatch } from "diff";
import type { Envelope } from "../../tool/envelope.js";
import { SessionTree, type EntryOf } from "./session-format.js";
import type { StoredSession } from "./session-store.js";

/** How much of a call's result a transcript shows. */
const RESULT_CHARS = 2000;

/**
 * A stored session as a readable Markdown transcript, along the path to its current position: each
 * prompt, the agent's text, every tool call with its input, its diffs and (the head of) its result,
 * and the agent's own messages.
 */
export function transcriptMarkdown(session: StoredSession): string {
  const path = new SessionTree(session.entries).pathTo();
  const title = path.findLast((e): e is EntryOf<"title"> => e.type === "title")?.title;
  const out: string[] = [`# ${title ?? `Session ${session.header.id}`}`, "", `- Session: ${session.header.id}`];
  out.push(`- Folder: ${session.header.cwd}`, `- Started: ${session.header.created}`, "");
  let speaker: "user" | "agent" | null = null;
  const shownCalls = new Set<string>();
  const agentSection = () => {
    if (speaker !== "agent") out.push("## toolhost", "");
    speaker = "agent";
  };
  for (const entry of path) {
    switch (entry.type) {
      case "user":
        if (!entry.text) break;
        out.push("## You", "", entry.text.trim(), "");
        speaker = "user";
        break;
      case "setting":
        out.push(`*${entry.name} set to ${entry.value}*`, "");
        break;
      case "agent_text":
        agentSection();
        out.push(entry.text.trim(), "");
        break;
      case "notice":
        agentSection();
        out.push(...entry.text.split("\n").map((line) => `> ${line}`), "");
        break;
      case "tool_pending":
      case "tool_call": {
        const { info } = entry;
        // A model's call is announced before its arguments are complete: it is shown once they are.
        if (info.args === undefined || shownCalls.has(info.callId)) break;
        shownCalls.add(info.callId);
        agentSection();
        out.push(`### ${info.title} (${info.toolId})`, "", fenced(JSON.stringify(info.args, null, 2), "json"), "");
        break;
      }
      case "tool_event": {
        const event = entry.event as { type: string; path?: string; oldText?: string | null; newText?: string };
        if (event.type === "diff" && event.path !== undefined) {
          const patch = createTwoFilesPatch(event.path, event.path, event.oldText ?? "", event.newText ?? "", "", "", { context: 3 });
          out.push(fenced(patch.split("\n").slice(1).join("\n").trimEnd(), "diff"), "");
        }
        break;
      }
      case "tool_result":
        out.push(resultLine(entry.envelope), "");
        break;
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
