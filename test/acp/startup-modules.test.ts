import { spawn } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { EntryData, TreeEntry } from "../../src/agent/record/session-format.js";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { CLI_PATH, cleanEnv, tempDir } from "../helpers.js";
import { closeAndCheck, Harness, useAcpTest } from "./harness.js";

// What a fresh process loads to answer session/new and session/load (issue 34 §7): the heavy
// modules a session may never use load with their first use, not with every session. The real
// CLI runs under a module probe (test/fixtures/module-probe.mjs: one stderr line per file the
// module loader reads); each bundled chunk's source map names the modules bundled into it.

const PROBE = fileURLToPath(new URL("../fixtures/module-probe.mjs", import.meta.url));

/** Bundled sources, or whole packages, that must wait for their first use. */
const FIRST_USE_ONLY: [string, RegExp][] = [
  ["the LSP client", /src\/runtime\/lsp\/client\.ts$/],
  ["vscode-languageserver-protocol", /node_modules\/vscode-(languageserver-protocol|jsonrpc)\//],
  ["yaml", /node_modules\/yaml\//],
  ["execa", /node_modules\/execa\//],
  ["zod's locales other than English", /node_modules\/zod\/v4\/locales\/(?!en\.js)/],
];

const t = useAcpTest({ "a.txt": "a\n" });
let home: string;

beforeEach(async () => {
  home = await tempDir();
  const session = new SessionStore(home).writer({ id: "one-turn", cwd: t.ws });
  const turn: EntryData[] = [
    { type: "title", title: "A short session" },
    { type: "user", text: "hi" },
    { type: "message", message: { role: "user", content: "hi" } },
    { type: "agent_text", text: "hello" },
    { type: "message", message: { role: "assistant", content: [{ type: "text", text: "hello" }] } },
    { type: "turn_end", stopReason: "end_turn" },
  ];
  const at = new Date().toISOString();
  turn.forEach((data, i) => session.append({ ...data, id: `e${i + 1}`, parentId: i ? `e${i}` : null, at } as TreeEntry));
  session.close();
});
afterEach(async () => {
  // The agent first (its sessions write in the home until they close), then the home: the
  // harness's own close runs after this hook, and a home removed under a live agent can fail.
  const { h } = t;
  t.h = undefined;
  await closeAndCheck(h);
  await fsp.rm(home, { recursive: true, force: true });
});

/** Each file the process loaded, with the sources bundled into it (its own path when it has no map). */
async function loadedSources(stderr: string): Promise<Map<string, string[]>> {
  const files = new Set(stderr.split("\n").flatMap((line) => (line.startsWith("module-probe: ") ? [fileURLToPath(line.slice(14))] : [])));
  const loaded = new Map<string, string[]>();
  for (const file of files) {
    const map = await fsp.readFile(`${file}.map`, "utf8").catch(() => null);
    const sources = map ? (JSON.parse(map) as { sources: string[] }).sources.map((s) => path.resolve(path.dirname(file), s)) : [file];
    loaded.set(file, sources);
  }
  return loaded;
}

describe("a fresh process's start-up", () => {
  it("answers session/new and session/load without the modules only a first use needs", async () => {
    t.h = new Harness({ env: { TOOLHOST_HOME: home, NODE_OPTIONS: `--import ${PROBE}` } });
    await t.h.initialize();
    const { sessionId } = await t.h.agent.request("session/new", { cwd: t.ws, mcpServers: [] });
    await t.h.agent.request("session/load", { sessionId: "one-turn", cwd: t.ws, mcpServers: [] });
    // Both sessions have started (their commands listed): their toolsets and runtimes are loaded;
    // the loaded one replayed its turn.
    await t.h.waitFor(
      () =>
        t.h!.updatesOf(sessionId, "available_commands_update").length > 0 &&
        t.h!.updatesOf("one-turn", "available_commands_update").length > 0 &&
        t.h!.updatesOf("one-turn", "agent_message_chunk").length > 0,
    );

    const loaded = await loadedSources(t.h.stderr.join(""));
    const sources = [...loaded.values()].flat().map((s) => s.split(path.sep).join("/"));
    // The probe saw the session's own code, bundled and mapped: a probe that saw nothing would pass.
    expect(sources.some((s) => s.endsWith("src/agent/session/agent-session.ts"))).toBe(true);
    expect(sources.some((s) => /node_modules\/zod\/v4\/core\/schemas\.js$/.test(s))).toBe(true);
    const early = FIRST_USE_ONLY.filter(([, pattern]) => sources.some((s) => pattern.test(s))).map(([name]) => name);
    expect(early).toEqual([]);
  });

  it("reads two files before it answers session/new: the CLI and the early path's one file", async () => {
    // The probe's lines go to stdout, so they come in order with the answers.
    const child = spawn(process.execPath, [CLI_PATH], {
      cwd: t.ws,
      env: { ...cleanEnv(), TOOLHOST_HOME: home, NODE_OPTIONS: `--import ${PROBE}`, MODULE_PROBE_FD: "1" },
      stdio: ["pipe", "pipe", "ignore"],
    });
    const before: string[] = [];
    const answered = new Promise<void>((resolve, reject) => {
      let buffer = "";
      child.stdout.on("data", (chunk: Buffer) => {
        buffer += chunk.toString("utf8");
        for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + 1);
          if (line.startsWith("module-probe: ")) before.push(path.relative(path.dirname(CLI_PATH), fileURLToPath(line.slice(14))));
          else if ((JSON.parse(line) as { id?: number }).id === 2) resolve();
        }
      });
      child.on("exit", () => reject(new Error("the agent exited before answering session/new")));
    });
    const send = (message: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
    send({ id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} } });
    send({ id: 2, method: "session/new", params: { cwd: t.ws, mcpServers: [] } });
    const exited = new Promise((resolve) => child.once("close", resolve));
    try {
      await answered;
    } finally {
      child.kill();
      await exited;
    }
    // Before scripts/early-bundle.mjs: 22 files (esbuild's split chunks), each costing the loader a round.
    expect(before.map((file) => file.replace(/-[A-Z0-9]{8}\.js$/, ".js")).sort()).toEqual(["chunks/early.js", "cli.js"]);
  });
});
