import type { AnyTool } from "../tool/define.js";
import type { LoadedSkill } from "../tool/services.js";
import type { ToolRegistry } from "../host/registry.js";
import type { PromptInput, SessionFrontEnd } from "./session/front-end.js";
import type { History } from "./turn/history.js";
import { turnModel } from "./model/model-config.js";
import type { SessionMcp } from "./session/mcp.js";
import { clearCommand, costCommand, modeCommand, modelCommand, type SettingHost } from "./setting-commands.js";
import { rulesNote } from "./session/policy.js";
import type { SessionTools, TrustAnswer } from "./session/tools.js";
import type { CompactionEvent, TurnStopReason } from "./turn/turn-types.js";

// The slash grammar and its meaning, shared by every front end: `/tool args`, `/help`, `/tools`, `/reload`;
// `/model`, `/mode`, `/cost`, `/clear` are agent/setting-commands.ts's.

/** The commands that are not tools, with what they do. */
export const BUILTIN_COMMANDS: readonly { name: string; description: string; hint?: string }[] = [
  { name: "tools", description: "List the tools of this session with their kinds" },
  { name: "reload", description: "Re-scan the tool folders and re-import extension tools" },
  { name: "help", description: "Every slash command, and how they run tools directly" },
  { name: "model", description: "Show the model and the choices; `/model ID` picks one", hint: "nothing, or provider/model" },
  {
    name: "mode",
    description: "Show the mode and the modes; `/mode ID` switches",
    hint: "nothing, or read-only / ask / accept-edits / full",
  },
  { name: "cost", description: "What this session has spent: cost, tokens, requests, tool calls" },
  { name: "clear", description: "Start a new conversation in this session (the clear hooks run)" },
  { name: "compact", description: "Summarize the conversation so far to free the model's context" },
  { name: "processes", description: "List this session's background processes (the process tool's)" },
  {
    name: "trust",
    description: "Load this project's own tools (.toolhost/tools/) for this session; `always` trusts the project",
    hint: "nothing, or always",
  },
  // The session's control commands (agent/rewind/commands.ts): not prompts, never recorded as one.
  {
    name: "rewind",
    description: "List the prompts to rewind to; `/rewind N` puts back the files and/or the conversation as they were before prompt N",
    hint: "nothing, or N [both|conversation|files] [dry-run] [force]",
  },
  {
    name: "undo",
    description: "Put back the files as they were before the last prompt that changed files",
    hint: "nothing, or dry-run / force",
  },
  { name: "fork", description: "Start a new session from here; this one stays as it is" },
  { name: "label", description: "Name this point of the session (toolhost sessions tree shows it)", hint: "a name" },
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
  | { type: "processes" }
  | { type: "model"; arg: string }
  | { type: "mode"; arg: string }
  | { type: "cost" }
  | { type: "clear" }
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
  if (name === "processes") return { type: "processes" };
  if (name === "model" || name === "mode") return { type: name, arg: rest };
  if (name === "cost" || name === "clear") return { type: name };
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
    "- `/model [ID]`, `/mode [ID]` — show or change the model, the mode; `/cost` — what the session spent; `/clear` — a new conversation",
    "- `/processes` — the session's background processes (`/process start <command line>` starts one)",
    "- `/trust` — load this project's own tools for this session (`/trust always`: in every session)",
    "- `/rewind` — the prompts so far; `/rewind N` puts back the files and/or the conversation as they were before prompt N; `/undo` — the files of the last prompt that changed files; `/fork` — a new session from here; `/label NAME` — name this point",
    "- `/<skill> [text]` — a model turn with an Agent Skill loaded (`toolhost skills` lists them)",
    "",
    "",
    "Commands:",
    ...BUILTIN_COMMANDS.map((c) => `- \`/${c.name}\` — ${c.description}`),
    "",
    `Tools: ${registry.ids().join(", ")}`,
  ].join("\n");
}

export function toolsText(registry: ToolRegistry): string {
  const rows = registry.list().map(({ tool, source }) => `| ${tool.id} | ${tool.kind} | ${source} | ${firstSentence(tool.description)} |`);
  return ["| tool | kind | source | what it does |", "|---|---|---|---|", ...rows].join("\n");
}

