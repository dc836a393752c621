import { describe, expect, it } from "vitest";
import * as z from "zod";
import { DEFERRAL_MAX_TOOLS, deferredSection, planOffer, type CandidateTool } from "../../src/agent/turn/deferral.js";
import { AgentSession, headlessFrontEnd } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import type { ToolDeclaration } from "../../src/agent/turn/turn-types.js";
import toolSearch from "../../src/tools/tool_search.js";
import { defineTool } from "../../src/tool/define.js";
import type { Envelope } from "../../src/tool/envelope.js";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { useAgentEnv } from "../helpers.js";

// tool_search and deferral without an editor: the BM25 ranking, select and max_results, the
// deferral thresholds and the system prompt's lines, and the wiring taking effect on the next
// model request (the fake model server records every request).

const t = useAgentEnv({ files: { "a.txt": "a\n" } });

/** An extension tool as a file (or an MCP server) would register it. */
function extTool(id: string, description: string, params: string[] = [], run?: (args: Record<string, unknown>) => unknown) {
  return defineTool({
    id,
    description,
    kind: "read",
    parameters: z.object(Object.fromEntries(params.map((p) => [p, z.string()]))),
    requires: {},
    execute: async (args: Record<string, unknown>) => run?.(args) ?? `${id} ran`,
  });
}

async function session(tools: ReturnType<typeof extTool>[] = [], source = "/ext/tools.ts") {
  const s = new AgentSession({ tools: await SessionTools.create(resolveWorkspace(t.ws)), frontEnd: headlessFrontEnd(), mode: "full" });
  for (const tool of tools) s.registry.register(tool, source);
  return s;
}

const run = (s: AgentSession, args: unknown) => s.callTool("tool_search", args, new AbortController().signal);
const data = (e: Envelope) => {
  if (e.type !== "output") throw new Error(`expected output, got: ${e.error_text}`);
  return e.data as { tools: { name: string; description: string; schema: Record<string, unknown> }[]; note?: string };
};
const names = (e: Envelope) => data(e).tools.map((t) => t.name);

describe("tool_search: ranking, select and max_results", () => {
  it("ranks by BM25 with id hits first, finds words of parameter names, never returns locked tools", async () => {
    const s = await session([
      extTool("notes_write", "Stores a text; use it for the calendar of the team when asked."),
      extTool("calendar_create_event", "Creates an entry.", ["title", "start"]),
      extTool("github_create_issue", "Opens a ticket in a project.", ["repository", "title", "body"]),
      extTool("slack_send_message", "Posts text.", ["channelId", "text"]),
    ]);
    // "calendar" is in one id and in another's description: the id wins.
    expect(names(await run(s, { query: "calendar" }))).toEqual(["calendar_create_event", "notes_write"]);
    // Only a parameter names the repository.
    expect(names(await run(s, { query: "repository" }))).toEqual(["github_create_issue"]);
    // Stop words do not count; camelCase parameter names split into words.
    expect(names(await run(s, { query: "send a slack message" }))[0]).toBe("slack_send_message");
    expect(names(await run(s, { query: "channel" }))).toEqual(["slack_send_message"]);
    // A prefix and a typo still find it.
    expect(names(await run(s, { query: "calend" }))[0]).toBe("calendar_create_event");
    expect(names(await run(s, { query: "repositry" }))).toEqual(["github_create_issue"]);
    // bash is a locked tool, always declared: never a search result.
    expect(names(await run(s, { query: "run a shell command bash" }))).toEqual([]);
    expect(data(await run(s, { query: "zzzz" })).note).toMatch(/No tool matched "zzzz"/);
  });

  it("returns each tool's name, description and schema; max_results bounds the query's results", async () => {
    const s = await session(Array.from({ length: 12 }, (_, i) => extTool(`db_query_${i}`, `Runs database query ${i}.`, ["sql"])));
    const all = data(await run(s, { query: "database query" }));
    expect(all.tools).toHaveLength(5); // the default
    expect(all.tools[0]).toMatchObject({ description: expect.stringMatching(/^Runs database query/) });
    expect(all.tools[0]?.schema).toMatchObject({ type: "object", properties: { sql: { type: "string" } } });
    expect(names(await run(s, { query: "database", max_results: 2 }))).toHaveLength(2);
    expect(names(await run(s, { query: "database", max_results: 20 }))).toHaveLength(12);
    expect((await run(s, { query: "database", max_results: 21 })).type).toBe("error");
  });

  it("select takes exact names (with a query's results after them); an unknown name is an error listing close ones", async () => {
    const s = await session([extTool("github_create_issue", "Opens an issue."), extTool("github_close_issue", "Closes an issue.")]);
    expect(names(await run(s, { select: ["github_close_issue"] }))).toEqual(["github_close_issue"]);
    expect(names(await run(s, { select: ["github_close_issue"], query: "create issue" }))).toEqual([
      "github_close_issue",
      "github_create_issue",
    ]);
    const wrong = await run(s, { select: ["github_create_isue", "create_issue", "nothing_like_it"] });
    expect(wrong.type === "error" && wrong.metadata.error_code).toBe("not_found");
    const text = wrong.type === "error" ? wrong.error_text : "";
    expect(text).toMatch(/"github_create_isue" \(did you mean github_create_issue\?\)/);
    expect(text).toMatch(/"create_issue" \(did you mean github_create_issue\?\)/);
    expect(text).toMatch(/"nothing_like_it"[;.]/);
    expect(text).toMatch(/Nothing was loaded/);
    const neither = await run(s, {});
    expect(neither.type === "error" && neither.error_text).toMatch(/Give `query`/);
  });

  it("has a short declaration (the prompt budget counts it)", () => {
    const chars = JSON.stringify({ name: toolSearch.id, description: toolSearch.description, parameters: toolSearch.inputSchema }).length;
    console.log(`tool_search declaration: ${chars} characters`);
    expect(chars).toBeLessThanOrEqual(900);
  });
});

