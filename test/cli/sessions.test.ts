import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { migrateV1, type V1Entry, type V1Header } from "../../src/agent/record/session-migrate.js";
import { projectFolderName } from "../../src/config/workspace.js";
import { runCli } from "./harness.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { useAgentEnv } from "../helpers.js";

// `toolhost sessions`: a session saved by `toolhost run` (the built CLI, a local model server),
// then listed, shown, exported as Markdown and JSONL, and deleted.

const t = useAgentEnv({ files: { "a.txt": "one\ntwo\n" } });

function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const model = t.fake ? { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } : {};
  return t.env({ ...model, ...extra });
}

const sessions = (args: string[]) => runCli(["sessions", ...args], { cwd: t.ws, env: env() });

describe("toolhost sessions", () => {
  it("lists, shows, exports and deletes a session that toolhost run saved", async () => {
    t.fake = await startFakeOpenAI({
      script: [
        {
          toolCalls: [{ id: "e1", name: "edit", arguments: { path: "a.txt", old_string: "two", new_string: "2" } }],
          usage: { prompt_tokens: 120, completion_tokens: 12, prompt_tokens_details: { cached_tokens: 100 } },
        },
        { text: "Changed the **second** line.", usage: { prompt_tokens: 150, completion_tokens: 9 } },
      ],
    });
    const ran = await runCli(["run", "--mode", "full", "--json", "Change two to 2 in a.txt"], { cwd: t.ws, env: env() });
    expect(ran.code).toBe(0);
    const stop = JSON.parse(ran.stdout.trim().split("\n").at(-1)!) as { session_id: string };
    const id = stop.session_id;

    const list = await sessions(["list", "--json"]);
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual({
      sessions: [
        { id, cwd: t.ws, title: "Change two to 2 in a.txt", updatedAt: expect.any(String), file: expect.stringContaining(t.home) },
      ],
    });
    expect((await sessions(["--cwd", t.ws])).stdout).toContain(`${id}  Change two to 2 in a.txt  [${t.ws}]`);
    expect((await sessions(["list", "--cwd", t.home])).stdout).toMatch(/^No saved sessions for /);

    const show = await sessions(["show", id, "--json"]);
    expect(JSON.parse(show.stdout)).toMatchObject({ id, prompts: 1, toolCalls: 1, failedCalls: 0, unreadableLines: 0 });
    // Its settings and what it used: the model of its turns (the environment's here), the mode, the tokens; no price, no cost.
    expect(JSON.parse(show.stdout)).toMatchObject({
      model: "openai-compatible/fake",
      mode: "full",
      requests: 2,
      tokens: { input: 270, output: 21, cacheRead: 100, cacheWrite: 0 },
    });
    expect(JSON.parse(show.stdout)).not.toHaveProperty("cost");
    const shown = (await sessions(["show", id])).stdout;
    expect(shown).toContain("model: openai-compatible/fake\nmode: full\n");
    expect(shown).toContain("tokens: input 270, output 21, cacheRead 100, cacheWrite 0\n");
    expect(shown).toContain("cost: -\n");

    const md = await sessions(["export", id]);
    expect(md.code).toBe(0);
    expect(md.stdout).toMatch(/^# Change two to 2 in a\.txt\n/);
    expect(md.stdout).toContain("## You\n\nChange two to 2 in a.txt");
    expect(md.stdout).toContain("### Edit a.txt (edit)");
    expect(md.stdout).toMatch(/```diff\n[^`]*-two\n\+2/);
    expect(md.stdout).toContain("Changed the **second** line.");

    const jsonl = await sessions(["export", id, "--format", "jsonl"]);
    const lines = jsonl.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string });
    expect(lines[0]).toMatchObject({ type: "session", format: 2, id, cwd: t.ws });
    expect(lines.map((l) => l.type)).toContain("tool_result");

    expect((await sessions(["export", id, "--format", "pdf"])).code).toBe(2);
    expect((await sessions(["delete", id])).stdout).toMatch(
      new RegExp(
        `^Deleted session ${id} \\("[^"]+"\\): its file \\S+${id}\\.jsonl, its large outputs and its checkpoints of ${t.ws}\\.\n$`,
      ),
    );
    const gone = await sessions(["show", id]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain(`no saved session ${id}`);
    expect(JSON.parse((await sessions(["list", "--json"])).stdout)).toEqual({ sessions: [] });
  });

  it("toolhost run keeps a large output next to the saved session, and delete removes it", async () => {
    t.fake = await startFakeOpenAI({
      script: [{ toolCalls: [{ id: "b1", name: "bash", arguments: { command: "seq 1 60000" } }] }, { text: "Long." }],
    });
    const ran = await runCli(["run", "--mode", "full", "--json", "Count"], { cwd: t.ws, env: env() });
    expect(ran.code).toBe(0);
    const id = (JSON.parse(ran.stdout.trim().split("\n").at(-1)!) as { session_id: string }).session_id;
    const file = (JSON.parse((await sessions(["list", "--json"])).stdout) as { sessions: { file: string }[] }).sessions[0]!.file;
    const folder = file.replace(/\.jsonl$/, "");
    // The run has exited: its output is still there, where the result the model got said.
    const [saved] = await fsp.readdir(folder);
    expect(saved).toMatch(/^bash-\d+\.txt$/);
    expect(JSON.stringify(t.fake.requests.at(-1)!.body.messages)).toContain(`${folder}/${saved}`);
    expect((await fsp.stat(`${folder}/${saved}`)).size).toBeGreaterThan(200_000);
    expect((await sessions(["delete", id])).code).toBe(0);
    await expect(fsp.stat(folder)).rejects.toThrow();
  });

  it("show, export and delete take a unique id prefix; an ambiguous one lists the matches (issue 21)", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "one" }, { text: "two" }] });
    const ids: string[] = [];
    for (const prompt of ["first", "second"]) {
      const ran = await runCli(["run", "--json", prompt], { cwd: t.ws, env: env() });
      ids.push((JSON.parse(ran.stdout.trim().split("\n").at(-1)!) as { session_id: string }).session_id);
    }
    const [a, b] = ids as [string, string];
    let n = 0;
    while (a.slice(0, n) === b.slice(0, n)) n++;
    const shared = a.slice(0, n - 1);
    const unique = a.slice(0, n + 2);
    expect(JSON.parse((await sessions(["show", unique, "--json"])).stdout)).toMatchObject({ id: a, title: "first" });
    expect((await sessions(["export", unique])).stdout).toMatch(/^# first\n/);
    const ambiguous = await sessions(["show", shared]);
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toContain(`${shared} names 2 saved sessions; give more of the id:`);
    expect(ambiguous.stderr).toContain(a);
    expect(ambiguous.stderr).toContain(b);
    // delete refuses a prefix under 8 characters and an ambiguous one; it names what it removes.
    const short = await sessions(["delete", a.slice(0, 7)]);
    expect(short.code).toBe(2);
    expect(short.stderr).toMatch(/sessions delete takes the whole id or at least 8 of its characters/);
    expect((await sessions(["delete", shared])).code).toBe(n - 1 >= 8 ? 1 : 2);
    expect((await sessions(["list", "--json"])).stdout).toContain(b);
    expect((await sessions(["delete", a.slice(0, Math.max(8, n + 2))])).stdout).toMatch(
      new RegExp(`^Deleted session ${a} \\("first"\\): its file .*checkpoints of ${t.ws}\\.\n$`),
    );
    expect((await sessions(["show", "nope"])).stderr).toContain("no saved session nope");
  });

  it("shows, exports (as format 2) and transcribes a format-1 file of the previous release, leaving it as it is", async () => {
    const fixture = path.resolve(import.meta.dirname, "../fixtures/sessions-v1/three-prompts.jsonl");
    const text = (await fsp.readFile(fixture, "utf8")).replaceAll("/home/user/project", t.ws);
    const [head, ...rest] = text.trim().split("\n");
    const header = JSON.parse(head!) as V1Header;
    const file = path.join(t.home, "sessions", projectFolderName(t.ws), `${header.id}.jsonl`);
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(file, text);

    const show = await sessions(["show", header.id, "--json"]);
    expect(JSON.parse(show.stdout)).toMatchObject({ id: header.id, prompts: 3, messages: 12, toolCalls: 3, failedCalls: 0 });
    const jsonl = await sessions(["export", header.id, "--format", "jsonl"]);
    const lines = jsonl.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as unknown);
    expect(lines).toEqual([
      { ...header, format: 2, ai: "6" },
      ...migrateV1(
        header,
        rest.map((l) => JSON.parse(l) as V1Entry),
      ).entries,
    ]);
    const md = (await sessions(["export", header.id])).stdout;
    expect(md).toMatch(/^# What does src\/a\.ts export\?\n/);
    expect(md).toContain("## You\n\nChange a to 2.");
    expect(md).toContain("### Edit src/a.ts (edit)");
    expect(md).toContain("Done.");
    // Reading changes nothing on disk.
    expect(await fsp.readFile(file, "utf8")).toBe(text);
  });

  it("toolhost run saves nothing with TOOLHOST_SESSIONS=off", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "hi" }] });
    const ran = await runCli(["run", "hello"], { cwd: t.ws, env: env({ TOOLHOST_SESSIONS: "off" }) });
    expect(ran.stdout).toBe("hi\n");
    expect((await sessions(["list"])).stdout).toMatch(/^No saved sessions/);
  });
});
