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
    // A parent that forks a child which exits at once, and sleeps without ever waiting: a zombie.
    // Perl (Debian's perl-base is essential) never reaps on its own; a shell could reap the child
    // before its `exec sleep` if the child ended first, and the zombie would never show.
    const parent = spawn("perl", ["-e", '$| = 1; my $p = fork; exit 0 unless $p; print "$p\\n"; sleep 30']);
    try {
      const child = Number(await new Promise<string>((resolve) => parent.stdout.once("data", (d: Buffer) => resolve(d.toString()))));
      const { readFileSync } = await import("node:fs");
      await expect.poll(() => readFileSync(`/proc/${child}/stat`, "utf8").includes(") Z "), { timeout: 15_000 }).toBe(true);
      expect(processAlive(child)).toBe(false);
      expect(processAlive(parent.pid as number)).toBe(true);
    } finally {
      parent.kill("SIGKILL");
    }
  });
});
