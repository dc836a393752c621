import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/commands/run-events.js";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, useAgentEnv } from "../helpers.js";
import { closeAndCheck, Harness } from "../acp/harness.js";

// `toolhost run` tells the truth (issue 34 §1): a failed command is a failure, a bad folder or
// profile is refused, a saved session goes on, a file-size limit and a refused key say what to do.

const noCurl = `grep -q '"command":"curl' && { echo "no curl here" >&2; exit 2; } || exit 0`;
const t = useAgentEnv({
  files: { "a.txt": "a\n" },
  home: { "config.json": JSON.stringify({ hooks: { tool_call: [{ matcher: "bash", command: noCurl }] } }) },
});

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The CLI as a user runs it; `prefix` runs it under another command (`sh -c 'ulimit …; exec "$0" "$@"'`, setpriv). */
function toolhost(args: string[], options: { env?: NodeJS.ProcessEnv; prefix?: string[] } = {}): Promise<Ran> {
  const env = { ...t.env(), NODE_DISABLE_COMPILE_CACHE: "1", ...options.env };
  if (t.fake) Object.assign(env, { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url });
  const [file = process.execPath, ...argv] = [...(options.prefix ?? []), process.execPath, CLI_PATH, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(file, argv, { cwd: t.ws, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

const events = (stdout: string) =>
  stdout
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunEvent);

const stopOf = (stdout: string) => events(stdout).find((e) => e.type === "stop") as Extract<RunEvent, { type: "stop" }>;

const sessionFiles = async (home: string) =>
  (await fsp.readdir(path.join(home, "sessions"), { recursive: true }).catch(() => [])).filter((f) => f.endsWith(".jsonl"));

// Each case spawns the CLI three to five times: on a busy two-core machine that takes over 30 s.
describe("toolhost run tells the truth", { timeout: 90_000 }, () => {
  it("a command that exits non-zero failed: the line, the JSON event with its exit code, a slash command's exit code; hints name only a mode that helps", async () => {
    t.fake = await startFakeOpenAI({
      script: [{ toolCalls: [{ id: "b1", name: "bash", arguments: { command: "exit 3" } }] }, { text: "It failed." }],
    });
    // A model turn in full mode: the call failed (exit code 3), the turn did not.
    const json = await toolhost(["run", "--json", "--mode", "full", "try it"]);
    const end = events(json.stdout).find((e) => e.type === "tool_call_end");
    expect(end).toMatchObject({ status: "failed", exit_code: 3, error: "exit code 3" });
    expect(stopOf(json.stdout)).toMatchObject({ stop_reason: "end_turn", exit_code: 0 });

    // A slash command is the run's whole answer: its failure is the run's (exit 1), shown ✗.
    const slash = await toolhost(["run", "--mode", "full", "/bash false"]);
    expect(slash.stderr).toMatch(/^✗ false: exit code 1$/m);
    expect(slash.code).toBe(1);

    // A hook's refusal in full mode: no mode would change it, so none is named.
    const hooked = await toolhost(["run", "--mode", "full", "/bash curl http://example.invalid"]);
    expect(hooked.code).toBe(1);
    expect(hooked.stderr).toMatch(/^✗ .*permission_denied .*refused by the hook/m);
    expect(hooked.stderr).not.toContain("--mode");
    // The mode's own question in ask mode: the hint names the mode that runs it.
    const asked = await toolhost(["run", "/bash echo hi"]);
    expect(asked.stderr).toMatch(/^✗ echo hi: permission_denied .*\(toolhost run is headless: --mode full allows it\)$/m);
  });

  it("refuses a --cwd that does not exist and a profile that does not, in one line, exit 2, creating nothing", async () => {
    const missing = path.join(t.ws, "no", "such");
    const cwd = await toolhost(["run", "--cwd", missing, "hello"]);
    expect(cwd).toMatchObject({ code: 2, stdout: "" });
    expect(cwd.stderr).toBe(`toolhost: --cwd ${missing} does not exist\n`);
    expect(fs.existsSync(path.join(t.ws, "no"))).toBe(false);

    const flag = await toolhost(["run", "--profile", "defualt", "hello"]);
    expect(flag.code).toBe(2);
    expect(flag.stderr).toMatch(/^toolhost: unknown profile "defualt" \(from --profile\); profiles: default, read-only, release\n$/);
    const env = await toolhost(["tools"], { env: { TOOLHOST_PROFILE: "relase" } });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('unknown profile "relase" (from TOOLHOST_PROFILE); profiles: default, read-only, release');
    expect(await sessionFiles(t.home)).toEqual([]);

    // An editor's session/new with a configured profile that does not exist: refused, saying why.
    const h = new Harness({ env: { TOOLHOST_HOME: t.home, TOOLHOST_PROFILE: "relase" } });
    t.defer(() => closeAndCheck(h));
    await h.initialize();
    await expect(h.agent.request("session/new", { cwd: t.ws, mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringContaining('unknown profile "relase" (from TOOLHOST_PROFILE); profiles: default, read-only, release'),
    });
  });

  it("goes on with a saved session: --resume ID (a prefix), --continue; a budget stop names the command", async () => {
    const replies: FakeReply[] = [
      { toolCalls: [{ id: "g1", name: "glob", arguments: { pattern: "*.txt" } }] },
      { text: "Found a.txt." },
      { text: "Still here." },
    ];
    t.fake = await startFakeOpenAI({ script: replies });
    const first = await toolhost(["run", "--max-turns", "1", "remember the word kiwi"]);
    expect(first.code).toBe(1);
    const id = /go on with: toolhost run --resume (\S+) "…"/.exec(first.stderr)?.[1];
    expect(id).toMatch(/^cli-/);

    const resumed = await toolhost(["run", "--json", "--max-turns", "5", "--resume", id!.slice(0, 12), "go on"]);
    expect(stopOf(resumed.stdout)).toMatchObject({ stop_reason: "end_turn", exit_code: 0, session_id: id });
    const continued = await toolhost(["run", "--json", "--max-turns", "5", "-c", "what was the word?"]);
    expect(stopOf(continued.stdout)).toMatchObject({ exit_code: 0, session_id: id });
    // The model saw the whole conversation: the first prompt, the glob's result, the answers.
    const last = JSON.stringify(t.fake.requests.at(-1)?.body.messages);
    for (const seen of ["remember the word kiwi", "a.txt", "Found a.txt.", "go on", "what was the word?"]) expect(last).toContain(seen);
    expect(await sessionFiles(t.home)).toHaveLength(1);

    const short = await toolhost(["run", "--resume", "cli-", "hello"]);
    expect(short.code).toBe(2);
    expect(short.stderr).toContain("at least 8 characters");
  });

  it("a refused key names toolhost login; under a file-size limit the session file stops whole and the run goes on", async () => {
    t.fake = await startFakeOpenAI({
      script: [{ status: 401, message: "Incorrect API key provided" }, { text: "Done." }, { text: "Done." }],
    });
    const refused = await toolhost(["run", "hello"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("(401): Incorrect API key provided");
    expect(refused.stderr).toContain("run `toolhost login`");
    const before = await sessionFiles(t.home);

    // 8 KiB at most per file (dash counts 512-byte blocks); the prompt alone is larger.
    const prompt = `summarise: ${"word ".repeat(4000)}`;
    const limited = await toolhost(["run", prompt], { prefix: ["sh", "-c", 'ulimit -f 16; exec "$0" "$@"'] });
    expect(limited.stderr).toContain("Saving this session stopped");
    expect(limited.stderr).toContain("ulimit -f");
    expect(limited.stderr).not.toContain("Free some space");
    expect(limited).toMatchObject({ code: 0, stdout: "Done.\n" });
    const made = (await sessionFiles(t.home)).filter((f) => !before.includes(f));
    expect(made).toHaveLength(1);
    const text = await fsp.readFile(path.join(t.home, "sessions", made[0]!), "utf8");
    // Whole lines of JSON only: the entry that did not fit was taken back.
    expect(text.endsWith("\n")).toBe(true);
    for (const line of text.split("\n").filter(Boolean)) expect(() => JSON.parse(line) as unknown).not.toThrow();

    // A sessions folder toolhost may not write (root without its override of file permissions: setpriv needs root): said as that, with the path.
    if (process.getuid?.() !== 0) return;
    const home = await t.dir({ "sessions/.keep": "" });
    await fsp.chmod(path.join(home, "sessions"), 0o500);
    const denied = await toolhost(["run", "hello"], {
      env: { TOOLHOST_HOME: home },
      prefix: ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"],
    });
    expect(denied).toMatchObject({ code: 0, stdout: "Done.\n" });
    expect(denied.stderr).toMatch(/toolhost is not allowed to write \S+\.jsonl \(EACCES\): check the permissions/);
    expect(denied.stderr).not.toContain("Free some space");
  });
});
