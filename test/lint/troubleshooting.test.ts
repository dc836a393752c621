// docs/troubleshooting.md quotes toolhost's messages word for word: each fixed part quoted there
// must still be in src/, so a message reworded in the code fails here until the page follows.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

/** The fixed parts of the messages the page quotes (the variable parts, paths and names, left out). */
const QUOTED = [
  "No model is configured, so this prompt was not sent to one.",
  "needs an API key: set",
  "The model provider refused the request for",
  "Check the key:",
  "bubblewrap (bwrap) is not installed",
  "bwrap cannot start a sandbox here",
  "bubblewrap needs Linux",
  "commands run unsandboxed, without extra prompts",
  "not found (looked in node_modules/.bin and on PATH)",
  "works (initialize answered, in the sandbox)",
  "language servers run only inside the sandbox",
  "was not found; it is skipped.",
  "it is skipped for the rest of the session.",
  "so they run only inside the sandbox, trusted project or not, and no sandbox can run them here",
  "is open in another toolhost process",
  "is in use",
  "(ignored)",
  "the sandbox stays on and passes nothing extra",
  "the permission rules could not be read; until the file is fixed every call asks (fail closed)",
];

const flat = (text: string) => text.replace(/\s+/g, " ");

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sources(full);
    return entry.name.endsWith(".ts") ? [fs.readFileSync(full, "utf8")] : [];
  });
}

describe("the troubleshooting page", () => {
  it("quotes messages toolhost still prints", () => {
    const page = flat(fs.readFileSync(path.join(root, "docs/troubleshooting.md"), "utf8"));
    const code = flat(sources(path.join(root, "src")).join("\n"));
    expect(QUOTED.filter((text) => !page.includes(text))).toEqual([]);
    expect(QUOTED.filter((text) => !code.includes(text))).toEqual([]);
  });
});
