#!/usr/bin/env node
// The action's summarize step: reads the run's events (docs/run-events.md, version 1; what it does
// not know it ignores) and says what the run did: the answer, each tool call, the refused ones and
// the totals, in the job's step summary ($GITHUB_STEP_SUMMARY, and summary.md in the transcript)
// and as step outputs. It fails the step when the run failed (a non-zero exit code, or no stop
// event) and, with fail-on-refused, when any call was refused: in CI nobody can approve a call, so
// a run that was refused everything it tried still ends 0.
// Inputs: events-file, exit-code, fail-on-refused, transcript-dir. Outputs: see action.yml.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { annotate, booleanInput, fail, input, setOutputs } from "./action-io.mjs";

const EVENTS_VERSION = 1;
/** The error codes of a refused call, as the session file counts them: the policy's refusal, a rejection, a tool's scope. */
const REFUSED = new Set(["permission_denied", "rejected", "capability_denied"]);
const MAX_ROWS = 200;
const MAX_ANSWER = 60_000;

const eventsFile = input("events-file");
if (!eventsFile || !existsSync(eventsFile))
  fail(`events-file: ${eventsFile || "(empty)"} does not exist: the run step did not run toolhost`);
const failOnRefused = booleanInput("fail-on-refused", true);

const events = [];
let unreadable = 0;
for (const line of readFileSync(eventsFile, "utf8").split("\n")) {
  if (!line.trim()) continue;
  try {
    const event = JSON.parse(line);
    if (event && typeof event.type === "string") events.push(event);
    else unreadable++;
  } catch {
    unreadable++;
  }
}
if (unreadable) annotate("warning", `${unreadable} line(s) of ${eventsFile} are not events (the contract is one JSON event a line)`);

const start = events.find((e) => e.type === "start");
const stop = events.findLast((e) => e.type === "stop");
if (start && start.v !== EVENTS_VERSION)
  annotate("warning", `the events are version ${start.v}; this action reads version ${EVENTS_VERSION} (what it does not know, it ignores)`);

const answer = events
  .filter((e) => e.type === "text")
  .map((e) => e.delta)
  .join("");
const slashResult = events.findLast((e) => e.type === "tool_result")?.text ?? "";
const calls = new Map();
for (const e of events) {
  if (e.type === "tool_call_start") calls.set(e.id, { tool: e.tool, title: e.tool, status: "not ended" });
  if (e.type === "tool_call_end") calls.set(e.id, { ...calls.get(e.id), ...e });
}
const callList = [...calls.values()];
const refused = callList.filter((c) => REFUSED.has(c.error_code));
const failedCalls = callList.filter((c) => c.status === "failed" && !REFUSED.has(c.error_code));
const errors = events.filter((e) => e.type === "error").map((e) => e.message);
const notes = events.filter((e) => e.type === "message").map((e) => e.text);

const processExit = input("exit-code");
const exitCode = processExit !== "" ? Number(processExit) : (stop?.exit_code ?? NaN);
const totals = stop?.totals ?? {};
const sessionId = stop?.session_id ?? start?.session_id ?? "";

// The verdict: why the step fails, if it does.
const problems = [];
if (!stop)
  problems.push(`toolhost ended (exit ${processExit || "unknown"}) without its stop event: its stderr is in stderr.log of the transcript`);
else if (exitCode !== 0)
  problems.push(`the run failed: exit ${exitCode}, stop reason ${stop.stop_reason}${errors.length ? `: ${errors.join("; ")}` : ""}`);
const refusedLine = (c) => `${c.title ?? c.tool}: ${c.error ?? c.error_code}`;
if (refused.length) {
  const message = `${refused.length} tool call(s) refused — in CI nobody can approve a call, so a run can end 0 with nothing done. ${refused
    .slice(0, 5)
    .map(refusedLine)
    .join(
      "; ",
    )}. Choose a mode (accept-edits, full) or allow rules for what it must do${failOnRefused ? ", or set fail-on-refused: false" : ""}.`;
  if (failOnRefused) problems.push(message);
  else annotate("warning", message);
}

