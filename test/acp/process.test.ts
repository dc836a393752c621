import * as fsp from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { sleepMarker, survivors } from "../helpers.js";
import { Harness, lastUpdate, selected, textOf, useAcpTest, type ToolCallUpdate } from "./harness.js";
import { sandboxStatus } from "../sandbox-status.js";

// The process tool over the real wire, with the fake model: a dev server started in the background,
// its output read, an HTTP request answered, stopped, and nothing left in /proc; the session's end
// (session/close, stdin EOF, SIGTERM, SIGKILL) ends every process; the cap; the policy.

const SERVER = [
  'import http from "node:http";',
  'const server = http.createServer((req, res) => { console.log(`${req.method} ${req.url}`); res.end("hello from the dev server\\n"); });',
  'server.listen(0, "127.0.0.1", () => console.log(`listening on ${server.address().port}`));',
  'process.on("SIGTERM", () => { console.log("shutting down"); server.close(() => process.exit(0)); });',
].join("\n");

const t = useAcpTest({ "server.mjs": SERVER });
const sandbox = await sandboxStatus("acp/process.test.ts");

const call = (name: string, args: unknown, id: string): FakeReply => ({ toolCalls: [{ id, name, arguments: args }] });

async function start(options: { script?: FakeReply[]; env?: Record<string, string>; terminal?: boolean; mode?: string } = {}) {
  if (options.script) t.fake = await startFakeOpenAI({ script: options.script });
  t.h = new Harness({
    capabilities: options.terminal ? { terminal: true } : {},
    permission: () => selected("allow_once"),
    env: {
      TOOLHOST_HOME: t.home,
      ...(t.fake ? { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } : {}),
      ...options.env,
    },
  });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  if (options.mode) await t.h.agent.request("session/set_mode", { sessionId, modeId: options.mode });
  const prompt = (text: string) => t.h!.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
  return { h: t.h, sessionId, prompt };
}

/** The last update of a call: by its id, or the n-th call of the session (from 1: the model's ids are not the editor's). */
const final = (h: Harness, sessionId: string, call: string | number): ToolCallUpdate =>
  lastUpdate(h, sessionId, typeof call === "string" ? call : h.updatesOf(sessionId, "tool_call")[call - 1]!.toolCallId);
// The tool's data as JSON gives it: each test reads the fields it checks.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const dataOf = (update: ToolCallUpdate): any => (update.rawOutput as { data?: unknown }).data;

/** Waits (bounded) until nothing whose command line holds `needle` is alive. */
async function gone(needle: string, limitMs = 5000): Promise<string[]> {
  const deadline = Date.now() + limitMs;
  let left = await survivors(needle);
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = await survivors(needle);
  }
  return left;
}

function get(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: "127.0.0.1", port, path: "/hello", timeout: 5000 }, (res) => {
        let body = "";
        res.on("data", (d: Buffer) => (body += d.toString()));
        res.on("end", () => resolve(body));
      })
      .on("error", reject);
  });
}

