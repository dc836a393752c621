import { describe, expect, it } from "vitest";
import { fileURLToPath } from "node:url";
import { startFakeOpenAI, type FakeBody } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, selected, textOf, useAcpTest } from "./harness.js";

// MCP and tool_search together over the real wire: an editor-given MCP server with 200 tools.
// They are deferred (more than 30), so the first request declares none of them; the fake model
// finds the server's `add` through tool_search and calls it in the next request, approved in ask mode.

const FIXTURE = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));
const declared = (body: FakeBody | undefined) => (body?.tools ?? []).map((t) => t.function.name);
const lastToolResult = (body: FakeBody) => String((body.messages ?? []).filter((m) => m.role === "tool").at(-1)?.content ?? "");

describe("MCP tools through tool_search", () => {
  const t = useAcpTest({ "a.txt": "a\n" });

  it("defers a server's 200 tools and the model finds and calls one through tool_search", async () => {
    t.fake = await startFakeOpenAI({
      script: [
        { toolCalls: [{ id: "c1", name: "tool_search", arguments: { query: "add two numbers" } }] },
        (body) => {
          const found = /mcp__many__add\b/.test(lastToolResult(body));
          return { toolCalls: [{ id: "c2", name: found ? "mcp__many__add" : "none", arguments: { a: 40, b: 2 } }] };
        },
        { text: "42." },
      ],
    });
    const h = (t.h = new Harness({
      env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url },
      permission: () => selected("allow_once"),
    }));
    await h.initialize();
    const { sessionId } = await h.agent.request("session/new", {
      cwd: t.ws,
      mcpServers: [
        {
          name: "many",
          command: process.execPath,
          args: [FIXTURE],
          env: [
            { name: "MCP_NAME", value: "many" },
            { name: "MCP_EXTRA_TOOLS", value: "193" },
          ],
        },
      ],
    });
    await h.waitFor(() =>
      (h.updatesOf(sessionId, "available_commands_update").at(-1)?.availableCommands ?? []).some((c) => c.name === "many:greet"),
    );
    const answer = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "What is 40 + 2?" }] });
    expect(answer.stopReason).toBe("end_turn");
    const [first, second] = t.fake.requests;
    expect(declared(first?.body).some((n) => n.startsWith("mcp__"))).toBe(false);
    expect(declared(second?.body)).toContain("mcp__many__add");
    expect(h.permissionRequests).toHaveLength(1);
    const call = h.updatesOf(sessionId, "tool_call").at(-1)!;
    expect(textOf(lastUpdate(h, sessionId, call.toolCallId))).toContain("42");
  });
});
