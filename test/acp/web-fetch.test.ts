import * as fsp from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, selected, textOf, useAcpTest } from "./harness.js";

// web_fetch over the real wire: the model (the local fake server) fetches a local page and gets
// clean Markdown; 127.0.0.1 is reached only because a net.fetch allow rule names it; in ask mode
// the first fetch of a host asks and "always" covers that host for the session.

const PAGE = `<!doctype html><html><head><title>Release notes</title><script>var t = "SCRIPT-NOISE";</script></head>
<body><nav><a href="/">Home NAV-NOISE</a></nav><div class="advert">ADVERT-NOISE</div>
<article><h1>Version 2.0</h1>
<p>Version 2.0 adds streaming responses to every endpoint, so clients see the first tokens as soon as they exist, and it drops the deprecated v1 routes.</p>
<p>Upgrading takes one change: read the body as a stream. The <a href="/guide">upgrade guide</a> walks through it for each client library, with examples.</p>
<ul><li>Streaming everywhere</li><li>v1 routes removed</li></ul>
</article><footer>FOOTER-NOISE</footer></body></html>`;

const t = useAcpTest({ "a.txt": "a\n" });
let server: Server;
let port: number;
const served: string[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    served.push(req.url ?? "");
    res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

/** The test's home, its config allowing (or not) fetching from 127.0.0.1. */
async function home(rules: unknown[]): Promise<string> {
  await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ permissions: rules }));
  return t.home;
}

const fetchCall = (id: string, url: string): FakeReply => ({ toolCalls: [{ id, name: "web_fetch", arguments: { url } }] });

/** The text of the tool result the model got back for a call id. */
function toolResult(body: FakeBody, id: string): string {
  const message = body.messages?.find((m) => m.role === "tool" && m.tool_call_id === id);
  return typeof message?.content === "string" ? message.content : JSON.stringify(message?.content);
}

describe("web_fetch over ACP", () => {
  it("the model fetches a local page (allowed by a rule) and gets clean Markdown", async () => {
    const url = `http://127.0.0.1:${port}/notes`;
    t.fake = await startFakeOpenAI({ script: [fetchCall("f1", url), { text: "Version 2.0 streams." }] });
    const dir = await home([{ permission: "net.fetch", pattern: "127.0.0.1", action: "allow" }]);
    t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: dir } });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const answer = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "What is new?" }] });
    expect(answer).toMatchObject({ stopReason: "end_turn" });
    // No question: the rule allows the host; the editor saw a fetch call titled with the URL.
    expect(t.h.permissionRequests).toEqual([]);
    const started = t.h.updatesOf(sessionId, "tool_call").find((u) => u.kind === "fetch");
    expect(started).toBeDefined();
    const titled = t.h.updatesOf(sessionId, "tool_call_update").find((u) => u.toolCallId === started!.toolCallId && u.title);
    expect(titled?.title).toBe(`Fetch ${url}`);
    const done = lastUpdate(t.h, sessionId, started!.toolCallId);
    expect(done.status).toBe("completed");
    expect(textOf(done)).toContain("Version 2.0 adds streaming responses");

    const result = toolResult(t.fake.requests[1]!.body, "f1");
    expect(result).toContain("title: Release notes");
    expect(result).toContain("status: 200");
    expect(result).toContain("Version 2.0 adds streaming responses to every endpoint");
    expect(result).toContain(`[upgrade guide](http://127.0.0.1:${port}/guide)`);
    expect(result).toContain("- Streaming everywhere");
    for (const noise of ["SCRIPT-NOISE", "NAV-NOISE", "ADVERT-NOISE", "FOOTER-NOISE", "<p>"]) expect(result).not.toContain(noise);
  });

  it("without a rule naming it, 127.0.0.1 is refused even when the user approves", async () => {
    const url = `http://127.0.0.1:${port}/private`;
    t.fake = await startFakeOpenAI({ script: [fetchCall("p1", url), { text: "Could not." }] });
    t.h = new Harness({
      env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url },
      permission: () => selected("allow_once"),
    });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    served.length = 0;
    await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "Fetch it" }] });
    expect(toolResult(t.fake.requests[1]!.body, "p1")).toMatch(
      /capability_denied.*127\.0\.0\.1 is a private, loopback or link-local address.*a net\.fetch allow rule naming 127\.0\.0\.1/,
    );
    expect(served).toEqual([]);
  });

  it("in ask mode the first fetch of a host asks; 'always' covers that host for the session, not another", async () => {
    // No rule names these hosts: every approved fetch is then refused by the private-address guard,
    // so nothing here needs a network; what counts is who was asked.
    t.h = new Harness({ permission: () => selected("allow_always") });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    const slash = (url: string) =>
      t.h!.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `/web_fetch ${url}` }] });
    served.length = 0;
    await slash(`http://localhost:${port}/one`);
    expect(t.h.permissionRequests).toHaveLength(1);
    const request = t.h.permissionRequests[0]!;
    expect(request.toolCall.title).toBe(`Fetch http://localhost:${port}/one`);
    expect(request.options.find((o) => o.optionId === "allow_always")?.name).toBe("Always allow fetches from localhost in this session");
    const first = t.h.updatesOf(sessionId, "tool_call_update").at(-1)!;
    expect(first.status).toBe("failed");
    expect(textOf(first)).toMatch(/localhost resolves to .*, a private, loopback or link-local address/);
    await slash(`http://localhost:${port}/two`);
    expect(t.h.permissionRequests).toHaveLength(1);
    // Another host asks again.
    t.h.permission = () => selected("reject_once");
    await slash(`http://127.0.0.1:${port}/three`);
    expect(t.h.permissionRequests).toHaveLength(2);
    expect(served).toEqual([]);
  });

  it("ask mode asks before a fetch without any rule, and says why", async () => {
    t.h = new Harness({ permission: () => selected("reject_once") });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/web_fetch https://example.com/" }] });
    expect(t.h.permissionRequests).toHaveLength(1);
    const meta = t.h.permissionRequests[0]?._meta as { permission?: { description: string } };
    expect(meta.permission?.description).toMatch(/ask mode asks before fetching from a host \(example\.com\)/);
    expect(meta.permission?.description).toMatch(/"Always" covers fetches from example\.com/);
  });
});
