import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CLI_PATH, runToEnd, tempDir } from "../helpers.js";
import { Harness, useAcpTest } from "./harness.js";

// A session's start reads ~/.toolhost/config.json once: session/new's answer, the toolset, the
// permission rules, the sandbox setting, the user's MCP servers and each server's environment all
// take that one value. Counted in the real process by a file-access probe
// (test/fixtures/config-probe.mjs: one stderr line per open of the file).

const PROBE = fileURLToPath(new URL("../fixtures/config-probe.mjs", import.meta.url));
const MCP = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));

const t = useAcpTest({ "a.txt": "a\n" });
let home: string;

beforeEach(async () => {
  home = await tempDir();
  const server = (name: string) => ({ command: process.execPath, args: [MCP], env: { MCP_NAME: name } });
  // Two stdio servers (each used to read the file again for its environment), a sandbox entry, a model.
  await fsp.writeFile(
    path.join(home, "config.json"),
    JSON.stringify({
      model: "openai-compatible/fake",
      sandbox: { env: ["MCP_NAME"] },
      mcpServers: { one: server("one"), two: server("two") },
    }),
  );
});
afterEach(async () => {
  await fsp.rm(home, { recursive: true, force: true });
});

const reads = (stderr: string) => stderr.split("\n").filter((line) => line === "config-probe: open").length;

/** The commands of the last available_commands_update. */
const commands = (h: Harness, sessionId: string) =>
  (h.updatesOf(sessionId, "available_commands_update").at(-1)?.availableCommands ?? []).map((c) => c.name);

describe("config.json at session start", () => {
  it("is read once from session/new until the session and the user's MCP servers are ready", async () => {
    t.h = new Harness({ env: { TOOLHOST_HOME: home, NODE_OPTIONS: `--import ${PROBE}`, TOOLHOST_MCP_TIMEOUT_MS: "10000" } });
    await t.h.initialize();
    const { sessionId } = await t.h.agent.request("session/new", { cwd: t.ws, mcpServers: [] });
    // Both servers connected (their prompts are in the menu): every part of the start has run.
    await t.h.waitFor(() => commands(t.h!, sessionId).includes("one:greet") && commands(t.h!, sessionId).includes("two:greet"));
    expect(reads(t.h.stderr.join(""))).toBe(1);
  });

  it("is read once by `toolhost run` for its session and the user's MCP servers", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, TOOLHOST_HOME: home, NODE_OPTIONS: `--import ${PROBE}`, TOOLHOST_SESSIONS: "off" };
    delete env.TOOLHOST_MODEL;
    const ran = await runToEnd([process.execPath, CLI_PATH, "run", "/tools"], { cwd: t.ws, env });
    expect(ran.code).toBe(0);
    // The run waited for both servers: /tools lists them with their tools.
    expect(ran.stdout).toMatch(/- one \(stdio, user\): \d+ tools/);
    expect(ran.stdout).toMatch(/- two \(stdio, user\): \d+ tools/);
    expect(reads(ran.stderr)).toBe(1);
  });
});
