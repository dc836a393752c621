import { spawn } from "node:child_process";
import * as fs from "node:fs";
import path from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { RUN_EVENTS_VERSION, runEventsSchema, type RunEvent } from "../../src/commands/run-events.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, until, useAgentEnv } from "../helpers.js";

// Issue 35 §1: `run --json`'s events are a published contract. Every line of real runs validates
// against the schema file the package ships, the first event says the version, and the last carries
// the run's totals as the fake model reported them.

const SCHEMA_FILE = path.join(import.meta.dirname, "..", "..", "schemas", `run-events.v${RUN_EVENTS_VERSION}.json`);
const published = JSON.parse(fs.readFileSync(SCHEMA_FILE, "utf8")) as Record<string, unknown>;
const validate = new Ajv2020({ strict: false }).compile(published);

const t = useAgentEnv({ files: { "a.txt": "alpha\n" } });

function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const model = t.fake ? { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } : {};
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, "run", "--json", ...args], {
      cwd: t.ws,
      env: t.env({ ...model, ...env }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Every line of stdout, each checked against the published schema; the first is `start`, the last `stop`. */
function checked(stdout: string): RunEvent[] {
  const events = stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);
  for (const event of events) expect(validate(event), `${JSON.stringify(event)}: ${JSON.stringify(validate.errors)}`).toBe(true);
  expect(events[0]).toMatchObject({ type: "start", v: RUN_EVENTS_VERSION });
  expect(events.at(-1)?.type).toBe("stop");
  expect((events.at(-1) as { session_id: string }).session_id).toBe((events[0] as { session_id: string }).session_id);
  return events;
}

const stopOf = (events: RunEvent[]) => events.at(-1) as Extract<RunEvent, { type: "stop" }>;

describe("run --json events (issue 35 §1)", { timeout: 90_000 }, () => {
  it("the schema file the package ships is the one the events are defined by", () => {
    expect(published).toEqual(JSON.parse(JSON.stringify(runEventsSchema())));
    // The control: what the contract forbids is refused (a stop without totals, an unknown field).
    expect(validate({ type: "stop", stop_reason: "end_turn", exit_code: 0, session_id: "s" })).toBe(false);
    expect(validate({ type: "text", delta: "x", extra: 1 })).toBe(false);
  });

  it("a model turn's events validate, and stop carries the run's totals; a resumed run counts only its own", async () => {
    t.fake = await startFakeOpenAI({
      script: [
        {
          toolCalls: [
            { id: "r1", name: "read", arguments: { path: "a.txt" } },
            { id: "b1", name: "bash", arguments: { command: "exit 3" } },
          ],
          usage: { prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 40 } },
        },
        { text: "Done.", usage: { prompt_tokens: 200, completion_tokens: 5 } },
        { text: "Again.", usage: { prompt_tokens: 300, completion_tokens: 7 } },
      ],
    });
    const first = await run(["--mode", "full", "read and run"]);
    expect(first.code, first.stderr).toBe(0);
    const events = checked(first.stdout);
    expect(events[0]).toMatchObject({ model: "openai-compatible/fake", mode: "full", cwd: t.ws });
    expect(events.filter((e) => e.type === "tool_call_end").map((e) => e.status)).toEqual(["completed", "failed"]);
    // Unpriced model: no cost, every count as the provider reported it.
    expect(stopOf(events).totals).toEqual({
      input_tokens: 300,
      output_tokens: 15,
      cache_read_tokens: 40,
      cache_write_tokens: 0,
      requests: 2,
      tool_calls: 2,
    });
    const resumed = await run(["--resume", stopOf(events).session_id, "again"]);
    expect(stopOf(checked(resumed.stdout)).totals).toMatchObject({ input_tokens: 300, output_tokens: 7, requests: 1, tool_calls: 0 });
  });

  it("a slash command, a run without a home folder and one with no model end the same way", async () => {
    const slash = await run(["--mode", "full", "/bash echo hi"]);
    const slashEvents = checked(slash.stdout);
    expect(slashEvents.some((e) => e.type === "tool_result" && e.text.includes("hi"))).toBe(true);
    expect(stopOf(slashEvents)).toMatchObject({ exit_code: 0, totals: { requests: 0, tool_calls: 1 } });
    // No person's home folder and no terminal (a container, CI): TOOLHOST_HOME is all it needs.
    const homeless = await run(["--mode", "full", "/read a.txt"], { HOME: "/nonexistent/person" });
    expect(homeless.code, homeless.stderr).toBe(0);
    expect(stopOf(checked(homeless.stdout)).totals.tool_calls).toBe(1);
    const noModel = await run(["hello"]);
    expect(noModel.code).toBe(1);
    const noModelEvents = checked(noModel.stdout);
    expect(noModelEvents.some((e) => e.type === "error")).toBe(true);
    expect(noModelEvents[0]).not.toHaveProperty("model");
    expect(stopOf(noModelEvents)).toMatchObject({ exit_code: 1, totals: { requests: 0 } });
  });

  it("an interrupted run still ends with its stop event, exit code 130", async () => {
    t.fake = await startFakeOpenAI({ script: [{ hang: true }] });
    const model = { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url };
    const child = spawn(process.execPath, [CLI_PATH, "run", "--json", "wait"], {
      cwd: t.ws,
      env: t.env(model),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    // Interrupted once the model has the request (the start event is out before it is sent).
    await until(() => (t.fake?.requests.length ?? 0) > 0);
    child.kill("SIGTERM");
    expect(await closed).toBe(130);
    expect(stopOf(checked(stdout))).toMatchObject({ stop_reason: "cancelled", exit_code: 130 });
  });
});
