import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parsePromptCommand, promptArguments, promptTurnText } from "../../src/agent/mcp-commands.js";
import type { McpPrompt } from "../../src/mcp/manager.js";
import { mergeServers, parseMcpServers, projectServers } from "../../src/mcp/servers.js";
import { tempDir } from "../helpers.js";

describe("mcpServers entries", () => {
  it("reads a stdio entry's allowedHosts (the network a project's server gets inside the sandbox); anything but host names is a problem", () => {
    const { servers, problems } = parseMcpServers(
      {
        net: { command: "node", args: ["s.mjs"], allowedHosts: ["api.example.com", "*.example.org"] },
        url: { command: "node", allowedHosts: ["https://api.example.com"] },
        variable: { command: "node", allowedHosts: ["{workspace}"] },
        notList: { command: "node", allowedHosts: "api.example.com" },
      },
      "project",
      "/p/.mcp.json",
    );
    expect(servers).toEqual([expect.objectContaining({ name: "net", allowedHosts: ["api.example.com", "*.example.org"] })]);
    expect(problems.map((p) => p.server)).toEqual(["url", "variable", "notList"]);
    expect(problems[0]?.message).toMatch(/allowedHosts must be a list of host names or patterns/);
  });

  it("reads the shape Claude Code, Cursor and Zed users write; each bad entry is a problem of its own", () => {
    const { servers, problems } = parseMcpServers(
      {
        gh: { command: "npx", args: ["-y", "server-github"], env: { TOKEN: "t" }, startupTimeoutMs: 90_000 },
        docs: { url: "https://mcp.example.com/mcp", headers: { Authorization: "Bearer x" } },
        old: { url: "https://legacy.example.com/sse", type: "sse" },
        off: { command: "x", disabled: true },
        nothing: {},
        badUrl: { url: "ftp://x" },
        badArgs: { command: "x", args: "not a list" },
        badTimeout: { command: "x", startupTimeoutMs: "soon" },
      },
      "user",
      "/home/u/.toolhost/config.json",
    );
    expect(servers).toEqual([
      {
        name: "gh",
        origin: "user",
        file: "/home/u/.toolhost/config.json",
        transport: "stdio",
        command: "npx",
        args: ["-y", "server-github"],
        env: { TOKEN: "t" },
        startupTimeoutMs: 90_000,
      },
      {
        name: "docs",
        origin: "user",
        file: "/home/u/.toolhost/config.json",
        transport: "http",
        url: "https://mcp.example.com/mcp",
        headers: { Authorization: "Bearer x" },
      },
      {
        name: "old",
        origin: "user",
        file: "/home/u/.toolhost/config.json",
        transport: "sse",
        url: "https://legacy.example.com/sse",
        headers: {},
      },
    ]);
    expect(problems.map((p) => p.message)).toEqual([
      'the server "nothing" needs a command (a program to run) or a url',
      'the server "badUrl" url must be http or https, got ftp:',
      'the server "badArgs" args must be a list of strings',
      'the server "badTimeout" startupTimeoutMs must be a whole number of milliseconds from 1 to 600000',
    ]);
  });

  it("reads a project's .toolhost/config.json, then .mcp.json for names not taken; the first source of a name wins", async () => {
    const project = await tempDir({
      ".toolhost/config.json": JSON.stringify({ mcpServers: { a: { command: "one", cwd: "tools" } } }),
      ".mcp.json": JSON.stringify({ mcpServers: { a: { command: "two" }, b: { command: "three" } } }),
    });
    const { servers } = projectServers(project);
    expect(servers.map((s) => [s.name, s.transport === "stdio" && s.command, s.file && path.basename(s.file)])).toEqual([
      ["a", "one", "config.json"],
      ["b", "three", ".mcp.json"],
    ]);
    expect(servers[0]).toMatchObject({ cwd: path.join(project, "tools") });
    const merged = mergeServers([{ name: "b", origin: "editor", transport: "stdio", command: "ed", args: [], env: {} }], servers);
    expect(merged.servers.map((s) => `${s.name}:${s.origin}`)).toEqual(["b:editor", "a:project"]);
    expect(merged.problems[0]?.message).toMatch(/"b" \(project\) is also given by the editor, which wins/);
    await fsp.rm(project, { recursive: true, force: true });
  });
});

describe("MCP prompts as slash commands", () => {
  const review: McpPrompt = { server: "gh", name: "review", arguments: [{ name: "pr", required: true }, { name: "repo" }] };
  const greet: McpPrompt = { server: "gh", name: "greet", arguments: [{ name: "who", required: true }] };

  it("finds /<server>:<prompt> and reads its arguments as words, name=value pairs, a JSON object or (one argument) the whole text", () => {
    expect(parsePromptCommand("/gh:review 42 me/x", [review, greet])).toEqual({ prompt: review, rest: "42 me/x" });
    expect(parsePromptCommand("/gh:nope 1", [review])).toBeNull();
    expect(promptArguments(review, "42 me/x")).toEqual({ values: { pr: "42", repo: "me/x" } });
    expect(promptArguments(review, 'repo="a b" pr=7')).toEqual({ values: { repo: "a b", pr: "7" } });
    expect(promptArguments(review, '{"pr": 9}')).toEqual({ values: { pr: "9" } });
    expect(promptArguments(greet, "Ada Lovelace")).toEqual({ values: { who: "Ada Lovelace" } });
    expect(promptArguments(review, "")).toEqual({
      error: "Missing pr. /gh:review takes pr [repo] (words in this order, name=value pairs, or a JSON object)",
    });
  });

  it("sends the prompt's messages as one user turn, marked by role when both speak", () => {
    expect(promptTurnText([{ role: "user", content: { type: "text", text: "Review PR 42." } }])).toBe("Review PR 42.");
    expect(
      promptTurnText([
        { role: "user", content: { type: "text", text: "Hi" } },
        { role: "assistant", content: { type: "text", text: "Hello" } },
      ]),
    ).toBe("User: Hi\n\nAssistant: Hello");
  });
});
