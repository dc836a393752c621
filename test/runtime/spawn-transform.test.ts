import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession, type RuntimeSessionOptions } from "../../src/runtime/session.js";
import type { ShellBackend, ShellSpawnOptions } from "../../src/runtime/shell/backend.js";
import type { SpawnContext, SpawnRequest, SpawnTransform } from "../../src/runtime/shell/scoped.js";
import type { ShellResult } from "../../src/tool/context.js";
import type { RequirementSet } from "../../src/tool/requirements.js";
import { tempDir, toolErrorOf } from "../helpers.js";

let dir: string | undefined;
let session: RuntimeSession | undefined;
afterEach(async () => {
  await session?.close();
  session = undefined;
  if (dir) await fsp.rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function shellFor(requires: RequirementSet, options: Omit<RuntimeSessionOptions, "workspace">) {
  dir = await tempDir({ "sub/.keep": "" });
  session = new RuntimeSession({ workspace: dir, ...options });
  return createToolContext({ session, toolId: "t", callId: "c", requires, signal: new AbortController().signal }).shell;
}

/** Wraps the command in `env SANDBOXED=1 …`, as a sandbox wraps it in its launcher. */
const markSandboxed: SpawnTransform = (request) => ({
  ...request,
  file: "env",
  args: ["SANDBOXED=1", request.file, ...request.args],
  shellLine: undefined,
});

describe("a spawn transform over the real LocalShell", () => {
  it("runs what the transform returns, for command lines and argv alike", async () => {
    const shell = await shellFor(
      { shell: [{ cmd: "bash" }, { cmd: "printenv" }], fs: { read: ["{workspace}/**"] } },
      { spawnTransform: markSandboxed },
    );
    expect((await shell.run('echo "sandboxed=$SANDBOXED"')).stdout).toBe("sandboxed=1\n");
    expect((await shell.exec("printenv", ["SANDBOXED"])).stdout).toBe("1\n");
  });

  it("leaves commands alone without one", async () => {
    const shell = await shellFor({ shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } }, {});
    expect((await shell.run('echo "sandboxed=$SANDBOXED"')).stdout).toBe("sandboxed=\n");
  });

  it("may be async, and can move the cwd and add to the environment", async () => {
    const transform: SpawnTransform = async (request) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return { ...request, cwd: path.join(request.cwd, "sub"), env: { ...request.env, EXTRA: "yes" } };
    };
    const shell = await shellFor({ shell: [{ cmd: "bash" }], fs: { read: ["{workspace}/**"] } }, { spawnTransform: transform });
    const result = await shell.run('echo "$PWD $EXTRA $MINE"', { env: { MINE: "kept" } });
    expect(result.stdout).toBe(`${path.join(dir as string, "sub")} yes kept\n`);
  });
});

/** A backend that runs nothing and records what it was asked to run. */
class RecordingShell implements ShellBackend {
  readonly kind = "editor-terminal";
  readonly spawned: { file: string; args: string[]; options: ShellSpawnOptions & { shellLine?: string } }[] = [];

  async spawn(file: string, args: string[], options: ShellSpawnOptions & { shellLine?: string }): Promise<ShellResult> {
    this.spawned.push({ file, args, options });
    return { stdout: "", stderr: "", exit_code: 0, signal: null, timed_out: false, truncated: false, duration_ms: 0 };
  }
}

describe("a spawn transform over another backend", () => {
  const requires: RequirementSet = {
    shell: [{ cmd: "echo", args: [{ wildcard: true }] }, { cmd: "bash" }],
    fs: { read: ["{workspace}/**"], write: ["{workspace}/out/**"] },
    net: { hosts: ["registry.npmjs.org"] },
  };

  it("hands the backend exactly what the transform returns, and tells the transform what a sandbox needs", async () => {
    const backend = new RecordingShell();
    const seen: { request: SpawnRequest; context: SpawnContext }[] = [];
    const transform: SpawnTransform = (request, context) => {
      seen.push({ request, context });
      return {
        file: "/usr/bin/bwrap",
        args: ["--", request.file, ...request.args],
        cwd: "/",
        env: { WRAPPED: "1" },
        shellLine: "wrapped line",
      };
    };
    const shell = await shellFor(requires, { shell: backend, spawnTransform: transform });
    await shell.run("echo hi", { env: { A: "1" }, timeoutMs: 1234 });

    const ws = dir as string;
    const [{ request, context }] = seen as [(typeof seen)[number]];
    expect(request).toMatchObject({ args: ["-c", "echo hi"], cwd: ws, env: { A: "1" }, shellLine: "echo hi" });
    expect(context.roots).toEqual([ws]);
    expect(context.sidecarDir).toBe(session?.sidecars.dir);
    expect(context.toolId).toBe("t");
    expect(context.backend).toBe("editor-terminal");
    expect(context.scope.hostPatterns).toEqual(["registry.npmjs.org"]);
    expect(context.scope.write.roots).toEqual([path.join(ws, "out")]);
    expect(context.scope.read.matches(path.join(ws, "src/a.ts"))).toBe(true);

    const [spawned] = backend.spawned;
    expect(spawned?.file).toBe("/usr/bin/bwrap");
    expect(spawned?.args).toEqual(["--", request.file, "-c", "echo hi"]);
    expect(spawned?.options).toMatchObject({ cwd: "/", env: { WRAPPED: "1" }, shellLine: "wrapped line", timeoutMs: 1234 });
  });

  it("runs after the scope check, which judges the original command", async () => {
    const backend = new RecordingShell();
    let calls = 0;
    // The wrapper itself is outside the scope: only what the tool asked for is checked.
    const transform: SpawnTransform = (request) => {
      calls++;
      return { ...request, file: "not-in-scope", args: [request.file, ...request.args] };
    };
    const shell = await shellFor(requires, { shell: backend, spawnTransform: transform });

    await shell.exec("echo", ["ok"]);
    expect(backend.spawned.map((s) => [s.file, ...s.args])).toEqual([["not-in-scope", "echo", "ok"]]);

    expect((await toolErrorOf(shell.exec("ls", []))).code).toBe("capability_denied");
    expect((await toolErrorOf(shell.exec("echo", ["x"], { cwd: "/" }))).code).toBe("outside_root");
    expect(calls).toBe(1);
    expect(backend.spawned).toHaveLength(1);
  });
});
