import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { startFakeSearch } from "../fixtures/fake-search.js";
import { Harness, lastUpdate, textOf, useAcpTest } from "./harness.js";

// Issue 13's done-when line: the model (a local fake) calls web_search, which goes through a
// local SearXNG the user configured, and the results come back to the model and the editor.

const t = useAcpTest({ "README.md": "# p\n" });

async function start(webSearch: unknown, script: Parameters<typeof startFakeOpenAI>[0]) {
  await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ webSearch }));
  t.fake = await startFakeOpenAI(script);
  t.h = new Harness({ env: { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  return { h: t.h, fake: t.fake, sessionId };
}

describe("web_search over ACP", () => {
  it("the model searches through the configured SearXNG and gets the results; ask mode does not ask", async () => {
    const search = t.serve(await startFakeSearch());
    const { h, fake, sessionId } = await start(
      { providers: [{ type: "searxng", baseURL: search.url }] },
      {
        script: [
          { toolCalls: [{ id: "call_s", name: "web_search", arguments: { query: "rust async runtime", max_results: 2 } }] },
          { text: "Tokio is the usual choice." },
        ],
      },
    );
    const result = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Which async runtime?" }] });
    expect(result.stopReason).toBe("end_turn");

    // The model was offered the tool, and its result carried the provider's results.
    expect(fake.requests[0]!.body.tools!.map((tool) => tool.function.name)).toContain("web_search");
    const toolMessage = fake.requests[1]!.body.messages!.find((m) => m.role === "tool" && m.tool_call_id === "call_s");
    // One JSON line per result, under `results:` (envelopeToText).
    const [head, ...lines] = String(toolMessage!.content).split("\n");
    expect(head).toBe("results:");
    expect(lines.map((line) => (JSON.parse(line) as { url: string }).url)).toEqual(["https://tokio.rs/", "https://async.rs/"]);
    expect(search.requests.map((r) => [r.path, r.query.get("q"), r.query.get("format")])).toEqual([
      ["/search", "rust async runtime", "json"],
    ]);

    // The editor saw a fetch call titled with the query, completed with the results as markdown, and no question.
    const calls = h.updatesOf(sessionId, "tool_call");
    expect(calls.map((c) => [c.name, c.kind])).toEqual([["web_search", "fetch"]]);
    const id = calls[0]!.toolCallId;
    const done = lastUpdate(h, sessionId, id);
    expect(done.status).toBe("completed");
    const titles = h
      .updatesOf(sessionId, "tool_call_update")
      .filter((u) => u.toolCallId === id && u.title)
      .map((u) => u.title);
    expect(titles).toEqual(["Search the web: rust async runtime"]);
    expect(textOf(done)).toContain("- [Tokio - An asynchronous Rust runtime](https://tokio.rs/): Tokio is an asynchronous runtime");
    expect(h.permissionRequests).toEqual([]);
  });

  it("not configured: the model is not offered web_search, and a call of it is told why", async () => {
    const { h, fake, sessionId } = await start(undefined, {
      script: [{ toolCalls: [{ id: "call_s", name: "web_search", arguments: { query: "x" } }] }, { text: "ok" }],
    });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "search" }] });
    expect(fake.requests[0]!.body.tools!.map((tool) => tool.function.name)).not.toContain("web_search");
    const toolMessage = fake.requests[1]!.body.messages!.find((m) => m.role === "tool" && m.tool_call_id === "call_s");
    expect(String(toolMessage!.content)).toContain('The tool "web_search" is not available in this workspace');
  });
});
