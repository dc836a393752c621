import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { trust } from "../../src/host/trust.js";
import { runCli } from "./harness.js";
import { useAgentEnv } from "../helpers.js";
import { liveness } from "../mcp/liveness.js";

// `toolhost mcp list` and doctor: the user's servers, the project's only when it is trusted.

const FIXTURE = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));

const t = useAgentEnv();
const toolhost = (...args: string[]) =>
  runCli(args, {
    cwd: t.ws,
    env: t.env({ TOOLHOST_MCP_TIMEOUT_MS: "5000" }),
    timeout: 30_000,
  });
const server = (name: string, env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [FIXTURE],
  env: { MCP_NAME: name, ...env },
});

describe("toolhost mcp list", () => {
  it("connects the user's servers and lists their status, tool counts and errors; the project's wait for trust", async () => {
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({ mcpServers: { mine: server("mine"), broken: server("broken", { MCP_FAIL_START: "1" }), typo: { comand: "x" } } }),
    );
    await fsp.writeFile(path.join(t.ws, ".mcp.json"), JSON.stringify({ mcpServers: { theirs: server("theirs") } }));

    const untrusted = await toolhost("mcp", "list", "--json");
    expect(untrusted.code).toBe(1);
    const report = JSON.parse(untrusted.stdout);
    expect(report.trusted).toBe(false);
    const byName = Object.fromEntries(report.servers.map((s: { name: string }) => [s.name, s]));
    expect(byName.mine).toMatchObject({ state: "ready", origin: "user", transport: "stdio", tools: 7, prompts: 1 });
    expect(byName.mine.toolIds).toContain("mcp__mine__echo");
    expect(byName.broken).toMatchObject({ state: "failed", error: expect.stringMatching(/could not start|closed/) });
    expect(byName.theirs).toBeUndefined();
    expect(report.untrusted).toEqual([{ name: "theirs", file: path.join(t.ws, ".mcp.json") }]);
    expect(report.problems).toEqual([expect.objectContaining({ server: "typo", message: expect.stringContaining("needs a command") })]);

    await trust(t.ws, t.home);
    const text = await toolhost("mcp", "list");
    expect(text.stdout).toMatch(/^theirs {2}ready {2}stdio \(project\) {2}7 tools, 1 prompt$/m);
    expect(text.stdout).toMatch(/^mine {2}ready/m);

    // `toolhost call` starts the server for the call (full mode: typing the command approves it).
    const call = await toolhost("call", "mcp__theirs__add", '{"a": 20, "b": 22}');
    expect(call.code).toBe(0);
    expect(JSON.parse(call.stdout)).toMatchObject({ type: "output", data: "42" });

    const doctor = await toolhost("doctor");
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/mcp servers: 3 \(2 ready, 14 tools/);
    expect(doctor.stdout).toContain('MCP server "broken"');
  }, 40_000);
});

describe("a server that never answers", () => {
  it("is gone with its child after `toolhost mcp list`, whose timeout it missed", async () => {
    const [serverPidFile, childPidFile] = [path.join(t.home, "server.pid"), path.join(t.home, "child.pid")];
    const env = {
      MCP_START_DELAY_MS: "600000",
      MCP_PID_FILE: serverPidFile,
      MCP_CHILD_PID_FILE: childPidFile,
      MCP_CHILD_AT_START: "1",
      MCP_CHILD_IGNORES_TERM: "1",
    };
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({ mcpServers: { mute: { ...server("mute", env), startupTimeoutMs: 3000 } } }),
    );
    const list = await toolhost("mcp", "list", "--json");
    expect(JSON.parse(list.stdout).servers).toEqual([expect.objectContaining({ name: "mute", state: "failed" })]);
    // Both had started (they wrote their pids), and the CLI has exited.
    const pids = await Promise.all([serverPidFile, childPidFile].map(async (file) => Number(await fsp.readFile(file, "utf8"))));
    for (const pid of pids) await expect.poll(() => liveness(pid), { timeout: 5000 }).toBe("gone");
  }, 40_000);
});
