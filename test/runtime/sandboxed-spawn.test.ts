import { execFile } from "node:child_process";
import * as fsp from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { sandboxStatus } from "../sandbox-status.js";
import { sandboxNetworkStatus } from "../../src/runtime/sandbox/proxy.js";
import { sandboxedSpawn } from "../../src/runtime/sandbox/sandboxed-spawn.js";
import { SessionSandbox } from "../../src/runtime/sandbox/session-sandbox.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import type { SpawnRequest } from "../../src/runtime/shell/scoped.js";
import { tempDir } from "../helpers.js";

// A program that is not a tool call (a project's hook, a project's MCP server) wrapped by the
// session's sandbox: the network it gets (a bash call's, or only the hosts it names), and why it
// does not run where no sandbox does.

const status = await sandboxStatus("runtime/sandboxed-spawn.test.ts");
const network = sandboxNetworkStatus();
const skip = !status.available || !network.available;
if (skip) console.warn("sandboxed-spawn.test.ts: the network cases skip: no sandbox or no socat here");

/** Every name points at the host's loopback, where the test server listens. */
const resolveHost = async (host: string): Promise<readonly string[]> => {
  if (host.endsWith(".test")) return ["127.0.0.1"];
  throw new Error(`getaddrinfo ENOTFOUND ${host}`);
};

let server: http.Server;
let port: number;
const runtimes: RuntimeSession[] = [];
beforeAll(async () => {
  server = http.createServer((req, res) => res.end(`hello ${req.headers.host ?? ""}\n`));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
});

/** A session whose net.fetch rules allow `session.test` to every command. */
async function session(): Promise<RuntimeSession> {
  const bubblewrap = { allowedHosts: () => ["session.test"], privateHosts: ["session.test", "entry.test"], resolveHost };
  const own = new SessionSandbox({ setting: { value: "on", source: "test" }, bubblewrap }).start();
  const runtime = new RuntimeSession({ workspace: await tempDir(), spawnTransform: own.transform });
  runtimes.push(runtime);
  return runtime;
}

/** Runs a wrapped request to its end: what curl printed. */
function run(request: SpawnRequest): Promise<string> {
  return new Promise((resolve) => {
    execFile(request.file, request.args, { cwd: request.cwd, env: request.env }, (_err, stdout) => resolve(stdout));
  });
}

const curl = (host: string): SpawnRequest => ({
  file: "/bin/sh",
  args: ["-c", `curl -fsS --max-time 10 http://${host}:${port}/ || echo refused`],
  cwd: "/",
});

describe.skipIf(skip)("the network of a wrapped program", () => {
  it("as a bash call (a hook): the hosts the session allows every command", async () => {
    const runtime = await session();
    const wrapped = await sandboxedSpawn(runtime, { ...curl("session.test"), cwd: runtime.workspace }, { toolId: "hook" });
    if (!("request" in wrapped)) throw new Error(wrapped.unavailable);
    expect(await run(wrapped.request)).toBe(`hello session.test:${port}\n`);
  });

  it("with its own hosts (an MCP server's allowedHosts): those only, not the session's; with none, no network", async () => {
    const runtime = await session();
    const only = async (hosts: string[], host: string) => {
      const wrapped = await sandboxedSpawn(runtime, { ...curl(host), cwd: runtime.workspace }, { toolId: "mcp-x", hosts });
      if (!("request" in wrapped)) throw new Error(wrapped.unavailable);
      return run(wrapped.request);
    };
    expect(await only(["entry.test"], "entry.test")).toBe(`hello entry.test:${port}\n`);
    expect(await only(["entry.test"], "session.test")).toMatch(/refused\n$/);
    expect(await only([], "session.test")).toMatch(/refused\n$/);
  });
});

describe("where it cannot be wrapped", () => {
  it("says why: no sandbox, switched off, or none can run here", async () => {
    const ws = await tempDir();
    const request: SpawnRequest = { file: "/bin/true", args: [], cwd: ws };
    const bare = new RuntimeSession({ workspace: ws });
    runtimes.push(bare);
    expect(await sandboxedSpawn(bare, request, { toolId: "hook" })).toEqual({ unavailable: "this session has no sandbox" });
    for (const [value, probe, reason] of [
      ["off", undefined, "the sandbox is not active: switched off (test)"],
      ["on", { available: false, reason: "no bwrap" }, "the sandbox is not active: no bwrap"],
    ] as const) {
      const own = new SessionSandbox({ setting: { value, source: "test" }, ...(probe ? { probe: async () => probe } : {}) });
      const runtime = new RuntimeSession({ workspace: ws, spawnTransform: own.transform });
      runtimes.push(runtime);
      expect(await sandboxedSpawn(runtime, request, { toolId: "hook" }, () => own.state())).toEqual({ unavailable: reason });
      // Without the state, the transform itself: off runs it as it is, which is not wrapped.
      expect(await sandboxedSpawn(runtime, request, { toolId: "hook" })).toMatchObject({ unavailable: expect.any(String) });
    }
    await fsp.rm(ws, { recursive: true, force: true });
  });
});
