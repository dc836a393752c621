import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "./harness.js";
import { startFakeSearch } from "../fixtures/fake-search.js";
import { useAgentEnv } from "../helpers.js";

// web_search as the CLI shows it: off until configured (doctor and tools say how), a provider
// without a key reported, and `toolhost call web_search` through a local SearXNG.

const t = useAgentEnv({ files: { "notes.md": "hi\n" } });

function toolhost(...args: string[]) {
  return runCli(args, { cwd: t.ws, env: t.env({ TOOLHOST_MODEL: "ollama/qwen3" }), timeout: 20_000 });
}
const configure = (config: unknown) => fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify(config));

describe("web_search in the CLI", () => {
  it("not configured: not offered, and doctor and tools say how to turn it on", async () => {
    const doctor = await toolhost("doctor");
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain(
      '\nweb search: off (web_search is not offered): add "webSearch": { "providers": [{ "type": "searxng", "baseURL": "http://127.0.0.1:8888" }] }',
    );
    const tools = await toolhost("tools");
    expect(tools.stdout).not.toMatch(/^web_search /m);
    expect(tools.stdout).toContain('unavailable here (isAvailable said no):\n  web_search: builtin (to turn it on: add "webSearch"');
    const json = JSON.parse((await toolhost("tools", "--json")).stdout);
    expect(json.unavailable).toEqual([{ id: "web_search", kind: "fetch", source: "builtin" }]);
  });

  it("a provider without its key is a problem doctor names; the tool stays off", async () => {
    await configure({ webSearch: { providers: [{ type: "brave" }] } });
    const doctor = await toolhost("doctor");
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(
      'webSearch.providers[0] (brave) has no API key: set BRAVE_API_KEY in the environment, or "apiKey" in the config file; it is left out',
    );
    expect(doctor.stdout).toContain("web search: off");
  });

  it("configured: doctor names the provider and bounds, and `toolhost call web_search` searches the local SearXNG", async () => {
    const fake = t.serve(await startFakeSearch());
    await configure({ webSearch: { providers: [{ type: "searxng", baseURL: fake.url }], maxCallsPerSession: 5 } });
    const doctor = await toolhost("doctor");
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toContain(`\nweb search: searxng (${new URL(fake.url).host}); at most 5 calls per session, 15 s each\n`);
    expect(JSON.parse((await toolhost("tools", "--json")).stdout).tools.map((t: { id: string }) => t.id)).toContain("web_search");

    const called = await toolhost("call", "web_search", '{"query":"rust async runtime","max_results":1}');
    expect(called.code).toBe(0);
    expect(JSON.parse(called.stdout).data).toEqual({
      results: [
        {
          title: "Tokio - An asynchronous Rust runtime",
          url: "https://tokio.rs/",
          snippet: "Tokio is an asynchronous runtime for the Rust programming language. It provides the building blocks.",
        },
      ],
    });
    expect(fake.requests.map((r) => r.query.get("q"))).toEqual(["rust async runtime"]);

    // The slash shorthand, headless in ask mode: a search asks nobody.
    const slash = await toolhost("run", "/web_search tokio vs smol");
    expect(slash.code, slash.stderr).toBe(0);
    expect(slash.stdout).toMatch(/^results:\n\{"title":"Tokio - An asynchronous Rust runtime","url":"https:\/\/tokio\.rs\/"/);
    expect(fake.requests.map((r) => r.query.get("q"))).toEqual(["rust async runtime", "tokio vs smol"]);
  });

  it("a rule on the tool id forbids it (or asks, which headless is a refusal); nothing is sent", async () => {
    const fake = t.serve(await startFakeSearch());
    for (const action of ["deny", "ask"]) {
      await configure({
        webSearch: { providers: [{ type: "searxng", baseURL: fake.url }] },
        permissions: [{ permission: "web_search", pattern: "*", action }],
      });
      const called = await toolhost("call", "web_search", '{"query":"secret project name"}');
      expect(called.code, called.stdout + called.stderr).not.toBe(0);
      const envelope = JSON.parse(called.stdout) as { type: string; metadata: { error_code: string } };
      expect(envelope.type).toBe("error");
      expect(envelope.metadata.error_code).toBe("permission_denied");
    }
    expect(fake.requests).toHaveLength(0);
  });
});
