import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { sandboxNetworkStatus } from "../../src/runtime/sandbox/proxy.js";
import { runCli } from "./harness.js";
import { CLI_PATH, useAgentEnv } from "../helpers.js";
import { toolFile } from "../host/extension-fixtures.js";

const run = promisify(execFile);

const t = useAgentEnv({ files: { "notes.md": "hi\n" } });
function toolhost(...args: string[]) {
  return runCli(args, {
    cwd: t.ws,
    env: t.env({ TOOLHOST_MODEL: "ollama/qwen3" }),
    timeout: 20_000,
  });
}
const put = async (file: string, text: string) => {
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, text);
  return file;
};

describe("the issue's walkthrough: hello.ts in the profile and in a trusted project", () => {
  it("shows which one won and why, lets it be called, and reflects the project's trust", async () => {
    const mine = await put(path.join(t.home, "profiles/default/tools/hello.ts"), toolFile("hello", "profile"));
    const theirs = await put(path.join(t.ws, ".toolhost/tools/hello.ts"), toolFile("hello", "project"));
    await put(path.join(t.ws, ".toolhost/tools/project_only.ts"), toolFile("project_only"));

    const untrusted = JSON.parse((await toolhost("tools", "--json")).stdout);
    expect(untrusted.trusted).toBe(false);
    expect(untrusted.tools.find((t: { id: string }) => t.id === "hello").source).toBe(mine);
    expect(untrusted.tools.some((t: { id: string }) => t.id === "project_only")).toBe(false);
    expect(untrusted.skipped.map((s: { file: string }) => path.basename(s.file))).toEqual(["hello.ts", "project_only.ts"]);

    const granted = await toolhost("trust");
    expect(granted.code).toBe(0);
    expect(granted.stdout).toContain(`Trusted ${t.ws}.`);
    expect(granted.stdout).toContain(theirs);

    const trusted = JSON.parse((await toolhost("tools", "--json")).stdout);
    expect(trusted.trusted).toBe(true);
    const extensionTools = trusted.tools.filter((t: { source: string }) => t.source !== "builtin");
    expect(extensionTools.map((t: { id: string; source: string }) => [t.id, t.source])).toEqual([
      ["hello", mine],
      ["project_only", path.join(t.ws, ".toolhost/tools/project_only.ts")],
    ]);
    expect(trusted.shadowed).toEqual([{ id: "hello", file: theirs, winner: mine }]);
    expect(trusted.errors).toEqual([]);

    const table = (await toolhost("tools")).stdout;
    expect(table).toMatch(new RegExp(`^hello\\s+read\\s+Says which file it came from\\.\\s+\\[${mine}\\]$`, "m"));
    expect(table).toContain(
      `shadowed (discovery order: profile tools, user packages, config toolDirs, project packages, the project's tools; the first definition of an id wins):\n  hello: ${theirs} lost to ${mine}`,
    );

    const called = await toolhost("call", "hello", '{"name":"Ada"}');
    expect(called.code).toBe(0);
    expect(JSON.parse(called.stdout).data).toEqual({ tag: "profile", hello: "Ada" });

    expect((await toolhost("trust", "--revoke")).stdout).toContain(`No longer trusted: ${t.ws}`);
    expect(JSON.parse((await toolhost("tools", "--json")).stdout).trusted).toBe(false);
  });
});

