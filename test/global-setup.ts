import { sandboxStatus } from "./sandbox-status.js";

/**
 * Where no sandbox can run, sessions ask before every command (headless: refuse). The tests that
 * are about the sandbox skip there and say why; every other test runs its commands unsandboxed,
 * as a user with `"sandbox": "off"` would. A TOOLHOST_SANDBOX the caller set is kept.
 */
export default async function setup(): Promise<void> {
  if (process.env.TOOLHOST_SANDBOX !== undefined) return;
  // In CI as root with bwrap installed, an unavailable sandbox fails the run (sandbox-status.ts).
  const status = await sandboxStatus("test");
  if (status.available) return;
  console.warn("test: the suite runs with TOOLHOST_SANDBOX=off, the sandbox tests skip");
  process.env.TOOLHOST_SANDBOX = "off";
}