describe("a dev server started with process", () => {
  it("unsandboxed: started, its output read, an HTTP request answered and logged, stopped, nothing left", async () => {
    const m = sleepMarker();
    const command = `node server.mjs ${m}`;
    const { h, sessionId, prompt } = await start({
      env: { TOOLHOST_SANDBOX: "off" },
      mode: "full",
      script: [
        call("process", { action: "start", command, name: "dev" }, "c1"),
        call("process", { action: "output", name: "dev", wait_for: "listening on \\d+", timeout_ms: 20_000 }, "c2"),
        { text: "The dev server is up." },
        call("process", { action: "output", name: "dev", stream: "stdout", offset: 0 }, "c3"),
        call("process", { action: "stop", name: "dev" }, "c4"),
        { text: "Stopped it." },
      ],
    });
    expect((await prompt("Start the dev server")).stopReason).toBe("end_turn");
    const started = dataOf(final(h, sessionId, 1));
    expect(started.process).toMatchObject({ id: "p1", name: "dev", status: "running", command });
    expect(started.process.sandboxed).toBeUndefined();
    const read = final(h, sessionId, 2);
    expect(read.status).toBe("completed");
    expect(dataOf(read).waited).toBe("matched");
    const port = Number(/listening on (\d+)/.exec(dataOf(read).stdout.text)?.[1]);
    expect(port).toBeGreaterThan(0);
    // The model got the output as the call's result.
    const toolMessage = t.fake!.requests[2]!.body.messages!.filter((msg) => msg.role === "tool").at(-1)!;
    expect(String(toolMessage.content)).toContain(`listening on ${port}`);

    expect(await get(port)).toBe("hello from the dev server\n");
    expect(await survivors(m)).not.toEqual([]);

    await prompt("What did it log? Then stop it.");
    expect(dataOf(final(h, sessionId, 3)).stdout.text).toBe(`listening on ${port}\nGET /hello\n`);
    const stopped = final(h, sessionId, 4);
    expect(stopped.status).toBe("completed");
    // Stopped with SIGTERM: the server closed cleanly (its handler ran) and exited 0.
    expect(dataOf(stopped).process).toMatchObject({ status: "stopped", exit_code: 0 });
    expect(await survivors(m)).toEqual([]);
    await expect(get(port)).rejects.toThrow(/ECONNREFUSED/);
  });

  it.skipIf(!sandbox.available)(
    "sandboxed, in an editor with terminals: the start embeds a terminal that follows the output; the server listens in its own network",
    async () => {
      const m = sleepMarker();
      const command = `node server.mjs ${m}`;
      const { h, sessionId, prompt } = await start({
        terminal: true,
        mode: "full",
        script: [
          call("process", { action: "start", command, name: "dev" }, "c1"),
          call("process", { action: "output", name: "dev", wait_for: "listening on \\d+", timeout_ms: 20_000 }, "c2"),
          { text: "Up." },
          call("process", { action: "stop", name: "dev" }, "c3"),
          { text: "Stopped." },
        ],
      });
      await prompt("Start the dev server");
      const started = final(h, sessionId, 1);
      expect(dataOf(started).process).toMatchObject({ status: "running", sandboxed: true });
      // The call shows a terminal, created as `…/toolhost-process <shell> -c <the command>`.
      expect(started.content).toEqual([{ type: "terminal", terminalId: "term_1" }]);
      const create = h.clientCalls.find((c) => c.method === "terminal/create")!.params as { command: string; args: string[]; cwd: string };
      expect(path.basename(create.command)).toBe("toolhost-process");
      expect(create.args).toEqual([expect.stringMatching(/\/(ba)?sh$/), "-c", command]);
      expect(create.cwd).toBe(t.ws);
      const port = Number(/listening on (\d+)/.exec(dataOf(final(h, sessionId, 2)).stdout.text)?.[1]);
      expect(port).toBeGreaterThan(0);
      // The terminal follows the process's output.
      await h.waitFor(() => h.terminals.get("term_1")?.output.includes(`listening on ${port}`) === true);
      // Its launcher and socket are gone once the follower has connected.
      await h.waitFor(() =>
        fsp.access(path.dirname(create.command)).then(
          () => false,
          () => true,
        ),
      );
      // The server listens on the sandbox's own loopback: the host cannot reach it.
      await expect(get(port)).rejects.toThrow(/ECONNREFUSED/);

      await prompt("Stop it");
      expect(dataOf(final(h, sessionId, 3)).process).toMatchObject({ status: "stopped" });
      expect(await survivors(m)).toEqual([]);
      // The follower printed the end and its terminal was released.
      await h.waitFor(() => h.clientCalls.some((c) => c.method === "terminal/release"));
      expect(
        h.clientCalls.filter((c) => c.method === "terminal/release").map((c) => (c.params as { terminalId: string }).terminalId),
      ).toEqual(["term_1"]);
    },
  );
});

