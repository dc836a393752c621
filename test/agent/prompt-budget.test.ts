import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AgentSession, headlessFrontEnd } from "../../src/agent/session/agent-session.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { BUILTIN_TOOLS } from "../../src/host/builtins.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { useAgentEnv } from "../helpers.js";

// Issue 12: the system prompt plus every locked tool's declaration stay under 4,000 tokens, so a
// small model's context is left for the work. Tokens are estimated as characters / 4 (the common
// rule of thumb for English and JSON with these providers' tokenizers), counted on what really
// goes over the wire: the first request the model gets.

const TOKEN_BUDGET = 4000;
const CHARS_PER_TOKEN = 4;

const t = useAgentEnv({ files: { "a.txt": "a\n" } });

describe("the prompt budget", () => {
  it("the system prompt and all the locked tools' declarations fit in 4,000 tokens", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "ok" }] });
    process.env.TOOLHOST_MODEL = "openai-compatible/fake";
    process.env.TOOLHOST_BASE_URL = t.fake.url;
    // One extension tool, so tool_search (offered only when there is something to find) is declared too; it is not counted.
    await fsp.mkdir(`${t.home}/profiles/default/tools`, { recursive: true });
    await fsp.writeFile(
      `${t.home}/profiles/default/tools/extra.ts`,
      `import { defineTool, z } from "toolhost";
export default defineTool({ id: "extra", description: "x", kind: "read", parameters: z.object({}), requires: {}, async execute() { return ""; } });
`,
    );
    // Someone to ask, so every tool is offered; ask mode hides none.
    const frontEnd = {
      ...headlessFrontEnd(),
      approve: async () => "reject_once" as const,
      questions: { ask: async () => ({ outcome: "cancelled" as const }) },
    };
    // A search provider, so web_search is declared and counted too (nothing is searched).
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({ webSearch: { providers: [{ type: "searxng", baseURL: "http://127.0.0.1:9" }] } }),
    );
    const s = new AgentSession({ tools: await SessionTools.create(resolveWorkspace(t.ws)), frontEnd, mode: "ask" });
    await s.prompt({ text: "hi", content: () => "hi" });
    await s.close();
    const body = t.fake.requests[0]?.body;
    const locked = (body?.tools ?? []).filter((t) => t.function.name !== "extra");
    const declared = locked.map((t) => t.function.name);
    // Every builtin this session has (a builtin's isAvailable may leave it out).
    const unavailable = new Set(s.tools.toolset.report.unavailable.map((t) => t.id));
    expect([...unavailable]).toEqual([]);
    expect(declared.sort()).toEqual(
      BUILTIN_TOOLS.map((t) => t.id)
        .filter((id) => !unavailable.has(id))
        .sort(),
    );
    const system = (body?.messages ?? []).filter((m) => m.role === "system").map((m) => JSON.stringify(m.content));
    const chars = system.join("").length + JSON.stringify(locked).length;
    const tokens = Math.ceil(chars / CHARS_PER_TOKEN);
    console.log(`prompt budget: ${tokens} tokens (${chars} characters) for the system prompt and ${declared.length} tools`);
    expect(tokens).toBeLessThan(TOKEN_BUDGET);
  });
});