const decl = (id: string, description = "Does a thing. More words here.", size = 0): ToolDeclaration => ({
  id,
  description: description + "x".repeat(size),
  inputSchema: { type: "object", properties: {} },
});
const builtins: CandidateTool[] = ["read", "bash", "tool_search"].map((id) => ({ declaration: decl(id), source: "builtin" }));
const extras = (n: number, source = "mcp:big", size = 0): CandidateTool[] =>
  Array.from({ length: n }, (_, i) => ({ declaration: decl(`tool_${i}`, `Tool number ${i}. Second sentence.`, size), source }));
const ids = (tools: ToolDeclaration[]) => tools.map((d) => d.id);

describe("deferral", () => {
  it("defers by count: up to 30 non-locked tools are declared, 31 are deferred", () => {
    const fits = planOffer([...builtins, ...extras(DEFERRAL_MAX_TOOLS)], new Set(), 128_000);
    expect(fits.declarations).toHaveLength(3 + 30);
    expect(fits.deferred).toEqual([]);
    expect(fits.promptSection).toBeUndefined();
    const many = planOffer([...builtins, ...extras(31)], new Set(["tool_3"]), 128_000);
    // Locked tools stay, and a wired one is declared.
    expect(ids(many.declarations)).toEqual(["read", "bash", "tool_search", "tool_3"]);
    expect(many.deferred).toHaveLength(30);
    expect(many.promptSection).toMatch(/^- tool_0: Tool number 0\.$/m);
    // Wired tools stay listed: the section does not change from request to request.
    expect(many.promptSection).toMatch(/^- tool_3: Tool number 3\.$/m);
  });

  it("defers by budget: a few tools over 10% of the context window are deferred", () => {
    // Five tools of ~2,000 characters: ~2,600 tokens, over 10% of a 16k window, under 10% of 128k.
    const five = extras(5, "/p/tools.ts", 2000);
    expect(planOffer([...builtins, ...five], new Set(), 128_000).deferred).toEqual([]);
    const small = planOffer([...builtins, ...five], new Set(), 16_000);
    expect(small.deferred).toEqual(five.map((t) => t.declaration.id));
    expect(ids(small.declarations)).toEqual(["read", "bash", "tool_search"]);
  });

  it("never defers locked tools; offers tool_search only when there is something to find, and defers nothing without it", () => {
    const none = planOffer(builtins, new Set(), 128_000);
    expect(ids(none.declarations)).toEqual(["read", "bash"]);
    const noSearch = planOffer([...builtins.filter((t) => t.declaration.id !== "tool_search"), ...extras(40)], new Set(), 128_000);
    expect(noSearch.declarations).toHaveLength(2 + 40);
    expect(noSearch.deferred).toEqual([]);
  });

  it("lists each deferred tool as one short line, or the sources with counts when even that is too long", () => {
    const long =
      "Creates a pull request on the repository from the given branch with a title and body, then requests reviewers. Other text.";
    const section = deferredSection([{ declaration: decl("mcp__github__create_pull_request", long), source: "mcp:github" }], 12_800);
    const line = section.split("\n").at(-1)!;
    expect(line.startsWith("- mcp__github__create_pull_request: Creates a pull request")).toBe(true);
    expect(line.endsWith("…")).toBe(true);
    expect(line.length).toBeLessThanOrEqual(101);
    expect(section).toMatch(/1 more tools, not declared up front\. To use one, call tool_search/);
    // 200 lines in a 8k window (budget 800 tokens): only the sources.
    const bySource = deferredSection([...extras(150, "mcp:github"), ...extras(50, "/home/u/.toolhost/tools/many.ts")], 800);
    expect(bySource).toMatch(/too many to list; by source:\n- mcp:github: 150 tools\n- \/home\/u\/\.toolhost\/tools\/many\.ts: 50 tools$/);
    expect(bySource).not.toMatch(/tool_0/);
  });
});

