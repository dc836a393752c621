import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { until } from "../helpers.js";
import { sandboxStatus } from "../sandbox-status.js";
import { Harness, lastUpdate, prompt, selected, useAcpTest } from "./harness.js";

// Issue 33: whatever ends toolhost, the servers it started end with it. A real `toolhost` ACP agent
// runs a language server (in the sandbox, as every one does) and a user-level stdio MCP server
// with a child of its own; neither ends when its input does. The agent is SIGKILLed (no exit hook
// runs), and every one of their processes must be gone.

const LANGUAGE_SERVER = fileURLToPath(new URL("../fixtures/lsp-crash-server.mjs", import.meta.url));
const MCP_SERVER = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));

const t = useAcpTest({ "note.crash": "hello\n" });
const sandbox = await sandboxStatus("acp/servers-lifecycle.test.ts");

/** Live processes with `marker` in their command line or environment (a zombie has neither). */
async function marked(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await fsp.readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const cmdline = (await fsp.readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).replace(/\0/g, " ");
    const environ = await fsp.readFile(`/proc/${pid}/environ`, "utf8").catch(() => "");
    if (cmdline.includes(marker) || environ.split("\0").includes(`SERVER_TEST_MARKER=${marker}`)) found.push(`${pid}: ${cmdline}`);
  }
  return found;
}

describe.skipIf(!sandbox.available)("servers end with toolhost, even when toolhost is SIGKILLed", { timeout: 180_000 }, () => {
  it("the language server's group and the MCP server's, child included, are gone", async () => {
    const marker = String(Math.random()).slice(2);
    const mcpChild = path.join(t.home, "mcp-child.pid");
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({
        // The language server's argv holds the marker (the sandbox passes no unlisted environment).
        lsp: { stay: { command: process.execPath, args: [LANGUAGE_SERVER, "--stay", marker], extensions: [".crash"] } },
        mcpServers: {
          mine: {
            command: process.execPath,
            args: [MCP_SERVER],
            env: { MCP_NAME: "mine", MCP_CHILD_AT_START: "1", MCP_CHILD_PID_FILE: mcpChild, SERVER_TEST_MARKER: marker },
          },
        },
      }),
    );
    t.fake = await startFakeOpenAI({
      script: [{ toolCalls: [{ id: "l1", name: "lsp", arguments: { action: "diagnostics", path: "note.crash" } }] }, { text: "Looked." }],
    });
    // SIGKILLed below: the test ends it, not useAcpTest's clean-up (which expects exit code 0).
    const h = new Harness({
      permission: () => selected("allow_once"),
      env: {
        TOOLHOST_HOME: t.home,
        TOOLHOST_MODEL: "openai-compatible/fake",
        TOOLHOST_BASE_URL: t.fake.url,
        TOOLHOST_LSP_WAIT_MS: "90000",
      },
    });
    const exited = new Promise((resolve) => h.child.once("exit", resolve));
    try {
      await h.initialize();
      const sessionId = await h.newSession(t.ws);
      expect((await prompt(h, sessionId, "Look.")).stopReason).toBe("end_turn");
      expect(lastUpdate(h, sessionId, h.updatesOf(sessionId, "tool_call")[0]!.toolCallId).status).toBe("completed");
      // Running: the language server (its wrapper and bwrap too), the MCP server and its child.
      const running = async () => {
        const live = await marked(marker);
        const child = await fsp.readFile(mcpChild, "utf8").catch(() => "");
        return (
          live.some((p) => p.includes(`${LANGUAGE_SERVER} --stay`)) &&
          live.some((p) => p.includes(MCP_SERVER)) &&
          child !== "" &&
          live.some((p) => p.startsWith(`${child}:`))
        );
      };
      await until(running, 60_000).catch(async (err: Error) => {
        throw new Error(`${err.message}; running: ${(await marked(marker)).join("\n")}; toolhost said: ${h.stderr.join("")}`);
      });
      h.child.kill("SIGKILL");
      await exited;
      // Every one of their processes ends, however long a busy machine takes.
      await until(async () => (await marked(marker)).length === 0, 60_000).catch(async () => {
        throw new Error(`still running after toolhost's SIGKILL:\n${(await marked(marker)).join("\n")}`);
      });
    } finally {
      h.child.kill("SIGKILL");
      for (const p of await marked(marker)) process.kill(Number(p.split(":")[0]), "SIGKILL");
    }
  });
});
