import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { createRequire } from "node:module";
import net from "node:net";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { invoke } from "../../src/host/invoke.js";
import { ToolRegistry } from "../../src/host/registry.js";
import { McpServers, type McpPrompt } from "../../src/mcp/manager.js";
import type { StdioSpec } from "../../src/mcp/servers.js";
import { mcpKind, mcpToolId } from "../../src/mcp/tools.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import type { AnyTool } from "../../src/tool/define.js";
import { tempDir } from "../helpers.js";
import { liveness } from "./liveness.js";

const FIXTURE = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));
const EVERYTHING = createRequire(import.meta.url).resolve("@modelcontextprotocol/server-everything/dist/index.js");

const stdio = (name: string, env: Record<string, string> = {}): StdioSpec => ({
  name,
  origin: "user",
  transport: "stdio",
  command: process.execPath,
  args: [FIXTURE],
  env: { MCP_NAME: name, ...env },
});

interface Setup {
  servers: McpServers;
  registry: ToolRegistry;
  reports: string[];
  prompts: Map<string, McpPrompt[]>;
  runtime: RuntimeSession;
}

const open: Setup[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map(async (s) => (await s.servers.close(), await s.runtime.close())));
  for (const child of children.splice(0)) child.kill("SIGKILL");
});

async function setup(timeoutMs = 10_000): Promise<Setup> {
  const dir = await tempDir();
  const registry = new ToolRegistry();
  const reports: string[] = [];
  const prompts = new Map<string, McpPrompt[]>();
  const servers = new McpServers(
    dir,
    {
      tools: (server, tools) => registry.replaceSource(`mcp:${server}`, tools),
      prompts: (server, list) => prompts.set(server, list),
      report: (message) => void reports.push(message),
    },
    timeoutMs,
  );
  const s = { servers, registry, reports, prompts, runtime: new RuntimeSession({ workspace: dir }) };
  open.push(s);
  return s;
}

/** The pid a process wrote to `file`, once it has (bounded). */
async function pidFrom(file: string): Promise<number> {
  let text = "";
  await expect.poll(async () => (text = await fsp.readFile(file, "utf8").catch(() => "")), { timeout: 10_000 }).toMatch(/^\d+$/);
  return Number(text);
}

const run = (s: Setup, toolId: string, args: unknown = {}) => invoke(s.registry, toolId, args, { session: s.runtime });
const ids = (s: Setup) => s.registry.ids();