/** A request's declared tool names and its system prompt. */
const declared = (body: FakeBody | undefined) => (body?.tools ?? []).map((t) => t.function.name);
const systemOf = (body: FakeBody | undefined) => String(body?.messages?.find((m) => m.role === "system")?.content ?? "");
const toolResults = (body: FakeBody | undefined) => (body?.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));

describe("wiring in a session", () => {
  async function withModel(script: FakeReply[]) {
    t.fake = await startFakeOpenAI({ script });
    process.env.TOOLHOST_MODEL = "openai-compatible/fake";
    process.env.TOOLHOST_BASE_URL = t.fake.url;
    return t.fake;
  }
  const many = () =>
    Array.from({ length: 40 }, (_, i) =>
      extTool(`svc_${i}`, `Service ${i} operation.`, ["target"], (args) => `svc_${i} on ${String(args.target)}`),
    );

  it("a tool tool_search returns is declared from the next request on, for the rest of the session", async () => {
    const model = await withModel([
      { toolCalls: [{ id: "c1", name: "tool_search", arguments: { select: ["svc_7"] } }] },
      { toolCalls: [{ id: "c2", name: "svc_7", arguments: { target: "x" } }] },
      { text: "done" },
      { text: "again" },
    ]);
    const s = await session(many());
    await s.prompt({ text: "go", content: () => "go" });
    await s.prompt({ text: "more", content: () => "more" });
    await s.close();
    const [first, second, , fourth] = model.requests.map((r) => r.body);
    expect(declared(first)).toContain("tool_search");
    expect(declared(first)).not.toContain("svc_7");
    expect(systemOf(first)).toMatch(/^- svc_7: Service 7 operation\.$/m);
    expect(declared(second)).toContain("svc_7");
    expect(declared(second).filter((n) => n.startsWith("svc_"))).toEqual(["svc_7"]);
    expect(toolResults(second)[0]).toMatch(/svc_7/);
    expect(toolResults(model.requests[2]?.body)[1]).toMatch(/svc_7 on x/);
    // The next prompt's requests still declare it; the system prompt is the same as before.
    expect(declared(fourth)).toContain("svc_7");
    expect(systemOf(fourth)).toBe(systemOf(first));
  });

  it("a deferred tool called without tool_search runs and is wired; wrong arguments get how to load it", async () => {
    const model = await withModel([
      { toolCalls: [{ id: "c1", name: "svc_3", arguments: { wrong: 1 } }] },
      { toolCalls: [{ id: "c2", name: "svc_3", arguments: { target: "y" } }] },
      { text: "done" },
    ]);
    const s = await session(many());
    await s.prompt({ text: "go", content: () => "go" });
    await s.close();
    const [, second, third] = model.requests.map((r) => r.body);
    expect(toolResults(second)[0]).toMatch(/svc_3 was not loaded[\s\S]*tool_search with select \["svc_3"\]/);
    expect(declared(second)).not.toContain("svc_3");
    expect(toolResults(third)[1]).toMatch(/svc_3 on y/);
    expect(declared(third)).toContain("svc_3");
  });

  it("a subagent starts with its parent's wired tools declared, and the deferred list in its system prompt", async () => {
    const model = await withModel([]);
    const child: FakeBody[] = [];
    const parent: FakeBody[] = [];
    model.push(
      ...Array.from({ length: 4 }, () => (body: FakeBody): FakeReply => {
        if (firstUserText(body) === "CHILD") {
          child.push(body);
          return { text: "child done" };
        }
        parent.push(body);
        if (parent.length === 1) return { toolCalls: [{ id: "c1", name: "tool_search", arguments: { select: ["svc_7"] } }] };
        if (parent.length === 2) return { toolCalls: [{ id: "c2", name: "task", arguments: { description: "look", prompt: "CHILD" } }] };
        return { text: "ok" };
      }),
    );
    const s = await session(many());
    await s.prompt({ text: "go", content: () => "go" });
    await s.close();
    expect(child).toHaveLength(1);
    expect(declared(child[0])).toEqual(expect.arrayContaining(["svc_7", "tool_search"]));
    expect(declared(child[0])).not.toContain("svc_8");
    expect(systemOf(child[0])).toMatch(/^- svc_8: Service 8 operation\.$/m);
  });

  it("declares every tool up front when they fit, and tool_search still finds them", async () => {
    const model = await withModel([{ toolCalls: [{ id: "c1", name: "tool_search", arguments: { query: "service 2" } }] }, { text: "ok" }]);
    const s = await session(many().slice(0, 3));
    await s.prompt({ text: "go", content: () => "go" });
    await s.close();
    const [first, second] = model.requests.map((r) => r.body);
    expect(declared(first)).toEqual(expect.arrayContaining(["svc_0", "svc_1", "svc_2", "tool_search"]));
    expect(systemOf(first)).not.toMatch(/tool_search/);
    expect(toolResults(second)[0]).toMatch(/svc_2/);
  });
});
