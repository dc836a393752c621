import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { trust } from "../../src/host/trust.js";
import { until } from "../helpers.js";
import { closeAndCheck, Harness, lastUpdate, selected, textOf, useAcpTest } from "./harness.js";
import { sandboxStatus } from "../sandbox-status.js";

// Issue 25's done-when over the real ACP wire: in a trusted project, the model reads a TypeScript
// and a Python file (their servers start inside the sandbox, as in any project:
// typescript-language-server and pyright from the dev dependencies, found on PATH), then edits
// that break each; each edit's result, as the model gets it and as the editor shows it, names
// exactly the new error, nothing of the errors the files already had. Then the lsp tool finds a
// definition, and the editor gets its place. A session closed while the agent lives stops its servers.

const BIN = fileURLToPath(new URL("../../node_modules/.bin", import.meta.url));

const TS = [
  "export function add(a: number, b: number): number {",
  "  return a + b;",
  "}",
  'export const old: number = "already broken";',
  "",
].join("\n");
const PY = ["def add(a: int, b: int) -> int:", "    return a + b", "", 'already: int = "broken"', ""].join("\n");

const t = useAcpTest({
  "tsconfig.json": JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: "es2022", module: "nodenext" } }),
  "a.ts": TS,
  "m.py": PY,
  "b.ts": 'import { add } from "./a.js";\n\nexport const total = add(1, 2);\n',
});

const sandbox = await sandboxStatus("acp/lsp.test.ts");