// The step summary.
const cell = (text) =>
  String(text ?? "")
    .replace(/\s+/g, " ")
    .replace(/\|/g, "\\|")
    .slice(0, 200);
const ok = problems.length === 0;
const lines = [
  `## toolhost: ${ok ? "✅ done" : "❌ failed"}`,
  "",
  `exit code **${Number.isNaN(exitCode) ? "unknown" : exitCode}**, stop reason \`${stop?.stop_reason ?? "none"}\`, mode \`${start?.mode ?? "?"}\`, model \`${start?.model ?? "none"}\`, session \`${sessionId || "?"}\``,
  "",
  ...problems.map((p) => `> **${p.replace(/\s+/g, " ").slice(0, 1000)}**\n`),
];
if (refused.length)
  lines.push(
    `### ⚠️ Refused calls (${refused.length})`,
    "",
    "Nobody can approve a call in CI: each was refused, and the model was told why.",
    "",
    ...refused.slice(0, MAX_ROWS).map((c) => `- \`${cell(c.title ?? c.tool)}\`: ${cell(c.error ?? c.error_code)}`),
    "",
  );
/** A slash command's result, verbatim: in a fence longer than any run of backticks in it. */
const fenced = (text) => {
  const fence = "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
  return `${fence}text\n${text}\n${fence}`;
};
const shown = answer || (slashResult && fenced(slashResult.slice(0, MAX_ANSWER))) || "_(no answer)_";
lines.push("### Answer", "", shown.slice(0, MAX_ANSWER + 100), "");
if (errors.length || notes.length) lines.push("### Messages", "", ...[...errors, ...notes].map((m) => `- ${cell(m)}`), "");
lines.push(`### Tool calls (${callList.length})`, "");
if (callList.length) {
  lines.push("| tool | call | status | detail |", "|---|---|---|---|");
  for (const c of callList.slice(0, MAX_ROWS)) {
    const status = REFUSED.has(c.error_code) ? "refused" : c.status;
    const detail = c.error ?? (c.exit_code !== undefined ? `exit code ${c.exit_code}` : "");
    lines.push(`| ${cell(c.tool)} | ${cell(c.title)} | ${status} | ${cell(detail)} |`);
  }
  if (callList.length > MAX_ROWS) lines.push("", `…and ${callList.length - MAX_ROWS} more (the events file has them all)`);
  lines.push("");
}
const cost = totals.cost_usd === undefined ? "no price known" : `$${totals.cost_usd.toFixed(4)}`;
lines.push(
  "### Totals",
  "",
  "| input tokens | output tokens | cache read | cache write | requests | tool calls | cost |",
  "|---|---|---|---|---|---|---|",
  `| ${totals.input_tokens ?? "?"} | ${totals.output_tokens ?? "?"} | ${totals.cache_read_tokens ?? "?"} | ${totals.cache_write_tokens ?? "?"} | ${totals.requests ?? "?"} | ${totals.tool_calls ?? "?"} | ${cost} |`,
  "",
);
const summary = `${lines.join("\n")}\n`;
if (process.env.GITHUB_STEP_SUMMARY) appendFileSync(process.env.GITHUB_STEP_SUMMARY, summary);
const transcript = input("transcript-dir") || path.dirname(eventsFile);
writeFileSync(path.join(transcript, "summary.md"), summary);

setOutputs({
  "exit-code": Number.isNaN(exitCode) ? "" : exitCode,
  "stop-reason": stop?.stop_reason ?? "",
  "session-id": sessionId,
  answer: answer || slashResult,
  "tool-calls": callList.length,
  "refused-calls": refused.length,
  "failed-calls": failedCalls.length,
  "input-tokens": totals.input_tokens ?? "",
  "output-tokens": totals.output_tokens ?? "",
  "cache-read-tokens": totals.cache_read_tokens ?? "",
  "cache-write-tokens": totals.cache_write_tokens ?? "",
  requests: totals.requests ?? "",
  "cost-usd": totals.cost_usd ?? "",
});
process.stderr.write(summary);
if (!ok) {
  for (const problem of problems) annotate("error", problem);
  process.exit(1);
}
