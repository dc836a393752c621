// The guard rails bite: the project's own eslint.config.js, run through ESLint's Node API on small
// snippets placed at fake paths in src/, and on fixture files for the cycles (a cycle needs files
// on disk to walk).
import fs from "node:fs";
import path from "node:path";
import { ESLint } from "eslint";
import { beforeAll, describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");
const fixtures = path.join(import.meta.dirname, "fixtures");

interface Finding {
  ruleId: string | null;
  message: string;
}

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: root });
});

/** What the project's config reports for `code` placed at `file` (relative to the repo root). */
async function lint(file: string, code: string): Promise<Finding[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? []).map(({ ruleId, message }) => ({ ruleId, message }));
}

/**
 * How `file` spells an import of a real module in `target` (a folder: its first .ts file). The
 * layer rules resolve imports, so the target must exist; picking it at run time keeps this test
 * true while files move inside their folders.
 */
function specifier(file: string, target: string): string {
  const absolute = path.join(root, target);
  const module = fs.statSync(absolute).isDirectory()
    ? path.join(
        absolute,
        fs
          .readdirSync(absolute)
          .filter((name) => name.endsWith(".ts"))
          .sort()[0] ?? "missing.ts",
      )
    : absolute;
  expect(fs.existsSync(module), `${module} exists`).toBe(true);
  const relative = path.relative(path.dirname(path.join(root, file)), module).replace(/\.ts$/, ".js");
  return relative.startsWith(".") ? relative : `./${relative}`;
}

describe("layers (import-x/no-restricted-paths)", () => {
  const forbidden: [file: string, target: string][] = [
    ["src/tool/x.ts", "src/runtime"],
    ["src/config/x.ts", "src/runtime"],
    ["src/runtime/x.ts", "src/host"],
    ["src/runtime/fs/x.ts", "src/policy"],
    ["src/policy/x.ts", "src/runtime"],
    ["src/tools/x.ts", "src/runtime"],
    ["src/tools/x.ts", "src/host"],
    ["src/host/x.ts", "src/agent"],
    ["src/host/x.ts", "src/commands"],
    ["src/agent/x.ts", "src/acp"],
    ["src/host/x.ts", "src/acp"],
    ["src/acp/x.ts", "src/commands"],
    ["src/host/x.ts", "src/public.ts"],
    ["src/acp/x.ts", "src/index.ts"],
    ["src/version.ts", "src/acp"],
    ["src/agent/x.ts", "src/commands"],
    ["src/host/x.ts", "src/cli.ts"],
    ["src/mcp/x.ts", "src/host"],
    ["src/mcp/x.ts", "src/agent"],
    // agent/'s sub-rooms never reach back up.
    ["src/agent/turn/x.ts", "src/agent/session/agent-session.ts"],
    ["src/agent/turn/x.ts", "src/agent/record"],
    ["src/agent/model/x.ts", "src/agent/turn"],
    ["src/agent/model/x.ts", "src/agent/session/agent-session.ts"],
    ["src/agent/record/x.ts", "src/agent/turn/loop.ts"],
    ["src/agent/record/x.ts", "src/agent/session/agent-session.ts"],
    ["src/agent/rewind/x.ts", "src/agent/session/agent-session.ts"],
    ["src/agent/rewind/x.ts", "src/agent/turn/loop.ts"],
  ];
  it.each(forbidden)("%s may not import %s", async (file, target) => {
    const found = await lint(file, `import "${specifier(file, target)}";\n`);
    expect(found.map((f) => f.ruleId)).toEqual(["import-x/no-restricted-paths"]);
  });

  it("counts a dynamic import() as an import (host/loader.ts → public.ts today)", async () => {
    const file = "src/host/x.ts";
    const found = await lint(file, `export const api = () => import("${specifier(file, "src/public.ts")}");\n`);
    expect(found.map((f) => f.ruleId)).toEqual(["import-x/no-restricted-paths"]);
    expect(found[0]?.message).toMatch(/public entry/);
  });

  const allowed: [file: string, target: string][] = [
    ["src/tool/x.ts", "src/tool"],
    ["src/tools/x.ts", "src/tool"],
    ["src/tools/x.ts", "src/tools"],
    ["src/runtime/fs/x.ts", "src/tool"],
    ["src/runtime/x.ts", "src/runtime/fs"],
    ["src/policy/x.ts", "src/tool"],
    ["src/host/x.ts", "src/runtime"],
    ["src/host/x.ts", "src/tools"],
    ["src/host/x.ts", "src/policy"],
    ["src/agent/x.ts", "src/host"],
    ["src/agent/x.ts", "src/public.ts"],
    ["src/acp/x.ts", "src/agent"],
    ["src/commands/x.ts", "src/host"],
    ["src/commands/x.ts", "src/public.ts"],
    ["src/cli.ts", "src/acp"],
    ["src/cli.ts", "src/commands"],
    ["src/index.ts", "src/public.ts"],
    ["src/mcp/x.ts", "src/runtime"],
    ["src/agent/x.ts", "src/mcp"],
    ["src/agent/x.ts", "src/agent/turn"],
    ["src/agent/x.ts", "src/agent/record"],
    ["src/agent/turn/x.ts", "src/agent/model"],
    ["src/agent/record/x.ts", "src/agent/turn/turn-types.ts"],
  ];
  it.each(allowed)("%s may import %s", async (file, target) => {
    expect(await lint(file, `import "${specifier(file, target)}";\n`)).toEqual([]);
  });
});