/** Live processes whose environment holds `marker` (the servers get it: the config's sandbox.env passes it). */
async function withMarker(marker: string): Promise<string[]> {
  const found: string[] = [];
  for (const pid of await fsp.readdir("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    const environ = await fsp.readFile(`/proc/${pid}/environ`, "utf8").catch(() => "");
    if (environ.split("\0").includes(`LSP_TEST_MARKER=${marker}`)) found.push(pid);
  }
  return found;
}

async function start(
  script: FakeReply[],
  env: Record<string, string> = {},
): Promise<{ h: Harness; sessionId: string; prompt: (text: string) => Promise<unknown> }> {
  t.fake = await startFakeOpenAI({ script });
  const h = (t.h = new Harness({
    permission: () => selected("allow_once"),
    env: {
      TOOLHOST_HOME: t.home,
      TOOLHOST_MODEL: "openai-compatible/fake",
      TOOLHOST_BASE_URL: t.fake.url,
      PATH: `${BIN}${path.delimiter}${process.env.PATH ?? ""}`,
      // A loaded machine may take long to start the servers; a settled server ends the wait long before.
      TOOLHOST_LSP_WAIT_MS: "90000",
      ...env,
    },
  }));
  await h.initialize();
  const sessionId = await h.newSession(t.ws);
  const prompt = (text: string) => h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  return { h, sessionId, prompt };
}

const call = (id: string, name: string, args: unknown) => ({ id, name, arguments: args });

// Three servers starting on a loaded machine take long; each step waits for its event, this bounds the whole.
describe.skipIf(!sandbox.available)("diagnostics after an edit, over the wire", { timeout: 180_000 }, () => {
  it("an edit that breaks a TypeScript and a Python file returns the new errors, without the old ones", async () => {
    await trust(t.ws, t.home);
    const script: FakeReply[] = [
      { toolCalls: [call("r1", "read", { path: "a.ts" }), call("r2", "read", { path: "m.py" })] },
      {
        toolCalls: [
          call("e1", "edit", { path: "a.ts", old_string: "return a + b;", new_string: 'return "sum";' }),
          call("e2", "edit", { path: "m.py", old_string: "return a + b", new_string: 'return "sum"' }),
        ],
      },
      { toolCalls: [call("l1", "lsp", { action: "definition", path: "b.ts", line: 3, character: 22 })] },
      { text: "Both edited." },
    ];
    const marker = String(Math.random()).slice(2);
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ sandbox: { env: ["LSP_TEST_MARKER"] } }));
    const { h, sessionId, prompt } = await start(script, { LSP_TEST_MARKER: marker });
    const result = (await prompt("Make add return a string.")) as { stopReason: string };
    expect(result.stopReason).toBe("end_turn");

    const tsBlock = "New problems after this edit:\na.ts:2:3 Type 'string' is not assignable to type 'number'.";
    const pyBlock = /^New problems after this edit:\nm\.py:2:12 Type "Literal\['sum'\]" is not assignable to return type "int"[^\n]*$/;

    // What the model got back: the block, and nothing of the errors that were there before.
    const results = (t.fake!.requests[2]?.body.messages ?? [])
      .filter((m) => m.role === "tool")
      .map((m) => String(m.content))
      .slice(2);
    expect(results).toHaveLength(2);
    expect(results[0]).toContain(tsBlock);
    // The problems section is the block alone: the errors already there (line 4 of each) are not in it.
    const problems = (text: string) => text.slice(text.indexOf("problems:\n") + "problems:\n".length).trim();
    expect(problems(results[0]!)).toBe(tsBlock);
    expect(problems(results[1]!)).toMatch(pyBlock);
    expect(problems(results[1]!).split("\n")).toHaveLength(2);

    // What the editor shows: the diff, and the same block as text.
    const [e1, e2] = h.updatesOf(sessionId, "tool_call").slice(2);
    const tsUpdate = lastUpdate(h, sessionId, e1!.toolCallId);
    expect(tsUpdate.status).toBe("completed");
    expect(
      textOf(tsUpdate)
        .split("\n")
        .filter((line) => line.startsWith("a.ts:")),
    ).toEqual(["a.ts:2:3 Type 'string' is not assignable to type 'number'."]);
    expect(textOf(tsUpdate)).toContain(tsBlock);
    const pyUpdate = lastUpdate(h, sessionId, e2!.toolCallId);
    expect(pyUpdate.status).toBe("completed");
    expect(
      textOf(pyUpdate)
        .split("\n")
        .filter((line) => line.startsWith("m.py:")),
    ).toHaveLength(1);
    expect(textOf(pyUpdate).trim()).toMatch(pyBlock);

    // The lsp tool: the definition as path:line:col, and as a location the editor follows.
    const lookup = lastUpdate(h, sessionId, h.updatesOf(sessionId, "tool_call")[4]!.toolCallId);
    expect(lookup.status).toBe("completed");
    expect(textOf(lookup)).toContain("a.ts:1:17 export function add(a: number, b: number): number {");
    expect(lookup.locations).toEqual([{ path: path.join(t.ws, "a.ts"), line: 1 }]);

    // The servers (typescript-language-server, its tsserver, pyright) end with the agent.
    expect((await withMarker(marker)).length).toBeGreaterThanOrEqual(3);
    t.h = undefined;
    await closeAndCheck(h);
    const deadline = Date.now() + 5000;
    while ((await withMarker(marker)).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await withMarker(marker)).toEqual([]);
  });

  it("an untrusted project's server runs as a trusted one's, and the edit gets its new error", async () => {
    const { h, sessionId, prompt } = await start([
      { toolCalls: [call("r1", "read", { path: "a.ts" })] },
      { toolCalls: [call("e1", "edit", { path: "a.ts", old_string: "return a + b;", new_string: "return a + c;" })] },
      { text: "Edited." },
    ]);
    expect(((await prompt("Edit it.")) as { stopReason: string }).stopReason).toBe("end_turn");
    const edited = lastUpdate(h, sessionId, h.updatesOf(sessionId, "tool_call")[1]!.toolCallId);
    expect(edited.status).toBe("completed");
    expect(textOf(edited).trim()).toBe("New problems after this edit:\na.ts:2:14 Cannot find name 'c'.");
  });

  it("a session closed while the agent lives on stops its servers, their whole trees", async () => {
    const marker = String(Math.random()).slice(2);
    await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ sandbox: { env: ["LSP_TEST_MARKER"] } }));
    const { h, sessionId, prompt } = await start(
      [{ toolCalls: [call("l1", "lsp", { action: "diagnostics", path: "a.ts" })] }, { text: "Looked." }],
      { LSP_TEST_MARKER: marker },
    );
    expect(((await prompt("Look.")) as { stopReason: string }).stopReason).toBe("end_turn");
    expect(lastUpdate(h, sessionId, h.updatesOf(sessionId, "tool_call")[0]!.toolCallId).status).toBe("completed");
    // typescript-language-server and its tsserver at least; the agent holds the marker too, and lives on.
    const servers = async () => (await withMarker(marker)).filter((pid) => pid !== String(h.child.pid));
    expect((await servers()).length).toBeGreaterThanOrEqual(2);
    await h.agent.request("session/close", { sessionId });
    await until(async () => (await servers()).length === 0, 30_000);
    // The agent lives on, and serves.
    expect(h.child.exitCode).toBeNull();
    expect(await h.newSession(t.ws)).toBeTruthy();
  });
});
