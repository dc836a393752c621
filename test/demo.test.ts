import { spawn } from "node:child_process";
import * as fsp from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI_PATH, useAgentEnv } from "./helpers.js";

// The README's "Try it without a key", run as it tells a user to: the fake server on its own
// (it prints its URL), then examples/acp-try.mjs against the built CLI, in a project with a TODO.
const FAKE = fileURLToPath(new URL("./fixtures/fake-openai.mjs", import.meta.url));
const TRY = fileURLToPath(new URL("../examples/acp-try.mjs", import.meta.url));

const t = useAgentEnv({
  shared: true,
  files: {
    "README.md": "# a project\n",
    "src/app.ts": "export const answer = 42;\n// TODO: handle the empty case\nexport const empty = 0;\n",
  },
});
let server: ReturnType<typeof spawn> | undefined;
let url: string;

beforeAll(async () => {
  await fsp.access(CLI_PATH).catch(() => {
    throw new Error("dist/cli.js is missing: run `npm run build` (npm test does) before these tests");
  });
  server = spawn(process.execPath, [FAKE], { stdio: ["ignore", "pipe", "inherit"] });
  url = await new Promise<string>((resolve, reject) => {
    let out = "";
    server!.stdout!.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      const found = /on (http:\/\/127\.0\.0\.1:\d+\/v1)/.exec(out);
      if (found) resolve(found[1]!);
    });
    server!.once("exit", (code) => reject(new Error(`the fake server exited (${code}) before printing its URL:\n${out}`)));
  });
});

afterAll(() => {
  server?.kill();
});

function tryIt(prompt: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = t.env({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: url });
    const child = spawn(process.execPath, [TRY, prompt], { cwd: t.ws, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("the README's demo without a key", () => {
  it("greps for TODO, reads the file with the first match, and answers", async () => {
    const { code, stdout, stderr } = await tryIt("what is left to do?");
    expect(code, stderr).toBe(0);
    expect(stdout).toContain("▶ [search] grep");
    expect(stdout).toContain("Reading src/app.ts, where the first match is.");
    expect(stdout).toContain("▶ [read] Read src/app.ts");
    // The read really ran: the file's text reached the editor.
    expect(stdout).toContain("TODO: handle the empty case");
    expect(stdout).toContain("That is the file with the first TODO.");
    expect(stdout).not.toContain("■ failed");
    expect(stdout).toContain("(turn ended: end_turn)");
  }, 60_000);
});