describe("a trusted project whose files changed since", () => {
  it("headless, its changed tools do not load and stderr says which files changed; toolhost trust records them", async () => {
    const tool = await put(path.join(t.ws, ".toolhost/tools/project_only.ts"), toolFile("project_only", "as trusted"));
    expect((await toolhost("trust")).code).toBe(0);
    const trusted = await toolhost("call", "project_only", "{}");
    expect(JSON.parse(trusted.stdout).data).toMatchObject({ tag: "as trusted" });
    expect(trusted.stderr).not.toMatch(/changed since/);

    // Written behind the user's back: a sandboxed command, an unapproved edit.
    await put(tool, toolFile("project_only", "planted"));
    await put(path.join(t.ws, ".mcp.json"), '{"mcpServers": {}}\n');
    const refused = await toolhost("call", "project_only", "{}");
    expect(refused.code).toBe(1);
    expect(refused.stdout).not.toContain("planted");
    expect(JSON.parse(refused.stdout).metadata.error_code).toBe("unknown_tool");
    expect(refused.stderr).toMatch(
      /the project was trusted, but these files changed since:\n- added: \.mcp\.json\n- modified: \.toolhost\/tools\/project_only\.ts/,
    );
    expect(refused.stderr).toContain("toolhost trust");
    expect(refused.stderr.match(/changed since:/g)).toHaveLength(1);
    const report = JSON.parse((await toolhost("tools", "--json")).stdout);
    expect(report.trusted).toBe(false);
    expect(report.trustChanges).toHaveLength(2);

    const again = await toolhost("trust");
    expect(again.stdout).toContain(`Trusted ${t.ws} again, as it is now. These files changed since it was last trusted:`);
    expect(again.stdout).toContain("- modified: .toolhost/tools/project_only.ts");
    const loaded = await toolhost("call", "project_only", "{}");
    expect(JSON.parse(loaded.stdout).data).toMatchObject({ tag: "planted" });
    expect(loaded.stderr).not.toMatch(/changed since/);
  });
});

describe("a project trusted by an older toolhost (trusted.json version 1)", () => {
  it("is asked about once: headless, its tools do not load and stderr says why; toolhost trust records them", async () => {
    await put(path.join(t.ws, ".toolhost/tools/project_only.ts"), toolFile("project_only"));
    await put(
      path.join(t.home, "trusted.json"),
      JSON.stringify({ version: 1, projects: { [t.ws]: { trustedAt: "2025-01-01T00:00:00Z" } } }),
    );
    const refused = await toolhost("call", "project_only", "{}");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      /trusted by an older toolhost, which did not record its files[^\n]*\n- added: \.toolhost\/tools\/project_only\.ts/,
    );
    const again = await toolhost("trust");
    expect(again.stdout).toContain("it was trusted before toolhost recorded them");
    expect(JSON.parse((await toolhost("call", "project_only", "{}")).stdout).data).toMatchObject({ tag: "project_only" });
  });
});

describe("toolhost doctor", () => {
  it("exits 0 with nothing wrong, 1 listing every config, profile and extension problem", async () => {
    const clean = await toolhost("doctor");
    expect(clean.code).toBe(0);
    expect(clean.stdout).toContain("No problems found.");
    expect(clean.stdout).toMatch(/profile: default \(shipped, .*profiles\/default\)/);
    expect(clean.stdout).toMatch(/types for extension files: .*dist\/index\.d\.ts/);

    await put(path.join(t.home, "config.json"), JSON.stringify({ toolDirs: ["extra"], colour: "blue" }));
    const broken = await put(path.join(t.home, "profiles/default/tools/broken.ts"), "export default {");
    await put(path.join(t.home, "profiles/default/tools/locked.ts"), toolFile("bash"));
    const result = await toolhost("doctor");
    expect(result.code).toBe(1);
    // The unknown key is reported and ignored; toolDirs still holds, so its missing folder is a problem too.
    expect(result.stdout).toContain("problems (4):");
    expect(result.stdout).toMatch(/config\.json: unknown key "colour" \(ignored\)/);
    expect(result.stdout).toContain(`${broken}: failed to import`);
    expect(result.stdout).toContain('"bash" is a locked tool id: an extension cannot take it');

    const profile = await toolhost("doctor", "--profile", "nope");
    expect(profile.code).toBe(1);
    expect(profile.stdout).toMatch(/no profile named "nope"/);
  });

  it("says whether the sandbox's network to allowed hosts can run here", async () => {
    const network = sandboxNetworkStatus();
    if (network.available) {
      const here = (await toolhost("doctor")).stdout;
      expect(here).toContain(`\nsandbox network: allowed hosts through the proxy (socat: ${network.socat})\n`);
    }
    // No socat on PATH: the line says what is missing, and the report goes on.
    const env = t.env({ TOOLHOST_MODEL: "ollama/qwen3", PATH: t.home });
    const { stdout } = await run(process.execPath, [CLI_PATH, "doctor"], { cwd: t.ws, env, timeout: 20_000 });
    expect(stdout).toContain(
      "\nsandbox network: socat is not installed (apt-get install socat): sandboxed commands get no network, not even to allowed hosts\n",
    );
    expect(stdout).toContain("No problems found.");
  });

  it("counts a configured tool folder that does not exist as a problem", async () => {
    const config = await put(path.join(t.home, "config.json"), JSON.stringify({ toolDirs: ["extra"] }));
    const missing = await toolhost("doctor");
    expect(missing.code).toBe(1);
    expect(missing.stdout).toContain(
      `problems (1):\n  ${path.join(t.home, "extra")}: this folder is listed in toolDirs (${config}) but does not exist; create it or fix the entry`,
    );
    await fsp.mkdir(path.join(t.home, "extra"));
    const found = await toolhost("doctor");
    expect(found.code).toBe(0);
    expect(found.stdout).toContain("No problems found.");
  });
});

