import { existsSync } from "node:fs";
import path from "node:path";
import { sandboxAvailable, type SandboxStatus } from "../src/runtime/sandbox/bubblewrap.js";

/**
 * The sandbox's status for the tests that skip without it, said once per file. In CI as root
 * with bwrap installed the sandbox must run: an unavailable one there is a broken sandbox (a
 * dropped `--cap-drop ALL` makes the probe say so), and skipping every sandbox test would hide it.
 */
export async function sandboxStatus(file: string, bwrapPath?: string): Promise<SandboxStatus> {
  const status = await sandboxAvailable(bwrapPath);
  if (status.available) return status;
  const bwrap = (process.env.PATH ?? "").split(path.delimiter).some((dir) => dir && existsSync(path.join(dir, "bwrap")));
  if (process.env.CI === "true" && process.getuid?.() === 0 && bwrap) {
    throw new Error(`${file}: CI runs as root with bwrap installed, yet the sandbox is unavailable: ${status.reason}`);
  }
  console.warn(`${file}: the sandbox cases skip: ${status.reason}`);
  return status;
}