/** What the slash commands need of their session. */
export interface SlashHost {
  registry(): ToolRegistry;
  tools: SessionTools;
  mcp: SessionMcp;
  history: History;
  frontEnd: SessionFrontEnd;
  model(): string | undefined;
  /** Permission rules that could not be read (said after /reload). */
  permissionProblems(): readonly string[];
  /** Loads a skill, its folder then readable (the session's skill index). */
  loadSkill(name: string): Promise<LoadedSkill | undefined>;
  /** One tool call with its whole life reported to the front end. */
  callTool(toolId: string, args: unknown, signal: AbortSignal): Promise<unknown>;
  /** A model turn for a prompt. */
  modelTurn(input: PromptInput, signal: AbortSignal): Promise<TurnStopReason>;
  /** A compaction as the front end sees it. */
  compacted(event: CompactionEvent): Promise<void>;
  /** `/model`, `/mode`, `/cost`, `/clear` (agent/setting-commands.ts). */
  settings: SettingHost;
}

/** A session's slash commands: `/trust`, MCP prompts, built-in commands, skills and tools. */
export class SlashCommands {
  constructor(private readonly host: SlashHost) {}

  /**
   * A prompt before any model sees it (a `/trust` was taken before: agent/session/parsed-prompt.ts):
   * the trust question, then an MCP prompt or a slash command. null: a model turn.
   */
  async handle(input: PromptInput, signal: AbortSignal): Promise<TurnStopReason | null> {
    await this.askTrust(signal);
    return this.run(input, signal);
  }

  /**
   * `/trust` loads the project's own tools for this session, `/trust always` trusts the project
   * for good: the way back after "don't load" (or a failed question), and consent typed by the user.
   */
  async trust(arg: string): Promise<void> {
    const { tools, mcp, frontEnd } = this.host;
    if (arg !== "" && arg !== "always") {
      await frontEnd.say(
        "/trust takes nothing (this session) or `always` (this project from now on): `/trust` loads the project's .toolhost/tools/ for this session.",
      );
      return;
    }
    const report = tools.toolset.report;
    if (arg === "" && report.trusted) {
      await frontEnd.say("This project's tools are already loaded. `/trust always` loads them in every session from now on.");
      return;
    }
    if (arg === "" && !tools.hasUntrustedContent() && !mcp.projectWouldStart()) {
      await frontEnd.say("This project has no tools of its own (.toolhost/tools/) to load.");
      return;
    }
    const change = await tools.decideTrust(arg === "always" ? "always" : "session");
    mcp.projectTrusted();
    await frontEnd.say(
      arg === "always"
        ? `This project is trusted: its tools load in every session from now on (\`toolhost trust --revoke\` undoes it). ${change ?? ""}`.trim()
        : `The project's tools were loaded for this session. ${change ?? ""}`.trim(),
    );
    await frontEnd.commandsChanged?.();
  }

  /**
   * The first prompt in an untrusted project with its own tools asks whether to load them; headless
   * (no `askTrust`), nobody can consent and they stay unloaded.
   */
  private async askTrust(signal: AbortSignal): Promise<void> {
    const { tools, mcp, frontEnd } = this.host;
    const pending = tools.pendingTrust();
    if (!pending.length) return;
    let loaded = false;
    let decided = false;
    const decide = (answer: TrustAnswer) => {
      decided = true;
      loaded = answer !== "reject";
      return tools.decideTrust(answer);
    };
    try {
      // Headless, nobody can consent: the project's code stays unloaded.
      await (frontEnd.askTrust ? frontEnd.askTrust(pending, signal, decide) : decide("reject"));
    } catch (err) {
      if (decided) throw err;
      // A question that failed is a "no", said once, with the way back.
      await decide("reject");
      await frontEnd.say(
        `The project's tools were not loaded: asking about them failed (${err instanceof Error ? err.message : String(err)}). Type /trust to load them for this session.`,
      );
    }
    if (loaded) {
      await frontEnd.commandsChanged?.();
      mcp.projectTrusted();
    }
  }

