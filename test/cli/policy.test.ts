import { describe, expect, it } from "vitest";
import { runCli } from "./harness.js";
import { useAgentEnv } from "../helpers.js";

// `toolhost policy explain` and `list` against real config files: the decision, each thing the
// call touches with the rules that cover it, and the winner. Nothing runs.

const t = useAgentEnv({
  shared: true,
  files: { "a.txt": "a\n" },
  home: {
    "config.json": JSON.stringify({
      permissions: [
        { permission: "bash", pattern: "git push*", action: "deny" },
        { permission: "bash", pattern: "git *", action: "allow" },
        { permission: "bash", pattern: 7, action: "allow" },
      ],
    }),
  },
});
function toolhost(args: string[]) {
  return runCli(args, { cwd: t.ws, env: t.env() });
}

describe("toolhost policy", () => {
  it("explains a compound line: the denied part and the rule that wins it", async () => {
    const { code, stdout } = await toolhost([
      "policy",
      "explain",
      "bash",
      '{"command":"git status; git push origin main"}',
      "--mode",
      "ask",
    ]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^bash in ask mode: deny$/m);
    expect(stdout).toMatch(/decided by the user rule in .*config\.json: deny bash "git push\*"/);
    expect(stdout).toMatch(/command "git status" \(shell\.run\):\n\s+→ user rule .*allow bash "git \*"/);
  });

  it("answers in JSON, and explains a call no rule covers", async () => {
    const allowed = JSON.parse(
      (await toolhost(["policy", "explain", "bash", '{"command":"git status"}', "--mode", "ask", "--json"])).stdout,
    );
    expect(allowed).toMatchObject({ tool: "bash", mode: "ask", decision: "allow", rule: expect.stringContaining('allow bash "git *"') });
    const asked = JSON.parse((await toolhost(["policy", "explain", "bash", '{"command":"tsc"}', "--mode", "ask", "--json"])).stdout);
    expect(asked).toMatchObject({ decision: "ask", rule: null });
    const read = JSON.parse((await toolhost(["policy", "explain", "read", '{"path":"a.txt"}', "--json"])).stdout);
    expect(read.decision).toBe("allow");
    expect(read.targets[0]).toMatchObject({ kind: "path", capability: "fs.read", matching: [] });
  });

  it("a deny rule holds for every spelling, and an unknown line is refused headless, saying why (issue 20)", async () => {
    for (const command of [
      "git -C . push origin main",
      "command git push",
      "sudo -u me git push",
      'bash -c "git push"',
      "echo x | xargs git push",
    ]) {
      const json = JSON.parse((await toolhost(["policy", "explain", "bash", JSON.stringify({ command }), "--json"])).stdout);
      expect([command, json.decision]).toEqual([command, "deny"]);
    }
    const unknown = JSON.parse((await toolhost(["policy", "explain", "bash", '{"command":"eval \\"$X\\""}', "--json"])).stdout);
    expect(unknown).toMatchObject({
      decision: "ask",
      why: expect.stringMatching(/^unknown spelling: eval runs text known only when it runs/),
    });
    const ran = await toolhost(["call", "bash", JSON.stringify({ command: "echo ok | sh" }), "--cwd", t.ws]);
    expect(ran.code).toBe(1);
    expect(JSON.parse(ran.stdout).error_text).toMatch(
      /nobody can answer here.*unknown spelling: sh runs commands it reads from stdin.*deny bash "git push\*"/s,
    );
    const plain = JSON.parse((await toolhost(["policy", "explain", "bash", '{"command":"ls | grep a"}', "--json"])).stdout);
    expect(plain.decision).toBe("allow");
  });

  it("prints decide()'s verdict: the layer that decided, why, and what 'always' would cover", async () => {
    const explain = async (command: string, mode = "ask") =>
      JSON.parse((await toolhost(["policy", "explain", "bash", JSON.stringify({ command }), "--mode", mode, "--json"])).stdout);
    const denied = await explain("git push origin main");
    expect(denied.verdict).toMatchObject({ action: "deny", layer: "rule", code: "permission_denied", rule: { pattern: "git push*" } });
    expect(denied.reason).toBe(denied.verdict.why);
    const asked = await explain("tsc");
    expect(asked.verdict).toMatchObject({
      action: "ask",
      layer: "mode",
      why: asked.why,
      rule: null,
      alwaysScope: { rules: [{ pattern: "tsc" }, { pattern: "tsc *" }] },
    });
    // An opaque command (its effect is in a makefile) asks in full mode too, and explain says why.
    const opaque = await explain("make d", "full");
    expect(opaque.verdict).toMatchObject({ action: "ask", layer: "guard" });
    expect(opaque.why).toMatch(
      /make runs the recipes of a makefile; its effect cannot be read from its text, and a deny rule for `git push\*` is in force/,
    );
    const guarded = await explain('eval "$X"', "full");
    expect(guarded.verdict).toMatchObject({ action: "ask", layer: "guard", why: guarded.why });
    const { stdout } = await toolhost(["policy", "explain", "bash", '{"command":"eval \\"$X\\""}']);
    expect(stdout).toMatch(/^decided by the guard on lines no rule can read \(over the user rule .*deny bash "git push\*"\)$/m);
  });

  it("lists the rules in force with their sources and says which were left out", async () => {
    const { code, stdout } = await toolhost(["policy", "list"]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/- user rule in .*config\.json: deny bash "git push\*"/);
    expect(stdout).toMatch(/Left out:\n- .*config\.json/);
    expect((await toolhost(["policy", "nope"])).code).toBe(2);
  });
});
