import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import * as z from "zod";
import { loadAgents, stricterMode } from "../../src/agent/agents.js";
import { AgentSession, type SessionFrontEnd } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import type { ToolCallInfo } from "../../src/agent/turn/tool-runner.js";
import type { ToolEvent } from "../../src/tool/context.js";
import { defineTool } from "../../src/tool/define.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { startFakeAnthropic } from "../fixtures/fake-anthropic.mjs";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { sleepMarker, survivors, useAgentEnv } from "../helpers.js";

// The task tool: subagents started by the model, over a local OpenAI-compatible server.

const t = useAgentEnv({ files: { "src/a.ts": "export const a = 1;\n" }, userHome: {} });

interface Log {
  pending: ToolCallInfo[];
  done: Map<string, Envelope>;
  events: { callId: string; event: ToolEvent }[];
  text: string;
  costs: (number | undefined)[];
}

function frontEnd(): SessionFrontEnd & { log: Log } {
  const log: Log = { pending: [], done: new Map(), events: [], text: "", costs: [] };
  return {
    log,
    say: () => {},
    text: (delta) => {
      log.text += delta;
    },
    thought: () => {},
    usage: (report) => void log.costs.push(report.cost?.amount),
    pending: (info) => void log.pending.push(info),
    event: (callId, event) => void log.events.push({ callId, event }),
    running: () => {},
    done: (callId, envelope) => void log.done.set(callId, envelope),
  };
}

const toolResults = (body: FakeBody) => (body.messages ?? []).filter((m) => m.role === "tool");
const systemOf = (body: FakeBody) => String(body.messages?.find((m) => m.role === "system")?.content ?? "");
const toolNames = (body: FakeBody) => (body.tools ?? []).map((t) => t.function.name).sort();

async function withModel(route: (body: FakeBody) => FakeReply) {
  t.fake = await startFakeOpenAI({ fallback: route });
  process.env.TOOLHOST_MODEL = "openai-compatible/fake";
  process.env.TOOLHOST_BASE_URL = t.fake.url;
  return t.fake;
}

async function session(mode: "read-only" | "ask" | "full", fe = frontEnd()) {
  const tools = await SessionTools.create(resolveWorkspace(t.ws));
  return { s: new AgentSession({ tools, frontEnd: fe, mode }), fe };
}

const call = (name: string, args: unknown, id = name): FakeReply => ({
  toolCalls: [{ id, name, arguments: args }],
  finish: "tool_calls",
});

const resultText = (e: Envelope | undefined) => (e?.type === "output" ? String(e.data) : e?.type === "error" ? e.error_text : "");

