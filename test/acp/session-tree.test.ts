import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { migrateV1, type V1Entry, type V1Header } from "../../src/agent/record/session-migrate.js";
import { SessionTree, type EntryData, type EntryOf, type TreeEntry } from "../../src/agent/record/session-format.js";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { projectFolderName } from "../../src/config/workspace.js";
import { startFakeOpenAI, type FakeReply } from "../fixtures/fake-openai.mjs";
import { closeAndCheck, Harness, messageText, useAcpTest, prompt } from "./harness.js";

// The session file's format 2 over the real ACP wire (issue 23 §1): a format-1 file written by the
// previous release loads, replays and continues, and is rewritten as format 2 on its first append;
// a file with a branch loads, replays and continues along its current path only.

const t = useAcpTest({ "src/a.ts": "export const a = 2;\n", "made.txt": "made\n" });

const FIXTURE = path.resolve(import.meta.dirname, "../fixtures/sessions-v1/three-prompts.jsonl");

/** The format-1 fixture placed in the test's toolhost home, its paths rewritten to the test's workspace. */
async function placeFixture(): Promise<{ id: string; file: string; header: V1Header; lines: V1Entry[] }> {
  const text = (await fsp.readFile(FIXTURE, "utf8")).replaceAll("/home/user/project", t.ws).replaceAll("/home/user/.toolhost", t.home);
  const [head, ...rest] = text.trim().split("\n");
  const header = JSON.parse(head!) as V1Header;
  const file = path.join(t.home, "sessions", projectFolderName(t.ws), `${header.id}.jsonl`);
  await fsp.mkdir(path.dirname(file), { recursive: true });
  await fsp.writeFile(file, text, { mode: 0o600 });
  return { id: header.id, file, header, lines: rest.map((l) => JSON.parse(l) as V1Entry) };
}

async function start(script: FakeReply[]): Promise<Harness> {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home } });
  await t.h.initialize();
  return t.h;
}

/** A second agent process on the same home. */
async function restart(): Promise<Harness> {
  await closeAndCheck(t.h);
  t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake!.url, TOOLHOST_HOME: t.home } });
  await t.h.initialize();
  return t.h;
}

/** The chat messages (no system prompt) of the model's last request: role and text. */
function lastHistory(): { role: string; text: string }[] {
  const messages = t.fake!.requests.at(-1)!.body.messages ?? [];
  return messages
    .filter((m) => m.role !== "system")
    .map((m) => ({ role: m.role, text: typeof m.content === "string" ? m.content : JSON.stringify(m.content ?? "") }));
}

describe("a format-1 session file of the previous release", () => {
  it("loads over the wire with its prompts, calls and texts replayed", async () => {
    const { id } = await placeFixture();
    const h = await start([]);
    const loaded = await h.agent.request("session/load", { sessionId: id, cwd: t.ws, mcpServers: [] });
    expect(loaded.modes?.currentModeId).toBe("full");
    expect(h.updatesOf(id, "user_message_chunk").map((u) => u.content)).toEqual([
      { type: "text", text: "What does src/a.ts export?" },
      { type: "text", text: "Change a to 2." },
      { type: "resource_link", uri: `file://${t.ws}/src/a.ts`, name: "a.ts" },
      { type: "text", text: "Make a file and remove notes." },
    ]);
    expect(h.updatesOf(id, "tool_call").map((c) => [c.toolCallId, c.title, c.kind])).toEqual([
      ["call_1", "Read src/a.ts", "read"],
      ["call_2", "Edit src/a.ts", "edit"],
      ["call_3", "echo made > made.txt && rm notes.txt", "execute"],
    ]);
    // Each call ends completed, and the edit shows its diff.
    for (const callId of ["call_1", "call_2", "call_3"]) {
      const updates = h.updatesOf(id, "tool_call_update").filter((u) => u.toolCallId === callId);
      expect(updates.at(-1)).toMatchObject({ status: "completed" });
    }
    const edit = h.updatesOf(id, "tool_call_update").filter((u) => u.toolCallId === "call_2");
    expect(JSON.stringify(edit)).toContain('"newText":"export const a = 2;\\n"');
    expect(messageText(h, id, "")).toBe("It exports a.Changed it.Done.");
    expect(h.updatesOf(id, "agent_thought_chunk").map((u) => u.content)).toEqual([{ type: "text", text: "Look first." }]);
    expect(h.updatesOf(id, "session_info_update").map((u) => u.title)).toEqual(["What does src/a.ts export?"]);
  });

  it("resumes and continues with its history; the next prompt rewrites the file as format 2, the old entries kept, the new ones after them", async () => {
    const { id, file, header, lines } = await placeFixture();
    const h = await start([{ toolCalls: [{ id: "c4", name: "read", arguments: { path: "made.txt" } }] }, { text: "Four." }]);
    const resumed = await h.agent.request("session/resume", { sessionId: id, cwd: t.ws });
    expect(resumed.modes?.currentModeId).toBe("full");
    await prompt(h, id, "And a fourth?");
    expect(messageText(h, id, "")).toBe("Four.");

    // The model got the whole format-1 history, then the new prompt.
    const v1Messages = lines.flatMap((l) => (l.type === "message" ? [l.message.role] : []));
    const sent = t.fake!.requests[0]!.body.messages!.filter((m) => m.role !== "system");
    expect(sent.map((m) => m.role)).toEqual([...v1Messages, "user"]);
    expect(JSON.stringify(sent)).toContain("It exports a.");
    expect(JSON.stringify(sent.at(-1))).toContain("And a fourth?");
    // Call numbering goes on after the file's: no call id the editor saw is reused.
    expect(h.updatesOf(id, "tool_call").map((c) => c.toolCallId)).toEqual(["call_4"]);

    // On disk now: format 2, the migrated entries as they were, the new ones chained after them.
    const text = await fsp.readFile(file, "utf8");
    const [head, ...rest] = text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(head).toEqual({ ...header, format: 2, ai: "6" });
    expect((await fsp.stat(file)).mode & 0o777).toBe(0o600);
    // No temporary file left beside it (the hold is the open session's).
    expect((await fsp.readdir(path.dirname(file))).sort()).toEqual([`${id}.hold`, `${id}.jsonl`]);
    const migrated = migrateV1(header, lines).entries;
    const entries = rest as unknown as TreeEntry[];
    expect(entries.slice(0, migrated.length)).toEqual(migrated);
    const added = entries.slice(migrated.length);
    expect(added[0]).toMatchObject({ type: "user", text: "And a fourth?", parentId: migrated.at(-1)!.id });
    added.forEach((e, i) => expect(e.parentId).toBe(i === 0 ? migrated.at(-1)!.id : added[i - 1]!.id));
    expect(added.map((e) => e.type)).toEqual([
      "user",
      "message",
      "tool_pending",
      "message",
      "tool_call",
      "tool_running",
      "tool_result",
      "message",
      "agent_text",
      "message",
      "turn_end",
    ]);
    expect(added.find((e): e is EntryOf<"tool_call"> => e.type === "tool_call")).toMatchObject({ seq: 4, info: { callId: "call_4" } });
    const stored = (await new SessionStore(t.home).read(id))!;
    expect(stored.migratedFrom).toBeUndefined();
    expect(stored.skippedLines).toBe(0);
    expect(stored.entries).toEqual(entries);

    // And it loads again, replaying the four prompts.
    const h2 = await restart();
    await h2.agent.request("session/load", { sessionId: id, cwd: t.ws, mcpServers: [] });
    expect(
      h2
        .updatesOf(id, "user_message_chunk")
        .filter((u) => u.content.type === "text")
        .map((u) => (u.content as { text: string }).text),
    ).toEqual(["What does src/a.ts export?", "Change a to 2.", "Make a file and remove notes.", "And a fourth?"]);
  });
});

