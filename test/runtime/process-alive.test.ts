import { spawn, spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { processAlive } from "../../src/runtime/process-alive.js";

// The one liveness check of the stale-state sweeps: a running process, an ended one, and a zombie
// (ended, not yet reaped: its pid still answers a signal) told apart.
describe("processAlive", () => {
  it("is true for a running process, false for an ended one and for a zombie", async () => {
    expect(processAlive(process.pid)).toBe(true);
    const ended = spawnSync(process.execPath, ["-e", "0"]).pid as number;
    expect(processAlive(ended)).toBe(false);
    // A shell whose child exits while the shell, its parent, sleeps without waiting: a zombie.
    const parent = spawn("/bin/sh", ["-c", "sh -c 'exit 0' & echo $!; exec sleep 30"]);
    try {
      const child = Number(await new Promise<string>((resolve) => parent.stdout.once("data", (d: Buffer) => resolve(d.toString()))));
      const { readFileSync } = await import("node:fs");
      await expect.poll(() => readFileSync(`/proc/${child}/stat`, "utf8").includes(") Z ")).toBe(true);
      expect(processAlive(child)).toBe(false);
      expect(processAlive(parent.pid as number)).toBe(true);
    } finally {
      parent.kill("SIGKILL");
    }
  });
});
