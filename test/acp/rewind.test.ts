import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SessionTree, type TreeEntry } from "../../src/agent/record/session-format.js";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { sleepMarker, survivors, tempDir } from "../helpers.js";
import { Harness, messageText, useAcpTest } from "./harness.js";

// Issue 23's "done when", over the real ACP wire: a session edits files and runs a command that
// creates and deletes files across three prompts; `_session/rewind` to the second prompt puts the
// files back exactly as they were before it (byte for byte, deleted ones included, created ones
// gone) and the conversation without prompts 2 and 3; the next prompt goes on from there, and the
// branch left is still in the session file. A dry run changes nothing; a file changed outside
// toolhost is a conflict, kept unless `force`.

const t = useAcpTest({
  "src/app.ts": "export const v = 1;\n",
  "notes.md": "# notes\n",
  "old.txt": "old\n",
  "data/keep.txt": "keep me\n",
  "bin.dat": "\u0000\u0001binary\u00ff\n",
});

/** Every file and folder under `root` with its bytes' hash, sorted: two pictures are equal only for byte-identical trees. */
async function picture(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
      const abs = path.join(dir, entry.name);
      const rel = path.relative(root, abs);
      if (entry.isDirectory()) {
        out[`${rel}/`] = "folder";
        await walk(abs);
      } else
        out[rel] = createHash("sha256")
          .update(await fsp.readFile(abs))
          .digest("hex");
    }
  };
  await walk(root);
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** The text of every message of a model request, for "does it hold prompt 2?". */
const requestText = (body: FakeBody) => JSON.stringify(body.messages ?? []);

const SCRIPT: (FakeReply | ((body: FakeBody) => FakeReply))[] = [
  // Prompt 1: an edit.
  { toolCalls: [{ id: "e1", name: "edit", arguments: { path: "src/app.ts", old_string: "v = 1", new_string: "v = 2" } }] },
  { text: "Edited." },
  // Prompt 2: a command that creates and deletes files, and appends to one.
  {
    toolCalls: [
      {
        id: "b1",
        name: "bash",
        arguments: {
          command: "mkdir -p gen && printf 'made\\n' > gen/made.txt && rm old.txt data/keep.txt && printf 'more\\n' >> notes.md",
        },
      },
    ],
  },
  { text: "Generated." },
  // Prompt 3: a new file and another edit.
  {
    toolCalls: [
      { id: "w1", name: "write", arguments: { path: "src/extra.ts", content: "export const x = 3;\n" } },
      { id: "e2", name: "edit", arguments: { path: "src/app.ts", old_string: "v = 2", new_string: "v = 3" } },
    ],
  },
  { text: "Wrote." },
];

const prompt = (h: Harness, sessionId: string, text: string) =>
  h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

interface Point {
  messageId: string;
  preview: string;
  createdAt: string;
  filesChanged: number;
}
interface Rewound {
  applied: boolean;
  files: { path: string; action: string }[];
  conflicts: { path: string; reason: string }[];
}

/** A session over the wire that runs the three prompts, with a picture of the workspace before each. */
async function threePrompts(more: (FakeReply | ((body: FakeBody) => FakeReply))[] = []) {
  t.fake = await startFakeOpenAI({ script: [...SCRIPT, ...more] });
  const h = (t.h = new Harness({
    env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home },
  }));
  const init = await h.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "t", version: "1" } });
  const sessionId = await h.newSession(t.ws);
  await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
  const pictures: Record<string, string>[] = [];
  for (const text of ["first: edit the app", "second: run the generator", "third: write more"]) {
    pictures.push(await picture(t.ws));
    expect(await prompt(h, sessionId, text)).toMatchObject({ stopReason: "end_turn" });
  }
  // Each prompt did what it was asked (the tools ran).
  expect(await fsp.readFile(path.join(t.ws, "src/app.ts"), "utf8")).toBe("export const v = 3;\n");
  expect(await fsp.readFile(path.join(t.ws, "gen/made.txt"), "utf8")).toBe("made\n");
  await expect(fsp.stat(path.join(t.ws, "old.txt"))).rejects.toThrow();
  const points = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId })).points;
  const rewind = (params: Record<string, unknown>) => h.agent.request<Rewound>("_session/rewind", { sessionId, ...params });
  const stored = async () => (await new SessionStore(t.home).read(sessionId))!;
  return { h, sessionId, init, pictures, points, rewind, stored };
}