describe("processes end with their session and never outlive toolhost", () => {
  const startSleeper = async (env: Record<string, string> = {}) => {
    const m = sleepMarker();
    const s = await start({ mode: "full", env });
    await s.prompt(`/process start sleep ${m}`);
    const call = s.h.updatesOf(s.sessionId, "tool_call")[0]!;
    expect(final(s.h, s.sessionId, call.toolCallId).status).toBe("completed");
    await s.h.waitFor(async () => (await survivors(m)).length > 0);
    return { ...s, m };
  };

  it("session/close stops them", async () => {
    const { h, sessionId, m } = await startSleeper();
    await h.agent.request("session/close", { sessionId });
    expect(await survivors(m)).toEqual([]);
  });

  it("the agent's exit on stdin EOF stops them", async () => {
    const { h, m } = await startSleeper();
    t.h = undefined;
    expect(await h.close()).toBe(0);
    expect(h.checker.problems).toEqual([]);
    expect(await survivors(m)).toEqual([]);
  });

  it("SIGTERM stops them", async () => {
    const { h, m } = await startSleeper();
    const exited = new Promise<number | null>((resolve) => h.child.once("exit", (code) => resolve(code)));
    h.child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await survivors(m)).toEqual([]);
    t.h = undefined;
    expect(h.checker.problems).toEqual([]);
  });

  it("SIGKILL of the agent (no code of it runs) still ends them: the group's guard", async () => {
    // Unsandboxed, so nothing but the guard can end it (bwrap's --die-with-parent watches the wrapper, not toolhost).
    const { h, m } = await startSleeper({ TOOLHOST_SANDBOX: "off" });
    const exited = new Promise<void>((resolve) => h.child.once("exit", () => resolve()));
    h.child.kill("SIGKILL");
    await exited;
    expect(await gone(m)).toEqual([]);
    t.h = undefined;
  });
});

describe("the process tool in the editor", () => {
  it("at most 8 at once, with a clear error past it; /processes lists them", async () => {
    const markers = Array.from({ length: 9 }, () => sleepMarker());
    const { h, sessionId, prompt } = await start({ mode: "full" });
    for (const m of markers) await prompt(`/process start sleep ${m}`);
    const calls = h.updatesOf(sessionId, "tool_call");
    expect(calls.map((c) => final(h, sessionId, c.toolCallId).status)).toEqual([...Array(8).fill("completed"), "failed"]);
    expect(textOf(final(h, sessionId, calls[8]!.toolCallId))).toMatch(/8 background processes are running already.*stop one first/);
    for (const m of markers.slice(0, 8)) await h.waitFor(async () => (await survivors(m)).length > 0);
    expect(await survivors(markers[8]!)).toEqual([]);

    await prompt("/processes");
    const list = h.updatesOf(sessionId, "tool_call").at(-1)!;
    expect(list.title).toBe("Background processes");
    const shown = textOf(final(h, sessionId, list.toolCallId));
    for (let i = 1; i <= 8; i++) expect(shown).toContain(`p${i}: running`);
    expect(shown).not.toContain("p9");
  });

  it("in ask mode a start asks (with the command line), output does not; a deny rule on the command refuses the start", async () => {
    const m = sleepMarker();
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({ permissions: [{ permission: "bash", pattern: "rm *", action: "deny" }] }),
    );
    const { h, sessionId, prompt } = await start();
    await prompt(`/process start sleep ${m}`);
    expect(h.permissionRequests).toHaveLength(1);
    expect(h.permissionRequests[0]!.toolCall.rawInput).toEqual({ action: "start", command: `sleep ${m}` });
    expect(h.permissionRequests[0]!.toolCall.title).toBe(`sleep ${m} (in the background)`);
    await h.waitFor(async () => (await survivors(m)).length > 0);

    await prompt("/process output p1");
    await prompt("/process get p1");
    await prompt("/processes");
    expect(h.permissionRequests).toHaveLength(1);

    await prompt(`/process start rm -rf build ${m}`);
    const refused = h.updatesOf(sessionId, "tool_call").at(-1)!;
    expect(final(h, sessionId, refused.toolCallId).status).toBe("failed");
    expect(textOf(final(h, sessionId, refused.toolCallId))).toMatch(/refused by a permission rule.*deny bash "rm \*"/);
    expect(h.permissionRequests).toHaveLength(1);
    expect(await survivors(`rm -rf build ${m}`)).toEqual([]);

    await prompt("/process stop p1");
    expect(h.permissionRequests).toHaveLength(2);
    expect(await survivors(m)).toEqual([]);
  });
});
