import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { readConfigFile } from "../../src/config/file.js";
import { parseUserConfig } from "../../src/config/schema.js";
import { Hooks } from "../../src/host/hooks/engine.js";
import type { HookInput } from "../../src/host/hooks/events.js";
import { loadRules } from "../../src/policy/ruleset.js";
import { sandboxedSpawn } from "../../src/runtime/sandbox/sandboxed-spawn.js";
import { SessionSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { sandboxStatus } from "../sandbox-status.js";
import { tempDir, writeDeep } from "../helpers.js";
import { useTempHome } from "./extension-fixtures.js";

// A project trusted once and changed since fails closed (issue 33): what only restricts still
// holds — its deny and ask rules, and the calls its tool_call hooks would see ask — while its
// allow rules and its hook commands (untrusted code now) are left out.

let home: string;
let userHome: string;
let project: string;
beforeEach(async () => {
  home = await useTempHome();
  userHome = await tempDir();
  project = await tempDir();
});

const STALE = [".claude/settings.json"];

// A trusted project's command hook runs only inside the sandbox: the control that shows it running needs one.
const status = await sandboxStatus("host/stale-trust.test.ts");
const runtimes: RuntimeSession[] = [];
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});
function sandbox() {
  const own = new SessionSandbox({ setting: { value: "on", source: "test" } }).start();
  const runtime = new RuntimeSession({ workspace: project, spawnTransform: own.transform });
  runtimes.push(runtime);
  return {
    sandbox: (request: Parameters<typeof sandboxedSpawn>[1]) => sandboxedSpawn(runtime, request, { toolId: "hook" }, () => own.state()),
  };
}

function hooks(options: { trusted: boolean; stale?: readonly string[] }): Hooks {
  const configFile = readConfigFile(home);
  return Hooks.load(project, { config: parseUserConfig(configFile), configFile, userHome, ...options });
}

const call = (id: string, kind: "execute" | "read", args: Record<string, unknown>): HookInput<"tool_call"> => ({
  sessionId: "s-1",
  cwd: project,
  transcriptPath: path.join(home, "s-1.jsonl"),
  mode: "full",
  callId: "c-1",
  tool: { id, kind },
  args,
});

describe("a stale project's rules", () => {
  it("keep their deny and ask rules, read as the file is now, and never an allow", async () => {
    await writeDeep(path.join(project, ".toolhost/config.json"), {
      permissions: [
        { permission: "bash", pattern: "rm *", action: "deny" },
        { permission: "bash", pattern: "git push*", action: "ask" },
        { permission: "*", pattern: "*", action: "allow" },
      ],
    });
    const read = (project_: { trusted: boolean; stale?: boolean }) =>
      loadRules({ manifest: { rules: [] }, home, project: { dir: project, ...project_ } }).rules.filter((r) => r.source === "project");
    expect(read({ trusted: false, stale: true }).map((r) => `${r.action} ${r.pattern}`)).toEqual(["deny rm *", "ask git push*"]);
    // Controls: never trusted, none; trusted, all three.
    expect(read({ trusted: false })).toEqual([]);
    expect(read({ trusted: true })).toHaveLength(3);
  });

  it("ask about everything when the file cannot be read (what it denied is unknown)", async () => {
    await writeDeep(path.join(project, ".toolhost/config.json"), "{ not json");
    const { rules } = loadRules({ manifest: { rules: [] }, home, project: { dir: project, trusted: false, stale: true } });
    expect(rules).toEqual([expect.objectContaining({ source: "project", action: "ask", pattern: "*", failClosed: expect.any(String) })]);
  });
});

describe("a stale project's hooks", () => {
  const marker = () => path.join(project, "hook-ran");
  const settings = () => ({
    hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: `cat > /dev/null; touch ${marker()}; exit 2` }] }] },
  });

  it("ask about the calls their tool_call matchers cover, naming the changed file, without running the command", async () => {
    await writeDeep(path.join(project, ".claude/settings.json"), settings());
    const stale = hooks({ trusted: false, stale: STALE });
    const outcome = await stale.run("tool_call", call("bash", "execute", { command: "rm victim.txt" }));
    expect(outcome.decision).toBe("ask");
    expect(outcome.reason).toMatch(/trust is stale[\s\S]*\.claude\/settings\.json[\s\S]*toolhost trust/);
    expect((await stale.run("tool_call", call("read", "read", { path: "a" }))).decision).toBeUndefined();
    await expect(fsp.access(marker())).rejects.toThrow();
    // Controls: trusted, the command runs and blocks; never trusted (not stale), no opinion.
    if (status.available) {
      const trusted = await hooks({ trusted: true }).run("tool_call", call("bash", "execute", { command: "rm x" }), sandbox());
      expect(trusted.decision).toBe("deny");
      await expect(fsp.access(marker())).resolves.toBeUndefined();
    }
    expect((await hooks({ trusted: false }).run("tool_call", call("bash", "execute", { command: "rm x" }))).decision).toBeUndefined();
  });

  it("ask about every call when a hook file cannot be read whole", async () => {
    await writeDeep(path.join(project, ".claude/settings.json"), "{ broken");
    const outcome = await hooks({ trusted: false, stale: STALE }).run("tool_call", call("read", "read", { path: "a" }));
    expect(outcome.decision).toBe("ask");
    expect(outcome.reason).toMatch(/could not be read whole/);
  });
});
