import { describe, expect, it } from "vitest";
import { runOffThread } from "../../src/runtime/shell/spawn-thread.js";

// toolhost's own helper programs (the checkpoints' git) run to their end on the spawner thread
// (`runOffThread`), as commands start there: a fork on the agent's thread held it 15–45 ms a call.
// Its contract is spawnGit's: input in, output whole as bytes, a cap, an exit code or a signal,
// and a program that cannot start throws with its code.

const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", LC_ALL: "C" };

describe("runOffThread", () => {
  it("runs a program to its end: input on stdin, stdout and stderr as bytes, its exit code", async () => {
    const input = "x".repeat(200_000);
    const ran = await runOffThread("/bin/sh", ["-c", "wc -c; echo oops >&2; exit 3"], { env, input, maxOutput: 1024 });
    expect(Buffer.from(ran.stdout).toString().trim()).toBe("200000");
    expect(Buffer.from(ran.stderr).toString()).toBe("oops\n");
    expect(ran).toMatchObject({ code: 3, signal: null, overflow: false });
  });

  it("bytes come back as they were, and in its folder", async () => {
    const bytes = Buffer.from([0, 255, 10, 13, 128, 1]);
    const ran = await runOffThread("/bin/sh", ["-c", "cat; pwd >&2"], { cwd: "/", env, input: bytes, maxOutput: 1024 });
    expect(Buffer.from(ran.stdout).equals(bytes)).toBe(true);
    expect(Buffer.from(ran.stderr).toString()).toBe("/\n");
  });

  it("past the cap it is killed and says so; a signal is its end", async () => {
    const ran = await runOffThread("/bin/sh", ["-c", "yes"], { env, maxOutput: 64 * 1024 });
    expect(ran.overflow).toBe(true);
    expect(ran.code).toBeNull();
    expect(ran.signal).toBe("SIGKILL");
  });

  it("a program that cannot start throws with its code", async () => {
    await expect(runOffThread("/nonexistent/git", [], { env, maxOutput: 1024 })).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("runs side by side, each answered with its own output", async () => {
    const runs = Array.from({ length: 8 }, (_, i) =>
      runOffThread("/bin/sh", ["-c", `sleep 0.0${8 - i}; echo ${i}`], { env, maxOutput: 1024 }),
    );
    const outputs = (await Promise.all(runs)).map((ran) => Buffer.from(ran.stdout).toString().trim());
    expect(outputs).toEqual(["0", "1", "2", "3", "4", "5", "6", "7"]);
  });
});