/** A format-2 file written by hand: each entry under the one before it unless `parentId` says otherwise. */
function tree(steps: (EntryData & { id: string; parentId?: string | null })[]): TreeEntry[] {
  const at = "2026-11-27T10:00:00.000Z";
  const out: TreeEntry[] = [];
  for (const { id, parentId, ...data } of steps)
    out.push({ ...data, id, parentId: parentId === undefined ? (out.at(-1)?.id ?? null) : parentId, at } as TreeEntry);
  return out;
}

const turn = (n: string, question: string, answer: string): (EntryData & { id: string })[] => [
  { id: `${n}0000001`, type: "user", text: question, blocks: [{ type: "text", text: question }] },
  { id: `${n}0000002`, type: "message", message: { role: "user", content: [{ type: "text", text: question }] } },
  { id: `${n}0000003`, type: "message", message: { role: "assistant", content: [{ type: "text", text: answer }] } },
  { id: `${n}0000004`, type: "agent_text", text: answer },
  { id: `${n}0000005`, type: "turn_end", stopReason: "end_turn" },
];

describe("a session file with a branch", () => {
  it("loads and replays only its current path, and the model gets only that path's history", async () => {
    const id = "tree-session";
    const header = { type: "session", format: 2, id, cwd: t.ws, created: "2026-11-27T10:00:00.000Z", toolhost: "0.1.0", ai: "6" };
    const entries = tree([
      { id: "0000000a", type: "title", title: "First question" },
      ...turn("a", "First question", "First answer."),
      ...turn("b", "Abandoned question", "Abandoned answer."),
      // Rewound to before the abandoned prompt: the branch entry hangs under the first turn's end.
      { id: "0000000c", type: "branch", fromId: "b0000005", summary: "1 prompt: Abandoned question", parentId: "a0000005" },
      ...turn("d", "Second question", "Second answer."),
    ]);
    const file = path.join(t.home, "sessions", projectFolderName(t.ws), `${id}.jsonl`);
    await fsp.mkdir(path.dirname(file), { recursive: true });
    await fsp.writeFile(file, [header, ...entries].map((e) => `${JSON.stringify(e)}\n`).join(""));

    const h = await start([{ text: "Third answer." }]);
    await h.agent.request("session/load", { sessionId: id, cwd: t.ws, mcpServers: [] });
    expect(h.updatesOf(id, "user_message_chunk").map((u) => (u.content as { text: string }).text)).toEqual([
      "First question",
      "Second question",
    ]);
    expect(messageText(h, id, "")).toBe("First answer.Second answer.");

    await prompt(h, id, "Third question");
    const history = lastHistory();
    expect(history.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
    ["First question", "First answer.", "Second question", "Second answer.", "Third question"].forEach((text, i) =>
      expect(history[i]!.text).toContain(text),
    );
    expect(JSON.stringify(t.fake!.requests.at(-1)!.body)).not.toContain("Abandoned");

    // The new turn hangs under the current position; the abandoned branch is still in the file.
    const stored = (await new SessionStore(t.home).read(id))!;
    expect(stored.entries.slice(0, entries.length)).toEqual(entries);
    const added = stored.entries.slice(entries.length);
    expect(added[0]).toMatchObject({ type: "user", text: "Third question", parentId: "d0000005" });
    const tip = new SessionTree(stored.entries);
    expect(tip.leafId).toBe(added.at(-1)!.id);
    expect(tip.branches().map((b) => [b.tipId, b.summary])).toEqual([
      ["b0000005", "1 prompt: Abandoned question"],
      [added.at(-1)!.id, undefined],
    ]);
  });
});
