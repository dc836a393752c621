// What the action's steps share: their inputs (the INPUT_* variables action.yml's `env:` sets from
// `inputs`, never spliced into a script), their outputs ($GITHUB_OUTPUT) and workflow commands.
import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";

/** The input `name` (as action.yml spells it: `max-turns`), trimmed; `fallback` when unset or empty. */
export function input(name, fallback = "") {
  const value = process.env[`INPUT_${name.replace(/-/g, "_").toUpperCase()}`]?.trim();
  return value ? value : fallback;
}

/** A yes/no input: true, false (any case), or `fallback` when empty; anything else stops the step. */
export function booleanInput(name, fallback) {
  const value = input(name).toLowerCase();
  if (!value) return fallback;
  if (value === "true") return true;
  if (value === "false") return false;
  fail(`input ${name} must be true or false, not "${value}"`);
}

/** Sets step outputs: appended to $GITHUB_OUTPUT, each as a heredoc so any text is safe; printed when there is none (a local run). */
export function setOutputs(outputs) {
  const file = process.env.GITHUB_OUTPUT;
  for (const [name, raw] of Object.entries(outputs)) {
    const value = raw === undefined || raw === null ? "" : String(raw);
    if (!file) {
      process.stderr.write(`output ${name}=${value.split("\n")[0]}\n`);
      continue;
    }
    let delimiter;
    do delimiter = `toolhost_${randomBytes(8).toString("hex")}`;
    while (value.includes(delimiter));
    appendFileSync(file, `${name}<<${delimiter}\n${value}\n${delimiter}\n`);
  }
}

/** A workflow command's message: `%`, CR and LF escaped as the runner reads them. */
const escapeData = (text) => text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");

/** An annotation on the job (`::error::`, `::warning::`, `::notice::`), on stdout where the runner reads it. */
export function annotate(level, message) {
  process.stdout.write(`::${level}::${escapeData(message)}\n`);
}

/** Stops the step: an error annotation, exit 1. */
export function fail(message) {
  annotate("error", message);
  process.exit(1);
}