describe("the task tool", () => {
  it("runs two children in parallel; the one that edits is refused what the parent's mode denies", async () => {
    const model = await withModel((body) => {
      const who = firstUserText(body);
      const results = toolResults(body);
      if (who.includes("Check both")) {
        if (!results.length)
          return {
            toolCalls: [
              { id: "t1", name: "task", arguments: { description: "Look around", prompt: "Child A: look" } },
              { id: "t2", name: "task", arguments: { description: "Change a.ts", prompt: "Child B: edit" } },
            ],
            finish: "tool_calls",
          };
        return { text: "Both children answered." };
      }
      if (who.includes("Child A")) return results.length ? { text: "A saw it." } : call("meet", {});
      if (results.length === 0) return call("meet", {});
      if (results.length === 1) return call("edit", { path: "src/a.ts", old_string: "1", new_string: "2" });
      return { text: `B: ${String(results[1]?.content)}` };
    });
    const { s, fe } = await session("read-only");
    // Each child waits here until both are in: only concurrent children get through.
    let arrived = 0;
    let release!: () => void;
    const together = new Promise<void>((resolve) => (release = resolve));
    s.registry.register(
      defineTool({
        id: "meet",
        kind: "read",
        description: "Waits for the other child",
        parameters: z.object({}),
        requires: {},
        execute: async () => {
          if (++arrived === 2) release();
          await Promise.race([together, new Promise((_, reject) => setTimeout(() => reject(new Error("alone")), 5000))]);
          return "met";
        },
      }),
    );
    expect(await s.prompt({ text: "Check both", content: () => "Check both" })).toBe("end_turn");
    expect(arrived).toBe(2);
    expect(fe.log.text).toBe("Both children answered.");
    // The parent is offered task; a general-purpose child gets the parent's tools without task.
    const childRequest = model.requests.find((r) => firstUserText(r.body).includes("Child A"))!;
    expect(toolNames(childRequest.body)).not.toContain("task");
    expect(toolNames(childRequest.body)).toContain("meet");
    const tasks = fe.log.pending.filter((p) => p.toolId === "task");
    // Announced with their arguments: each titled by its description.
    expect(tasks.map((t) => t.title)).toEqual(["Look around", "Change a.ts"]);
    const [a, b] = tasks.map((t) => t.callId) as [string, string];
    expect(resultText(fe.log.done.get(a))).toMatch(/^task_id: task_[0-9a-f]{8}\n\nA saw it\.$/);
    // The edit never ran: the read-only mode denies it in the child as in the parent.
    expect(resultText(fe.log.done.get(b))).toMatch(/B: .*(denied|read-only)/i);
    expect(await fsp.readFile(path.join(t.ws, "src/a.ts"), "utf8")).toBe("export const a = 1;\n");
    // The children's calls name their task call; the task call shows them as progress lines.
    const edit = fe.log.pending.find((p) => p.toolId === "edit")!;
    expect(edit.parentCallId).toBe(b);
    expect(
      fe.log.pending
        .filter((p) => p.toolId === "meet")
        .map((p) => p.parentCallId)
        .sort(),
    ).toEqual([a, b].sort());
    const progress = fe.log.events.filter((e) => e.callId === b && e.event.type === "progress").at(-1)?.event;
    expect(progress?.type === "progress" && progress.lines).toEqual([
      expect.stringMatching(/ — completed$/),
      expect.stringMatching(/^Edit src\/a\.ts.* — failed$/),
    ]);
  });

  it("continues a child's conversation with its task_id", async () => {
    let taskId = "";
    const model = await withModel((body) => {
      const who = firstUserText(body);
      const results = toolResults(body);
      if (who.includes("Delegate twice")) {
        if (results.length === 0) return call("task", { description: "First", prompt: "Remember 42" }, "t1");
        if (results.length === 1) {
          taskId = /task_id: (\S+)/.exec(String(results[0]?.content))?.[1] ?? "";
          return call("task", { description: "Again", prompt: "What did I ask?", task_id: taskId }, "t2");
        }
        return { text: "done" };
      }
      const users = (body.messages ?? []).filter((m) => m.role === "user").length;
      return { text: users === 1 ? "Remembered." : "You asked me to remember 42." };
    });
    const { s, fe } = await session("ask");
    await s.prompt({ text: "Delegate twice", content: () => "Delegate twice" });
    expect(taskId).toMatch(/^task_/);
    const second = model.requests.find((r) => (r.body.messages ?? []).some((m) => m.content === "What did I ask?"))!;
    // The child's own history: its first prompt and answer, then the new prompt.
    expect(second.body.messages?.filter((m) => m.role !== "system").map((m) => [m.role, m.content])).toEqual([
      ["user", "Remember 42"],
      ["assistant", "Remembered."],
      ["user", "What did I ask?"],
    ]);
    const results = [...fe.log.done.values()].map(resultText);
    expect(results[1]).toBe(`task_id: ${taskId}\n\nYou asked me to remember 42.`);
  });

  it("refuses an unknown agent or task id, naming the valid ones", async () => {
    await withModel((body) => {
      const results = toolResults(body);
      if (results.length === 0) return call("task", { description: "x", prompt: "y", agent: "nobody" }, "t1");
      if (results.length === 1) return call("task", { description: "x", prompt: "y", task_id: "task_nothere" }, "t2");
      return { text: "ok" };
    });
    await fsp.mkdir(path.join(t.home, "agents"), { recursive: true });
    await fsp.writeFile(path.join(t.home, "agents", "reviewer.md"), "---\nname: reviewer\ndescription: Reviews code\n---\nReview.\n");
    const { s, fe } = await session("ask");
    await s.prompt({ text: "go", content: () => "go" });
    const [unknown, missing] = [...fe.log.done.values()];
    expect(unknown?.type === "error" && unknown.metadata.error_code).toBe("invalid_arguments");
    expect(resultText(unknown)).toBe('Unknown agent "nobody". Valid agents: general-purpose, reviewer.');
    expect(resultText(missing)).toMatch(/There is no task task_nothere in this session/);
  });

  it("runs an agent file: its instructions, its narrower tools and a stricter mode, never a wider one", async () => {
    await fsp.mkdir(path.join(t.home, "agents"), { recursive: true });
    await fsp.writeFile(
      path.join(t.home, "agents", "looker.md"),
      "---\nname: looker\ndescription: Looks only\ntools: [read, grep, bash]\nmode: read-only\nmodel: openai-compatible/looker-model\n---\nYou only look.\n",
    );
    await fsp.writeFile(path.join(t.home, "agents", "wide.md"), "---\nname: wide\ndescription: Wants full\nmode: full\n---\n");
    const model = await withModel((body) => {
      const who = firstUserText(body);
      const results = toolResults(body);
      if (who === "go") {
        if (results.length === 0) return call("task", { description: "Look", prompt: "look at it", agent: "looker" }, "t1");
        if (results.length === 1) return call("task", { description: "Wide", prompt: "write it", agent: "wide" }, "t2");
        return { text: "ok" };
      }
      if (who === "write it")
        return results.length ? { text: String(results[0]?.content) } : call("write", { path: "new.txt", content: "x" });
      return { text: "looked" };
    });
    const { s, fe } = await session("ask");
    const tools = await s.prompt({ text: "go", content: () => "go" });
    expect(tools).toBe("end_turn");
    const looker = model.requests.find((r) => firstUserText(r.body) === "look at it")!;
    // bash is listed by the agent but hidden by its read-only mode; task is not listed.
    expect(toolNames(looker.body)).toEqual(["grep", "read"]);
    expect(systemOf(looker.body)).toContain("You only look.");
    // The agent's model, on the same provider; the parent keeps its own.
    expect(looker.body.model).toBe("looker-model");
    expect(model.requests[0]?.body.model).toBe("fake");
    // "mode: full" under an ask parent stays ask: headless, the write is refused, not run.
    const [, wide] = [...fe.log.done.entries()].filter(([, e]) => e).map(([, e]) => e);
    expect(resultText(wide)).not.toMatch(/^task_id: .*\n\n.*wrote/i);
    await expect(fsp.stat(path.join(t.ws, "new.txt"))).rejects.toThrow();
    expect(stricterMode("ask", "full")).toBe("ask");
    expect(stricterMode("full", "read-only")).toBe("read-only");
  });

  it("lists agents in its description; project files only when trusted; bad files are reported, not fatal", async () => {
    const write = async (file: string, text: string) => {
      await fsp.mkdir(path.dirname(file), { recursive: true });
      await fsp.writeFile(file, text);
    };
    await write(path.join(t.home, "agents", "alpha.md"), "---\ndescription: Alpha from toolhost home\n---\n");
    await write(path.join(t.home, "agents", "broken.md"), "---\nname: [oops\n---\n");
    await write(path.join(t.home, "agents", "nodesc.md"), "---\nname: nodesc\n---\n");
    await write(path.join(t.ws, ".toolhost", "agents", "alpha.md"), "---\ndescription: Alpha from the project\n---\n");
    await write(path.join(t.ws, ".toolhost", "agents", "proj.md"), "---\ndescription: Project agent\n---\n");
    await write(path.join(t.ws, ".claude", "agents", "claude-proj.md"), "---\nname: cp\ndescription: Claude project agent\n---\n");
    await write(path.join(t.userHome, ".claude", "agents", "mine.md"), "---\nname: mine\ndescription: From ~/.claude\n---\n");

    const untrusted = await loadAgents(t.ws, false);
    expect(untrusted.agents.map((a) => `${a.name}: ${a.description}`)).toEqual([
      expect.stringMatching(/^general-purpose: /),
      "alpha: Alpha from toolhost home",
      "mine: From ~/.claude",
    ]);
    expect(untrusted.problems).toEqual([
      expect.stringMatching(/broken\.md: the front matter is not valid YAML/),
      expect.stringMatching(/nodesc\.md: `description`/),
    ]);
    const trusted = await loadAgents(t.ws, true);
    // First found wins: the toolhost home's alpha shadows the project's.
    expect(trusted.agents.map((a) => a.name)).toEqual(["general-purpose", "alpha", "proj", "cp", "mine"]);
    expect(trusted.agents.find((a) => a.name === "alpha")?.description).toBe("Alpha from toolhost home");

    // The session (an untrusted project) offers task with the agents it may run.
    const { s } = await session("ask");
    const task = (await s.declarations()).find((d) => d.id === "task")!;
    expect(task.description).toMatch(/\nAgents:\n- general-purpose: .*\n- alpha: Alpha from toolhost home\n- mine: From ~\/\.claude$/);
  });

  it("gives a child task only when its agent lists it, and never beyond the depth limit", async () => {
    await fsp.mkdir(path.join(t.home, "agents"), { recursive: true });
    await fsp.writeFile(path.join(t.home, "agents", "boss.md"), "---\nname: boss\ndescription: Delegates\ntools: [task, read]\n---\n");
    const model = await withModel((body) => {
      const results = toolResults(body);
      const depth = Number(/depth (\d)/.exec(firstUserText(body))?.[1] ?? 0);
      if (results.length === 0 && toolNames(body).includes("task"))
        return call("task", { description: "Deeper", prompt: `depth ${depth + 1}`, agent: "boss" }, `t${depth}`);
      return { text: `answer at ${depth}` };
    });
    const { s } = await session("ask");
    await s.prompt({ text: "depth 0", content: () => "depth 0" });
    // Parent (0) and children 1, 2 are offered task; the child at depth 3 is not.
    const offered = model.requests.filter((r) => toolResults(r.body).length === 0).map((r) => [firstUserText(r.body), toolNames(r.body)]);
    expect(offered).toEqual([
      ["depth 0", expect.arrayContaining(["task", "bash"])],
      ["depth 1", ["read", "task"]],
      ["depth 2", ["read", "task"]],
      ["depth 3", ["read"]],
    ]);
  });

  it("asks the parent's person about a child's call, saying which subagent asks", async () => {
    await withModel((body) => {
      const results = toolResults(body);
      if (firstUserText(body) === "go")
        return results.length ? { text: "ok" } : call("task", { description: "Bump a", prompt: "bump it" }, "t1");
      return results.length ? { text: "bumped" } : call("edit", { path: "src/a.ts", old_string: "= 1", new_string: "= 2" });
    });
    const asked: string[] = [];
    const fe = frontEnd();
    fe.approve = async (request) => {
      asked.push(`${request.call.tool.id}: ${request.why}`);
      return "allow_once";
    };
    const { s } = await session("ask", fe);
    await s.prompt({ text: "go", content: () => "go" });
    expect(asked).toEqual([expect.stringMatching(/^edit: .*; asked by the subagent "Bump a" \(agent general-purpose\)$/)]);
    expect(await fsp.readFile(path.join(t.ws, "src/a.ts"), "utf8")).toBe("export const a = 2;\n");
  });

  it("counts a child's cost in the parent's usage", async () => {
    const anthropic = await startFakeAnthropic([
      { toolUse: { name: "task", input: { description: "Look", prompt: "look" } } },
      { text: "Looked." },
      { text: "Done." },
    ]);
    try {
      await fsp.writeFile(
        path.join(t.home, "config.json"),
        JSON.stringify({
          model: "anthropic/claude-sonnet-4-5",
          providers: { anthropic: { apiKey: "sk-ant-test", baseURL: anthropic.url } },
        }),
      );
      const { s, fe } = await session("ask");
      expect(await s.prompt({ text: "go", content: () => "go" })).toBe("end_turn");
      expect(anthropic.requests).toHaveLength(3);
      // Each request as the (caching) server billed it, at Sonnet 4.5's prices: $3/M input, $3.75/M
      // written to the cache, $0.30/M read from it, $15/M output (12 tokens); the child's two
      // requests count in the parent's running cost.
      let total = 0;
      const expected = anthropic.requests.map(({ usage }) => {
        total += (usage.input_tokens * 3 + usage.cache_creation_input_tokens * 3.75 + usage.cache_read_input_tokens * 0.3 + 12 * 15) / 1e6;
        return Math.round(total * 1e6) / 1e6;
      });
      expect(fe.log.costs).toEqual(expected);
      expect(anthropic.requests.some((r) => r.usage.cache_read_input_tokens > 0)).toBe(true);
    } finally {
      await anthropic.close();
    }
  });

  it("cancelling the parent cancels every child and kills what they started", async () => {
    const marker = sleepMarker();
    await withModel((body) => {
      const who = firstUserText(body);
      if (who === "go")
        return {
          toolCalls: [
            { id: "t1", name: "task", arguments: { description: "Sleep 1", prompt: "sleep one" } },
            { id: "t2", name: "task", arguments: { description: "Sleep 2", prompt: "sleep two" } },
          ],
          finish: "tool_calls",
        };
      return call("bash", { command: `sleep ${marker}` });
    });
    await fsp.mkdir(path.join(t.home, "agents"), { recursive: true });
    const { s, fe } = await session("full");
    const turn = s.prompt({ text: "go", content: () => "go" });
    // Both children's commands are running (each may be a shell and its sleep).
    await waitFor(async () => fe.log.pending.filter((p) => p.toolId === "bash").length === 2);
    await waitFor(async () => (await survivors(`sleep ${marker}`)).length >= 2);
    s.cancel();
    expect(await turn).toBe("cancelled");
    await waitFor(async () => (await survivors(`sleep ${marker}`)).length === 0);
    const tasks = fe.log.pending.filter((p) => p.toolId === "task").map((p) => fe.log.done.get(p.callId));
    expect(tasks.map((e) => e?.type)).toEqual(["error", "error"]);
  });
});

async function waitFor(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 50));
  }
}
