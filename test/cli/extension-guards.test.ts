import { describe, expect, it } from "vitest";
import { runCli } from "./harness.js";
import { useAgentEnv } from "../helpers.js";

// What extension code cannot do to the process that hosts it: corrupt the CLI's JSON on stdout,
// end toolhost with process.exit, or freeze it for good with a synchronous endless loop.

const tool = (id: string, body: string, extra = "") => `import { defineTool, z } from "toolhost";
export default defineTool({
  id: "${id}",
  description: "d",
  kind: "other",
  parameters: z.object({}),
  requires: {},${extra}
  async execute() {
    ${body}
  },
});
`;

const t = useAgentEnv({
  home: {
    "profiles/default/tools/noisy.ts": tool("noisy", 'console.log("NOISE from execute"); return "noisy ran";'),
    "profiles/default/tools/exiter.ts": tool("exiter", 'process.exit(7); return "unreachable";'),
    "profiles/default/tools/exit_at_import.ts": `process.exit(9);\n${tool("exit_at_import", 'return "x";')}`,
    "profiles/default/tools/spin.ts": tool("spin", "for (;;) {}", "\n  timeoutMs: 1000,"),
  },
});

const toolhost = (...args: string[]) => runCli(args, { cwd: t.ws, env: t.env(), timeout: 40_000 });

describe("extension code and the process", () => {
  it("process.exit in execute fails that call; at import, that file; the CLI goes on and prints its JSON", async () => {
    const called = await toolhost("call", "exiter", "{}");
    expect(called.code).toBe(1);
    const envelope = JSON.parse(called.stdout);
    expect(envelope).toMatchObject({ type: "error", metadata: { error_code: "execution_failed" } });
    expect(envelope.error_text).toMatch(/process\.exit\(7\) was called by extension code \(.*exiter\.ts\)/);
    const tools = await toolhost("tools", "--json");
    expect(tools.code).toBe(0);
    const report = JSON.parse(tools.stdout);
    expect(report.tools.map((t: { id: string }) => t.id)).toEqual(expect.arrayContaining(["noisy", "exiter", "spin"]));
    expect(JSON.stringify(report)).toMatch(/exit_at_import\.ts.*process\.exit\(9\) was called by extension code/);
  });

  it("console.log in an extension leaves `run --json` one JSON event per line", async () => {
    const run = await toolhost("run", "/noisy", "--json", "--mode", "full");
    expect(run.code).toBe(0);
    const events = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["tool_call_end", "tool_result", "stop"]));
    expect(run.stderr).toContain("NOISE from execute");
  });

  it("a synchronous endless loop ends the process past the tool's timeout, saying why on stderr", async () => {
    const spun = await toolhost("call", "spin", "{}");
    expect(spun.code).not.toBe(0);
    expect(spun.stdout).toBe("");
    expect(spun.stderr).toMatch(/the extension tool spin has held the main thread for \d+ s, past its timeout .*SIGKILL/);
  }, 60_000);
});
