import * as fsp from "node:fs/promises";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { AgentSession, type SessionFrontEnd } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { defineTool } from "../../src/tool/define.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { ToolError } from "../../src/tool/errors.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { useAgentEnv } from "../helpers.js";

// The agent session with no editor: slash commands, the model turn against a local
// OpenAI-compatible server, the tools it offers, and the services tools reach through ctx.host.

const t = useAgentEnv({ files: { "src/a.ts": "export const a = 1; // TODO: rename\n" } });

interface Recorded {
  said: string[];
  text: string;
  done: Map<string, Envelope>;
  pending: string[];
  commandsChanged: number;
}

function frontEnd(extra: Partial<SessionFrontEnd> = {}): SessionFrontEnd & { log: Recorded } {
  const log: Recorded = { said: [], text: "", done: new Map(), pending: [], commandsChanged: 0 };
  return {
    log,
    say: (text) => void log.said.push(text),
    text: (delta) => {
      log.text += delta;
    },
    thought: () => {},
    usage: () => {},
    pending: (info) => void log.pending.push(`${info.callId} ${info.toolId}`),
    event: () => {},
    running: () => {},
    done: (callId, envelope) => void log.done.set(callId, envelope),
    commandsChanged: () => {
      log.commandsChanged += 1;
    },
    ...extra,
  };
}

async function session(fe = frontEnd(), mode = "ask") {
  const tools = await SessionTools.create(resolveWorkspace(t.ws));
  const s = new AgentSession({ tools, frontEnd: fe, mode: mode as "ask" });
  return { s, fe };
}

const toolNames = (request: { body: { tools?: { function: { name: string } }[] } } | undefined) =>
  (request?.body.tools ?? []).map((t) => t.function.name).sort();

async function withModel(script: Parameters<typeof startFakeOpenAI>[0]) {
  t.fake = await startFakeOpenAI(script);
  process.env.TOOLHOST_MODEL = "openai-compatible/fake";
  process.env.TOOLHOST_BASE_URL = t.fake.url;
  return t.fake;
}

