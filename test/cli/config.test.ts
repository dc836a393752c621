import * as fsp from "node:fs/promises";
import os from "node:os";
import { describe, expect, it } from "vitest";
import { describeSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import { runCli } from "./harness.js";
import { useAgentEnv } from "../helpers.js";

// A broken ~/.toolhost/config.json through the built CLI (issue 21 item 1): a bad key is reported
// and falls back to its default; the permission rules hold, and what cannot be read fails closed.

const t = useAgentEnv({ files: { x: "x\n" } });

function toolhost(args: string[]) {
  return runCli(args, { cwd: t.ws, env: t.env() });
}
const writeConfig = (config: unknown) =>
  fsp.writeFile(`${t.home}/config.json`, typeof config === "string" ? config : JSON.stringify(config));
const DENY_RM = { permission: "bash", pattern: "rm *", action: "deny" };

describe("a broken user config (issue 21)", () => {
  it('"model": 42 next to a deny rule: the rule holds and stderr names the bad key', async () => {
    await writeConfig({ model: 42, permissions: [DENY_RM] });
    const ran = await toolhost(["call", "bash", '{"command":"rm x"}', "--mode", "full"]);
    expect(ran.code).toBe(1);
    expect(JSON.parse(ran.stdout)).toMatchObject({ metadata: { error_code: "permission_denied" } });
    expect(ran.stderr).toMatch(/config\.json: "model" is ignored \(no model from the file\): Invalid input: expected string/);
    await expect(fsp.stat(`${t.ws}/x`)).resolves.toBeTruthy();
  });

  it('"sandbox": "of" is reported and the sandbox stays on; the rules hold', async () => {
    await writeConfig({ sandbox: "of", permissions: [DENY_RM] });
    const ran = await toolhost(["call", "bash", '{"command":"rm x"}', "--mode", "full"]);
    expect(JSON.parse(ran.stdout).metadata.error_code).toBe("permission_denied");
    expect(ran.stderr).toMatch(/"sandbox" is ignored \(the sandbox stays on.*\): must be "on", "off"/);
  });

  it("invalid JSON fails closed: every call asks (headless: refused), and says so", async () => {
    await writeConfig('{"permissions": [{"permission": "bash", "pattern": "rm *", "action": "deny"},]}');
    const ran = await toolhost(["call", "bash", '{"command":"echo hi"}', "--mode", "full"]);
    expect(ran.code).toBe(1);
    expect(JSON.parse(ran.stdout).error_text).toMatch(/needs approval.*fail closed/);
    // Said once, though the config, its rules and the MCP servers each read the file.
    expect(ran.stderr).toMatch(
      /config\.json is not valid JSON \(.*\): the permission rules could not be read; .*every call asks \(fail closed\)/,
    );
    expect(ran.stderr.match(/config\.json/g)).toHaveLength(1);
  });

  it("a malformed deny entry makes its tool ask; a valid allow of another tool still holds", async () => {
    await writeConfig({
      permissions: [
        { permission: "bash", pattern: "rm *", action: "Deny" },
        { permission: "bash", pattern: "echo *", action: "allow" },
        { permission: "write", pattern: "*", action: "deny" },
      ],
    });
    const echo = await toolhost(["call", "bash", '{"command":"echo hi"}', "--mode", "full"]);
    expect(JSON.parse(echo.stdout).error_text).toMatch(/fail closed: permissions\[0\] could not be read/);
    expect(echo.stderr).toMatch(/permissions\[0\].*until it is fixed every bash call asks/);
    const write = await toolhost(["call", "write", '{"path":"y","content":"y"}', "--mode", "full"]);
    expect(JSON.parse(write.stdout).error_text).toMatch(/refused by a permission rule.*deny write/);
    const read = await toolhost(["call", "read", '{"path":"x"}']);
    expect(read.code).toBe(0);
  });
});

describe("the workspace folder (issue 21)", () => {
  it("call, run and policy refuse / and system folders as --cwd", async () => {
    for (const args of [
      ["call", "read", '{"path":"x"}', "--cwd", "/"],
      ["run", "hi", "--cwd", "/usr"],
      ["policy", "list", "--cwd", "/etc"],
    ]) {
      const ran = await toolhost(args);
      expect(ran.code, args.join(" ")).toBe(2);
      expect(ran.stderr).toMatch(/--cwd \/\S* is (the root of the file system|a system folder), which cannot be a workspace/);
    }
  });

  it("the home folder needs --allow-home, and then every command asks (headless: refused)", async () => {
    const run = (args: string[]) => runCli(args, { cwd: t.ws, env: t.env({ HOME: t.ws }) });
    const refused = await run(["call", "bash", '{"command":"touch y"}', "--cwd", t.ws]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/is your home folder.*Run it in a project folder, or pass --allow-home/);
    const allowed = await run(["call", "bash", '{"command":"touch y"}', "--cwd", t.ws, "--allow-home"]);
    expect(JSON.parse(allowed.stdout).error_text).toMatch(/needs approval.*the workspace is your whole home folder/);
    await expect(fsp.stat(`${t.ws}/y`)).rejects.toThrow();
    expect((await run(["call", "read", '{"path":"x"}', "--cwd", t.ws, "--allow-home"])).code).toBe(0);
  });

  it("the sandbox's description says when the workspace covers the home folder", () => {
    const state = { active: true, off: false };
    expect(describeSandbox(state, 1000, [os.homedir()])).toMatch(/covers your whole home folder, so all of it is writable/);
    expect(describeSandbox(state, 1000, [t.ws])).not.toMatch(/home folder/);
  });
});

describe("toolhost doctor and toolhost agents (issue 21)", () => {
  const run = (args: string[], extra: NodeJS.ProcessEnv = {}) => runCli(args, { cwd: t.ws, env: t.env(extra), timeout: 20_000 });

  it("doctor names invalid rules, bad agent files and a missing model; invalid JSON once", async () => {
    await writeConfig({ permissions: [DENY_RM, { permission: "bash", action: "nope" }] });
    await fsp.mkdir(`${t.home}/agents`);
    await fsp.writeFile(`${t.home}/agents/bad.md`, "---\nname: bad\n---\nNo description.\n");
    const doctor = await run(["doctor"]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toMatch(/permissions\[1\] .*"nope"/);
    expect(doctor.stdout).toMatch(/agents\/bad\.md: `description` .* is missing/);
    expect(doctor.stdout).toMatch(/no model is configured.*set TOOLHOST_MODEL=provider\/model/);
    const keyless = await run(["doctor"], { TOOLHOST_MODEL: "anthropic/claude-sonnet-4-5" });
    expect(keyless.stdout).toMatch(/model anthropic\/claude-sonnet-4-5 needs an API key: set ANTHROPIC_API_KEY/);

    await writeConfig("{ not json");
    const invalid = await run(["doctor"], { TOOLHOST_MODEL: "ollama/qwen3" });
    expect(invalid.stdout.match(/not valid JSON/g)).toHaveLength(1);
    expect(invalid.stdout.match(/config\.json: |config\.json is /g)).toHaveLength(1);
  });

  it("toolhost agents lists the agents with their source and the bad files", async () => {
    await fsp.mkdir(`${t.home}/agents`);
    await fsp.writeFile(`${t.home}/agents/reviewer.md`, "---\nname: reviewer\ndescription: Reviews a change.\n---\nReview.\n");
    await fsp.writeFile(`${t.home}/agents/bad.md`, "no front matter\n");
    const text = await run(["agents"]);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(/^general-purpose .*\[builtin\]$/m);
    expect(text.stdout).toMatch(/^reviewer +Reviews a change\. +\[.*agents\/reviewer\.md\]$/m);
    expect(text.stdout).toMatch(/problems \(these files are left out\):\n {2}.*agents\/bad\.md: /);
    const json = JSON.parse((await run(["agents", "--json", "--cwd", t.ws])).stdout);
    expect(json.agents.map((a: { name: string }) => a.name)).toEqual(["general-purpose", "reviewer"]);
    expect(json.problems).toHaveLength(1);
  });
});
