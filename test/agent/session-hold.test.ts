import { spawn } from "node:child_process";
import * as fs from "node:fs";
import { hostname } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { holdPathFor, SessionHeldError, takeHold } from "../../src/agent/record/session-hold.js";
import { tempDir, until } from "../helpers.js";

// A session's hold (agent/record/session-hold.ts) is taken over from a holder that is gone, even
// while its pid still answers: a killed agent its editor has not reaped yet is a zombie.

/** A parent that never reaps its child: the child's pid stays, a zombie, until the parent ends. */
async function zombie(): Promise<{ pid: number; end(): void }> {
  const parent = spawn("sh", ["-c", "sleep 0 & echo $!; exec sleep 60"], { stdio: ["ignore", "pipe", "ignore"] });
  let out = "";
  parent.stdout.on("data", (d: Buffer) => (out += d.toString()));
  await until(() => out.includes("\n"));
  const pid = Number(out.trim());
  await until(() => fs.readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z "));
  return { pid, end: () => parent.kill("SIGKILL") };
}

function holdOf(file: string, pid: number): void {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  const start = stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  fs.writeFileSync(holdPathFor(file), JSON.stringify({ pid, host: hostname(), start, at: new Date().toISOString() }));
}

describe("a session's hold", () => {
  it.runIf(process.platform === "linux")("is taken over from a holder that is dead but not yet reaped (a zombie)", async () => {
    const dir = await tempDir();
    const file = path.join(dir, "s1.jsonl");
    const dead = await zombie();
    try {
      holdOf(file, dead.pid);
      const hold = takeHold(file, "s1");
      expect(JSON.parse(fs.readFileSync(hold.path, "utf8")).pid).toBe(process.pid);
      hold.release();
    } finally {
      dead.end();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is refused while its holder lives", async () => {
    const dir = await tempDir();
    const file = path.join(dir, "s2.jsonl");
    const live = spawn("sleep", ["60"], { stdio: "ignore" });
    try {
      holdOf(file, live.pid!);
      expect(() => takeHold(file, "s2")).toThrow(SessionHeldError);
    } finally {
      live.kill("SIGKILL");
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
