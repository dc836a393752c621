import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { CLI_PATH } from "../helpers.js";

const execFileAsync = promisify(execFile);

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI to its end: its exit code and both streams, a failing run included. */
export async function runCli(
  args: readonly string[],
  options: { cwd?: string; env: NodeJS.ProcessEnv; timeout?: number },
): Promise<CliRun> {
  try {
    const { stdout, stderr } = await execFileAsync(process.execPath, [CLI_PATH, ...args], {
      cwd: options.cwd,
      env: options.env,
      timeout: options.timeout,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
