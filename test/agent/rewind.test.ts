import { createHash } from "node:crypto";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { SessionTree, newEntryId, type EntryData, type TreeEntry } from "../../src/agent/record/session-format.js";
import {
  branchSummary,
  conversationRewindRecord,
  findPoint,
  planFilesRewind,
  promptPreview,
  rewindFiles,
  rewindPoints,
  undoPoint,
} from "../../src/agent/rewind/engine.js";
import { SessionCheckpoints, type CheckpointRecord } from "../../src/agent/rewind/checkpoints.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { openWorkspaceCheckpoints, type WorkspaceCheckpoints } from "../../src/runtime/checkpoints/roots.js";
import { tempDir } from "../helpers.js";

// Issue 23 §2–3: a session's checkpoints (a snapshot before each prompt's first change, and after
// it) and the rewind of the files over the session's tree, with real git on real files. Each
// restore is judged by a byte-for-byte picture of the folder taken before the prompt it goes back to.

const cleanup: string[] = [];
const services: SessionCheckpoints[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close().catch(() => {});
  for (const dir of cleanup.splice(0)) await fsp.rm(dir, { recursive: true, force: true });
});

async function folder(files: Record<string, string> = {}): Promise<string> {
  const dir = await tempDir(files);
  cleanup.push(dir);
  return dir;
}

