import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeBody } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, textOf, useAcpTest } from "./harness.js";

// Issue 14 over the real wire: a profile tool file with 200 tools. They are deferred (more than
// 30): the first request declares the locked tools only and lists the 200 in the system prompt,
// within the budget (10% of the fake model's 128k window); the fake model finds one with
// tool_search and calls it in the following request, where it is declared.

const TOOLS = 200;
const BUDGET_TOKENS = 12_800; // 10% of DEFAULT_CONTEXT_WINDOW, the window of an unknown model

/** One file exporting 200 tools (`tools`), as a user's or a generator's extension file can. */
function manyTools(): string {
  return `import { defineTool, z } from "toolhost";
const topics = ["invoice", "ticket", "deploy", "metric", "user", "backup", "dns", "queue", "cache", "build"];
const verbs = ["list", "get", "create", "update", "delete", "archive", "restore", "export", "import", "audit"];
const generated = [];
for (let i = 0; generated.length < ${TOOLS - 1}; i++) {
  const topic = topics[i % topics.length];
  const verb = verbs[Math.floor(i / topics.length) % verbs.length];
  generated.push(
    defineTool({
      id: \`\${topic}_\${verb}_\${i}\`,
      description: \`\${verb[0].toUpperCase()}\${verb.slice(1)}s \${topic} records of the account (variant \${i}). Returns the records as JSON, paginated by cursor.\`,
      kind: "read",
      parameters: z.object({ account: z.string().describe("The account id"), cursor: z.string().optional().describe("Where the page starts") }),
      requires: {},
      async execute(args) { return { topic, account: args.account }; },
    }),
  );
}
export const tools = [
  ...generated,
  defineTool({
    id: "weather_forecast",
    description: "Forecast of the weather for a city: temperature and rain per day.",
    kind: "read",
    parameters: z.object({ city: z.string().describe("The city's name"), days: z.number().int().min(1).max(7).optional() }),
    requires: {},
    title: (args) => \`Forecast for \${args.city}\`,
    async execute(args) { return { city: args.city, forecast: "FORECAST-MARKER sunny, 21°C" }; },
  }),
];
`;
}

const declared = (body: FakeBody | undefined) => (body?.tools ?? []).map((t) => t.function.name);
const systemOf = (body: FakeBody | undefined) => String(body?.messages?.find((m) => m.role === "system")?.content ?? "");
const lastToolResult = (body: FakeBody) => String((body.messages ?? []).filter((m) => m.role === "tool").at(-1)?.content ?? "");

describe("tool_search over ACP with 200 extension tools", () => {
  const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" }, { home: { "profiles/default/tools/many.ts": manyTools() } });

  it("keeps what the model is sent up front under the budget, and the model finds and calls a tool through tool_search", async () => {
    t.fake = await startFakeOpenAI({
      script: [
        { toolCalls: [{ id: "c1", name: "tool_search", arguments: { query: "weather forecast in a city" } }] },
        // The model calls the first tool tool_search returned, by the name it read in the result.
        (body) => {
          const name = /\bname: ([a-z0-9_]+)|"name":"([a-z0-9_]+)"/.exec(lastToolResult(body));
          return { toolCalls: [{ id: "c2", name: name?.[1] ?? name?.[2] ?? "none", arguments: { city: "Oslo" } }] };
        },
        { text: "It will be sunny in Oslo." },
      ],
    });
    const h = (t.h = new Harness({
      env: { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url },
    }));
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    await h.waitFor(() => h.updatesOf(sessionId, "available_commands_update").length > 0);
    const answer = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Weather in Oslo?" }] });
    expect(answer.stopReason).toBe("end_turn");

    const [first, second, third] = t.fake.requests.map((r) => r.body);
    // Up front: the locked tools (tool_search among them), none of the 200; the system prompt lists them.
    expect(declared(first)).toContain("tool_search");
    expect(declared(first).some((n) => n === "weather_forecast" || n.startsWith("invoice_"))).toBe(false);
    const system = systemOf(first);
    expect(system).toMatch(/This session has 200 more tools, not declared up front/);
    expect(system).toMatch(/^- weather_forecast: Forecast of the weather for a city: temperature and rain per day\.$/m);
    expect(system.match(/^- [a-z]+_[a-z]+_\d+: /gm)).toHaveLength(TOOLS - 1);
    const section = system.slice(system.indexOf("# More tools"));
    const sectionTokens = Math.ceil(section.length / 4);
    const upFront = Math.ceil((system.length + JSON.stringify(first?.tools).length) / 4);
    console.log(
      `tool_search over ACP: ${TOOLS} extension tools listed in ${sectionTokens} tokens (budget ${BUDGET_TOKENS}); ` +
        `up front in all ${upFront} tokens (system prompt + ${declared(first).length} declared tools)`,
    );
    expect(sectionTokens).toBeLessThan(BUDGET_TOKENS);

    // The search found it; the next request declares it (and only it of the 200), and the model's call ran.
    expect(lastToolResult(second!)).toMatch(/weather_forecast/);
    expect(declared(second)).toContain("weather_forecast");
    expect(declared(second).filter((n) => /^[a-z]+_[a-z]+_\d+$/.test(n))).toEqual([]);
    expect(lastToolResult(third!)).toMatch(/FORECAST-MARKER/);
    expect(declared(third)).toContain("weather_forecast");
    const call = h.updatesOf(sessionId, "tool_call").find((u) => u.name === "weather_forecast");
    // Announced with its complete arguments: the first title is already the tool's own.
    expect(call?.title).toBe("Forecast for Oslo");
    const done = lastUpdate(h, sessionId, call!.toolCallId);
    expect(done.status).toBe("completed");
    const titles = h
      .updatesOf(sessionId, "tool_call_update")
      .flatMap((u) => (u.toolCallId === call!.toolCallId && u.title ? [u.title] : []));
    expect(titles).toContain("Forecast for Oslo");
    expect(textOf(done)).toMatch(/FORECAST-MARKER/);
  });
});