describe("extension code cannot hold the CLI open", () => {
  it("exits after listing even when a tool file leaves a timer running", async () => {
    await put(path.join(t.home, "profiles/default/tools/timer.ts"), `setInterval(() => {}, 1000);\n${toolFile("ticker")}`);
    const result = await toolhost("tools");
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^ticker\s+read/m);
  });

  it("lists the profile's tools and what it disables", async () => {
    const result = await toolhost("tools", "--profile", "read-only");
    expect(result.stdout).not.toMatch(/^bash\s/m);
    expect(result.stdout).toContain("disabled by the profile:\n  write: the read-only profile disables it");
  });
});

describe("an extension's commands stay inside its declared shell scope (RFC ShellRunRequirement)", () => {
  const gitTool = `import { defineTool, z } from "toolhost";
export default defineTool({
  id: "git_peek",
  description: "Runs one git command.",
  kind: "execute",
  parameters: z.object({ line: z.string() }),
  requires: { shell: [{ cmd: "git", args: ["status", { wildcard: true }] }], fs: { read: ["{workspace}/**"] } },
  execute: async (args, ctx) => ctx.shell.run(args.line),
});
`;
  const gitExecTool = gitTool
    .replace("git_peek", "git_exec")
    .replace("ctx.shell.run(args.line)", 'ctx.shell.exec("git", args.line.split(" "))');

  it("a command outside it is a capability_denied envelope, and nothing runs; one inside runs", async () => {
    await put(path.join(t.home, "profiles/default/tools/git_peek.ts"), gitTool);
    await put(path.join(t.home, "profiles/default/tools/git_exec.ts"), gitExecTool);
    await run("git", ["init", "-q"], { cwd: t.ws });
    // A whole command line is `bash -c …`, which the tool did not declare.
    const line = await toolhost("call", "git_peek", JSON.stringify({ line: "touch made" }));
    expect(line.code).toBe(1);
    expect(JSON.parse(line.stdout).metadata.error_code).toBe("capability_denied");
    // argv outside the declared arguments.
    const push = await toolhost("call", "git_exec", JSON.stringify({ line: "init -q again" }));
    expect(JSON.parse(push.stdout)).toMatchObject({ type: "error", metadata: { error_code: "capability_denied" } });
    expect(JSON.parse(push.stdout).error_text).toContain("outside this tool's shell requirements");
    await expect(fsp.access(path.join(t.ws, "made"))).rejects.toThrow();
    await expect(fsp.access(path.join(t.ws, "again"))).rejects.toThrow();
    const status = await toolhost("call", "git_exec", JSON.stringify({ line: "status --short" }));
    expect(status.code, status.stdout).toBe(0);
    expect(JSON.parse(status.stdout).data.stdout).toContain("?? notes.md");
  });
});