  /** Runs a prompt that is a slash command (an MCP prompt, a built-in, a skill, a tool); null when it is none (a model turn). */
  private async run(input: PromptInput, signal: AbortSignal): Promise<TurnStopReason | null> {
    const { tools, mcp, frontEnd } = this.host;
    await mcp.settledFor(input.text, signal);
    const mcpPrompt = input.moreText ? null : mcp.parsePrompt(input.text);
    if (mcpPrompt)
      return mcp.promptTurn(mcpPrompt.prompt, mcpPrompt.rest, signal, (text) => this.host.modelTurn({ text, content: () => text }, signal));
    let slash;
    try {
      slash = parseSlash(
        input.text,
        this.host.registry(),
        tools.toolset.skills.skills.map((s) => s.name),
      );
    } catch (err) {
      // A shorthand that cannot make sense of its text says why.
      await frontEnd.say(err instanceof Error ? err.message : String(err));
      return "end_turn";
    }
    if (!slash) return null;
    if (input.moreText) {
      // Clients re-send a cancelled prompt together with the next one: run neither half as a guess.
      await frontEnd.say(
        "A slash command must be the only text in its prompt, and this prompt has more text after it. Nothing was run: send the slash command alone, then the rest as its own prompt.",
      );
      return "end_turn";
    }
    switch (slash.type) {
      case "help":
        await frontEnd.say(helpText(this.host.registry()));
        break;
      case "tools": {
        const servers = mcp.statusLines();
        await frontEnd.say([toolsText(this.host.registry()), ...(servers.length ? ["", "MCP servers:", ...servers] : [])].join("\n"));
        break;
      }
      case "reload":
        await frontEnd.say(
          `Tools reloaded. ${await tools.reload()}${rulesNote(this.host.permissionProblems())}${await mcp.restartFailed()}`,
        );
        await frontEnd.commandsChanged?.();
        break;
      case "invalid":
        await frontEnd.say(slash.message);
        break;
      case "compact":
        await this.compactNow(signal);
        break;
      case "model":
        await modelCommand(this.host.settings, slash.arg);
        break;
      case "mode":
        await modeCommand(this.host.settings, slash.arg);
        break;
      case "cost":
        await costCommand(this.host.settings);
        break;
      case "clear":
        await clearCommand(this.host.settings, signal);
        break;
      case "processes":
        // The process tool's list, reported like any call (it reads, so no mode asks).
        if (this.host.registry().has("process")) await this.host.callTool("process", { action: "list" }, signal);
        else await frontEnd.say("This session has no process tool (its profile leaves it out), so it runs no background processes.");
        break;
      case "skill":
        return this.skillTurn(slash.name, slash.args, signal);
      case "tool": {
        // `/read` alone: how to call it, rather than the schema's complaints.
        const tool = this.host.registry().get(slash.toolId);
        const usage = tool && /^\/\S+$/.test(input.text.trim()) ? usageText(tool) : null;
        if (usage) {
          await frontEnd.say(usage);
          break;
        }
        // A slash command's result is shown, not added to the model's history: the user ran it, not the model.
        await this.host.callTool(slash.toolId, slash.args, signal);
        break;
      }
    }
    return "end_turn";
  }

  /** `/<skill> [arguments]`: a model turn with the skill's instructions loaded, its folder readable. */
  private async skillTurn(name: string, args: string, signal: AbortSignal): Promise<TurnStopReason> {
    const skill = await this.host.loadSkill(name);
    if (!skill) {
      await this.host.frontEnd.say(`The skill "${name}" is gone (its SKILL.md was removed?): /reload re-reads the skill folders.`);
      return "end_turn";
    }
    const files = skill.files.length
      ? `\nIts folder ${skill.dir} also holds: ${skill.files.join(", ")}${skill.moreFiles ? ", …" : ""}.`
      : "";
    const text = [
      `The user ran /${name}${args ? ` ${args}` : ""}, which loads the skill "${name}". Follow its instructions.${files}`,
      `<skill name="${name}" dir="${skill.dir}">\n${skill.body}\n</skill>`,
      args ? `The user's arguments: ${args}` : "The user gave no arguments.",
    ].join("\n\n");
    return this.host.modelTurn({ text, content: () => text }, signal);
  }

  /** /compact: summarize the conversation now. */
  private async compactNow(signal: AbortSignal): Promise<void> {
    const { history, frontEnd } = this.host;
    if (history.length === 0) {
      await frontEnd.say("Nothing to compact yet.");
      return;
    }
    const model = turnModel(this.host.model());
    if ("help" in model) {
      await frontEnd.say(model.help);
      return;
    }
    const { runCompaction } = await import("./turn/turn.js");
    const problem = await runCompaction({ ...model, history, signal }, { compaction: (e) => this.host.compacted(e) });
    if (problem) await frontEnd.say(problem);
  }
}
