import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SessionBudget, sessionLimits, type BudgetHost } from "../../src/agent/session/budget.js";
import type { Confirmation } from "../../src/agent/session/front-end.js";
import { AgentSession, type SessionFrontEnd } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { newMeter } from "../../src/agent/turn/turn-types.js";
import { mergeBudget, readProjectBudget, type SessionLimits } from "../../src/config/budget.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { trust } from "../../src/host/trust.js";
import type { ModeId } from "../../src/policy/modes.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { useAgentEnv } from "../helpers.js";

// A session's budget (issue 24 §2): where its limits come from, and what happens at each cap.

const t = useAgentEnv({ files: { "src/a.ts": "export const a = 1;\n" }, userHome: {} });

describe("the limits in force", () => {
  const user = { file: "/u/config.json", limits: { maxCostUsd: 10, maxTurns: 100, maxToolCalls: 50 } };

  it("the user's, replaced by the profile's, replaced by the flags; each names where it was set", () => {
    const { limits, warnings } = mergeBudget({
      user,
      profile: { file: "/p/profile.json", limits: { maxTurns: 20, warnAtUsd: 2 } },
      flags: { maxToolCalls: 3 },
    });
    expect(warnings).toEqual([]);
    expect(limits).toEqual({
      maxCostUsd: { value: 10, source: "budget.maxCostUsd in /u/config.json" },
      maxTurns: { value: 20, source: "budget.maxTurns in /p/profile.json" },
      warnAtUsd: { value: 2, source: "budget.warnAtUsd in /p/profile.json" },
      maxToolCalls: { value: 3, source: "--max-tool-calls", flag: true },
    });
  });

  it("a project may only lower them (or set one where none is): a higher value is ignored with one line", () => {
    const { limits, warnings } = mergeBudget({
      user,
      flags: { maxToolCalls: 5 },
      project: { file: "/w/.toolhost/config.json", limits: { maxCostUsd: 2, maxTurns: 500, maxToolCalls: 9, maxTokens: 1000 } },
    });
    expect(limits.maxCostUsd).toEqual({ value: 2, source: "budget.maxCostUsd in /w/.toolhost/config.json" });
    expect(limits.maxTurns).toEqual({ value: 100, source: "budget.maxTurns in /u/config.json" });
    expect(limits.maxToolCalls).toEqual({ value: 5, source: "--max-tool-calls", flag: true });
    expect(limits.maxTokens).toEqual({ value: 1000, source: "budget.maxTokens in /w/.toolhost/config.json" });
    expect(warnings).toEqual([
      "/w/.toolhost/config.json: budget.maxTurns 500 is ignored: a project may only lower a budget, and budget.maxTurns in /u/config.json sets 100.",
      "/w/.toolhost/config.json: budget.maxToolCalls 9 is ignored: a project may only lower a budget, and --max-tool-calls sets 5.",
    ]);
  });

  it("a session reads the user's config, its profile and a trusted project's file (never an untrusted one's)", async () => {
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ budget: { maxCostUsd: 5, maxToolCalls: 40 } }));
    const profileDir = path.join(t.home, "profiles", "lean");
    await fsp.mkdir(profileDir, { recursive: true });
    await fsp.writeFile(
      path.join(profileDir, "profile.json"),
      JSON.stringify({ name: "lean", description: "A lean profile", budget: { maxToolCalls: 30, maxTurns: 12 } }),
    );
    await fsp.mkdir(path.join(t.ws, ".toolhost"));
    await fsp.writeFile(path.join(t.ws, ".toolhost", "config.json"), JSON.stringify({ budget: { maxCostUsd: 1, maxTurns: 99 } }));
    const workspace = resolveWorkspace(t.ws);

    const untrusted = sessionLimits(await SessionTools.create(workspace, { profile: "lean" }))();
    expect(untrusted.warnings).toEqual([]);
    expect(untrusted.limits).toEqual({
      maxCostUsd: { value: 5, source: `budget.maxCostUsd in ${path.join(t.home, "config.json")}` },
      maxToolCalls: { value: 30, source: `budget.maxToolCalls in ${path.join(profileDir, "profile.json")}` },
      maxTurns: { value: 12, source: `budget.maxTurns in ${path.join(profileDir, "profile.json")}` },
    });

    await trust(workspace);
    const projectFile = path.join(t.ws, ".toolhost", "config.json");
    const trusted = sessionLimits(await SessionTools.create(workspace, { profile: "lean" }), { maxToolCalls: 7 })();
    expect(trusted.limits).toEqual({
      maxCostUsd: { value: 1, source: `budget.maxCostUsd in ${projectFile}` },
      maxToolCalls: { value: 7, source: "--max-tool-calls", flag: true },
      maxTurns: { value: 12, source: `budget.maxTurns in ${path.join(profileDir, "profile.json")}` },
    });
    expect(trusted.warnings).toEqual([
      `${projectFile}: budget.maxTurns 99 is ignored: a project may only lower a budget, and budget.maxTurns in ${path.join(profileDir, "profile.json")} sets 12.`,
    ]);
  });

  it("a project's budget that cannot be used is reported, and ignored", async () => {
    await fsp.mkdir(path.join(t.ws, ".toolhost"));
    const file = path.join(t.ws, ".toolhost", "config.json");
    await fsp.writeFile(file, JSON.stringify({ budget: { maxTurns: -1, extra: true } }));
    const read = readProjectBudget(t.ws);
    expect(read.source).toEqual({ limits: undefined, file });
    expect(read.problem).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: budget is ignored: .*maxTurns`));
    await fsp.writeFile(file, JSON.stringify({ permissions: [] }));
    expect(readProjectBudget(t.ws)).toEqual({ source: { limits: undefined, file } });
  });
});

/** A budget over a meter the test moves, with a front end that records what is said and asked. */
function budgetOf(limits: SessionLimits, options: { mode?: ModeId; answers?: boolean[]; warnings?: string[] } = {}) {
  const said: string[] = [];
  const asked: Confirmation[] = [];
  const answers = [...(options.answers ?? [])];
  const meter = newMeter();
  const host: BudgetHost = {
    meter,
    limits: () => ({ limits, warnings: options.warnings ?? [] }),
    mode: () => options.mode ?? "ask",
    frontEnd: {
      say: (text) => void said.push(text),
      ...(options.answers ? { confirm: async (q: Confirmation) => (asked.push(q), answers.shift() ?? false) } : {}),
    },
  };
  return { budget: new SessionBudget(host), meter, said, asked };
}

const signal = new AbortController().signal;
const priced = { modelId: "anthropic/claude-sonnet-4-5", priced: true };

describe("a session's budget", () => {
  it("warns once at the warning line", async () => {
    const { budget, meter, said } = budgetOf({ warnAtUsd: { value: 1, source: "budget.warnAtUsd in c" } });
    meter.amount = 0.5;
    await budget.afterRequest();
    expect(said).toEqual([]);
    meter.amount = 1.25;
    await budget.afterRequest();
    meter.amount = 3;
    await budget.afterRequest();
    expect(said).toEqual(["The session has cost $1.25, past its warning line of $1.00 (budget.warnAtUsd in c)."]);
  });

  it("stops at each cap, saying which, how much and how to raise it; under it, nothing", async () => {
    const { budget, meter, said } = budgetOf(
      {
        maxTurns: { value: 3, source: "budget.maxTurns in c" },
        maxToolCalls: { value: 2, source: "--max-tool-calls", flag: true },
        maxCostUsd: { value: 0.5, source: "budget.maxCostUsd in c" },
        maxTokens: { value: 1000, source: "budget.maxTokens in c" },
      },
      { mode: "full" },
    );
    meter.requests = 2;
    meter.toolCalls = 1;
    meter.amount = 0.49;
    meter.tokens = 999;
    expect(await budget.beforeRequest(priced, signal)).toBeNull();
    expect(await budget.beforeCall(signal)).toBeNull();
    meter.toolCalls = 2;
    expect(await budget.beforeCall(signal)).toEqual({
      message:
        "Stopped: the session reached its budget of 2 tool calls (--max-tool-calls). The session has made 2 tool calls. Run it again with a higher --max-tool-calls to go on.",
    });
    meter.tokens = 1000;
    expect((await budget.beforeRequest(priced, signal))?.message).toBe(
      "Stopped: the session reached its budget of 1,000 tokens (budget.maxTokens in c). The session has used 1,000 tokens. Raise budget.maxTokens to go on (toolhost run: --max-tokens).",
    );
    meter.amount = 0.5;
    expect((await budget.beforeRequest(priced, signal))?.message).toMatch(
      /^Stopped: the session reached its budget of \$0\.50 \(budget\.maxCostUsd in c\)\. The session has cost \$0\.50\./,
    );
    meter.requests = 3;
    expect((await budget.beforeRequest(priced, signal))?.message).toMatch(
      /^Stopped: the session reached its budget of 3 model requests \(budget\.maxTurns in c\)/,
    );
    expect(said).toEqual([]);
  });

  it("a front end that can ask, in a mode that does not: stops, and says ask mode would ask", async () => {
    const { budget, meter, asked } = budgetOf(
      { maxToolCalls: { value: 1, source: "budget.maxToolCalls in c" } },
      { mode: "accept-edits", answers: [true] },
    );
    meter.toolCalls = 1;
    expect((await budget.beforeCall(signal))?.message).toMatch(
      /In ask mode you are asked whether to go on past it; or raise budget\.maxToolCalls for new sessions\.$/,
    );
    expect(asked).toEqual([]);
  });

  it("in ask mode asks; yes raises that cap by its amount again, no stops, and the next prompt asks again", async () => {
    const { budget, meter, asked } = budgetOf(
      { maxToolCalls: { value: 10, source: "budget.maxToolCalls in c" } },
      { answers: [true, false, true] },
    );
    meter.toolCalls = 10;
    expect(await budget.beforeCall(signal)).toBeNull();
    expect(asked).toEqual([
      {
        title: "The session reached its budget of 10 tool calls: go on?",
        text: "The session has made 10 tool calls (budget.maxToolCalls in c). Going on raises this cap by 10 tool calls, to 20 tool calls; stopping ends the turn.",
        yes: "Go on (up to 20 tool calls)",
        no: "Stop",
      },
    ]);
    meter.toolCalls = 19;
    expect(await budget.beforeCall(signal)).toBeNull();
    meter.toolCalls = 20;
    const stop = await budget.beforeCall(signal);
    expect(stop?.message).toBe(
      "Stopped: the session reached its budget of 20 tool calls (budget.maxToolCalls in c), and you chose to stop. The next prompt asks again.",
    );
    expect(asked.map((q) => q.title)).toEqual([asked[0]!.title, "The session reached its budget of 20 tool calls: go on?"]);
    // The same turn (a subagent stopped, then its parent): no second question.
    expect(await budget.beforeCall(signal)).toEqual(stop);
    expect(asked).toHaveLength(2);
    budget.turnStarted();
    expect(await budget.beforeCall(signal)).toBeNull();
    expect(asked).toHaveLength(3);
  });

  it("calls that reach a cap together (parallel subagents) wait for one question", async () => {
    const { budget, meter, asked } = budgetOf({ maxTurns: { value: 2, source: "s" } }, { answers: [true] });
    meter.requests = 2;
    const answers = await Promise.all([budget.beforeRequest(priced, signal), budget.beforeRequest(priced, signal)]);
    expect(answers).toEqual([null, null]);
    expect(asked).toHaveLength(1);
    // Raised once, to 4: not twice.
    meter.requests = 4;
    expect(await budget.beforeRequest(priced, signal)).not.toBeNull();
  });

  it("a model with no known price is capped by tokens instead, and says so once", async () => {
    const limits = {
      maxCostUsd: { value: 1, source: "budget.maxCostUsd in c" },
      maxTokens: { value: 500, source: "budget.maxTokens in c" },
    };
    const { budget, meter, said } = budgetOf(limits, { mode: "full" });
    const local = { modelId: "ollama/qwen3", priced: false };
    expect(await budget.beforeRequest(local, signal)).toBeNull();
    meter.tokens = 500;
    expect((await budget.beforeRequest(local, signal))?.message).toMatch(/^Stopped: the session reached its budget of 500 tokens/);
    expect(said).toEqual(["No price is known for ollama/qwen3: capped by tokens instead (500 tokens, budget.maxTokens in c)."]);
    // Without maxTokens it says the cost cannot stop it.
    const bare = budgetOf({ maxCostUsd: limits.maxCostUsd }, { mode: "full" });
    expect(await bare.budget.beforeRequest(local, signal)).toBeNull();
    expect(bare.said).toEqual([
      "No price is known for ollama/qwen3: its cost is not counted, so budget.maxCostUsd in c cannot stop it; set budget.maxTokens to cap it by tokens.",
    ]);
  });

  it("says the limits' warnings once", async () => {
    const { budget, said } = budgetOf({}, { warnings: ["a project's value was ignored"] });
    await budget.beforeRequest(priced, signal);
    await budget.beforeCall(signal);
    expect(said).toEqual(["a project's value was ignored"]);
  });
});

describe("a session at its cap, over a local model", () => {
  interface Log {
    said: string[];
    asked: Confirmation[];
    done: Map<string, Envelope>;
  }

  function frontEnd(answers?: boolean[]): SessionFrontEnd & { log: Log } {
    const log: Log = { said: [], asked: [], done: new Map() };
    const queue = [...(answers ?? [])];
    const ignore = () => {};
    return {
      log,
      say: (text) => void log.said.push(text),
      text: ignore,
      thought: ignore,
      usage: ignore,
      pending: ignore,
      event: ignore,
      running: ignore,
      done: (callId, envelope) => void log.done.set(callId, envelope),
      ...(answers ? { confirm: async (q: Confirmation) => (log.asked.push(q), queue.shift() ?? false) } : {}),
    };
  }

  /** The parent starts one subagent, then globs; the subagent globs on and on. */
  async function start(answers?: boolean[]) {
    let n = 0;
    const glob = (): FakeReply => ({ toolCalls: [{ id: `g${++n}`, name: "glob", arguments: { pattern: "*" } }], finish: "tool_calls" });
    t.fake = await startFakeOpenAI({
      fallback: (body: FakeBody) => {
        if (firstUserText(body).includes("child")) return glob();
        const results = (body.messages ?? []).filter((m) => m.role === "tool").length;
        if (results === 0) return { toolCalls: [{ id: "t1", name: "task", arguments: { description: "Look", prompt: "child: look" } }] };
        return glob();
      },
    });
    process.env.TOOLHOST_MODEL = "openai-compatible/fake";
    process.env.TOOLHOST_BASE_URL = t.fake.url;
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ budget: { maxToolCalls: 4 } }));
    const fe = frontEnd(answers);
    const tools = await SessionTools.create(resolveWorkspace(t.ws));
    const s = new AgentSession({ tools, frontEnd: fe, mode: answers ? "ask" : "full" });
    return { s, fe, fake: t.fake };
  }

  const errorsOf = (log: Log) =>
    [...log.done.values()].filter((e) => e.type === "error").map((e) => (e.type === "error" ? e.error_text : ""));

  it("a subagent's calls and requests count against its parent: the task and three of the child's calls, then the turn stops", async () => {
    const { s, fe, fake } = await start();
    expect(await s.prompt({ text: "go", content: () => "go" })).toBe("max_turn_requests");
    const source = `budget.maxToolCalls in ${path.join(t.home, "config.json")}`;
    const message = `Stopped: the session reached its budget of 4 tool calls (${source}). The session has made 4 tool calls. Raise budget.maxToolCalls to go on (toolhost run: --max-tool-calls).`;
    // The task call (1) and the child's first three globs (2–4) ran; its fourth was answered, not run.
    expect(s.meter.toolCalls).toBe(4);
    expect(errorsOf(fe.log)).toEqual([`Not run: budget. ${message}`, `Not run: budget. ${message}`]);
    // One request of the parent before the task, four of the child, one more of the parent.
    expect(fake.requests).toHaveLength(6);
    expect(s.meter.requests).toBe(6);
    expect(fe.log.said).toEqual([message]);
  });

  it("in ask mode the user is asked (by the child's cap too); yes goes on to the next cap, no stops the turn", async () => {
    const { s, fe, fake } = await start([true, false]);
    expect(await s.prompt({ text: "go", content: () => "go" })).toBe("max_turn_requests");
    // The child asked at its fourth glob and went on to the next cap: eight requests of its own, each with a glob.
    const child = fake.requests.filter((r) => firstUserText(r.body).includes("child"));
    expect([child.length, fake.requests.length - child.length]).toEqual([8, 2]);
    expect(fe.log.asked.map((q) => q.title)).toEqual([
      "The session reached its budget of 4 tool calls: go on?",
      "The session reached its budget of 8 tool calls: go on?",
    ]);
    expect(s.meter.toolCalls).toBe(8);
    // The child stopped at the "no"; its parent's next call is stopped without a second question.
    expect(fe.log.said).toEqual([
      `Stopped: the session reached its budget of 8 tool calls (budget.maxToolCalls in ${path.join(t.home, "config.json")}), and you chose to stop. The next prompt asks again.`,
    ]);
  });
});
