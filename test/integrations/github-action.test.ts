import * as fs from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { readAction, runAction, type ActionRun } from "../../integrations/github-action/local-run.mjs";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, useAgentEnv } from "../helpers.js";

// Issue 35 §4: the GitHub Action's steps run here as the runner runs them (local-run.mjs: action.yml's
// `run:` steps through bash, their env resolved from the inputs and the earlier steps' outputs),
// against the local fake model, with the checkout's dist/ as the installed `toolhost` (installing
// the packed tarball through the install step is scripts/check-package.mjs's last check).

const ROOT = path.resolve(import.meta.dirname, "../..");
const action = readAction();
const t = useAgentEnv({ files: { "a.txt": "alpha\n" } });

/** The action run with `inputs`, `toolhost` on PATH being this checkout's build, the model the fake. */
async function act(inputs: Record<string, string>): Promise<ActionRun> {
  const bin = await t.dir({ toolhost: `#!/bin/sh\nexec "${process.execPath}" "${CLI_PATH}" "$@"\n` });
  fs.chmodSync(path.join(bin, "toolhost"), 0o755);
  const model = t.fake ? { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } : {};
  // TOOLHOST_HOME empty, as on a runner: the run step makes the job's own.
  const env = { ...model, PATH: `${bin}${path.delimiter}${process.env.PATH}`, TOOLHOST_HOME: "" };
  const run = await runAction({ inputs, env, workspace: t.ws, skip: ["install"] });
  t.defer(() => fs.rmSync(run.temp, { recursive: true, force: true }));
  return run;
}

/** The `::error::`/`::warning::` workflow commands a step printed. */
const annotations = (stdout = "", level: string) => stdout.split("\n").filter((line) => line.startsWith(`::${level}::`));