describe("slash commands", () => {
  it("runs a tool, says help and the tool list, and reports a reload", async () => {
    const { s, fe } = await session();
    expect(await s.prompt({ text: "/grep TODO", content: () => "" })).toBe("end_turn");
    const [envelope] = fe.log.done.values();
    expect(envelope?.type).toBe("output");
    await s.prompt({ text: "/help", content: () => "" });
    await s.prompt({ text: "/tools", content: () => "" });
    await s.prompt({ text: "/reload", content: () => "" });
    expect(fe.log.said[0]).toMatch(/Slash commands run a tool directly/);
    expect(fe.log.said[1]).toMatch(/\| grep \| search \| builtin \|/);
    expect(fe.log.said[2]).toMatch(/^Tools reloaded/);
    expect(fe.log.commandsChanged).toBe(1);
  });

  it("asks nobody when headless: a call that needs approval is refused", async () => {
    const { s, fe } = await session(frontEnd(), "ask");
    await s.prompt({ text: "/bash touch made", content: () => "" });
    const [envelope] = fe.log.done.values();
    expect(envelope?.type === "error" && envelope.metadata.error_code).toBe("permission_denied");
    await expect(fsp.access(`${t.ws}/made`)).rejects.toThrow();
  });

  it("an 'always' answer is a session rule among the rules in force", async () => {
    let asked = 0;
    const { s } = await session(
      frontEnd({
        approve: async (request) => {
          asked += 1;
          expect(request.why).toBe("no rule matched; ask mode asks before running commands");
          return "allow_always";
        },
      }),
      "ask",
    );
    await s.prompt({ text: "/bash touch made", content: () => "" });
    await s.prompt({ text: "/bash touch made", content: () => "" });
    expect(asked).toBe(1);
    expect(s.policy.rulesInForce.filter((r) => r.source === "session")).toEqual([
      { permission: "bash", pattern: "touch made", action: "allow", source: "session" },
      { permission: "bash", pattern: "touch made *", action: "allow", source: "session" },
    ]);
    await fsp.access(`${t.ws}/made`);
  });

  it("an approval callback that throws counts as a reject: nothing runs", async () => {
    let asked = 0;
    const { s, fe } = await session(
      frontEnd({
        approve: async () => {
          asked += 1;
          throw new Error("the approval UI crashed");
        },
      }),
      "ask",
    );
    await s.prompt({ text: "/bash touch made", content: () => "" });
    await s.prompt({ text: '/write {"path":"written.txt","content":"x"}', content: () => "" });
    expect(asked).toBe(2);
    for (const envelope of fe.log.done.values()) {
      expect(envelope.type === "error" && envelope.metadata.error_code).toBe("rejected");
    }
    await expect(fsp.access(`${t.ws}/made`)).rejects.toThrow();
    await expect(fsp.access(`${t.ws}/written.txt`)).rejects.toThrow();
  });

  it("a trust question that throws leaves the project's tools unloaded, and /trust loads them after", async () => {
    await fsp.mkdir(`${t.ws}/.toolhost/tools`, { recursive: true });
    await fsp.writeFile(
      `${t.ws}/.toolhost/tools/mine.ts`,
      `import { defineTool, z } from "toolhost";
export default defineTool({ id: "mine", description: "Mine", kind: "read", parameters: z.object({}), requires: {}, async execute() { return "mine ran"; } });
`,
    );
    let asked = 0;
    const { s, fe } = await session(
      frontEnd({
        askTrust: async () => {
          asked += 1;
          throw new Error("the trust UI crashed");
        },
      }),
    );
    expect(await s.prompt({ text: "/tools", content: () => "" })).toBe("end_turn");
    expect(s.registry.has("mine")).toBe(false);
    expect(fe.log.said[0]).toMatch(/tools were not loaded: asking about them failed \(the trust UI crashed\)[\s\S]*\/trust/);
    expect(fe.log.said[1]).toMatch(/\| grep \| search \| builtin \|/);
    await s.prompt({ text: "/tools", content: () => "" });
    expect(asked).toBe(1);
    expect(s.registry.has("mine")).toBe(false);
    await s.prompt({ text: "/trust", content: () => "" });
    expect(s.registry.has("mine")).toBe(true);
    expect(fe.log.said.at(-1)).toMatch(/loaded for this session/);
  });

  it("without a model, answers how to configure one", async () => {
    const { s, fe } = await session();
    expect(await s.prompt({ text: "hello", content: () => "hello" })).toBe("end_turn");
    expect(fe.log.said.join("")).toMatch(/TOOLHOST_MODEL/);
  });
});

describe("what the model is offered", () => {
  it("declares only what the mode lets run, with each tool's own description", async () => {
    const model = await withModel({ fallback: { text: "ok" } });
    const { s } = await session(frontEnd(), "read-only");
    s.registry.register(
      defineTool({
        id: "lister",
        kind: "read",
        description: "static",
        describe: ({ host }) =>
          `Knows: ${host.tools
            ?.list()
            .map((t) => t.id)
            .join(", ")}`,
        parameters: z.object({}),
        requires: {},
        execute: async () => "",
      }),
    );
    await s.prompt({ text: "hi", content: () => "hi" });
    // Read-only mode offers what changes nothing: reads, searches, fetches (each asked about), plans, skills and questions to the user.
    expect(toolNames(model.requests[0])).toEqual([
      "glob",
      "grep",
      "lister",
      "lsp",
      "question",
      "read",
      "skill",
      "task",
      "todo",
      "web_fetch",
    ]);
    const lister = model.requests[0]?.body.tools?.find((t) => t.function.name === "lister");
    expect(lister?.function.description).toBe("Knows: read, glob, grep, todo, task, question, web_fetch, skill, tool_search, lsp, lister");

    s.setMode("ask");
    await s.prompt({ text: "again", content: () => "again" });
    expect(toolNames(model.requests[1])).toEqual([
      "bash",
      "edit",
      "glob",
      "grep",
      "lister",
      "lsp",
      "process",
      "question",
      "read",
      "skill",
      "task",
      "todo",
      "web_fetch",
      "write",
    ]);
  });
});

