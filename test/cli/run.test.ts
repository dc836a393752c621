import { spawn } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { RunEvent } from "../../src/commands/run-events.js";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { NO_ONE_TO_ASK } from "../../src/tools/question.js";
import { CLI_PATH, sleepMarker, survivors, useAgentEnv } from "../helpers.js";

// `toolhost run`: the built CLI against a local OpenAI-compatible server, in a real workspace.

const t = useAgentEnv({ files: { "src/a.ts": "export const a = 1; // TODO: rename\n" } });

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI; `onStdout` sees stdout as it grows (to interrupt it mid-turn). */
function toolhost(
  args: string[],
  options: {
    model?: boolean;
    stdin?: string;
    env?: Record<string, string>;
    onStdout?: (all: string, child: ReturnType<typeof spawn>) => void;
    onSpawn?: (child: ReturnType<typeof spawn>) => void;
  } = {},
): Promise<Ran> {
  const env = { ...t.env(), ...options.env };
  if (options.model !== false && t.fake) {
    env.TOOLHOST_MODEL = "openai-compatible/fake";
    env.TOOLHOST_BASE_URL = t.fake.url;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], { cwd: t.ws, env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      options.onStdout?.(stdout, child);
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(options.stdin ?? "");
    options.onSpawn?.(child);
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

async function withModel(...script: FakeReply[]) {
  t.fake = await startFakeOpenAI({ script });
  return t.fake;
}

const events = (stdout: string) =>
  stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);

beforeAll(async () => {
  await fsp.access(CLI_PATH).catch(() => {
    throw new Error("dist/cli.js is missing: run `npm run build` (npm test does) before these tests");
  });
});

describe("toolhost run", () => {
  it("streams the model's text on stdout and a line per tool call on stderr", async () => {
    const model = await withModel(
      { text: ["Let me ", "look."], toolCalls: [{ name: "read", arguments: { path: "src/a.ts" } }] },
      { text: "It exports a." },
    );
    const { code, stdout, stderr } = await toolhost(["run", "what is in src/a.ts?"]);
    expect(code).toBe(0);
    expect(stdout).toBe("Let me look.\nIt exports a.\n");
    expect(stderr).toMatch(/^✓ Read src\/a\.ts/m);
    // The prompt reached the model, and the read's result went back to it.
    expect(JSON.stringify(model.requests[0]?.body.messages)).toContain("what is in src/a.ts?");
    expect(JSON.stringify(model.requests[1]?.body.messages)).toContain("TODO: rename");
  });

  it("gives the model the user's MCP servers' tools (a read-only one runs without asking)", async () => {
    const fixture = fileURLToPath(new URL("../fixtures/mcp-server.mjs", import.meta.url));
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({ mcpServers: { fx: { command: process.execPath, args: [fixture] } } }),
    );
    const model = await withModel({ toolCalls: [{ name: "mcp__fx__echo", arguments: { text: "from run" } }] }, { text: "Echoed." });
    const { code, stdout } = await toolhost(["run", "echo something"]);
    expect(code).toBe(0);
    expect(stdout).toBe("Echoed.\n");
    expect(model.requests[0]?.body.tools?.map((t) => t.function.name)).toContain("mcp__fx__echo");
    expect(JSON.stringify(model.requests[1]?.body.messages)).toContain("echo: from run");
  });

  it("prints one JSON event per line with --json, and nothing else on stdout", async () => {
    await withModel(
      {
        text: "Searching.",
        toolCalls: [{ name: "grep", arguments: { pattern: "TODO" } }],
        usage: { prompt_tokens: 100, completion_tokens: 5 },
      },
      { text: ["Found ", "one."] },
    );
    const { code, stdout, stderr } = await toolhost(["run", "--json", "find TODOs"]);
    expect(code).toBe(0);
    const all = events(stdout);
    expect(all.filter((e) => e.type === "text").map((e) => (e as { delta: string }).delta)).toEqual(["Searching.", "Found ", "one."]);
    expect(all).toContainEqual({ type: "tool_call_start", id: "call_1", tool: "grep", kind: "search" });
    expect(all).toContainEqual(expect.objectContaining({ type: "tool_call_end", id: "call_1", tool: "grep", status: "completed" }));
    expect(all).toContainEqual({ type: "usage", used: 105, size: expect.any(Number) as number });
    expect(all.at(-1)).toEqual({
      type: "stop",
      stop_reason: "end_turn",
      exit_code: 0,
      session_id: expect.stringMatching(/^cli-/),
      totals: expect.objectContaining({ requests: 2, tool_calls: 1 }),
    });
    expect(stderr).not.toContain("✓"); // the events carry the calls
  });

  it("runs in ask mode by default: bash is refused with the reason, and the model is told", async () => {
    const model = await withModel({ toolCalls: [{ name: "bash", arguments: { command: "touch made" } }] }, { text: "I could not run it." });
    const { code, stdout, stderr } = await toolhost(["run", "make a file"]);
    expect(code).toBe(0); // the turn itself ended normally: the model answered the refusal
    expect(stdout).toBe("I could not run it.\n");
    expect(stderr).toMatch(/^✗ .*touch made.*: permission_denied .*needs approval and nobody can answer here.*--mode full/m);
    await expect(fsp.access(path.join(t.ws, "made"))).rejects.toThrow();
    expect(JSON.stringify(model.requests[1]?.body.messages)).toContain("needs approval");
  });

  it("reports the refusal as a failed call with its code in --json", async () => {
    await withModel({ toolCalls: [{ name: "bash", arguments: { command: "touch made" } }] }, { text: "No." });
    const { stdout } = await toolhost(["run", "--json", "make a file"]);
    expect(events(stdout)).toContainEqual(
      expect.objectContaining({ type: "tool_call_end", tool: "bash", status: "failed", error_code: "permission_denied" }),
    );
  });

  it("a question gets the headless refusal, and the model goes on with its best guess", async () => {
    const model = await withModel(
      { toolCalls: [{ id: "call_q", name: "question", arguments: { questions: [{ question: "Which database?" }] } }] },
      { text: "Assuming Postgres." },
    );
    const { code, stdout, stderr } = await toolhost(["run", "set up the database"]);
    expect(code).toBe(0);
    expect(stdout).toBe("Assuming Postgres.\n");
    expect(stderr).toMatch(/^✗ .*: unavailable /m);
    const told = model.requests[1]?.body.messages?.find((m) => m.role === "tool" && m.tool_call_id === "call_q");
    expect(String(told?.content)).toBe(`Error (unavailable): ${NO_ONE_TO_ASK}`);
  });

  it("runs bash with --mode full", async () => {
    await withModel({ toolCalls: [{ name: "bash", arguments: { command: "touch made" } }] }, { text: "Done." });
    const { code, stdout, stderr } = await toolhost(["run", "--mode", "full", "make a file"]);
    expect(code).toBe(0);
    expect(stdout).toBe("Done.\n");
    expect(stderr).toMatch(/^✓ .*touch made/m);
    await fsp.access(path.join(t.ws, "made"));
  });

  it("reads the prompt from stdin when it is -", async () => {
    const model = await withModel({ text: "Hello." });
    const { code, stdout } = await toolhost(["run", "-"], { stdin: "a prompt from a pipe\n" });
    expect(code).toBe(0);
    expect(stdout).toBe("Hello.\n");
    expect(JSON.stringify(model.requests[0]?.body.messages)).toContain("a prompt from a pipe");
  });

  it("runs a slash command without a model: its result on stdout", async () => {
    const { code, stdout, stderr } = await toolhost(["run", "/grep TODO"], { model: false });
    expect(code).toBe(0);
    expect(stdout).toContain('"path":"src/a.ts"');
    expect(stderr).toMatch(/^✓ grep/m);
    const failed = await toolhost(["run", "/read missing.ts"], { model: false });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^✗ /m);
    expect(failed.stdout).toBe("");
  });

  it("exits 1 with the setup help on stderr when no model is configured", async () => {
    const { code, stdout, stderr } = await toolhost(["run", "hello"], { model: false });
    expect(code).toBe(1);
    expect(stdout).toBe("");
    expect(stderr).toContain("No model is configured");
    expect(stderr).toContain("TOOLHOST_MODEL");
  });

  it("exits 1 when the provider fails or the response hits max tokens", async () => {
    await withModel({ status: 400, message: "bad request from the fake" });
    const failed = await toolhost(["run", "--json", "hello"]);
    expect(failed.code).toBe(1);
    const all = events(failed.stdout);
    expect(all).toContainEqual(expect.objectContaining({ type: "error" }));
    expect(all.at(-1)).toEqual({
      type: "stop",
      stop_reason: "end_turn",
      exit_code: 1,
      session_id: expect.stringMatching(/^cli-/),
      totals: expect.objectContaining({ requests: 1, output_tokens: 0 }),
    });

    t.fake?.push({ text: "cut", finish: "length" });
    const cut = await toolhost(["run", "hello"]);
    expect(cut.code).toBe(1);
    expect(cut.stderr).toContain("max_tokens");
  });

  it("stops at --max-tool-calls: the call past it is not run, the turn ends max_turn_requests, exit 1 with the message", async () => {
    const model = await withModel(
      ...Array.from({ length: 50 }, (_, i): FakeReply => ({
        toolCalls: [{ id: `g${i + 1}`, name: "glob", arguments: { pattern: `*${i}` } }],
      })),
    );
    const { code, stdout } = await toolhost(["run", "--json", "--max-tool-calls", "3", "look everywhere"]);
    expect(code).toBe(1);
    const all = events(stdout);
    const message =
      "Stopped: the session reached its budget of 3 tool calls (--max-tool-calls). The session has made 3 tool calls. Run it again with a higher --max-tool-calls to go on.";
    expect(all.filter((e) => e.type === "tool_call_end").map((e) => (e.type === "tool_call_end" ? [e.status, e.error ?? ""] : []))).toEqual(
      [
        ["completed", ""],
        ["completed", ""],
        ["completed", ""],
        ["failed", `Not run: budget. ${message}`],
      ],
    );
    expect(all).toContainEqual({ type: "message", text: message });
    expect(all.at(-1)).toEqual({
      type: "stop",
      stop_reason: "max_turn_requests",
      exit_code: 1,
      session_id: expect.stringMatching(/^cli-/),
      totals: expect.objectContaining({ requests: 4, tool_calls: 3 }),
    });
    expect(model.requests).toHaveLength(4);

    // Text mode: the message and the stop reason on stderr.
    const text = await toolhost(["run", "--max-turns", "1", "look again"]);
    expect(text.code).toBe(1);
    expect(text.stderr).toContain("Stopped: the session reached its budget of 1 model request (--max-turns).");
    expect(text.stderr).toContain("toolhost: the turn ended: max_turn_requests");
    expect(model.requests).toHaveLength(5);
  });

  it("waits for a background task before it exits: its answer reaches the model in a turn of its own", async () => {
    let parentGoesOn = () => {};
    const parentWentOn = new Promise<void>((resolve) => (parentGoesOn = resolve));
    const route = async (body: FakeBody): Promise<FakeReply> => {
      const results = (body.messages ?? []).filter((m) => m.role === "tool");
      if (firstUserText(body).includes("Child")) {
        await parentWentOn; // answers only after the parent's turn has gone on to its end
        return { text: "Child found 2 files." };
      }
      const last = (body.messages ?? []).filter((m) => m.role === "user").at(-1);
      if (String(last?.content).startsWith("[Background task")) return { text: "Background answer seen." };
      if (!results.length)
        return { toolCalls: [{ name: "task", arguments: { description: "Count", prompt: "Child: count files", background: true } }] };
      parentGoesOn();
      return { text: "Going on." };
    };
    t.fake = await startFakeOpenAI({ fallback: route });
    const { code, stdout } = await toolhost(["run", "count in the background"]);
    expect(code).toBe(0);
    expect(stdout).toBe("Going on.\nBackground answer seen.\n");
    expect(JSON.stringify(t.fake.requests.at(-1)?.body.messages)).toContain("Child found 2 files.");
  });

  it("exits 2 on bad usage", async () => {
    for (const args of [
      ["run"],
      ["run", "--mode", "yolo", "x"],
      ["run", "a", "b"],
      ["run", "--nope", "x"],
      ["run", "--model", "nope", "x"],
      ["run", "--max-tool-calls", "0", "x"],
      ["run", "--max-turns", "2.5", "x"],
      ["run", "--max-cost-usd", "cheap", "x"],
    ]) {
      const { code, stderr } = await toolhost(args, { model: false });
      expect(code, args.join(" ")).toBe(2);
      expect(stderr).toMatch(/toolhost( run)?:/);
    }
  });

  it("exits 130 on SIGINT, cancelling the turn and its command", async () => {
    // A marker of this run's own: another test run on the machine must not look the same.
    const marker = sleepMarker();
    await withModel({ text: "Running.", toolCalls: [{ name: "bash", arguments: { command: `sleep ${marker}; touch late` } }] });
    let sent = false;
    const started = Date.now();
    const { code, signal } = await toolhost(["run", "--mode", "full", "wait"], {
      onStdout: (all, child) => {
        if (!sent && all.includes("Running.")) {
          sent = true;
          // Interrupt once the command runs, however long a busy machine takes to start it.
          void vi
            .waitUntil(async () => (await survivors(`sleep ${marker}`)).length > 0, { timeout: 20_000, interval: 20 })
            .then(() => child.kill("SIGINT"));
        }
      },
    });
    expect(signal).toBeNull();
    expect(code).toBe(130);
    expect(Date.now() - started).toBeLessThan(30_000);
    // The command's process is gone with the CLI, not left running.
    expect(await survivors(`sleep ${marker}`)).toEqual([]);
    await expect(fsp.access(path.join(t.ws, "late"))).rejects.toThrow();
  });

  it("a model that never answers: says it waits and each retry on stderr, exits 1 with the timeout; SIGINT ends the wait", async () => {
    // Accepts every request and never answers, not even the headers.
    t.fake = await startFakeOpenAI({ fallback: () => new Promise<never>(() => {}) });
    const timedOut = await toolhost(["run", "hello"], {
      env: { TOOLHOST_MODEL_FIRST_BYTE_TIMEOUT_MS: "400", TOOLHOST_MODEL_RETRIES: "1" },
    });
    expect(timedOut.code).toBe(1);
    expect(timedOut.stderr).toContain("toolhost: waiting for openai-compatible/fake: no answer yet after 200 ms (attempt 1;");
    expect(timedOut.stderr).toContain("toolhost: openai-compatible/fake: the model sent nothing for 400 ms; retry 1 of 1 in 1 s");
    expect(timedOut.stderr).toContain(
      "The model request for openai-compatible/fake timed out (tried 2 times): the model sent nothing for 400 ms.",
    );

    // The default wait (minutes): Ctrl-C while the request hangs ends the run, and the connection with it.
    const fake = t.fake;
    const asked = fake.requests.length;
    const { code } = await toolhost(["run", "hello"], {
      onSpawn: (child) =>
        void vi.waitUntil(() => fake.requests.length > asked, { timeout: 20_000, interval: 20 }).then(() => child.kill("SIGINT")),
    });
    expect(code).toBe(130);
    await vi.waitUntil(() => fake.requests.every((r) => r.aborted), { timeout: 10_000, interval: 20 });
  });
});
