import { describe, expect, it } from "vitest";
import { runCli } from "./harness.js";
import { useAgentEnv } from "../helpers.js";

// `toolhost policy explain` asks the session's tool_call hooks too (nothing else runs): their
// verdict is a layer of the decision, named in the output.

const noCurl = `grep -q '"command":"curl' && { echo "no curl in this project" >&2; exit 2; } || exit 0`;
const t = useAgentEnv({
  shared: true,
  home: { "config.json": JSON.stringify({ hooks: { tool_call: [{ matcher: "bash", command: noCurl }] } }) },
});

describe("toolhost policy explain with hooks", () => {
  it("shows a hook's deny as the decision, and no opinion where it has none", async () => {
    const denied = await runCli(["policy", "explain", "bash", '{"command":"curl example.com"}', "--mode", "full"], {
      cwd: t.ws,
      env: t.env(),
    });
    expect(denied.stdout).toMatch(/^bash in full mode: deny$/m);
    expect(denied.stdout).toMatch(/decided by the hook/);
    expect(denied.stdout).toMatch(/^hooks: deny \(tool_call\[0\] in .*config\.json\): no curl in this project$/m);
    const json = JSON.parse(
      (await runCli(["policy", "explain", "bash", '{"command":"ls"}', "--mode", "full", "--json"], { cwd: t.ws, env: t.env() })).stdout,
    );
    expect(json).toMatchObject({ decision: "allow", hook: { decision: null } });
  });
});