describe("host services", () => {
  it("lists the session's tools in the tool index; locked tools are never search results", async () => {
    const { s } = await session();
    const index = s.services().tools;
    expect(index?.list().map((t) => t.id)).toContain("bash");
    expect(await index?.search("run a shell command")).toEqual([]);
  });

  it("runs a subagent: a child turn with read-only tools whose answer comes back to the tool", async () => {
    const model = await withModel({
      script: [
        { toolCalls: [{ id: "c1", name: "delegate", arguments: { prompt: "Find the TODO" } }], finish: "tool_calls" },
        { toolCalls: [{ id: "c2", name: "grep", arguments: { pattern: "TODO" } }], finish: "tool_calls" },
        { text: "It is in src/a.ts, line 1." },
        { text: "The subagent found it." },
      ],
    });
    const fe = frontEnd();
    const { s } = await session(fe, "full");
    s.registry.register(
      defineTool({
        id: "delegate",
        kind: "other",
        description: "Ask a subagent",
        parameters: z.object({ prompt: z.string() }),
        requires: {},
        execute: async (args, ctx) => {
          if (!ctx.host.subagents) throw new ToolError("unavailable", "no subagents here");
          return (await ctx.host.subagents.run({ prompt: args.prompt, description: "find" }, ctx.signal)).text;
        },
      }),
    );
    expect(await s.prompt({ text: "Where is the TODO?", content: () => "Where is the TODO?" })).toBe("end_turn");
    expect(model.requests).toHaveLength(4);
    // The child is offered the parent's read-only tools only, and starts from its own prompt.
    expect(toolNames(model.requests[1])).toEqual(["glob", "grep", "lsp", "read", "skill", "todo", "web_fetch"]);
    expect(model.requests[1]?.body.messages?.filter((m) => m.role === "user").map((m) => m.content)).toEqual(["Find the TODO"]);
    // The child's call shows in the parent's view, and its answer is the delegate call's result.
    expect(fe.log.pending).toEqual(["call_1 delegate", "call_2 grep"]);
    const result = fe.log.done.get("call_1");
    expect(result?.type === "output" && result.data).toBe("It is in src/a.ts, line 1.");
    expect(fe.log.text).toBe("The subagent found it.");
  });

  it("nests subagents only so deep", async () => {
    await withModel({
      script: [
        { toolCalls: [{ id: "c1", name: "delegate", arguments: { prompt: "level 1" } }], finish: "tool_calls" },
        { toolCalls: [{ id: "c2", name: "delegate", arguments: { prompt: "level 2" } }], finish: "tool_calls" },
        { toolCalls: [{ id: "c3", name: "delegate", arguments: { prompt: "level 3" } }], finish: "tool_calls" },
        { toolCalls: [{ id: "c4", name: "probe", arguments: {} }], finish: "tool_calls" },
        { text: "deepest" },
        { text: "deep" },
        { text: "middle" },
        { text: "top" },
      ],
    });
    const { s } = await session(frontEnd(), "full");
    const seen: boolean[] = [];
    s.registry.register(
      defineTool({
        id: "delegate",
        kind: "read",
        description: "Ask a subagent that may delegate again",
        parameters: z.object({ prompt: z.string() }),
        requires: {},
        execute: async (args, ctx) => {
          if (!ctx.host.subagents) throw new ToolError("unavailable", "no subagents here");
          return (await ctx.host.subagents.run({ prompt: args.prompt, description: "nest", tools: ["delegate", "probe"] }, ctx.signal))
            .text;
        },
      }),
    );
    s.registry.register(
      defineTool({
        id: "probe",
        kind: "read",
        description: "Says whether subagents are offered here",
        parameters: z.object({}),
        requires: {},
        execute: async (_args, ctx) => {
          seen.push(ctx.host.subagents !== undefined);
          return "";
        },
      }),
    );
    expect(s.services().subagents).toBeDefined();
    await s.prompt({ text: "go", content: () => "go" });
    // Three levels of subagents (MAX_SUBAGENT_DEPTH); the innermost is offered none.
    expect(seen).toEqual([false]);
  });
});
