import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, useAgentEnv } from "../helpers.js";

// `toolhost … | head`: when stdout's reader goes away, the CLI ends as a shell's SIGPIPE does,
// quietly with 141, never with an unhandled EPIPE; a run stops its model turn instead of paying
// for an answer nobody reads.

const t = useAgentEnv({ files: { "a.txt": "alpha\n" } });

/**
 * Runs the CLI and closes our end of its stdout once `closeWhen` says so (at once by default);
 * resolves with its exit code and stderr.
 */
function runClosingStdout(args: string[], env: NodeJS.ProcessEnv, closeWhen: (seen: string) => boolean = () => true) {
  return new Promise<{ code: number | null; stderr: string; seen: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_PATH, ...args], { cwd: t.ws, env: t.env(env), stdio: ["ignore", "pipe", "pipe"] });
    let [seen, stderr] = ["", ""];
    const close = () => child.stdout.destroy();
    if (closeWhen("")) close();
    else
      child.stdout.on("data", (d: Buffer) => {
        seen += d.toString();
        if (closeWhen(seen)) close();
      });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr, seen }));
  });
}

describe("stdout's reader goes away", { timeout: 60_000 }, () => {
  it("a command that prints, plain or guarded, ends 141 without a stack", async () => {
    for (const args of [["--version"], ["tools", "--json"], ["sessions"]]) {
      const { code, stderr } = await runClosingStdout(args, {});
      expect(code, `${args.join(" ")}: ${stderr}`).toBe(141);
      expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    }
  });

  it("run --json cancels its turn when nobody reads the answer, and ends 141", async () => {
    // A long answer: 2,000 chunks 20 ms apart would stream for 40 s; the run must stop at the first write after the close.
    t.fake = await startFakeOpenAI({
      script: [{ text: Array.from({ length: 2000 }, (_, i) => `word${i} `), chunkDelayMs: 20 }],
    });
    const model = { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url };
    const { code, stderr, seen } = await runClosingStdout(["run", "--json", "say a lot"], model, (text) => text.includes('"type":"text"'));
    expect(seen).toContain('"type":"start"');
    expect(code, stderr).toBe(141);
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
  });
});