describe("MCP servers", () => {
  it("starts a stdio server with the allow-listed environment plus its entry's env, never toolhost's provider keys", async () => {
    const s = await setup();
    const envFile = path.join(s.runtime.workspace, "env.json");
    const saved = { ...process.env };
    process.env.ANTHROPIC_API_KEY = "ENV-SECRET-KEY";
    process.env.SOME_SERVICE_TOKEN = "ENV-SECRET-TOKEN";
    try {
      await s.servers.start([stdio("fx", { MCP_ENV_FILE: envFile, GIVEN_TOKEN: "the entry said so" })]);
      const env = JSON.parse(await fsp.readFile(envFile, "utf8")) as Record<string, string>;
      expect(JSON.stringify(env)).not.toMatch(/ENV-SECRET/);
      expect(env).toMatchObject({ MCP_NAME: "fx", GIVEN_TOKEN: "the entry said so", PATH: process.env.PATH });
      // Control: the same server started with toolhost's own environment sees the key.
      const direct = path.join(s.runtime.workspace, "direct.json");
      spawnSync(process.execPath, [FIXTURE], { env: { ...process.env, MCP_ENV_FILE: direct }, input: "", timeout: 10_000 });
      expect(await fsp.readFile(direct, "utf8")).toContain("ENV-SECRET-KEY");
    } finally {
      process.env = saved;
    }
  });

  it("names tools within the contract's id pattern and picks kinds from annotations", () => {
    expect(mcpToolId("My Server", "get-Weather.now")).toBe("mcp__my_server__get_weather_now");
    const long = mcpToolId("server".repeat(8), "tool".repeat(12));
    expect(long).toMatch(/^[a-z][a-z0-9_]{0,63}$/);
    expect(long.length).toBe(64);
    expect(mcpKind({ readOnlyHint: true })).toBe("read");
    expect(mcpKind({ readOnlyHint: true, openWorldHint: true })).toBe("fetch");
    expect(mcpKind({ openWorldHint: true })).toBe("execute");
    expect(mcpKind(undefined)).toBe("execute");
  });

  it("lists and calls a stdio server's tools: text, image results, isError, and its prompts", async () => {
    const s = await setup();
    await s.servers.start([stdio("fx")]);
    expect(ids(s)).toEqual(expect.arrayContaining(["mcp__fx__echo", "mcp__fx__add", "mcp__fx__picture", "mcp__fx__broken"]));
    expect(s.registry.entry("mcp__fx__echo")?.source).toBe("mcp:fx");
    expect(s.registry.get("mcp__fx__echo")?.kind).toBe("read");
    expect(s.registry.get("mcp__fx__add")?.kind).toBe("execute");
    expect(s.registry.get("mcp__fx__add")?.inputSchema).toMatchObject({ type: "object", required: ["a", "b"] });

    expect(await run(s, "mcp__fx__echo", { text: "hi" })).toMatchObject({ type: "output", data: "echo: hi" });
    expect(await run(s, "mcp__fx__add", { a: 2, b: 3 })).toMatchObject({ type: "output", data: "5" });
    // Validated against the tool's JSON Schema before the server sees it.
    expect(await run(s, "mcp__fx__add", { a: "x", b: 3 })).toMatchObject({ type: "error", metadata: { error_code: "invalid_arguments" } });
    const picture = await run(s, "mcp__fx__picture");
    expect(picture).toMatchObject({ type: "output", data: { text: "a red pixel", images: [{ mimeType: "image/png" }] } });
    expect(await run(s, "mcp__fx__broken")).toMatchObject({ type: "error", error_text: "the broken tool broke" });
    expect(s.prompts.get("fx")).toEqual([
      { server: "fx", name: "greet", description: "Greets someone.", arguments: [{ name: "who", required: true }] },
    ]);
    const prompt = await s.servers.getPrompt("fx", "greet", { who: "Ada" }, AbortSignal.timeout(5000));
    expect(prompt.messages[0]?.content).toEqual({ type: "text", text: "Say hello to Ada." });
    expect(s.servers.status()).toEqual([expect.objectContaining({ name: "fx", state: "ready", tools: 7, prompts: 1 })]);
    expect(s.reports).toEqual([]);
  });

  it("connects a streamable HTTP server", async () => {
    const child = spawn(process.execPath, [FIXTURE, "--http", "0"], { env: { ...process.env, MCP_NAME: "web" } });
    children.push(child);
    const port = await new Promise<number>((resolve) =>
      child.stdout!.on("data", (d: Buffer) => resolve(Number(/listening (\d+)/.exec(String(d))?.[1]))),
    );
    const s = await setup();
    await s.servers.start([{ name: "web", origin: "editor", transport: "http", url: `http://127.0.0.1:${port}/mcp`, headers: {} }]);
    expect(await run(s, "mcp__web__echo", { text: "over http" })).toMatchObject({ type: "output", data: "echo: over http" });
    // Closing ends the HTTP session on the server (DELETE).
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += String(d)));
    await s.servers.close();
    await expect.poll(() => out).toMatch(/^closed \S+/m);
  });

  it("connects an SSE server (the reference server's sse transport)", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const child = spawn(process.execPath, [EVERYTHING, "sse"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    await new Promise<void>((resolve) => child.stderr!.on("data", (d: Buffer) => String(d).includes("running on port") && resolve()));
    const s = await setup(20_000);
    await s.servers.start([{ name: "legacy", origin: "user", transport: "sse", url: `http://127.0.0.1:${port}/sse`, headers: {} }]);
    expect(s.reports).toEqual([]);
    expect(await run(s, "mcp__legacy__echo", { message: "over sse" })).toMatchObject({
      type: "output",
      data: expect.stringContaining("over sse"),
    });
  }, 30_000);

  it("skips a failing and a slow server, reporting each once, while the others work", async () => {
    const s = await setup(4000);
    const started = Date.now();
    await s.servers.start([
      stdio("good"),
      stdio("bad", { MCP_FAIL_START: "1" }),
      stdio("slow", { MCP_START_DELAY_MS: "60000" }),
      { ...stdio("missing"), command: "/nonexistent/mcp-server" },
      // Its own startup timeout, shorter than the session's.
      { ...stdio("impatient", { MCP_START_DELAY_MS: "60000" }), startupTimeoutMs: 1500 },
    ]);
    expect(Date.now() - started).toBeLessThan(9000);
    expect(ids(s).filter((id) => id.startsWith("mcp__good__"))).toHaveLength(7);
    expect(ids(s).some((id) => id.startsWith("mcp__bad__") || id.startsWith("mcp__slow__"))).toBe(false);
    expect(s.reports).toHaveLength(4);
    expect(s.reports.find((r) => r.includes('"impatient"'))).toMatch(/did not answer within 1\.5 s \(its startupTimeoutMs\)/);
    expect(s.reports.find((r) => r.includes('"missing"'))).toMatch(/could not start: .*ENOENT/);
    expect(s.reports.find((r) => r.includes('"bad"'))).toMatch(/could not start/);
    expect(s.reports.find((r) => r.includes('"slow"'))).toMatch(/did not answer within 4 s/);
    expect(await run(s, "mcp__good__echo", { text: "still" })).toMatchObject({ type: "output", data: "echo: still" });
    const states = Object.fromEntries(s.servers.status().map((x) => [x.name, x.state]));
    expect(states).toEqual({ good: "ready", bad: "failed", slow: "failed", missing: "failed", impatient: "failed" });
  });

  it("refreshes a server's tools on notifications/tools/list_changed", async () => {
    const s = await setup();
    await s.servers.start([stdio("fx")]);
    expect(ids(s)).not.toContain("mcp__fx__extra");
    await run(s, "mcp__fx__grow");
    await expect.poll(() => ids(s), { timeout: 5000 }).toContain("mcp__fx__extra");
    expect(await run(s, "mcp__fx__extra")).toMatchObject({ type: "output", data: "extra!" });
  });

  it("turns a server killed mid-call into a clear tool error, and removes its tools", async () => {
    const s = await setup();
    await s.servers.start([stdio("fx")]);
    const result = await run(s, "mcp__fx__crash");
    expect(result).toMatchObject({ type: "error" });
    expect(result.type === "error" && result.error_text).toMatch(/"fx" stopped during the call/);
    await expect.poll(() => ids(s).filter((id) => id.startsWith("mcp__fx__"))).toEqual([]);
    expect(s.reports).toEqual([expect.stringMatching(/"fx" stopped; its tools were removed/)]);
    // /reload starts it again.
    await s.servers.restartFailed();
    expect(await run(s, "mcp__fx__echo", { text: "back" })).toMatchObject({ type: "output", data: "echo: back" });
  });

  it("stops a stdio server with its process tree on close", async () => {
    const s = await setup();
    const pidFile = path.join(s.runtime.roots[0] as string, "child.pid");
    await s.servers.start([stdio("fx", { MCP_CHILD_PID_FILE: pidFile })]);
    await run(s, "mcp__fx__spawn_child");
    const pid = await pidFrom(pidFile);
    expect(await liveness(pid)).toBe("alive");
    await s.servers.close();
    await expect.poll(() => liveness(pid)).toBe("gone");
  });

  it("stops a server's child that ignores SIGTERM when the server itself exits on SIGTERM (SIGKILL after the grace period)", async () => {
    const s = await setup();
    const dir = s.runtime.roots[0] as string;
    const [serverPidFile, childPidFile] = [path.join(dir, "server.pid"), path.join(dir, "child.pid")];
    await s.servers.start([stdio("fx", { MCP_PID_FILE: serverPidFile, MCP_CHILD_PID_FILE: childPidFile, MCP_CHILD_IGNORES_TERM: "1" })]);
    await run(s, "mcp__fx__spawn_child");
    const [server, child] = [await pidFrom(serverPidFile), await pidFrom(childPidFile)];
    await s.servers.close();
    // close() resolves once the tree is gone.
    expect(await liveness(server)).toBe("gone");
    expect(await liveness(child)).toBe("gone");
  });

  it("kills a server that never answers initialize, and its child, once the start-up timeout passes", async () => {
    const s = await setup(4000);
    const dir = s.runtime.roots[0] as string;
    const [serverPidFile, childPidFile] = [path.join(dir, "server.pid"), path.join(dir, "child.pid")];
    const hanging = stdio("mute", {
      MCP_START_DELAY_MS: "600000",
      MCP_PID_FILE: serverPidFile,
      MCP_CHILD_PID_FILE: childPidFile,
      MCP_CHILD_AT_START: "1",
      MCP_CHILD_IGNORES_TERM: "1",
    });
    const started = s.servers.start([hanging]);
    const [server, child] = [await pidFrom(serverPidFile), await pidFrom(childPidFile)];
    await started;
    expect(s.reports).toEqual([expect.stringMatching(/"mute" did not answer within 4 s/)]);
    // The manager is still open: nothing but the timeout stopped them.
    await expect.poll(() => liveness(server), { timeout: 10_000 }).toBe("gone");
    await expect.poll(() => liveness(child), { timeout: 10_000 }).toBe("gone");
  });

  it("works with the reference server (@modelcontextprotocol/server-everything): list, call, image", async () => {
    const s = await setup(20_000);
    await s.servers.start([
      { name: "everything", origin: "user", transport: "stdio", command: process.execPath, args: [EVERYTHING, "stdio"], env: {} },
    ]);
    expect(s.reports).toEqual([]);
    const tools = ids(s).filter((id) => id.startsWith("mcp__everything__"));
    expect(tools).toEqual(expect.arrayContaining(["mcp__everything__echo"]));
    expect(await run(s, "mcp__everything__echo", { message: "interop" })).toMatchObject({
      type: "output",
      data: expect.stringContaining("interop"),
    });
    const image = tools.find((id) => id.includes("image")) as string;
    expect(image).toBeDefined();
    const tool = s.registry.get(image) as AnyTool;
    const result = await run(s, image, {});
    expect(result, `${image} ${JSON.stringify(tool.inputSchema)}`).toMatchObject({
      type: "output",
      data: { images: [expect.objectContaining({ mimeType: "image/png" })] },
    });
  }, 30_000);
});