describe("rewind over ACP", () => {
  it("restores exactly the files before the second prompt, truncates the conversation, goes on from there, and keeps the branch left", async () => {
    const { h, sessionId, init, pictures, points, rewind, stored } = await threePrompts([
      (body) => ({ text: requestText(body).includes("second: run") ? "I still see prompt 2." : "Continued from prompt 1." }),
    ]);
    // Advertised in initialize.
    expect(init.agentCapabilities?._meta).toEqual({ toolhost: { rewind: { version: 1 }, cancelToolCall: { version: 1 } } });
    expect(points).toEqual([
      { messageId: expect.stringMatching(/^[0-9a-f]{8}$/), preview: "first: edit the app", createdAt: expect.any(String), filesChanged: 1 },
      { messageId: expect.any(String), preview: "second: run the generator", createdAt: expect.any(String), filesChanged: 4 },
      { messageId: expect.any(String), preview: "third: write more", createdAt: expect.any(String), filesChanged: 2 },
    ]);
    const [, second] = points;
    const beforeSecond = pictures[1]!;
    // Control: the picture tells the workspace now from the one before prompt 2.
    const end = await picture(t.ws);
    expect(end).not.toEqual(beforeSecond);

    // A dry run lists what would change, and changes nothing: files and session file alike.
    const entriesBefore = (await stored()).entries.length;
    const dry = await rewind({ messageId: second!.messageId, mode: "both", dryRun: true });
    expect(dry.applied).toBe(false);
    expect(dry.conflicts).toEqual([]);
    expect(dry.files.sort((a, b) => (a.path < b.path ? -1 : 1))).toEqual([
      { path: "data/keep.txt", action: "create" },
      { path: "gen/made.txt", action: "delete" },
      { path: "notes.md", action: "restore" },
      { path: "old.txt", action: "create" },
      { path: "src/app.ts", action: "restore" },
      { path: "src/extra.ts", action: "delete" },
    ]);
    expect(await picture(t.ws)).toEqual(end);
    expect((await stored()).entries.length).toBe(entriesBefore);

    const oldLeaf = new SessionTree((await stored()).entries).leafId;
    const done = await rewind({ messageId: second!.messageId, mode: "both" });
    expect(done).toMatchObject({ applied: true, conflicts: [] });
    expect(done.files).toHaveLength(6);
    // Byte for byte as before prompt 2: changed files restored, deleted ones back, created ones (and their folder) gone.
    expect(await picture(t.ws)).toEqual(beforeSecond);
    // The editor is told what happened.
    expect(messageText(h, sessionId)).toMatch(/back to before prompt 2 \("second: run the generator"\)/);

    // The conversation: prompts 2 and 3 are no longer points, the state the rewind left is; the branch left is still in the file.
    const after = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId })).points;
    expect(after.map((p) => p.preview)).toEqual(["first: edit the app", 'saved: before rewinding both to "second: run the generator"']);
    const file = await stored();
    const tree = new SessionTree(file.entries);
    const users = file.entries.filter((e): e is Extract<TreeEntry, { type: "user" }> => e.type === "user").map((e) => e.text);
    expect(users).toEqual(["first: edit the app", "second: run the generator", "third: write more"]);
    const branch = file.entries.find((e): e is Extract<TreeEntry, { type: "branch" }> => e.type === "branch")!;
    // The branch left ends with the state saved just before the rewind, under the old position.
    const saved = tree.get(branch.fromId)!;
    expect(saved).toMatchObject({ type: "saved", parentId: oldLeaf, rewind: second!.messageId, mode: "both" });
    expect(branch).toMatchObject({ parentId: tree.get(second!.messageId)!.parentId });
    expect(branch.summary).toMatch(/^2 prompts left: "second: run the generator", "third: write more"; files changed: /);
    expect(tree.branches().filter((b) => b.length > 0)).toEqual([expect.objectContaining({ tipId: saved.id, summary: branch.summary })]);

    // The next prompt goes on from prompt 1: its request holds nothing of prompts 2 and 3.
    const requests = t.fake!.requests.length;
    await prompt(h, sessionId, "fourth: go on");
    const body = t.fake!.requests[requests]!.body;
    expect(requestText(body)).toContain("first: edit the app");
    expect(requestText(body)).toContain("fourth: go on");
    for (const gone of ["second: run the generator", "third: write more", "Generated.", "Wrote."])
      expect(requestText(body)).not.toContain(gone);
    expect(messageText(h, sessionId)).toContain("Continued from prompt 1.");
    const path4 = new SessionTree((await stored()).entries).pathTo().filter((e) => e.type === "user");
    expect(path4.map((e) => (e as { text: string }).text)).toEqual(["first: edit the app", "fourth: go on"]);

    // Unknown points and bad modes are the client's errors.
    await expect(rewind({ messageId: "nothere", mode: "both" })).rejects.toMatchObject({ code: -32602 });
    await expect(rewind({ messageId: second!.messageId, mode: "everything" })).rejects.toMatchObject({ code: -32602 });
  });

  it("lists a file changed outside toolhost as a conflict and leaves it, and overwrites it with force", async () => {
    const { pictures, points, rewind } = await threePrompts();
    const [, second] = points;
    await fsp.writeFile(path.join(t.ws, "src/extra.ts"), "// the user's own change\n");
    const kept = await rewind({ messageId: second!.messageId, mode: "files" });
    expect(kept.applied).toBe(true);
    expect(kept.conflicts).toEqual([{ path: "src/extra.ts", reason: "changed since the last checkpoint" }]);
    expect(kept.files.map((f) => f.path)).not.toContain("src/extra.ts");
    expect(await fsp.readFile(path.join(t.ws, "src/extra.ts"), "utf8")).toBe("// the user's own change\n");
    const now = await picture(t.ws);
    const { "src/extra.ts": extra, ...rest } = now;
    expect(extra).toBeDefined();
    expect(rest).toEqual(pictures[1]);

    // Still a conflict the second time; force overwrites it.
    const again = await rewind({ messageId: second!.messageId, mode: "files", dryRun: true });
    expect(again.conflicts).toEqual([{ path: "src/extra.ts", reason: "changed since the last checkpoint" }]);
    const forced = await rewind({ messageId: second!.messageId, mode: "files", force: true });
    // Listed still (the client learns what it overwrote), and carried out.
    expect(forced).toMatchObject({ applied: true, conflicts: [{ path: "src/extra.ts", reason: "changed since the last checkpoint" }] });
    expect(forced.files).toEqual([{ path: "src/extra.ts", action: "delete" }]);
    expect(await picture(t.ws)).toEqual(pictures[1]);
  });

  it("the slash commands: /rewind lists and asks which, /undo, /label and /fork; none of them is a prompt", async () => {
    const { h, sessionId, pictures, stored, rewind } = await threePrompts();
    const users = async () => (await stored()).entries.filter((e) => e.type === "user").length;
    const said = () => messageText(h, sessionId);

    await prompt(h, sessionId, "/rewind");
    expect(said()).toMatch(
      /1\. first: edit the app \(.*1 file changed\)\n2\. second: run the generator \(.*4 files changed\)\n3\. third: write more/,
    );

    // /undo puts back the files of the last prompt that changed files: the third.
    const end = await picture(t.ws);
    await prompt(h, sessionId, "/undo");
    expect(await picture(t.ws)).toEqual(pictures[2]);
    expect(said()).toMatch(
      /Rewound to before prompt 3 \("third: write more"\)\. Files: 1 file restored, 1 created file removed\. The state before this rewind is saved as point 4: a rewind to it comes back\./,
    );

    // Forward again: the state /undo left is point 4, and a rewind to it brings prompt 3's changes back.
    await prompt(h, sessionId, "/rewind");
    expect(said()).toMatch(/3\. third: write more \(.*2 files changed\)\n4\. saved: before rewinding the files to "third: write more" \(/);
    const listed = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId })).points;
    expect(listed[3]).toMatchObject({
      preview: 'saved: before rewinding the files to "third: write more"',
      _meta: { toolhost: { kind: "saved" } },
    });
    await prompt(h, sessionId, "/rewind 4 files");
    expect(await picture(t.ws)).toEqual(end);
    expect(said()).toMatch(
      /Rewound to the state saved at .* \(point 4, before a rewind\)\. Files: 1 file restored, 1 deleted file brought back\./,
    );
    // /undo then knows the workspace is as after prompt 3 again: it undoes prompt 3 once more.
    await prompt(h, sessionId, "/undo");
    expect(await picture(t.ws)).toEqual(pictures[2]);

    // /rewind 2 asks what goes back (one choice among three: session/request_permission); the first is both.
    h.permission = () => ({ outcome: { outcome: "selected", optionId: "answer_1" } });
    await prompt(h, sessionId, "/rewind 2");
    expect(h.permissionRequests).toHaveLength(1);
    const [asked] = h.permissionRequests;
    expect(asked!.toolCall.title).toBe(`Put back what was there before prompt 2 ("second: run the generator")?`);
    const choices = ["Files and conversation", "Conversation only", "Files only", "Skip the question"];
    expect(asked!.options.map((o) => o.name)).toEqual(choices);
    expect(await picture(t.ws)).toEqual(pictures[1]);
    expect(said()).toMatch(/The conversation is back to before prompt 2/);
    const points = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId })).points;
    expect(points.map((p) => p.preview)).toEqual([
      "first: edit the app",
      'saved: before rewinding the files to "third: write more"',
      expect.stringMatching(/^saved: before rewinding the files to the state of /),
      'saved: before rewinding the files to "third: write more"',
      'saved: before rewinding both to "second: run the generator"',
    ]);
    // Forward again over ACP, files and conversation: as before `/rewind 2`, prompts 2 and 3 in the conversation again.
    await rewind({ messageId: points[4]!.messageId, mode: "both" });
    // Byte for byte but the folder prompt 2 emptied: a snapshot records files, and a restore removes the folders its removals empty.
    const { "data/": emptied, ...beforeThird } = pictures[2]!;
    expect(emptied).toBe("folder");
    expect(await picture(t.ws)).toEqual(beforeThird);
    const back = new SessionTree((await stored()).entries).pathTo().filter((e) => e.type === "user");
    expect(back.map((e) => (e as { text: string }).text)).toEqual([
      "first: edit the app",
      "second: run the generator",
      "third: write more",
    ]);

    await prompt(h, sessionId, "/label before-anything");
    expect(said()).toContain('This point is labelled "before-anything"');
    const tree = new SessionTree((await stored()).entries);
    expect([...tree.labels().values()]).toEqual(["before-anything"]);

    await prompt(h, sessionId, "/fork");
    const forkId = /Forked: session (\S+) starts from here/.exec(said())![1]!;
    const fork = (await new SessionStore(t.home).read(forkId))!;
    expect(fork.header.forkedFrom).toEqual({ session: sessionId, entryId: expect.any(String) });
    expect(fork.entries.filter((e) => e.type === "user").map((e) => (e as { text: string }).text)).toEqual([
      "first: edit the app",
      "second: run the generator",
      "third: write more",
    ]);

    // None of the commands is a prompt: no user entry, no rewind point.
    expect(await users()).toBe(3);
    await prompt(h, sessionId, "/rewind 99");
    expect(said()).toContain('/rewind takes the number of a prompt (1 to 8; `/rewind` lists them), not "99".');
  });

  it("session/fork starts a session from where this one is; delete drops a session's checkpoints", async () => {
    t.fake = await startFakeOpenAI({ script: [...SCRIPT.slice(0, 2), { text: "In the fork." }] });
    const h = (t.h = new Harness({
      unstable: true,
      env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home },
    }));
    const init = await h.agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: {},
      clientInfo: { name: "t", version: "1" },
    });
    expect(init.agentCapabilities?.sessionCapabilities).toMatchObject({ fork: {} });
    const sessionId = await h.newSession(t.ws);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "first: edit the app");
    const forked = await h.agent.request<{ sessionId: string; modes: unknown; configOptions: unknown }>("session/fork", {
      sessionId,
      cwd: t.ws,
      mcpServers: [],
    });
    expect(forked.sessionId).not.toBe(sessionId);
    expect(forked.modes).toMatchObject({ currentModeId: "full" });
    // The fork goes on with the history so far.
    expect(await prompt(h, forked.sessionId, "in the fork")).toMatchObject({ stopReason: "end_turn" });
    const forkRequest = t.fake.requests.at(-1)!.body;
    expect(requestText(forkRequest)).toContain("first: edit the app");
    const store = new SessionStore(t.home);
    const original = (await store.read(sessionId))!;
    const fork = (await store.read(forked.sessionId))!;
    expect(fork.header.forkedFrom).toEqual({ session: sessionId, entryId: new SessionTree(original.entries).leafId });
    expect(fork.entries.slice(0, original.entries.length)).toEqual(original.entries);

    // The checkpoints the fork copied are its own too: deleting the original keeps them, and drops the original's.
    const project = path.basename(path.dirname(original.file));
    const refs = (session: string) =>
      execFileSync(
        "git",
        ["--git-dir", path.join(t.home, "checkpoints", project), "for-each-ref", "--format=%(objectname)", `refs/toolhost/${session}/`],
        {
          encoding: "utf8",
        },
      )
        .trim()
        .split("\n")
        .filter(Boolean);
    const copied = original.entries.flatMap((e) => (e.type === "checkpoint" ? [e.before, e.after] : [])).filter(Boolean);
    expect(copied.length).toBeGreaterThan(0);
    expect(refs(forked.sessionId)).toEqual(expect.arrayContaining(copied));
    expect(refs(sessionId).length).toBeGreaterThan(0);
    await h.agent.request("session/delete", { sessionId });
    expect(refs(sessionId)).toEqual([]);
    expect(refs(forked.sessionId)).toEqual(expect.arrayContaining(copied));
    // The fork's files still rewind: prompt 1's edit is undone.
    const [first] = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId: forked.sessionId })).points;
    const done = await h.agent.request<Rewound>("_session/rewind", {
      sessionId: forked.sessionId,
      messageId: first!.messageId,
      mode: "files",
    });
    expect(done).toMatchObject({ applied: true, files: [{ path: "src/app.ts", action: "restore" }] });
    expect(await fsp.readFile(path.join(t.ws, "src/app.ts"), "utf8")).toBe("export const v = 1;\n");
  });

  it("a subagent's changes are part of its parent's prompt: checkpointed and rewound with it", async () => {
    t.fake = await startFakeOpenAI({
      fallback: (body) => {
        const results = (body.messages ?? []).filter((m) => m.role === "tool");
        if (firstUserText(body).includes("Delegate"))
          return results.length
            ? { text: "The child wrote it." }
            : { toolCalls: [{ id: "t1", name: "task", arguments: { description: "Write the file", prompt: "Child: write child.txt" } }] };
        return results.length
          ? { text: "Written." }
          : { toolCalls: [{ id: "cw", name: "write", arguments: { path: "child.txt", content: "from the child\n" } }] };
      },
    });
    const h = (t.h = new Harness({
      env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home },
    }));
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    const before = await picture(t.ws);
    await prompt(h, sessionId, "Delegate the writing");
    expect(await fsp.readFile(path.join(t.ws, "child.txt"), "utf8")).toBe("from the child\n");
    const [point] = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId })).points;
    expect(point).toMatchObject({ preview: "Delegate the writing", filesChanged: 1 });
    const done = await h.agent.request<Rewound>("_session/rewind", { sessionId, messageId: point!.messageId, mode: "files" });
    expect(done).toMatchObject({ applied: true, files: [{ path: "child.txt", action: "delete" }], conflicts: [] });
    expect(await picture(t.ws)).toEqual(before);
  });

  describe("with a further root (additionalDirectories)", () => {
    /** A session over two roots whose one prompt edits a file in each and creates one in the second. */
    async function twoRoots(options: { unstable?: boolean } = {}) {
      const other = await tempDir({ "lib.ts": "export const x = 1;\n", "README.md": "# lib\n" });
      t.defer(() => fsp.rm(other, { recursive: true, force: true }));
      t.fake = await startFakeOpenAI({
        script: [
          {
            toolCalls: [
              { id: "e1", name: "edit", arguments: { path: "src/app.ts", old_string: "v = 1", new_string: "v = 2" } },
              { id: "e2", name: "edit", arguments: { path: path.join(other, "lib.ts"), old_string: "x = 1", new_string: "x = 2" } },
              { id: "w1", name: "write", arguments: { path: path.join(other, "gen/new.ts"), content: "export const y = 1;\n" } },
            ],
          },
          { text: "Both edited." },
        ],
      });
      const h = (t.h = new Harness({
        unstable: options.unstable,
        env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home },
      }));
      await h.initialize();
      const { sessionId } = await h.agent.request<{ sessionId: string }>("session/new", {
        cwd: t.ws,
        additionalDirectories: [other],
        mcpServers: [],
      });
      await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
      const before = { ws: await picture(t.ws), other: await picture(other) };
      expect(await prompt(h, sessionId, "edit both roots")).toMatchObject({ stopReason: "end_turn" });
      // The tools ran in both roots.
      expect(await fsp.readFile(path.join(t.ws, "src/app.ts"), "utf8")).toBe("export const v = 2;\n");
      expect(await fsp.readFile(path.join(other, "lib.ts"), "utf8")).toBe("export const x = 2;\n");
      expect(await fsp.readFile(path.join(other, "gen/new.ts"), "utf8")).toBe("export const y = 1;\n");
      const [point] = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId })).points;
      const rewind = (params: Record<string, unknown>) =>
        h.agent.request<Rewound & { _meta: { toolhost: { message: string } } }>("_session/rewind", {
          sessionId,
          messageId: point!.messageId,
          ...params,
        });
      return { h, sessionId, other, before, point: point!, rewind };
    }

    it("a rewind puts both roots back, byte for byte: the edits undone, the file created in the second root gone", async () => {
      const { other, before, point, rewind } = await twoRoots();
      expect(point).toMatchObject({ preview: "edit both roots", filesChanged: 3 });
      // Control: each root differs from its picture before the prompt.
      expect(await picture(t.ws)).not.toEqual(before.ws);
      expect(await picture(other)).not.toEqual(before.other);
      const dry = await rewind({ mode: "files", dryRun: true });
      expect(dry.files.sort((a, b) => (a.path < b.path ? -1 : 1))).toEqual(
        [
          { path: path.join(other, "gen/new.ts"), action: "delete" },
          { path: path.join(other, "lib.ts"), action: "restore" },
          { path: "src/app.ts", action: "restore" },
        ].sort((a, b) => (a.path < b.path ? -1 : 1)),
      );
      const done = await rewind({ mode: "both" });
      expect(done).toMatchObject({ applied: true, conflicts: [] });
      expect(done.files).toHaveLength(3);
      expect(await picture(t.ws)).toEqual(before.ws);
      expect(await picture(other)).toEqual(before.other);
      expect(done._meta.toolhost.message).toMatch(/Files: 2 files restored, 1 created file removed\./);
    });

    it("a file changed in the second root by someone else after the turn is a conflict: left as it is, named by its path, unless force", async () => {
      const { other, before, rewind } = await twoRoots();
      const lib = path.join(other, "lib.ts");
      await fsp.writeFile(lib, "// the user's own change\n");
      const kept = await rewind({ mode: "files" });
      expect(kept.applied).toBe(true);
      expect(kept.conflicts).toEqual([{ path: lib, reason: "changed since the last checkpoint" }]);
      expect(kept._meta.toolhost.message).toContain(`${lib} (changed since the last checkpoint); force overwrites them.`);
      expect(await fsp.readFile(lib, "utf8")).toBe("// the user's own change\n");
      expect(await picture(t.ws)).toEqual(before.ws);
      // The rest of the second root is back: everything but lib.ts as before the prompt.
      const now = await picture(other);
      expect(now["lib.ts"]).not.toEqual(before.other["lib.ts"]);
      expect({ ...now, "lib.ts": before.other["lib.ts"] }).toEqual(before.other);

      const forced = await rewind({ mode: "files", force: true });
      expect(forced).toMatchObject({ applied: true, files: [{ path: lib, action: "restore" }], conflicts: [{ path: lib }] });
      expect(await picture(other)).toEqual(before.other);
    });

    it("a fork keeps the second root's checkpoints too: with the original deleted, the fork still rewinds both roots", async () => {
      const { h, sessionId, other, before } = await twoRoots({ unstable: true });
      const forked = await h.agent.request<{ sessionId: string }>("session/fork", {
        sessionId,
        cwd: t.ws,
        additionalDirectories: [other],
        mcpServers: [],
      });
      await h.agent.request("session/delete", { sessionId });
      const [point] = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId: forked.sessionId })).points;
      expect(point).toMatchObject({ preview: "edit both roots", filesChanged: 3 });
      const done = await h.agent.request<Rewound>("_session/rewind", {
        sessionId: forked.sessionId,
        messageId: point!.messageId,
        mode: "files",
      });
      expect(done).toMatchObject({ applied: true, conflicts: [] });
      expect(done.files).toHaveLength(3);
      expect(await picture(t.ws)).toEqual(before.ws);
      expect(await picture(other)).toEqual(before.other);
    });
  });
});

