import { parseTrust } from "../commands.js";
import { parseControl, type ControlCommand } from "../rewind/commands.js";
import type { PromptInput } from "./front-end.js";

// A prompt's text is read once, where it enters the session (AgentSession.prompt); what kind of
// turn it makes flows one way from there. A slash command, an MCP prompt and a tool's shorthand are
// read later, when the turn runs: they name tools and servers as they are then (a `/trust` or a
// reload before it changes them).

export type ParsedPrompt =
  /** `/rewind`, `/undo`, `/fork`, `/label`: they move or name the session; not recorded as a prompt, no rewind point. */
  | { kind: "control"; command: ControlCommand; input: PromptInput }
  /** `/trust [always]`: consent typed by the user, taken before the trust question is asked. */
  | { kind: "trust"; arg: string; input: PromptInput }
  /** Anything else: a slash command, an MCP prompt or the model's turn. */
  | { kind: "prompt"; input: PromptInput };

/** What a prompt is. A prompt of more than one text block is never a command: which text it takes would be a guess. */
export function parsePrompt(input: PromptInput): ParsedPrompt {
  if (input.moreText) return { kind: "prompt", input };
  const command = parseControl(input.text);
  if (command) return { kind: "control", command, input };
  const trust = parseTrust(input.text);
  return trust === null ? { kind: "prompt", input } : { kind: "trust", arg: trust, input };
}