describe("the GitHub Action (issue 35 §4)", { timeout: 60_000 }, () => {
  it("each step is a script of the repo, fed only through env, with exactly the inputs it reads", () => {
    expect(action.runs.using).toBe("composite");
    const runSteps = action.runs.steps.filter((step) => step.run !== undefined);
    expect(runSteps.map((step) => step.id)).toEqual(["install", "run", "summarize"]);
    for (const step of runSteps) {
      const script = /^node "\$GITHUB_ACTION_PATH\/(integrations\/github-action\/[\w-]+\.mjs)"$/.exec(step.run!.trim())?.[1];
      expect(script, step.run).toBeDefined();
      const source = fs.readFileSync(path.join(ROOT, script!), "utf8");
      // What the script reads (input("max-turns") is INPUT_MAX_TURNS) is what the step sets, and no more.
      const read = [...source.matchAll(/\b(?:input|booleanInput)\("([\w-]+)"|process\.env\.INPUT_(\w+)/g)].map(
        ([, name, env]) => `INPUT_${(name ?? env ?? "").replace(/-/g, "_").toUpperCase()}`,
      );
      expect(Object.keys(step.env ?? {}).sort(), script).toEqual([...new Set(read)].sort());
      // Every value an input or an earlier step's output: an input's text never becomes shell code.
      for (const value of Object.values(step.env ?? {})) {
        const ref = /^\$\{\{ (inputs\.([\w-]+)|steps\.([\w-]+)\.outputs\.[\w-]+) \}\}$/.exec(value);
        expect(ref, value).not.toBeNull();
        if (ref?.[2]) expect(action.inputs, value).toHaveProperty([ref[2]]);
        if (ref?.[3]) expect(runSteps.map((s) => s.id)).toContain(ref[3]);
      }
    }
    const refs = [...JSON.stringify(action).matchAll(/inputs\.([\w-]+)/g)].map((m) => m[1]);
    for (const name of refs) expect(action.inputs, `inputs.${name}`).toHaveProperty([name!]);
  });

  it("a run that does its work is green: the answer, calls and totals in the outputs and the step summary, the transcript uploaded", async () => {
    t.fake = await startFakeOpenAI({
      script: [
        {
          toolCalls: [{ id: "w1", name: "write", arguments: { path: "notes.txt", content: "written in CI\n" } }],
          usage: { prompt_tokens: 120, completion_tokens: 12 },
        },
        { text: "Wrote notes.txt.", usage: { prompt_tokens: 150, completion_tokens: 6 } },
      ],
    });
    // A prompt that looks like an option reaches the model as the prompt (it goes on stdin).
    const run = await act({ prompt: "--help is not an option here: write notes.txt", mode: "accept-edits", "max-turns": "5" });
    expect(run.steps.run?.code, run.steps.run?.stderr).toBe(0);
    expect(run.steps.summarize?.code, run.steps.summarize?.stdout).toBe(0);
    expect(run.failed).toBe(false);
    expect(fs.readFileSync(path.join(t.ws, "notes.txt"), "utf8")).toBe("written in CI\n");
    expect(JSON.stringify(t.fake.requests[0]?.body.messages)).toContain("--help is not an option here");
    const sessionId = run.outputs["session-id"];
    expect(sessionId).toMatch(/^cli-/);
    expect(run.outputs).toMatchObject({
      "exit-code": "0",
      "stop-reason": "end_turn",
      answer: "Wrote notes.txt.",
      "tool-calls": "1",
      "refused-calls": "0",
      "failed-calls": "0",
      "input-tokens": "270",
      "output-tokens": "18",
      "cost-usd": "",
    });
    expect(run.summary).toContain("## toolhost: ✅ done");
    expect(run.summary).toContain("| write | Write notes.txt | completed |");
    expect(run.summary).toMatch(/\| 270 \| 18 \| 0 \| 0 \| 2 \| 1 \| no price known \|/);
    // The upload: the transcript folder, named after the session, with the events, stderr, the session's file and the summary.
    const upload = run.steps["Upload the transcript"];
    expect(upload?.with).toMatchObject({ name: `toolhost-${sessionId}`, path: run.outputs["transcript-dir"] });
    expect(fs.readdirSync(run.outputs["transcript-dir"]!).sort()).toEqual(
      ["events.jsonl", `${sessionId}.jsonl`, "stderr.log", "summary.md"].sort(),
    );
  });

  it("the trap: a run refused everything yet ended 0; the action fails it, or with fail-on-refused false only warns", async () => {
    t.fake = await startFakeOpenAI({
      script: [
        { toolCalls: [{ id: "w1", name: "write", arguments: { path: "out.txt", content: "x" } }] },
        { text: "I could not write it." },
      ],
    });
    const strict = await act({ prompt: "write out.txt" }); // mode ask, the default: nobody approves the write
    expect(strict.steps.run?.outputs?.["exit-code"]).toBe("0");
    expect(strict.steps.summarize?.code).toBe(1);
    expect(strict.outputs).toMatchObject({ "exit-code": "0", "refused-calls": "1", answer: "I could not write it." });
    expect(annotations(strict.steps.summarize?.stdout, "error").join("\n")).toMatch(
      /1 tool call\(s\) refused .*nothing done.*Write out\.txt/,
    );
    expect(strict.summary).toContain("## toolhost: ❌ failed");
    expect(strict.summary).toContain("### ⚠️ Refused calls (1)");
    expect(strict.summary).toMatch(/\| write \| Write out\.txt \| refused \|/);
    expect(fs.existsSync(path.join(t.ws, "out.txt"))).toBe(false);
    // The transcript is uploaded all the same.
    expect(strict.steps["Upload the transcript"]?.with?.path).toBe(strict.outputs["transcript-dir"]);

    // fail-on-refused false: the same events summarized again (the step alone, as action.yml feeds it).
    const step = action.runs.steps.find((s) => s.id === "summarize")!;
    const lenient = await execa("node", [path.join(ROOT, "integrations/github-action/summarize.mjs")], {
      reject: false,
      env: {
        INPUT_EVENTS_FILE: strict.steps.run?.outputs?.["events-file"],
        INPUT_EXIT_CODE: "0",
        INPUT_TRANSCRIPT_DIR: strict.outputs["transcript-dir"],
        INPUT_FAIL_ON_REFUSED: "false",
        GITHUB_OUTPUT: "",
      },
    });
    expect(Object.keys(step.env ?? {}).sort()).toEqual([
      "INPUT_EVENTS_FILE",
      "INPUT_EXIT_CODE",
      "INPUT_FAIL_ON_REFUSED",
      "INPUT_TRANSCRIPT_DIR",
    ]);
    expect(lenient.exitCode, lenient.stdout).toBe(0);
    expect(annotations(lenient.stdout, "warning").join("\n")).toContain("1 tool call(s) refused");
    expect(lenient.stderr).toContain("output refused-calls=1");
  });

  it("a failed run fails the step: a budget's cap (exit 1), bad usage with no events (exit 2); a missing tarball fails the install", async () => {
    t.fake = await startFakeOpenAI({
      script: [{ toolCalls: [{ id: "r1", name: "read", arguments: { path: "a.txt" } }] }, { text: "never asked for" }],
    });
    const capped = await act({ prompt: "read a.txt", "max-turns": "1" });
    expect(capped.steps.run?.code).toBe(0); // the run step records; the summarize step judges
    expect(capped.steps.summarize?.code).toBe(1);
    expect(capped.outputs).toMatchObject({ "exit-code": "1", "stop-reason": "max_turn_requests", "tool-calls": "1" });
    expect(annotations(capped.steps.summarize?.stdout, "error").join("\n")).toContain(
      "the run failed: exit 1, stop reason max_turn_requests",
    );
    expect(capped.steps["Upload the transcript"]?.with?.path).toBe(capped.outputs["transcript-dir"]);

    const badUsage = await act({ prompt: "hello", mode: "nonsense" });
    expect(badUsage.outputs["exit-code"]).toBe("2");
    expect(badUsage.steps.summarize?.code).toBe(1);
    expect(annotations(badUsage.steps.summarize?.stdout, "error").join("\n")).toContain("without its stop event");
    expect(fs.readFileSync(path.join(badUsage.outputs["transcript-dir"]!, "stderr.log"), "utf8")).toContain("nonsense");

    const missing = await runAction({
      inputs: { prompt: "x", tarball: "no-such.tgz", "node-version": "" },
      workspace: t.ws,
      skip: ["run"],
    });
    t.defer(() => fs.rmSync(missing.temp, { recursive: true, force: true }));
    expect(missing.steps.install?.code).toBe(1);
    expect(annotations(missing.steps.install?.stdout, "error").join("\n")).toContain(
      `tarball: ${path.join(t.ws, "no-such.tgz")} does not exist`,
    );
    // Nothing ran, so nothing is summarized or uploaded.
    expect(missing.steps.summarize?.ran).toBe(false);
    expect(missing.steps["Upload the transcript"]?.with).toBeUndefined();
  });
});