describe("a cancelled prompt's checkpoint", () => {
  it("is answered cancelled during a running command, and its checkpoint is still recorded: a rewind to before it removes what the command made", async () => {
    const marker = sleepMarker();
    t.fake = await startFakeOpenAI({ script: [] });
    const h = (t.h = new Harness({
      env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home },
    }));
    await h.agent.request("initialize", { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "t", version: "1" } });
    const sessionId = await h.newSession(t.ws);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    const before = await picture(t.ws);
    const running = prompt(h, sessionId, `/bash mkdir -p deep/a/b && printf 'made\\n' > deep/a/b/made.txt && sleep ${marker}`);
    // The sandbox's own command line names the sleep too: wait for the file the command makes first.
    await h.waitFor(async () => (await fsp.stat(path.join(t.ws, "deep/a/b/made.txt")).catch(() => null)) !== null);
    await h.waitFor(async () => (await survivors(`sleep ${marker}`)).length > 0);
    await h.agent.notify("session/cancel", { sessionId });
    expect(await running).toMatchObject({ stopReason: "cancelled" });
    // The next request waits for the cancelled prompt's closing checkpoint.
    const points = (await h.agent.request<{ points: Point[] }>("_session/rewind_points", { sessionId })).points;
    const done = await h.agent.request<Rewound>("_session/rewind", { sessionId, messageId: points.at(-1)!.messageId, mode: "files" });
    expect(done.applied).toBe(true);
    expect(done.files).toEqual([{ path: "deep/a/b/made.txt", action: "delete" }]);
    expect(await picture(t.ws)).toEqual(before);
  });
});