/** Every file under `root` with its bytes' hash (folders too), sorted. */
async function picture(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await fsp.readdir(dir, { withFileTypes: true })) {
      const abs = path.join(dir, entry.name);
      const rel = path.relative(root, abs);
      if (entry.isDirectory()) {
        out[rel] = "folder";
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

const write = async (root: string, rel: string, text: string) => {
  await fsp.mkdir(path.dirname(path.join(root, rel)), { recursive: true });
  await fsp.writeFile(path.join(root, rel), text);
};

/** A session's record in memory, as the recorder appends it: each entry under the current position. */
class MemoryRecord {
  readonly entries: TreeEntry[] = [];
  private ids = new Set<string>();
  leaf: string | null = null;
  append(data: EntryData, parentId: string | null = this.leaf): string {
    const id = newEntryId(this.ids);
    this.ids.add(id);
    this.entries.push({ ...data, id, parentId, at: new Date(Date.UTC(2026, 0, 1, 0, 0, this.entries.length)).toISOString() } as TreeEntry);
    this.leaf = id;
    return id;
  }
  get tree(): SessionTree {
    return new SessionTree(this.entries);
  }
}

/**
 * A workspace, its session's checkpoints and record, and a way to run a prompt whose "tool" changes
 * files. `further`: the files of further roots (additionalDirectories), each a folder of its own;
 * `roots` instead names further roots as they are (a folder inside the workspace, one that is gone).
 */
async function session(
  files: Record<string, string>,
  config: unknown = {},
  options: { further?: Record<string, string>[]; roots?: (root: string) => string[] } = {},
) {
  const root = await folder(files);
  const others = await Promise.all((options.further ?? []).map((f) => folder(f)));
  const additional = [...others, ...(options.roots?.(root) ?? [])];
  const home = await folder();
  const record = new MemoryRecord();
  const said: string[] = [];
  const recorded: CheckpointRecord[] = [];
  const service = new SessionCheckpoints({
    workspace: resolveWorkspace(root, additional),
    session: "sess1",
    config: { path: path.join(home, "config.json"), json: config },
    home,
    record: (entry) => {
      recorded.push(entry);
      record.append({ type: "checkpoint", ...entry });
    },
    say: (text) => void said.push(text),
  });
  services.push(service);
  const pictures: Record<string, string>[] = [];
  /** The further roots' pictures before each prompt: othersPictures[prompt][root]. */
  const othersPictures: Record<string, string>[][] = [];
  /** One prompt: a user entry, then (when `change` is given) a changing call, then the turn's end. */
  const prompt = async (text: string, change?: () => Promise<void>): Promise<string> => {
    const id = record.append({ type: "user", text });
    service.turnStarted(id);
    pictures.push(await picture(root));
    othersPictures.push(await Promise.all(others.map((o) => picture(o))));
    record.append({ type: "agent_text", text: `answer to ${text}` });
    if (change) {
      await service.beforeChange();
      await service.beforeChange();
      await change();
    }
    await service.turnEnded();
    record.append({ type: "turn_end", stopReason: "end_turn" });
    return id;
  };
  const checkpoints = async (): Promise<WorkspaceCheckpoints> => {
    const handle = await service.handle();
    if (!handle.checkpoints) throw new Error(handle.reason);
    return handle.checkpoints;
  };
  return { root, others, home, record, said, recorded, service, prompt, pictures, othersPictures, checkpoints };
}

/** Three prompts: edits, a command that creates and deletes files, more edits; plus a change made outside between 2 and 3. */
async function threePrompts() {
  const s = await session({ "a.txt": "a1\n", "b.txt": "b1\n", "keep/k.txt": "k\n", "outside.txt": "o1\n" });
  const p1 = await s.prompt("first: edit a", () => fsp.writeFile(path.join(s.root, "a.txt"), "a2\n"));
  const p2 = await s.prompt("second: make and remove files\nwith a second line", async () => {
    await write(s.root, "new/c.txt", "c\n");
    await fsp.rm(path.join(s.root, "b.txt"));
    await fsp.rm(path.join(s.root, "keep"), { recursive: true });
    await fsp.writeFile(path.join(s.root, "a.txt"), "a3\n");
  });
  // The user changes a file outside toolhost between the prompts: no rewind touches it.
  await fsp.writeFile(path.join(s.root, "outside.txt"), "o2 by the user\n");
  const p3 = await s.prompt("third: more", async () => {
    await write(s.root, "new/d.txt", "d\n");
    await write(s.root, "b.txt", "b again\n");
  });
  return { ...s, p1, p2, p3 };
}

describe("the session's checkpoints", () => {
  it("take one snapshot before a prompt's first change and record the files it changed at its end", async () => {
    const s = await threePrompts();
    // A turn that changes nothing takes none.
    await s.prompt("a question only");
    expect(s.recorded.map((r) => r.promptId)).toEqual([s.p1, s.p1, s.p2, s.p2, s.p3, s.p3]);
    const [first, done] = s.recorded;
    expect(first).toEqual({ promptId: s.p1, before: expect.stringMatching(/^[0-9a-f]{40}$/) });
    expect(done).toEqual({
      promptId: s.p1,
      before: first!.before,
      after: expect.any(String),
      files: [{ path: "a.txt", action: "modify" }],
    });
    expect(s.recorded[3]!.files).toEqual(
      expect.arrayContaining([
        { path: "a.txt", action: "modify" },
        { path: "b.txt", action: "delete" },
        { path: "keep/k.txt", action: "delete" },
        { path: "new/c.txt", action: "create" },
      ]),
    );
    expect(s.recorded[3]!.files).toHaveLength(4);
    // The outside change is not the third turn's.
    expect(s.recorded[5]!.files?.map((f) => f.path).sort()).toEqual(["b.txt", "new/d.txt"]);
    expect(s.said).toEqual([]);
    expect(rewindPoints(s.record.tree)).toEqual([
      { messageId: s.p1, kind: "prompt", preview: "first: edit a", createdAt: expect.any(String), filesChanged: 1 },
      { messageId: s.p2, kind: "prompt", preview: "second: make and remove files", createdAt: expect.any(String), filesChanged: 4 },
      { messageId: s.p3, kind: "prompt", preview: "third: more", createdAt: expect.any(String), filesChanged: 2 },
      { messageId: expect.any(String), kind: "prompt", preview: "a question only", createdAt: expect.any(String), filesChanged: 0 },
    ]);
  });

  it('are off with "checkpoints": false (nothing said) and in the home folder (said once)', async () => {
    const s = await session({ "a.txt": "a\n" }, { checkpoints: false });
    await s.prompt("edit", () => fsp.writeFile(path.join(s.root, "a.txt"), "b\n"));
    expect(s.recorded).toEqual([]);
    expect(s.said).toEqual([]);
    expect(await s.service.handle()).toEqual({ reason: expect.stringContaining('"checkpoints": false') });
  });

  it("without git: one notice, and the session goes on", async () => {
    const saved = process.env.PATH;
    process.env.PATH = await folder();
    let s;
    try {
      s = await session({ "a.txt": "a\n" });
      await s.service.handle();
    } finally {
      process.env.PATH = saved;
    }
    await s.prompt("one", () => fsp.writeFile(path.join(s.root, "a.txt"), "b\n"));
    await s.prompt("two", () => fsp.writeFile(path.join(s.root, "a.txt"), "c\n"));
    expect(s.recorded).toEqual([]);
    expect(s.said).toEqual([expect.stringMatching(/^No checkpoint of the workspace is taken.*git/)]);
  });
});

describe("rewinding the files", () => {
  it("to the second prompt restores exactly the files before it: changed, deleted and created ones; the outside change stays", async () => {
    const s = await threePrompts();
    const ck = await s.checkpoints();
    const dry = await rewindFiles(s.record.tree, s.p2, ck, { dryRun: true });
    const now = await picture(s.root);
    expect(dry.applied).toBe(false);
    expect(dry.files).toEqual(
      expect.arrayContaining([
        { path: "a.txt", action: "restore" },
        { path: "b.txt", action: "restore" },
        { path: "keep/k.txt", action: "create" },
        { path: "new/c.txt", action: "delete" },
        { path: "new/d.txt", action: "delete" },
      ]),
    );
    expect(dry.files).toHaveLength(5);
    expect(dry.conflicts).toEqual([]);
    expect(await picture(s.root)).toEqual(now);

    const done = await rewindFiles(s.record.tree, s.p2, ck);
    expect(done).toMatchObject({ applied: true, conflicts: [], failed: [] });
    const expected = { ...s.pictures[1]!, "outside.txt": now["outside.txt"]! };
    expect(await picture(s.root)).toEqual(expected);
    // Control: the picture tells the outside change from the state before the prompt.
    expect(expected).not.toEqual(s.pictures[1]);
    expect(done.record).toEqual({ rewind: s.p2, before: expect.any(String), after: expect.any(String), files: expect.any(Array) });
    expect(done.record!.files).toHaveLength(5);
  });

  it("with the conversation moving too, records the files against the point's state: nothing differs after a full restore", async () => {
    const s = await threePrompts();
    const moving = await rewindFiles(s.record.tree, s.p2, await s.checkpoints(), { moving: true });
    expect(moving.files).toHaveLength(5);
    expect(moving.record).toEqual({ rewind: s.p2, before: s.recorded[2]!.before, after: expect.any(String), files: [] });
  });

  it("lists a file changed outside toolhost as a conflict and keeps it; force overwrites it", async () => {
    const s = await threePrompts();
    const ck = await s.checkpoints();
    await fsp.writeFile(path.join(s.root, "a.txt"), "edited by the user\n");
    const kept = await rewindFiles(s.record.tree, s.p2, ck, { moving: true });
    expect(kept.conflicts).toEqual([{ path: "a.txt", reason: "changed since the last checkpoint" }]);
    expect(kept.files.map((f) => f.path)).not.toContain("a.txt");
    expect(await fsp.readFile(path.join(s.root, "a.txt"), "utf8")).toBe("edited by the user\n");
    expect(await fsp.readFile(path.join(s.root, "b.txt"), "utf8")).toBe("b1\n");
    const forced = await rewindFiles(s.record.tree, s.p2, ck, { force: true });
    expect(forced.files).toContainEqual({ path: "a.txt", action: "restore" });
    expect(await fsp.readFile(path.join(s.root, "a.txt"), "utf8")).toBe("a2\n");
  });

  it("a conflict kept at one rewind is a conflict again at the next, from the branch it made too", async () => {
    const s = await threePrompts();
    const ck = await s.checkpoints();
    await write(s.root, "new/d.txt", "the user's d\n");
    const kept = await rewindFiles(s.record.tree, s.p2, ck, { moving: true });
    expect(kept.conflicts).toEqual([{ path: "new/d.txt", reason: "changed since the last checkpoint" }]);
    // Both: the conversation goes back too; the record under the branch names the file left as the user made it.
    const point = s.record.tree.get(s.p2)!;
    const branch = s.record.append({ type: "branch", fromId: s.record.leaf!, summary: "left" }, point.parentId);
    s.record.append({ type: "checkpoint", promptId: branch, ...kept.record! });
    expect(kept.record!.files).toEqual([{ path: "new/d.txt", action: "create" }]);
    const again = await rewindFiles(s.record.tree, s.p2, ck);
    expect(again.conflicts).toEqual([{ path: "new/d.txt", reason: "changed since the last checkpoint" }]);
    expect(await fsp.readFile(path.join(s.root, "new/d.txt"), "utf8")).toBe("the user's d\n");
    await rewindFiles(s.record.tree, s.p2, ck, { force: true });
    const now = await picture(s.root);
    expect(now).toEqual({ ...s.pictures[1]!, "outside.txt": now["outside.txt"]! });
  });

  it("after a rewind of the files, the next rewind knows the state it left: no conflict, and back further", async () => {
    const s = await threePrompts();
    const ck = await s.checkpoints();
    const first = await rewindFiles(s.record.tree, s.p3, ck);
    s.record.append({ type: "checkpoint", promptId: s.record.leaf!, ...first.record! });
    const second = await rewindFiles(s.record.tree, s.p1, ck);
    expect(second.conflicts).toEqual([]);
    const current = await picture(s.root);
    expect(current).toEqual({ ...s.pictures[0]!, "outside.txt": current["outside.txt"]! });
  });

  it("a rewind of the conversation alone leaves the files, and a later rewind from the new branch still restores them", async () => {
    const s = await threePrompts();
    const ck = await s.checkpoints();
    const end = await picture(s.root);
    // The conversation goes back to before the second prompt: a branch entry under its parent.
    const point = s.record.tree.get(s.p2)!;
    const summary = branchSummary(s.record.tree, point.parentId);
    expect(summary).toMatch(/^2 prompts left: "second: make and remove files", "third: more"; files changed: a\.txt, b\.txt/);
    const carried = await conversationRewindRecord(s.record.tree, s.p2, ck);
    const branch = s.record.append({ type: "branch", fromId: s.record.leaf!, summary }, point.parentId);
    s.record.append({ type: "checkpoint", promptId: branch, ...carried! });
    expect(await picture(s.root)).toEqual(end);
    expect(rewindPoints(s.record.tree).map((p) => p.messageId)).toEqual([s.p1]);
    // A new prompt on the new branch, then a rewind to the first prompt: everything before it comes back.
    await s.prompt("another way", () => write(s.root, "other.txt", "other\n"));
    const back = await rewindFiles(s.record.tree, s.p1, (await s.service.handle()).checkpoints!);
    expect(back.conflicts).toEqual([]);
    const now = await picture(s.root);
    expect(now).toEqual({ ...s.pictures[0]!, "outside.txt": now["outside.txt"]! });
  });

  it("moves forward to a prompt of the branch left: the files as they were before it", async () => {
    const s = await threePrompts();
    const ck = await s.checkpoints();
    const done = await rewindFiles(s.record.tree, s.p2, ck, { moving: true });
    const point = s.record.tree.get(s.p2)!;
    const branch = s.record.append({ type: "branch", fromId: s.record.leaf!, summary: "left" }, point.parentId);
    s.record.append({ type: "checkpoint", promptId: branch, ...done.record! });
    expect(planFilesRewind(s.record.tree, s.p3).targetId).toBe(s.recorded[4]!.before);
    const forward = await rewindFiles(s.record.tree, s.p3, ck);
    expect(forward.conflicts).toEqual([]);
    const now = await picture(s.root);
    expect(now).toEqual(s.pictures[2]);
  });

  it("a turn cut short (no snapshot after it) still has its files rewound", async () => {
    const s = await session({ "a.txt": "a1\n" });
    const p1 = s.record.append({ type: "user", text: "cut" });
    s.service.turnStarted(p1);
    const before = await picture(s.root);
    await s.service.beforeChange();
    await write(s.root, "made.txt", "made\n");
    await fsp.writeFile(path.join(s.root, "a.txt"), "a2\n");
    // No turnEnded: the process died.
    expect(planFilesRewind(s.record.tree, p1)).toMatchObject({
      paths: new Set(),
      unlisted: [{ from: s.recorded[0]!.before, to: "workspace" }],
    });
    const ck = await s.checkpoints();
    expect((await rewindFiles(s.record.tree, p1, ck, { force: true })).failed).toEqual([]);
    expect(await picture(s.root)).toEqual(before);
  });

  it("/undo takes the last prompt that changed files, then the one before", async () => {
    const s = await threePrompts();
    await s.prompt("no change");
    const ck = await s.checkpoints();
    expect(undoPoint(s.record.tree)?.id).toBe(s.p3);
    const first = await rewindFiles(s.record.tree, s.p3, ck);
    s.record.append({ type: "checkpoint", promptId: s.record.leaf!, ...first.record! });
    expect(undoPoint(s.record.tree)?.id).toBe(s.p2);
    const second = await rewindFiles(s.record.tree, s.p2, ck);
    s.record.append({ type: "checkpoint", promptId: s.record.leaf!, ...second.record! });
    expect(undoPoint(s.record.tree)?.id).toBe(s.p1);
    const now = await picture(s.root);
    expect(now).toEqual({ ...s.pictures[1]!, "outside.txt": now["outside.txt"]! });
    // A new prompt that changes files is the next to undo.
    const p5 = await s.prompt("change again", () => write(s.root, "z.txt", "z\n"));
    expect(undoPoint(s.record.tree)?.id).toBe(p5);
  });

  it("finds a point by its number or its id, and says what is wrong otherwise", async () => {
    const s = await threePrompts();
    const tree = s.record.tree;
    expect(findPoint(tree, "2")).toEqual({ point: expect.objectContaining({ id: s.p2 }) });
    expect(findPoint(tree, s.p3)).toEqual({ point: expect.objectContaining({ id: s.p3 }) });
    expect(findPoint(tree, "4")).toEqual({ problem: "There is no prompt 4: the prompts are 1 to 3." });
    expect(findPoint(tree, "nothere")).toEqual({ problem: "This session has no message nothere." });
    const notPrompt = tree.entries.find((e) => e.type === "turn_end")!.id;
    expect(findPoint(tree, notPrompt)).toEqual({
      problem: `${notPrompt} is not a prompt: a rewind goes back to a prompt or to a state a rewind left.`,
    });
    // An entry id that happens to be all digits names the entry, not a number.
    const digits = new SessionTree(tree.entries.map((e) => (e.id === s.p3 ? { ...e, id: "12345678" } : e)));
    expect(findPoint(digits, "12345678")).toEqual({ point: expect.objectContaining({ id: "12345678" }) });
    expect(promptPreview(`  ${"x".repeat(100)}\nmore`)).toBe(`${"x".repeat(79)}…`);
  });
});

describe("a session with a further root (additionalDirectories)", () => {
  /** Two prompts: the first edits the workspace only; the second edits a file in each root and creates one in the second. */
  async function twoRoots() {
    const s = await session({ "a.txt": "a1\n", "stay.txt": "s\n" }, {}, { further: [{ "b.txt": "b1\n", "lib/keep.txt": "k\n" }] });
    const other = s.others[0]!;
    const p1 = await s.prompt("first: edit a", () => fsp.writeFile(path.join(s.root, "a.txt"), "a2\n"));
    const p2 = await s.prompt("second: both roots", async () => {
      await fsp.writeFile(path.join(s.root, "a.txt"), "a3\n");
      await fsp.writeFile(path.join(other, "b.txt"), "b2\n");
      await write(other, "gen/made.txt", "made\n");
    });
    return { ...s, other, p1, p2 };
  }

  it("records each root's snapshots and files in the turn's checkpoint entry", async () => {
    const s = await twoRoots();
    expect(s.said).toEqual([]);
    const end = s.recorded.at(-1)!;
    expect(end).toEqual({
      promptId: s.p2,
      before: s.recorded[2]!.before,
      after: expect.any(String),
      files: [{ path: "a.txt", action: "modify" }],
      roots: [{ root: s.other, before: expect.stringMatching(/^[0-9a-f]{40}$/), after: expect.any(String), files: expect.any(Array) }],
    });
    expect(end.roots![0]!.files).toEqual(
      expect.arrayContaining([
        { path: "b.txt", action: "modify" },
        { path: "gen/made.txt", action: "create" },
      ]),
    );
    expect(end.roots![0]!.files).toHaveLength(2);
    // The first prompt changed the workspace only: the further root's snapshots say it did not change.
    expect(s.recorded[1]!.roots).toEqual([{ root: s.other, before: end.roots![0]!.before, after: end.roots![0]!.before, files: [] }]);
    expect(rewindPoints(s.record.tree).map((p) => p.filesChanged)).toEqual([1, 3]);
  });

  it("a rewind puts both roots back as they were before the prompt, byte for byte; the next rewind knows both", async () => {
    const s = await twoRoots();
    const ck = await s.checkpoints();
    // Control: the pictures tell each root now from before the second prompt.
    expect(await picture(s.root)).not.toEqual(s.pictures[1]);
    expect(await picture(s.other)).not.toEqual(s.othersPictures[1]![0]);
    const dry = await rewindFiles(s.record.tree, s.p2, ck, { dryRun: true });
    expect(dry.files).toEqual(
      expect.arrayContaining([
        { path: "a.txt", action: "restore" },
        { path: path.join(s.other, "b.txt"), action: "restore" },
        { path: path.join(s.other, "gen/made.txt"), action: "delete" },
      ]),
    );
    expect(dry.files).toHaveLength(3);
    expect(await fsp.readFile(path.join(s.other, "b.txt"), "utf8")).toBe("b2\n");

    const done = await rewindFiles(s.record.tree, s.p2, ck);
    expect(done).toMatchObject({ applied: true, conflicts: [], failed: [] });
    expect(await picture(s.root)).toEqual(s.pictures[1]);
    expect(await picture(s.other)).toEqual(s.othersPictures[1]![0]);
    expect(await fsp.readFile(path.join(s.other, "b.txt"), "utf8")).toBe("b1\n");
    expect(done.record).toMatchObject({ rewind: s.p2, roots: [{ root: s.other, files: expect.any(Array) }] });
    s.record.append({ type: "checkpoint", promptId: s.record.leaf!, ...done.record! });
    const back = await rewindFiles(s.record.tree, s.p1, ck);
    expect(back.conflicts).toEqual([]);
    expect(await picture(s.root)).toEqual(s.pictures[0]);
    expect(await picture(s.other)).toEqual(s.othersPictures[0]![0]);
  });

  it("a file changed in the second root outside toolhost after the turn is a conflict there as in the workspace: kept, unless force", async () => {
    const s = await twoRoots();
    const ck = await s.checkpoints();
    const made = path.join(s.other, "gen/made.txt");
    await fsp.writeFile(made, "the user's own\n");
    const kept = await rewindFiles(s.record.tree, s.p2, ck);
    expect(kept.conflicts).toEqual([{ path: made, reason: "changed since the last checkpoint" }]);
    expect(kept.files.map((f) => f.path).sort()).toEqual([path.join(s.other, "b.txt"), "a.txt"].sort());
    expect(await fsp.readFile(made, "utf8")).toBe("the user's own\n");
    expect(await fsp.readFile(path.join(s.other, "b.txt"), "utf8")).toBe("b1\n");
    // Recorded as left alone: a conflict again at the next rewind; force overwrites it (removes the file the prompt made).
    s.record.append({ type: "checkpoint", promptId: s.record.leaf!, ...kept.record! });
    const again = await rewindFiles(s.record.tree, s.p2, ck, { dryRun: true });
    expect(again.conflicts).toEqual([{ path: made, reason: "changed since the last checkpoint" }]);
    const forced = await rewindFiles(s.record.tree, s.p2, ck, { force: true });
    expect(forced.files).toEqual([{ path: made, action: "delete" }]);
    expect(await picture(s.other)).toEqual(s.othersPictures[1]![0]);
    expect(await picture(s.root)).toEqual(s.pictures[1]);
  });

  it("an entry without roots (a session file from before) is the workspace's only: the further root goes back from the first entry that names it", async () => {
    const s = await twoRoots();
    const ck = await s.checkpoints();
    const strip = (keep: (e: TreeEntry) => boolean) =>
      new SessionTree(
        s.record.entries.map((e) => {
          if (e.type !== "checkpoint" || keep(e)) return e;
          const older = { ...e };
          delete older.roots;
          return older;
        }),
      );
    // No entry names a further root: the rewind is the workspace's alone, and says nothing of the other folder.
    const old = await rewindFiles(
      strip(() => false),
      s.p2,
      ck,
      { dryRun: true },
    );
    expect(old).toMatchObject({ files: [{ path: "a.txt", action: "restore" }], conflicts: [], failed: [] });
    // The first prompt's entries as an older toolhost wrote them, the second's with its roots.
    const mixed = strip((e) => e.type === "checkpoint" && e.promptId === s.p2);
    expect(planFilesRewind(mixed, s.p1, s.other).targetId).toBe(s.recorded[3]!.roots![0]!.before);
    const done = await rewindFiles(mixed, s.p1, ck);
    expect(done).toMatchObject({ conflicts: [], failed: [] });
    expect(await picture(s.root)).toEqual(s.pictures[0]);
    expect(await picture(s.other)).toEqual(s.othersPictures[0]![0]);
  });

  it("a rewind of the conversation alone carries the further root's files to the new branch: a later rewind from there restores them", async () => {
    const s = await twoRoots();
    const ck = await s.checkpoints();
    const point = s.record.tree.get(s.p2)!;
    expect(branchSummary(s.record.tree, point.parentId)).toContain(path.join(s.other, "gen/made.txt"));
    const carried = await conversationRewindRecord(s.record.tree, s.p2, ck);
    expect(carried).toMatchObject({ rewind: s.p2, files: [{ path: "a.txt", action: "modify" }], roots: [{ root: s.other }] });
    expect(carried!.roots![0]!.files).toHaveLength(2);
    const branch = s.record.append({ type: "branch", fromId: s.record.leaf!, summary: "left" }, point.parentId);
    s.record.append({ type: "checkpoint", promptId: branch, ...carried! });
    const back = await rewindFiles(s.record.tree, s.p1, ck);
    expect(back.conflicts).toEqual([]);
    expect(await picture(s.root)).toEqual(s.pictures[0]);
    expect(await picture(s.other)).toEqual(s.othersPictures[0]![0]);
  });

  it("a root the record names that is no root of the session now is not written: its files are listed as not restored", async () => {
    const s = await twoRoots();
    // The session opened again without its further root.
    const opened = await openWorkspaceCheckpoints({
      roots: [s.root],
      project: resolveWorkspace(s.root).projectFolder,
      session: "sess1",
      home: s.home,
    });
    if (!opened.available) throw new Error(opened.reason);
    try {
      const done = await rewindFiles(s.record.tree, s.p2, opened.checkpoints);
      const reason = `not restored: ${s.other} is not a root of this session now`;
      expect(done.failed).toEqual([
        { path: path.join(s.other, "b.txt"), reason },
        { path: path.join(s.other, "gen/made.txt"), reason },
      ]);
      expect(done.files).toEqual([{ path: "a.txt", action: "restore" }]);
      expect(await fsp.readFile(path.join(s.other, "b.txt"), "utf8")).toBe("b2\n");
      expect(await picture(s.root)).toEqual(s.pictures[1]);
    } finally {
      await opened.checkpoints.close();
    }
  });

  it("a further root whose checkpoints fail is that root's failure: the workspace's files are rewound and recorded", async () => {
    const s = await twoRoots();
    const ck = await s.checkpoints();
    await (await ck.find(s.other))!.close();
    const done = await rewindFiles(s.record.tree, s.p2, ck);
    expect(done.failed).toEqual([{ path: s.other, reason: "its files were not rewound: checkpoints: closed" }]);
    expect(done.files).toEqual([{ path: "a.txt", action: "restore" }]);
    expect(await picture(s.root)).toEqual(s.pictures[1]);
    expect(done.record).toMatchObject({ rewind: s.p2, files: [{ path: "a.txt", action: "modify" }] });
    expect(done.record!.roots).toBeUndefined();
  });

  it("a further root inside the workspace is checkpointed once, as a root of its own: the workspace's snapshots leave it out", async () => {
    const s = await session({ "a.txt": "a1\n", "sub/inner.txt": "i1\n" }, {}, { roots: (root) => [path.join(root, "sub")] });
    const sub = path.join(s.root, "sub");
    const p1 = await s.prompt("edit in both", async () => {
      await fsp.writeFile(path.join(sub, "inner.txt"), "i2\n");
      await write(sub, "new.txt", "n\n");
      await fsp.writeFile(path.join(s.root, "a.txt"), "a2\n");
    });
    const end = s.recorded.at(-1)!;
    expect(end.files).toEqual([{ path: "a.txt", action: "modify" }]);
    expect(end.roots).toEqual([
      {
        root: sub,
        before: expect.any(String),
        after: expect.any(String),
        files: [
          { path: "inner.txt", action: "modify" },
          { path: "new.txt", action: "create" },
        ],
      },
    ]);
    expect(rewindPoints(s.record.tree)[0]!.filesChanged).toBe(3);
    const done = await rewindFiles(s.record.tree, p1, await s.checkpoints());
    expect(done.files.map((f) => f.path).sort()).toEqual(["a.txt", path.join(sub, "inner.txt"), path.join(sub, "new.txt")].sort());
    expect(await picture(s.root)).toEqual(s.pictures[0]);
  });

  it("a further root that cannot be checkpointed is said once; the workspace's checkpoints go on", async () => {
    const s = await session({ "a.txt": "a1\n" }, {}, { roots: (root) => [`${root}-gone`] });
    const p1 = await s.prompt("one", () => fsp.writeFile(path.join(s.root, "a.txt"), "a2\n"));
    await s.prompt("two", () => fsp.writeFile(path.join(s.root, "a.txt"), "a3\n"));
    expect(s.said).toEqual([
      expect.stringMatching(/^No checkpoint of .*-gone is taken, so a rewind leaves the files there as they are: .*ENOENT/),
    ]);
    expect(s.recorded.map((r) => r.roots)).toEqual([undefined, undefined, undefined, undefined]);
    await rewindFiles(s.record.tree, p1, await s.checkpoints());
    expect(await picture(s.root)).toEqual(s.pictures[0]);
  });
});
