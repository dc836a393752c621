#!/usr/bin/env node
// The action's run step: `toolhost run --json` on the prompt (given on stdin, so no prompt is read
// as an option), with the mode and the budgets of the inputs, TOOLHOST_HOME in a folder of the job
// unless the job sets one. The events go to events.jsonl and toolhost's stderr (the per-call lines,
// notes) to the log and stderr.log, both in the transcript folder, with the session's file copied
// there after the run. It exits 0 whatever the run's exit code (the summarize step judges the
// run, so the transcript is summarized and uploaded either way), 1 only when toolhost did not run.
// Inputs: prompt, model, mode, max-turns, max-tool-calls, max-cost-usd, max-tokens, sandbox,
// working-directory, artifact-name. Outputs: exit-code, session-id, events-file, transcript-dir, artifact-name.
import { spawn } from "node:child_process";
import { copyFileSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { finished } from "node:stream/promises";
import { fail, input, setOutputs } from "./action-io.mjs";

const prompt = process.env.INPUT_PROMPT ?? "";
if (!prompt.trim()) fail("the prompt input is empty");

const job = mkdtempSync(path.join(process.env.RUNNER_TEMP || os.tmpdir(), "toolhost-"));
const transcript = path.join(job, "transcript");
mkdirSync(transcript);
const home = process.env.TOOLHOST_HOME || path.join(job, "home");
const eventsFile = path.join(transcript, "events.jsonl");

const args = ["run", "--json", "--mode", input("mode", "ask")];
if (input("model")) args.push("--model", input("model"));
const caps = {
  "max-turns": input("max-turns"),
  "max-tool-calls": input("max-tool-calls"),
  "max-cost-usd": input("max-cost-usd"),
  "max-tokens": input("max-tokens"),
};
for (const [cap, value] of Object.entries(caps)) if (value) args.push(`--${cap}`, value);
args.push("-");

const cwd = path.resolve(process.env.GITHUB_WORKSPACE ?? process.cwd(), input("working-directory", "."));
if (!existsSync(cwd)) fail(`working-directory: ${cwd} does not exist`);
const sandbox = input("sandbox").toLowerCase();
const env = { ...process.env, TOOLHOST_HOME: home, ...(sandbox ? { TOOLHOST_SANDBOX: sandbox } : {}) };
process.stderr.write(`toolhost ${args.join(" ")}  (in ${cwd}, TOOLHOST_HOME=${home})\n`);

const child = spawn("toolhost", args, { cwd, env, stdio: ["pipe", "pipe", "pipe"] });
const events = createWriteStream(eventsFile);
const stderrLog = createWriteStream(path.join(transcript, "stderr.log"));
child.stdout.pipe(events);
child.stderr.on("data", (chunk) => {
  process.stderr.write(chunk);
  stderrLog.write(chunk);
});
child.stdin.on("error", () => {}); // toolhost may exit (bad usage) before it reads the prompt
child.stdin.end(prompt);
// A cancelled job signals this step: toolhost gets it too, cancels the turn and still writes its stop event.
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));

const exitCode = await new Promise((resolve) => {
  child.on("error", (err) => fail(`could not start toolhost (is it installed? the install step does it): ${err.message}`));
  child.on("close", (code, signal) => resolve(code ?? (signal === "SIGINT" ? 130 : 1)));
});
await Promise.all([finished(events), new Promise((resolve) => stderrLog.end(resolve))]);

// The session: its id from the first event, its file (and a subagent's, named after it) copied beside the events.
let sessionId = "";
try {
  const first = JSON.parse(readFileSync(eventsFile, "utf8").split("\n")[0] ?? "");
  if (first.type === "start" && typeof first.session_id === "string") sessionId = first.session_id;
} catch {}
const sessions = path.join(home, "sessions");
if (sessionId && existsSync(sessions)) {
  for (const entry of readdirSync(sessions, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && entry.name.startsWith(sessionId))
      copyFileSync(path.join(entry.parentPath, entry.name), path.join(transcript, entry.name));
  }
}

process.stderr.write(`toolhost exited ${exitCode}; events in ${eventsFile}\n`);
setOutputs({
  "exit-code": exitCode,
  "session-id": sessionId,
  "events-file": eventsFile,
  "transcript-dir": transcript,
  "artifact-name": input("artifact-name", `toolhost-${sessionId || path.basename(job)}`),
});
