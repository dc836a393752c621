import { execFile, spawnSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { Ajv2020 } from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, tempDir } from "../helpers.js";

// Issue 35 §3: the Harbor agent's toolhost side, without Harbor (it cannot be installed here). The
// shell lines integrations/harbor/toolhost_harbor/command.py builds run, as Harbor would run them
// (`set -o pipefail; …`), against the built CLI and a local fake model; the converter turns the
// run's events and session file into ATIF that validates against the schema written from Harbor's
// models (integrations/harbor/atif-v1.7.schema.json) and the rules across steps those models check.
// The adapter in Harbor's own classes is integrations/harbor/tests/test_agent.py (pytest, where Harbor is).

const ROOT = path.join(import.meta.dirname, "..", "..");
const HARBOR = path.join(ROOT, "integrations", "harbor");
const run = promisify(execFile);
const hasPython = spawnSync("python3", ["-c", "import sys; sys.exit(sys.version_info < (3, 10))"]).status === 0;
if (!hasPython) console.warn("test/integrations/harbor.test.ts: skipped: python3 (3.10 or later) is not on PATH");

const readJson = async (file: string) => JSON.parse(await fsp.readFile(file, "utf8")) as Record<string, unknown>;
const ajv = new Ajv2020({ strict: false });
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** Harbor's Trajectory validators that a JSON Schema cannot say: step ids 1, 2, …; a result's source_call_id names a call of its own step. */
function acrossSteps(trajectory: Json): string[] {
  const problems: string[] = [];
  (trajectory.steps as Json[]).forEach((step, i) => {
    if (step.step_id !== i + 1) problems.push(`steps[${i}].step_id is ${step.step_id}`);
    const ids = new Set(((step.tool_calls ?? []) as Json[]).map((c) => c.tool_call_id));
    for (const r of (step.observation?.results ?? []) as Json[])
      if (r.source_call_id != null && !ids.has(r.source_call_id)) problems.push(`step ${step.step_id}: no call ${r.source_call_id}`);
  });
  return problems;
}