describe("packages (no-restricted-imports, and no-restricted-syntax for import())", () => {
  const forbidden: [file: string, code: string, rule: string][] = [
    ["src/host/x.ts", `export type { ContentBlock } from "@agentclientprotocol/sdk";`, "no-restricted-imports"],
    ["src/agent/x.ts", `export { AgentSideConnection } from "@agentclientprotocol/sdk";`, "no-restricted-imports"],
    ["src/host/x.ts", `export { streamText } from "ai";`, "no-restricted-imports"],
    ["src/runtime/x.ts", `export const load = () => import("@ai-sdk/openai");`, "no-restricted-syntax"],
    ["src/tools/x.ts", `export { readFile } from "node:fs/promises";`, "no-restricted-imports"],
    ["src/tools/x.ts", `export { existsSync } from "fs";`, "no-restricted-imports"],
    ["src/tool/x.ts", `export { spawn } from "node:child_process";`, "no-restricted-imports"],
    ["src/tools/x.ts", `export const run = async () => (await import("execa")).execa("ls");`, "no-restricted-syntax"],
    ["src/tools/x.ts", `export const load = () => import("node:fs/promises");`, "no-restricted-syntax"],
  ];
  it.each(forbidden)("%s: %s", async (file, code, rule) => {
    const found = await lint(file, `${code}\n`);
    expect(found.map((f) => f.ruleId)).toEqual([rule]);
    expect(found[0]?.message).toMatch(/imported only in|reach the machine only through/);
  });

  const allowed: [file: string, code: string][] = [
    ["src/acp/x.ts", `export type { ContentBlock } from "@agentclientprotocol/sdk";\nexport type { UserContent } from "ai";`],
    ["src/agent/x.ts", `export { streamText } from "ai";\nexport const load = () => import("@ai-sdk/openai");`],
    ["src/runtime/x.ts", `export { readFile } from "node:fs/promises";\nexport const load = () => import("execa");`],
    ["src/tools/x.ts", `export { default as path } from "node:path";\nexport * as z from "zod";`],
    ["src/host/x.ts", `export { z } from "zod";\nexport const load = () => import("jiti");`],
  ];
  it.each(allowed)("%s: %s", async (file, code) => {
    expect(await lint(file, `${code}\n`)).toEqual([]);
  });
});

describe("stdout belongs to the protocol (no-restricted-syntax)", () => {
  const forbidden: [file: string, code: string][] = [
    ["src/host/x.ts", `process.stdout.write("x\\n");`],
    ["src/agent/x.ts", `console.log("x");`],
    ["src/acp/x.ts", `console.info("x");`],
    ["src/tools/x.ts", `console.debug("x");`],
    ["src/version.ts", `console.log("x");`],
  ];
  it.each(forbidden)("%s: %s", async (file, code) => {
    const found = await lint(file, `${code}\n`);
    expect(found.map((f) => f.ruleId)).toEqual(["no-restricted-syntax"]);
    expect(found[0]?.message).toMatch(/stdout/);
  });

  const allowed: [file: string, code: string][] = [
    ["src/cli.ts", `process.stdout.write("x\\n");\nconsole.log("x");`],
    ["src/commands/x.ts", `process.stdout.write("x\\n");\nconsole.info("x");`],
    ["src/host/x.ts", `process.stderr.write("x\\n");\nconsole.error("x");\nconsole.warn("x");`],
  ];
  it.each(allowed)("%s: %s", async (file, code) => {
    expect(await lint(file, `${code}\n`)).toEqual([]);
  });
});

describe("cycles", () => {
  // The fixture folder is its own root: test/lint/fixtures/ is ignored by the project's lint run.
  let cycles: ESLint;
  beforeAll(() => {
    cycles = new ESLint({ cwd: fixtures, overrideConfigFile: path.join(root, "eslint.config.js") });
  });
  const lintFixture = async (file: string): Promise<Finding[]> => {
    const [result] = await cycles.lintFiles([path.join(fixtures, file)]);
    return (result?.messages ?? []).map(({ ruleId, message }) => ({ ruleId, message }));
  };

  it("a value cycle between two files: import-x/no-cycle, on both sides", async () => {
    expect((await lintFixture("src/value-cycle/a.ts")).map((f) => f.ruleId)).toEqual(["import-x/no-cycle"]);
    expect((await lintFixture("src/value-cycle/b.ts")).map((f) => f.ruleId)).toEqual(["import-x/no-cycle"]);
  });

  it("a cycle closed by `import type` (loop ↔ step): toolhost/no-type-cycle at the type import", async () => {
    expect(await lintFixture("src/type-cycle/loop.ts")).toEqual([]);
    const found = await lintFixture("src/type-cycle/step.ts");
    expect(found).toEqual([
      {
        ruleId: "toolhost/no-type-cycle",
        message: "Type-only import closes a cycle: src/type-cycle/step.ts → src/type-cycle/loop.ts → src/type-cycle/step.ts.",
      },
    ]);
  });

  it("the cure (the shared types in their own module) passes", async () => {
    for (const file of ["loop.ts", "step.ts", "turn-types.ts"]) expect(await lintFixture(`src/no-cycle/${file}`)).toEqual([]);
  });
});
