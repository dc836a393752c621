import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { useAgentEnv } from "../helpers.js";
import { runCli } from "./harness.js";

// Every subcommand's own usage: `SUB --help` and `help SUB` print it (exit 0); a usage error is one
// line and that usage on stderr (exit 2), never the whole help. The subcommands are cli.ts's cases.

const t = useAgentEnv({ files: { "a.txt": "a\n" } });
const SUBCOMMANDS = [...readFileSync(new URL("../../src/cli.ts", import.meta.url), "utf8").matchAll(/^ {4}case "([a-z][a-z-]*)":/gm)]
  .map((m) => m[1] as string)
  .filter((sub) => sub !== "help");
/** A line only the whole help has. */
const WHOLE_HELP = /Exit codes of run/;

describe("each subcommand's usage", () => {
  it("covers every subcommand", () => {
    expect(SUBCOMMANDS).toEqual(expect.arrayContaining(["tools", "call", "run", "sessions", "serve", "doctor", "packages", "logout"]));
    expect(SUBCOMMANDS.length).toBeGreaterThanOrEqual(18);
  });

  it("SUB --help prints SUB's usage on stdout and exits 0; a bad flag is one line and that usage (exit 2)", async () => {
    const check = async (sub: string) => {
      const help = await runCli([sub, "--help"], { cwd: t.ws, env: t.env() });
      expect(help.code, `${sub} --help`).toBe(0);
      expect(help.stdout, sub).toMatch(new RegExp(`^ {2}toolhost ${sub}\\b`, "m"));
      expect(help.stdout, sub).not.toMatch(WHOLE_HELP);
      const bad = await runCli([sub, "--no-such-flag"], { cwd: t.ws, env: t.env() });
      expect(bad.code, `${sub} --no-such-flag`).toBe(2);
      expect(bad.stdout).toBe("");
      const [first, blank, ...usage] = bad.stderr.split("\n");
      expect(first, sub).toMatch(new RegExp(`^toolhost ${sub}: `));
      expect(blank).toBe("");
      expect(usage.join("\n"), sub).toContain(help.stdout.trim().split("\n")[0]);
      expect(bad.stderr, sub).not.toMatch(WHOLE_HELP);
    };
    await Promise.all(SUBCOMMANDS.map(check));
  });

  it("help SUB is SUB --help; an unknown command is one line and the list of commands", async () => {
    const help = await runCli(["help", "sessions"], { cwd: t.ws, env: t.env() });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/toolhost sessions rewind ID --to/);
    expect(help.stdout).not.toMatch(/toolhost tools/);
    const unknown = await runCli(["frobnicate"], { cwd: t.ws, env: t.env() });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^toolhost: unknown command "frobnicate"\n\ncommands: serve, connect, tools, .*\(toolhost --help\)\n$/);
  });
});