describe.skipIf(!hasPython)("the Harbor agent's toolhost side (issue 35 §3)", { timeout: 60_000 }, () => {
  let validEvent: (v: unknown) => boolean;
  let validAtif: ((v: unknown) => boolean) & { errors?: unknown };
  let bin: string;
  beforeAll(async () => {
    validEvent = ajv.compile(await readJson(path.join(ROOT, "schemas", "run-events.v1.json")));
    validAtif = ajv.compile(await readJson(path.join(HARBOR, "atif-v1.7.schema.json")));
    bin = await tempDir({ toolhost: `#!/bin/sh\nexec "${process.execPath}" "${CLI_PATH}" "$@"\n` });
    await fsp.chmod(path.join(bin, "toolhost"), 0o755);
  });
  const python = async (module: string, args: string[]) =>
    run("python3", ["-m", `toolhost_harbor.${module}`, ...args], { cwd: HARBOR, env: { ...process.env, PYTHONDONTWRITEBYTECODE: "1" } });
  /** The lines the agent builds for each spec (`{error}` for bad kwargs), from one python3 start. */
  const commands = async (...specs: Json[]) => JSON.parse((await python("command", [JSON.stringify(specs)])).stdout) as Json[];
  /** A line as Harbor's exec runs it, in a workspace, with only the environment the agent hands it. */
  const shell = (line: string, env: Json, cwd: string) =>
    new Promise<{ code: number | null; stdout: string }>((resolve) =>
      execFile(
        "bash",
        ["-c", `set -o pipefail; ${line}`],
        { cwd, env: { PATH: `${bin}:${process.env.PATH}`, HOME: bin, ...env } },
        (err, stdout) => resolve({ code: err ? (err.code as number) : 0, stdout }),
      ),
    );
  const events = async (logs: string) =>
    (await fsp.readFile(path.join(logs, "toolhost.jsonl"), "utf8"))
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Json);
  const convert = async (args: string[]) => JSON.parse((await python("atif", args)).stdout) as { trajectory: Json; context: Json };
  const checkedAtif = (trajectory: Json) => {
    expect(validAtif(trajectory), JSON.stringify(validAtif.errors)).toBe(true);
    expect(acrossSteps(trajectory)).toEqual([]);
    return trajectory;
  };

  const fake: { close?: () => Promise<void> } = {};
  afterAll(() => fake.close?.());

  it("its run line drives the real CLI (flags, model, keys, sandbox, prompt on stdin); the converter makes valid ATIF of it", async () => {
    const server = await startFakeOpenAI({
      script: [
        {
          reasoning: "Write it first.",
          text: "Writing it.",
          toolCalls: [{ id: "w1", name: "write", arguments: { path: "hello.txt", content: "Hello, world!" } }],
          usage: { prompt_tokens: 100, completion_tokens: 10, prompt_tokens_details: { cached_tokens: 40 } },
        },
        {
          toolCalls: [
            { id: "b1", name: "bash", arguments: { command: "cat hello.txt" } },
            { id: "b2", name: "bash", arguments: { command: "exit 3" } },
          ],
          usage: { prompt_tokens: 200, completion_tokens: 5 },
        },
        { text: "Done.", usage: { prompt_tokens: 300, completion_tokens: 7 } },
        // The second run, capped at one request: a call, then the cap.
        { toolCalls: [{ id: "e1", name: "bash", arguments: { command: "echo hi" } }], usage: { prompt_tokens: 50, completion_tokens: 5 } },
      ],
    });
    fake.close = server.close;
    const [ws, logs] = [await tempDir(), await tempDir()];
    // A prompt the shell must not touch, that a flag parser would misread if it were an argument.
    const instruction = `--help: create hello.txt with "Hello, world!" ('quoted' $HOME \`id\`)`;
    const model = "openai-compatible/fake";
    const kwargs = { max_turns: 5, max_tool_calls: 10, max_cost_usd: "0.5", sandbox: "off" };
    const spec = { instruction, logs_dir: logs, model, env: { TOOLHOST_BASE_URL: server.url, UNRELATED: "x" }, kwargs };
    const [built, capped] = (await commands(spec, { ...spec, kwargs: { max_turns: 1 } })) as [Json, Json];
    expect(built.env).toEqual({
      TOOLHOST_HOME: `${logs}/toolhost-home`,
      TOOLHOST_MODEL: model,
      TOOLHOST_SANDBOX: "off",
      TOOLHOST_BASE_URL: server.url,
    });
    expect(built.run).toContain("toolhost run --json --mode full --max-turns 5 --max-tool-calls 10 --max-cost-usd 0.5 -");

    const done = await shell(built.run, built.env, ws);
    expect(done.code).toBe(0);
    const first = await events(logs);
    for (const event of first) expect(validEvent(event), JSON.stringify(event)).toBe(true);
    expect(first[0]).toMatchObject({ type: "start", mode: "full", model, cwd: ws });
    expect(server.requests[0]?.body.messages?.at(-1)).toMatchObject({ role: "user", content: instruction });
    expect(await fsp.readFile(path.join(ws, "hello.txt"), "utf8")).toBe("Hello, world!");
    expect((await shell(built.version, built.env, ws)).stdout.trim()).toBe((await readJson(path.join(ROOT, "package.json"))).version);

    // From the session file: every call with its arguments and what the model got back.
    const { trajectory, context } = await convert([path.join(logs, "toolhost.jsonl"), "--home", `${logs}/toolhost-home`]);
    checkedAtif(trajectory);
    expect(trajectory).toMatchObject({
      schema_version: "ATIF-v1.7",
      agent: { name: "toolhost", model_name: model },
      extra: { steps_from: "session" },
    });
    const steps = trajectory.steps as Json[];
    // The notice: --max-cost-usd reached the CLI, which says an unpriced model's cost cannot stop it.
    expect(steps.map((s) => s.source)).toEqual(["user", "system", "agent", "agent", "agent"]);
    expect(steps[0]!.message).toBe(instruction);
    expect(steps[1]!.message).toContain("--max-cost-usd");
    expect(steps[2]).toMatchObject({ reasoning_content: "Write it first.", message: "Writing it.", llm_call_count: 1 });
    expect(steps[2]!.tool_calls[0]).toMatchObject({ tool_call_id: "w1", function_name: "write", arguments: { path: "hello.txt" } });
    expect(steps[3]!.tool_calls.map((c: Json) => c.extra.status)).toEqual(["completed", "failed"]);
    expect(steps[3]!.observation.results[0]).toMatchObject({ source_call_id: "b1", content: expect.stringContaining("Hello, world!") });
    const totals = { input_tokens: 600, output_tokens: 22, cache_read_tokens: 40 };
    expect(trajectory.final_metrics).toMatchObject({
      total_prompt_tokens: 600,
      total_completion_tokens: 22,
      total_cached_tokens: 40,
      total_steps: 5,
    });
    expect(first.at(-1)).toMatchObject({ type: "stop", exit_code: 0, totals });
    expect(context).toMatchObject({
      n_input_tokens: 600,
      n_output_tokens: 22,
      n_cache_tokens: 40,
      metadata: { toolhost: { failed_calls: 1, tool_calls: 3 } },
    });

    // From the events alone (no session file): the same steps, the calls without their arguments.
    const fromEvents = checkedAtif((await convert([path.join(logs, "toolhost.jsonl"), "--instruction", instruction])).trajectory);
    expect((fromEvents.steps as Json[]).map((s) => s.tool_calls?.length ?? 0)).toEqual([0, 0, 1, 2, 0]);
    expect(fromEvents.steps[3].observation.results[1]).toMatchObject({ content: "exit code 3", extra: { status: "failed", exit_code: 3 } });

    // A budget's cap reaches the CLI, and its exit code comes through the pipe: Harbor records the failure.
    expect((await shell(capped.run, capped.env, ws)).code).toBe(1);
    const second = await events(logs);
    expect(second.at(-1)).toMatchObject({ stop_reason: "max_turn_requests", exit_code: 1, totals: { requests: 1 } });
    const cappedTrajectory = checkedAtif(
      (await convert([path.join(logs, "toolhost.jsonl"), "--home", `${logs}/toolhost-home`])).trajectory,
    );
    expect(cappedTrajectory.extra).toMatchObject({ stop_reason: "max_turn_requests", exit_code: 1 });
  });

  it("a bad kwarg stops before anything runs, naming it", async () => {
    const bad = [
      ["max_turns", "many"],
      ["max_tool_calls", 1.5],
      ["max_cost_usd", "0"],
      ["mode", "yolo"],
      ["sandbox", "maybe"],
    ] as const;
    const built = await commands(
      ...bad.map(([kwarg, value]) => ({ instruction: "x", logs_dir: "/logs/agent", kwargs: { [kwarg]: value } })),
    );
    expect(built.map((b) => b.error)).toEqual(
      bad.map(([kwarg, value]) => expect.stringContaining(`${kwarg}=${JSON.stringify(value).replaceAll('"', "'")}`)),
    );
  });

  it("the checks refuse what Harbor's models refuse", () => {
    const good = {
      schema_version: "ATIF-v1.7",
      agent: { name: "toolhost", version: "0.1.0" },
      steps: [{ step_id: 1, source: "user", message: "hi" }],
    };
    expect(validAtif(good)).toBe(true);
    const call = { tool_call_id: "c1", function_name: "bash", arguments: {} };
    const bad: Json[] = [
      { ...good, steps: [] },
      { ...good, extra_field: 1 },
      { ...good, steps: [{ step_id: 1, source: "user", message: "hi", tool_calls: [call] }] },
      { ...good, steps: [{ step_id: 1, source: "agent", message: "", llm_call_count: 0, reasoning_content: "why" }] },
      { ...good, steps: [{ step_id: 1, source: "agent", message: "", timestamp: "yesterday" }] },
      { ...good, schema_version: "ATIF-v2.0" },
    ];
    for (const trajectory of bad) expect(validAtif(trajectory), JSON.stringify(trajectory)).toBe(false);
    expect(acrossSteps({ steps: [{ step_id: 2, source: "user", message: "hi" }] })).toHaveLength(1);
    const unknownCall = {
      step_id: 1,
      source: "agent",
      message: "",
      tool_calls: [call],
      observation: { results: [{ source_call_id: "c2" }] },
    };
    expect(acrossSteps({ steps: [unknownCall] })).toHaveLength(1);
  });
});
