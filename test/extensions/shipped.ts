// Loads a shipped extension file exactly as the host does, and runs git for the fixtures.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { extensionLoader } from "../../src/agent/extension-loader.js";
import type { AnyTool } from "../../src/tool/define.js";
import { useTempHome } from "../host/extension-fixtures.js";

export async function loadShipped(rel: string): Promise<AnyTool> {
  await useTempHome();
  const load = extensionLoader();
  const loaded = await load(fileURLToPath(new URL(`../../${rel}`, import.meta.url)));
  if (loaded.problems.length || loaded.tools.length !== 1) throw new Error(`${rel}: ${JSON.stringify(loaded.problems)}`);
  return loaded.tools[0]!;
}

const run = promisify(execFile);

/** Runs git in `cwd` with a fixed identity and clock, so commits are reproducible. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const env = {
    ...process.env,
    GIT_AUTHOR_NAME: "Ada",
    GIT_AUTHOR_EMAIL: "ada@example.com",
    GIT_COMMITTER_NAME: "Ada",
    GIT_COMMITTER_EMAIL: "ada@example.com",
    GIT_CONFIG_GLOBAL: "/dev/null",
    GIT_CONFIG_NOSYSTEM: "1",
  };
  const { stdout } = await run("git", args, { cwd, env });
  return stdout;
}
