#!/usr/bin/env node
// The action's steps run here as the runner runs them, for trying the action and for its tests:
// action.yml's `run:` steps in order, each through bash with its `env:` resolved from the inputs
// (their defaults included) and the earlier steps' outputs ($GITHUB_OUTPUT, parsed), and with
// $GITHUB_ACTION_PATH, $GITHUB_WORKSPACE, $RUNNER_TEMP and $GITHUB_STEP_SUMMARY set. `uses:` steps
// (setup-node, upload-artifact) are not run: their `with:` is resolved and returned. A step's `if:`
// is evaluated (the forms action.yml uses: always(), ==, != and &&); without always() a step runs
// only while none before it failed. An expression it does not know, or an input action.yml does not
// declare, throws: that is the check that every input a step uses is declared.
//   node integrations/github-action/local-run.mjs [--skip STEP_ID]... prompt='/read README.md' mode=full …
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { parse } from "yaml";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** action.yml, parsed. */
export function readAction(root = ROOT) {
  return parse(readFileSync(path.join(root, "action.yml"), "utf8"));
}

/** The outputs a step wrote to its $GITHUB_OUTPUT file: `name=value` lines and `name<<DELIM` heredocs. */
export function parseOutputFile(text) {
  const outputs = {};
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const heredoc = /^([^=<]+)<<(.+)$/.exec(line);
    if (heredoc) {
      const [, name, delimiter] = heredoc;
      const value = [];
      while (++i < lines.length && lines[i] !== delimiter) value.push(lines[i]);
      if (i >= lines.length) throw new Error(`output ${name}: no closing ${delimiter}`);
      outputs[name] = value.join("\n");
    } else if (line.includes("=")) {
      outputs[line.slice(0, line.indexOf("="))] = line.slice(line.indexOf("=") + 1);
    } else if (line.trim()) throw new Error(`not an output line: ${line}`);
  }
  return outputs;
}

/** The value of one `${{ }}` operand: a quoted string, inputs.NAME or steps.ID.outputs.NAME. */
function operand(text, context) {
  const expr = text.trim();
  const quoted = /^'(.*)'$/.exec(expr);
  if (quoted) return quoted[1].replace(/''/g, "'");
  const inputRef = /^inputs\.([\w-]+)$/.exec(expr);
  if (inputRef) {
    const declared = context.action.inputs?.[inputRef[1]];
    if (!declared) throw new Error(`action.yml uses inputs.${inputRef[1]}, which it does not declare`);
    return context.inputs[inputRef[1]] ?? String(declared.default ?? "");
  }
  const stepRef = /^steps\.([\w-]+)\.outputs\.([\w-]+)$/.exec(expr);
  if (stepRef) {
    if (!context.action.runs.steps.some((s) => s.id === stepRef[1]))
      throw new Error(`action.yml uses steps.${stepRef[1]}, no step has that id`);
    return context.outputs[stepRef[1]]?.[stepRef[2]] ?? "";
  }
  throw new Error(`an expression this runner does not know: ${expr}`);
}

/** A string with its `${{ … }}` replaced. */
const resolve = (value, context) => String(value).replace(/\$\{\{(.*?)\}\}/g, (_, expr) => operand(expr, context));

/** Whether a step runs: its `if:` (always(), a == b, a != b, joined by &&), else success(). */
function shouldRun(condition, context) {
  if (condition === undefined) return !context.failed;
  let always = false;
  const clauses = String(condition)
    .replace(/^\$\{\{(.*)\}\}$/s, "$1")
    .split("&&")
    .map((clause) => {
      if (clause.trim() === "always()") return (always = true);
      const compare = /^(.+?)\s*(==|!=)\s*(.+)$/.exec(clause.trim());
      if (!compare) throw new Error(`an if: clause this runner does not know: ${clause}`);
      const equal = operand(compare[1], context) === operand(compare[3], context);
      return compare[2] === "==" ? equal : !equal;
    });
  return clauses.every(Boolean) && (always || !context.failed);
}

/** Runs a step's shell to its end (asynchronously: a test's model server answers meanwhile). */
function exec(cmd, args, options) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let [stdout, stderr] = ["", ""];
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("error", (err) => resolve({ status: null, stdout, stderr: `${stderr}${err.message}\n` }));
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/**
 * Runs action.yml's steps. `inputs` by name (the rest take their defaults), `env` over this
 * process's, `workspace` the checkout ($GITHUB_WORKSPACE), `skip` step ids not to run.
 * Returns each step's result by id (or name): `{ ran, code, stdout, stderr, outputs, with }`, the
 * step summary's text and the action's outputs.
 */
export async function runAction({ inputs = {}, env = {}, workspace = process.cwd(), skip = [], root = ROOT } = {}) {
  const action = readAction(root);
  const temp = mkdtempSync(path.join(os.tmpdir(), "toolhost-action-"));
  const summaryFile = path.join(temp, "step-summary.md");
  writeFileSync(summaryFile, "");
  const runnerTemp = path.join(temp, "runner-temp");
  mkdirSync(runnerTemp);
  const context = { action, inputs, outputs: {}, failed: false };
  const steps = {};
  for (const [index, step] of action.runs.steps.entries()) {
    const key = step.id ?? step.name ?? String(index);
    if (skip.includes(key) || !shouldRun(step.if, context)) {
      steps[key] = { ran: false };
      continue;
    }
    if (step.uses) {
      steps[key] = {
        ran: false,
        uses: step.uses,
        with: Object.fromEntries(Object.entries(step.with ?? {}).map(([k, v]) => [k, resolve(v, context)])),
      };
      continue;
    }
    const outputFile = path.join(temp, `output-${index}`);
    writeFileSync(outputFile, "");
    const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([k, v]) => [k, resolve(v, context)]));
    const result = await exec(step.shell ?? "bash", ["-e", "-c", step.run], {
      cwd: workspace,
      env: {
        ...process.env,
        ...env,
        ...stepEnv,
        GITHUB_ACTION_PATH: root,
        GITHUB_WORKSPACE: workspace,
        RUNNER_TEMP: runnerTemp,
        GITHUB_OUTPUT: outputFile,
        GITHUB_STEP_SUMMARY: summaryFile,
      },
    });
    const outputs = parseOutputFile(readFileSync(outputFile, "utf8"));
    context.outputs[key] = outputs;
    if (result.status !== 0) context.failed = true;
    steps[key] = { ran: true, code: result.status, stdout: result.stdout, stderr: result.stderr, outputs };
  }
  const outputs = Object.fromEntries(Object.entries(action.outputs ?? {}).map(([name, { value }]) => [name, resolve(value, context)]));
  return { steps, outputs, summary: readFileSync(summaryFile, "utf8"), failed: context.failed, temp };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({ options: { skip: { type: "string", multiple: true } }, allowPositionals: true });
  const inputs = Object.fromEntries(positionals.map((pair) => [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)]));
  const result = await runAction({ inputs, skip: values.skip ?? [] });
  for (const [key, step] of Object.entries(result.steps)) {
    process.stderr.write(`── ${key}: ${step.ran ? `exit ${step.code}` : step.uses ? `not run here (${step.uses})` : "skipped"}\n`);
    if (step.ran) process.stderr.write(step.stderr + step.stdout);
  }
  process.stdout.write(`${JSON.stringify(result.outputs, null, 2)}\n`);
  process.exitCode = result.failed ? 1 : 0;
}
