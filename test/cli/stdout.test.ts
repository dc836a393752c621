import type { SessionUpdate } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { Harness, selected, useAcpTest } from "../acp/harness.js";
import { runCli } from "./harness.js";

// stdout carries the protocol (or the CLI's JSON) only, whatever an extension writes to it:
// at import, in execute, with console.log or process.stdout.write, with or without a newline.

/** A tool that writes to stdout when imported and when it runs. */
const NOISY = `import { defineTool, z } from "toolhost";
process.stdout.write("import noise without a newline ");
console.log("import noise from console.log");
export default defineTool({
  id: "noisy",
  description: "Writes to stdout",
  kind: "other",
  parameters: z.object({}),
  requires: {},
  async execute() {
    process.stdout.write("execute noise without a newline ");
    console.info("execute noise from console.info");
    return "noisy ran";
  },
});
`;

const t = useAcpTest({ "notes.md": "hi\n" }, { home: { "profiles/default/tools/noisy.ts": NOISY } });

function toolhost(...args: string[]) {
  return runCli(args, { cwd: t.ws, env: t.env(), timeout: 20_000 });
}

describe("an extension that writes to stdout", () => {
  it("cannot corrupt the ACP stream: every message arrives and the noise goes to stderr", async () => {
    t.h = new Harness({ env: { TOOLHOST_HOME: t.home }, permission: () => selected("allow_once") });
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    await t.h.waitFor(() => t.h!.updatesOf(sessionId, "available_commands_update").length > 0);
    const response = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/noisy" }] });
    expect(response.stopReason).toBe("end_turn");
    const updates = t.h.updatesOf(sessionId, "tool_call_update") as Extract<SessionUpdate, { sessionUpdate: "tool_call_update" }>[];
    expect(updates.at(-1)).toMatchObject({ status: "completed" });
    await t.h.waitFor(() => /execute noise from console\.info/.test(t.h!.stderr.join("")));
    const stderr = t.h.stderr.join("");
    for (const noise of ["import noise without a newline", "import noise from console.log", "execute noise without a newline"]) {
      expect(stderr).toContain(noise);
    }
    // closeAndCheck: no line on stdout broke the ACP schema.
  });

  it("cannot break `toolhost tools --json` or `toolhost call`", async () => {
    const tools = await toolhost("tools", "--json");
    expect(tools.code).toBe(0);
    expect(JSON.parse(tools.stdout).tools.map((t: { id: string }) => t.id)).toContain("noisy");
    expect(tools.stderr).toContain("import noise from console.log");

    const called = await toolhost("call", "noisy", "{}");
    expect(called.code).toBe(0);
    expect(JSON.parse(called.stdout)).toMatchObject({ type: "output", data: "noisy ran" });
    expect(called.stderr).toContain("execute noise without a newline");
  });
});
