import * as fs from "node:fs";
import path from "node:path";
import { isDeepStrictEqual } from "node:util";
import type { ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import {
  AI_MAJOR,
  branchesOf,
  childrenOf,
  currentLeaf,
  newEntryId,
  pathTo,
  SessionTree,
  type EntryData,
  type EntryOf,
  type TreeEntry,
} from "../../src/agent/record/session-format.js";
import { migrateV1, type V1Entry, type V1Header } from "../../src/agent/record/session-migrate.js";
import { restoredState } from "../../src/agent/record/session-restore.js";
import { readSessionFile } from "../../src/agent/record/session-store.js";

// Format 2 of the session file (issue 23): the migration of real format-1 files (written by the
// format-1 code; test/fixtures/sessions-v1/README.md says how) and the walk of the tree.

const FIXTURES = path.resolve(import.meta.dirname, "../fixtures/sessions-v1");

type SessionEntry = V1Entry;

/** A format-1 fixture as its lines read, not migrated: the header, the lines that parse, how many did not. */
async function fixture(name: string): Promise<{ header: V1Header; entries: V1Entry[]; skippedLines: number }> {
  const [head, ...lines] = (await fs.promises.readFile(path.join(FIXTURES, `${name}.jsonl`), "utf8")).split("\n");
  const entries: V1Entry[] = [];
  let skippedLines = 0;
  for (const line of lines.filter((l) => l !== "")) {
    try {
      entries.push(JSON.parse(line) as V1Entry);
    } catch {
      skippedLines++;
    }
  }
  return { header: JSON.parse(head!) as V1Header, entries, skippedLines };
}

/** A format-1 line's kind: its type, with the view's method or the turn's phase. */
function kindOf(entry: SessionEntry): string {
  if (entry.type === "view") return `view.${entry.call.method}`;
  if (entry.type === "turn") return `turn.${entry.phase}`;
  return entry.type;
}

function countBy<T>(items: readonly T[], key: (item: T) => string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] ?? 0) + 1;
  return counts;
}

const sameValue = isDeepStrictEqual;

/**
 * Where a format-1 line must show in format 2: the entry type, the part of that entry it fills
 * (`role`: a merged entry holds a record line and a view line), and what that entry must hold.
 */
function imageOf(entry: SessionEntry): { type: TreeEntry["type"]; role: string; holds: (e: TreeEntry) => boolean } {
  const [a, b, c, d] = entry.type === "view" ? entry.call.args : [];
  switch (kindOf(entry)) {
    case "message":
      return {
        type: "message",
        role: "one",
        holds: (e) => e.type === "message" && sameValue(e.message, (entry as { message: unknown }).message),
      };
    case "title":
      return { type: "title", role: "one", holds: (e) => e.type === "title" && e.title === (entry as { title: string }).title };
    case "setting": {
      const { name, value } = entry as { name: string; value: string };
      return { type: "setting", role: "one", holds: (e) => e.type === "setting" && e.name === name && e.value === value };
    }
    case "wired":
      return { type: "wired", role: "one", holds: (e) => e.type === "wired" && sameValue(e.ids, (entry as { ids: string[] }).ids) };
    case "turn.start": {
      const { prompt, blocks } = entry as { prompt?: string; blocks?: unknown[] };
      return { type: "user", role: "one", holds: (e) => e.type === "user" && e.text === (prompt ?? "") && sameValue(e.blocks, blocks) };
    }
    case "turn.end":
      return {
        type: "turn_end",
        role: "one",
        holds: (e) => e.type === "turn_end" && e.stopReason === (entry as { stopReason: string }).stopReason,
      };
    case "view.say":
      return { type: "notice", role: "one", holds: (e) => e.type === "notice" && e.text === a && e.failed === undefined };
    case "view.failed":
      return { type: "notice", role: "one", holds: (e) => e.type === "notice" && e.text === a && e.failed === true };
    case "view.text":
      return { type: "agent_text", role: "one", holds: (e) => e.type === "agent_text" && e.text === a };
    case "view.thought":
      return { type: "thought", role: "one", holds: (e) => e.type === "thought" && e.text === a };
    case "view.pending":
      return { type: "tool_pending", role: "one", holds: (e) => e.type === "tool_pending" && sameValue(e.info, a) };
    case "view.event":
      return { type: "tool_event", role: "one", holds: (e) => e.type === "tool_event" && e.callId === a && sameValue(e.event, b) };
    case "view.running":
      return { type: "tool_running", role: "one", holds: (e) => e.type === "tool_running" && e.callId === a };
    case "tool_start": {
      const start = entry as Extract<SessionEntry, { type: "tool_start" }>;
      return {
        type: "tool_call",
        role: "record",
        holds: (e) =>
          e.type === "tool_call" &&
          e.seq === start.seq &&
          e.info.callId === start.callId &&
          e.info.toolId === start.tool &&
          sameValue(e.info.args, start.input) &&
          e.info.sideEffect === start.sideEffect &&
          e.info.idempotent === start.idempotent,
      };
    }
    case "view.describe":
      return { type: "tool_call", role: "view", holds: (e) => e.type === "tool_call" && sameValue(e.info, a) };
    case "tool_end": {
      const end = entry as Extract<SessionEntry, { type: "tool_end" }>;
      return {
        type: "tool_result",
        role: "record",
        holds: (e) =>
          e.type === "tool_result" &&
          e.seq === end.seq &&
          e.callId === end.callId &&
          e.status === end.status &&
          e.errorCode === end.errorCode,
      };
    }
    case "view.done":
      return {
        type: "tool_result",
        role: "view",
        holds: (e) =>
          e.type === "tool_result" && e.callId === a && sameValue(e.envelope, b) && sameValue(e.info, c) && sameValue(e.display, d),
      };
    case "compaction": {
      const { summary, history } = entry as { summary?: string; history: unknown };
      return {
        type: "compaction",
        role: "record",
        holds: (e) => e.type === "compaction" && e.summary === summary && sameValue(e.history, history),
      };
    }
    case "view.compaction":
      return { type: "compaction", role: "view", holds: (e) => e.type === "compaction" && sameValue(e.event, a) };
  }
  throw new Error(`a format-1 line of no known kind: ${kindOf(entry)}`);
}

/**
 * The accounting of a migration: each format-1 line is matched, in order, to the format-2 entry
 * that holds what it held (a merged entry holds one record line and one view line); a line with no
 * such entry, or an entry that holds no line, is a problem. Returns the problems and the count of
 * matched lines by kind.
 */
function account(v1: readonly SessionEntry[], v2: readonly TreeEntry[]): { problems: string[]; matched: Record<string, number> } {
  const problems: string[] = [];
  const filled = v2.map(() => new Map<string, SessionEntry>());
  const matched: Record<string, number> = {};
  let from = 0;
  v1.forEach((entry, index) => {
    const image = imageOf(entry);
    let found = -1;
    for (let j = from; j < v2.length && found < 0; j++) {
      if (v2[j]!.type === image.type && !filled[j]!.has(image.role) && image.holds(v2[j]!)) found = j;
    }
    if (found < 0) {
      problems.push(`line ${index + 2} (${kindOf(entry)}) is in no entry`);
      return;
    }
    filled[found]!.set(image.role, entry);
    matched[kindOf(entry)] = (matched[kindOf(entry)] ?? 0) + 1;
    from = found;
  });
  v2.forEach((entry, j) => {
    const lines = [...filled[j]!.values()];
    if (lines.length === 0) problems.push(`entry ${entry.id} (${entry.type}) holds no format-1 line`);
    else if (!lines.some((line) => line.at === entry.at)) problems.push(`entry ${entry.id}'s time is none of its lines'`);
    // A tool_end alone: its envelope (or, cut, its head) is the result's.
    const end = filled[j]!.get("record");
    if (entry.type === "tool_result" && end?.type === "tool_end" && !filled[j]!.has("view")) {
      const kept = end.envelope as { head?: string };
      if (
        !sameValue(entry.envelope, kept) &&
        !(kept.head && JSON.stringify(entry.envelope).includes(JSON.stringify(kept.head).slice(1, -1)))
      ) {
        problems.push(`entry ${entry.id} lost its tool_end's envelope`);
      }
    }
  });
  return { problems, matched };
}

/** The model's history a format-1 file restores: its messages, a compaction resetting them. */
function historyV1(entries: readonly SessionEntry[]): ModelMessage[] {
  let messages: ModelMessage[] = [];
  for (const entry of entries) {
    if (entry.type === "message") messages.push(entry.message);
    if (entry.type === "compaction") messages = [...entry.history];
  }
  return messages;
}

/** The same from format 2: the messages on the path, a compaction with a history resetting them. */
function historyV2(path: readonly TreeEntry[]): ModelMessage[] {
  let messages: ModelMessage[] = [];
  for (const entry of path) {
    if (entry.type === "message") messages.push(entry.message);
    if (entry.type === "compaction" && entry.history) messages = [...entry.history];
  }
  return messages;
}

const only = <T extends TreeEntry["type"]>(entries: readonly TreeEntry[], type: T) =>
  entries.filter((e): e is EntryOf<T> => e.type === type);

const FIXTURE_NAMES = ["three-prompts", "compacted", "interrupted", "edge-cases", "edge-torn"];

describe("the migration of format-1 files", () => {
  it.each(FIXTURE_NAMES)("%s: every line is accounted for, in one linear branch, with the same history", async (name) => {
    const stored = await fixture(name);
    const v1: V1Entry[] = stored.entries;
    const { header, entries, skipped } = migrateV1(stored.header, v1);

    expect(header).toEqual({ ...stored.header, format: 2, ai: "6" });
    expect(skipped).toBe(0);
    const { problems, matched } = account(stored.entries, entries);
    expect(problems).toEqual([]);
    expect(matched).toEqual(countBy(stored.entries, kindOf));

    // Ids unique, each entry under the one before it: the path from the leaf is the whole file.
    expect(new Set(entries.map((e) => e.id)).size).toBe(entries.length);
    entries.forEach((entry, i) => expect(entry.parentId).toBe(i === 0 ? null : entries[i - 1]!.id));
    const tree = new SessionTree(entries);
    expect(tree.leafId).toBe(entries.at(-1)!.id);
    expect(tree.pathTo()).toEqual(entries);
    expect(tree.branches()).toEqual([{ tipId: entries.at(-1)!.id, forkId: entries.at(-1)!.id, length: 0 }]);

    // The history a restore starts from is the one format 1 gives.
    expect(historyV2(tree.pathTo())).toEqual(historyV1(stored.entries));
    // The store reads the file migrated, and a restore of it starts from that history.
    const read = (await readSessionFile(path.join(FIXTURES, `${name}.jsonl`)))!;
    // (Opened by its file name, it takes that name as its id.)
    expect(read).toMatchObject({ header: { ...header, id: name }, entries, skippedLines: stored.skippedLines, migratedFrom: 1 });
    const complete = stored.entries.at(-1)?.type === "turn";
    if (complete) expect(restoredState(read).messages).toEqual(historyV1(stored.entries));

    // Written as JSON and read back, nothing changes; a second migration gives the same ids.
    expect(entries.map((e) => JSON.parse(JSON.stringify(e)) as unknown)).toEqual(entries);
    expect(migrateV1(stored.header, v1)).toEqual({ header, entries, skipped });
  });

  it("keeps each prompt's text and blocks, each call's start, events, status and display", async () => {
    const stored = await fixture("three-prompts");
    const { entries } = migrateV1(stored.header, stored.entries);
    expect(only(entries, "user").map(({ text, blocks }) => ({ text, blocks }))).toEqual([
      { text: "What does src/a.ts export?", blocks: [{ type: "text", text: "What does src/a.ts export?" }] },
      {
        text: "Change a to 2.",
        blocks: [
          { type: "text", text: "Change a to 2." },
          { type: "resource_link", uri: "file:///home/user/project/src/a.ts", name: "a.ts" },
        ],
      },
      { text: "Make a file and remove notes.", blocks: [{ type: "text", text: "Make a file and remove notes." }] },
    ]);
    const calls = only(entries, "tool_call");
    expect(calls.map((c) => [c.seq, c.info.callId, c.info.toolId, c.info.title, c.info.sideEffect])).toEqual([
      [1, "call_1", "read", "Read src/a.ts", false],
      [2, "call_2", "edit", "Edit src/a.ts", true],
      [3, "call_3", "bash", "echo made > made.txt && rm notes.txt", true],
    ]);
    const results = only(entries, "tool_result");
    expect(results.map((r) => [r.seq, r.callId, r.status, r.envelope.type, r.display?.language])).toEqual([
      [1, "call_1", "completed", "output", undefined],
      [2, "call_2", "completed", "output", "diff"],
      [3, "call_3", "completed", "output", "console"],
    ]);
    expect(results[0]!.display).toEqual({ text: "1\texport const a = 1;", locations: [{ path: "/home/user/project/src/a.ts", line: 1 }] });
    expect(only(entries, "tool_event")).toMatchObject([{ callId: "call_2", event: { type: "diff", newText: "export const a = 2;\n" } }]);
    expect(only(entries, "thought").map((t) => t.text)).toEqual(["Look first."]);
    expect(only(entries, "setting")).toMatchObject([{ name: "mode", value: "full" }]);
    // A merged entry stands where its view line stood, and takes that line's number: tool_start (line 9) + describe (10).
    expect(calls[0]!.id).toBe("m10");
    expect(entries.find((e) => e.id === "m9")).toBeUndefined();
    expect(results[0]!.id).toBe("m13");
  });

  it("makes a compaction one entry with its shown event, summary and history", async () => {
    const stored = await fixture("compacted");
    const { entries } = migrateV1(stored.header, stored.entries);
    const compactions = only(entries, "compaction");
    expect(compactions.map((c) => c.event?.status)).toEqual(["in_progress", "completed"]);
    expect(compactions[0]).not.toHaveProperty("history");
    const recorded = stored.entries.find((e) => e.type === "compaction")!;
    expect(compactions[1]).toMatchObject({
      summary: "The user laid out a long plan; nothing done yet.",
      event: { id: "compaction_1", status: "completed", note: expect.stringContaining("Compacted the conversation") as unknown },
      history: recorded.history,
    });
    // The restore starts from the compaction's history: the long first prompt is gone.
    const history = historyV2(new SessionTree(entries).pathTo());
    expect(JSON.stringify(history)).not.toContain("step step");
    expect(history.at(-1)).toEqual({ role: "assistant", content: [{ type: "text", text: "Still here." }] });
  });

  it("keeps a turn cut mid-call: the started call, no result", async () => {
    const stored = await fixture("interrupted");
    expect(stored.skippedLines).toBe(1);
    const { entries } = migrateV1(stored.header, stored.entries);
    expect(entries.at(-1)).toMatchObject({ type: "tool_running", callId: "call_3" });
    expect(only(entries, "tool_call").at(-1)).toMatchObject({ seq: 3, info: { callId: "call_3", toolId: "bash", sideEffect: true } });
    expect(only(entries, "tool_result").map((r) => r.callId)).toEqual(["call_1", "call_2"]);
    expect(only(entries, "turn_end")).toHaveLength(2);
  });

  it("keeps slash-command calls, failed calls, notices and a result over the record's cap", async () => {
    const stored = await fixture("edge-cases");
    const { entries } = migrateV1(stored.header, stored.entries);
    expect(only(entries, "notice").map((n) => [n.text.slice(0, 20), n.failed])).toEqual([
      ["Slash commands run a", undefined],
      ["The model request fo", true],
    ]);
    // `/read src/a.ts` is never described: its tool_start is a call of its own, titled by its pending info.
    const callOf = (e: TreeEntry) => ("callId" in e ? e.callId : "info" in e ? e.info.callId : undefined);
    expect(entries.filter((e) => callOf(e) === "call_1").map((e) => e.type)).toEqual([
      "tool_pending",
      "tool_running",
      "tool_call",
      "tool_result",
    ]);
    expect(only(entries, "tool_call")[0]).toMatchObject({
      seq: 1,
      info: { callId: "call_1", toolId: "read", title: "Read src/a.ts", args: { path: "src/a.ts" } },
    });
    const results = only(entries, "tool_result");
    expect(results.map((r) => [r.callId, r.status, r.errorCode])).toEqual([
      ["call_1", "completed", undefined],
      ["call_2", "completed", undefined],
      ["call_3", "failed", "unknown_tool"],
      ["call_4", "failed", "invalid_arguments"],
    ]);
    // The big read keeps the done line's envelope (each string capped), not tool_end's cut JSON head.
    const big = results[1]!.envelope;
    expect(big.type === "output" && (big.data as { content: string }).content).toContain("the session record keeps the first 16384");
  });

  it("keeps a tool_end whose done line a crash cut: its own envelope, the head of a cut one", async () => {
    const stored = await fixture("edge-torn");
    expect(stored.skippedLines).toBe(1);
    const { entries } = migrateV1(stored.header, stored.entries);
    const last = entries.at(-1)!;
    expect(last).toMatchObject({ type: "tool_result", seq: 2, callId: "call_2", status: "completed", info: { title: "Read big.txt" } });
    const end = stored.entries.at(-1) as Extract<SessionEntry, { type: "tool_end" }>;
    const cut = end.envelope as { cut: string; head: string };
    expect(last.type === "tool_result" && last.envelope).toEqual({
      type: "output",
      data: { cut: cut.cut, head: cut.head },
      metadata: { duration_ms: 0, truncated: true },
    });
  });

  it("keeps lines that stand alone, and leaves out only lines no format-1 writer wrote", () => {
    const at = "2026-11-26T10:00:00.000Z";
    const info = { callId: "call_9", toolId: "write", kind: "edit", title: "Write x", locations: [], args: { path: "x" } };
    const aborted = { type: "error", error_text: "Cancelled", metadata: { duration_ms: 1, error_code: "aborted" } };
    const v1 = [
      { type: "wired", at, ids: ["mcp__a__b"] },
      { type: "view", at, call: { method: "describe", args: [info] } },
      { type: "view", at, call: { method: "done", args: ["call_9", aborted, info] } },
      { type: "compaction", at, summary: "S", history: [{ role: "user", content: "S" }] },
      { type: "view", at, call: { method: "compaction", args: [{ id: "c1", status: "failed", error: "no" }] } },
      {
        type: "tool_end",
        at,
        seq: 7,
        callId: "call_7",
        status: "failed",
        errorCode: "execution_failed",
        envelope: { type: "error", cut: "n, cut", head: "{x" },
      },
      { type: "view", at, call: { method: "shout", args: ["?"] } },
      { type: "telemetry", at },
    ] as unknown as V1Entry[];
    const { entries, skipped } = migrateV1({ type: "session", format: 1, id: "s", cwd: "/p", created: at, toolhost: "0.1.0" }, v1);
    expect(skipped).toBe(2);
    expect(entries.map(({ id, parentId, at: when, ...data }) => [id, parentId, when, data])).toEqual([
      ["m2", null, at, { type: "wired", ids: ["mcp__a__b"] }],
      ["m3", "m2", at, { type: "tool_call", seq: 0, info }],
      [
        "m4",
        "m3",
        at,
        { type: "tool_result", seq: 0, callId: "call_9", status: "cancelled", errorCode: "aborted", envelope: aborted, info },
      ],
      ["m5", "m4", at, { type: "compaction", summary: "S", history: [{ role: "user", content: "S" }] }],
      ["m6", "m5", at, { type: "compaction", event: { id: "c1", status: "failed", error: "no" } }],
      [
        "m7",
        "m6",
        at,
        {
          type: "tool_result",
          seq: 7,
          callId: "call_7",
          status: "failed",
          errorCode: "execution_failed",
          envelope: {
            type: "error",
            error_text: "{x\n… [n, cut]",
            metadata: { duration_ms: 0, truncated: true, error_code: "execution_failed" },
          },
          info: { callId: "call_7", toolId: "", kind: "other", title: "call_7", locations: [], args: null },
        },
      ],
    ]);
  });

  it("the accounting catches a migration that drops any one entry or changes one", async () => {
    for (const name of ["three-prompts", "compacted", "edge-cases"]) {
      const stored = await fixture(name);
      const { entries } = migrateV1(stored.header, stored.entries);
      expect(account(stored.entries, entries).problems).toEqual([]);
      for (let k = 0; k < entries.length; k++) {
        const doctored = entries.filter((_, i) => i !== k);
        expect(account(stored.entries, doctored).problems, `${name} without ${entries[k]!.id}`).not.toEqual([]);
      }
      const message = entries.findIndex((e) => e.type === "message");
      const changed = entries.map((e, i) => (i === message ? { ...e, message: { role: "user", content: "changed" } } : e)) as TreeEntry[];
      expect(account(stored.entries, changed).problems).not.toEqual([]);
    }
  });

  it("names the AI SDK major the installed `ai` package has", () => {
    const pkg = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../../node_modules/ai/package.json"), "utf8")) as {
      version: string;
    };
    expect(AI_MAJOR).toBe(pkg.version.split(".")[0]);
  });
});

/** A tree built by appending as a writer does: each entry under the position the entries so far give. */
function grow(steps: [string, EntryData][]): TreeEntry[] {
  const entries: TreeEntry[] = [];
  for (const [id, data] of steps) entries.push({ ...data, id, parentId: currentLeaf(entries), at: "2026-11-26T10:00:00.000Z" });
  return entries;
}

const userEntry = (text: string): EntryData => ({ type: "user", text });
const textEntry = (text: string): EntryData => ({ type: "agent_text", text });

describe("the session tree", () => {
  // a (prompt 1) → b → c; d (prompt 2) → e → f; then a rewind to before d: branch g under c, and h → i on it.
  const linear: [string, EntryData][] = [
    ["a", userEntry("one")],
    ["b", textEntry("1")],
    ["c", { type: "turn_end", stopReason: "end_turn" }],
    ["d", userEntry("two")],
    ["e", textEntry("2")],
    ["f", { type: "turn_end", stopReason: "end_turn" }],
  ];
  // A rewind appends its branch entry under the point rewound to, not under the position.
  const rewound = (): TreeEntry[] => [
    ...grow(linear),
    { type: "branch", id: "g", parentId: "c", at: "t", fromId: "f", summary: "prompt two" },
  ];

  it("a rewind's branch entry is the position; the next entries grow under it, the old branch stays", () => {
    const entries = rewound();
    entries.push({ type: "user", id: "h", parentId: currentLeaf(entries), at: "t", text: "three" });
    entries.push({ type: "agent_text", id: "i", parentId: currentLeaf(entries), at: "t", text: "3" });
    const tree = new SessionTree(entries);
    expect(tree.leafId).toBe("i");
    expect(tree.pathTo().map((e) => e.id)).toEqual(["a", "b", "c", "g", "h", "i"]);
    expect(tree.pathTo("f").map((e) => e.id)).toEqual(["a", "b", "c", "d", "e", "f"]);
    expect(tree.childrenOf("c").map((e) => e.id)).toEqual(["d", "g"]);
    expect(tree.childrenOf(null).map((e) => e.id)).toEqual(["a"]);
    expect(childrenOf(entries, "c").map((e) => e.id)).toEqual(["d", "g"]);
    expect(tree.branches()).toEqual([
      { tipId: "f", forkId: "c", length: 3, summary: "prompt two" },
      { tipId: "i", forkId: "i", length: 0 },
    ]);
    expect(pathTo(entries, "e").map((e) => e.id)).toEqual(["a", "b", "c", "d", "e"]);
  });

  it("a leaf entry moves the position and continues nothing; labels name entries", () => {
    const entries = rewound();
    const append = (id: string, data: EntryData) => entries.push({ ...data, id, parentId: currentLeaf(entries), at: "t" } as TreeEntry);
    append("h", userEntry("three"));
    append("j", { type: "label", targetId: "a", label: "start" });
    expect(currentLeaf(entries)).toBe("j");
    append("k", { type: "leaf", targetId: "e" });
    expect(entries.at(-1)!.parentId).toBe("j");
    expect(currentLeaf(entries)).toBe("e");
    expect(pathTo(entries, currentLeaf(entries)).map((e) => e.id)).toEqual(["a", "b", "c", "d", "e"]);
    // f continues e past the position; g → h → j left at c; k (the leaf entry) is no tip.
    expect(branchesOf(entries)).toEqual([
      { tipId: "f", forkId: "e", length: 1, summary: "prompt two" },
      { tipId: "j", forkId: "c", length: 3 },
    ]);
    append("l", textEntry("after the move"));
    expect(pathTo(entries, currentLeaf(entries)).map((e) => e.id)).toEqual(["a", "b", "c", "d", "e", "l"]);
    const tree = new SessionTree(entries);
    expect(tree.labels()).toEqual(new Map([["a", "start"]]));
    append("m", { type: "label", targetId: "a", label: "" });
    append("n", { type: "label", targetId: "b", label: "second" });
    expect(new SessionTree(entries).labels()).toEqual(new Map([["b", "second"]]));
  });

  it("a leaf entry to an id the file lacks leaves the position; a path to one is an error; no entries, no position", () => {
    const entries = grow([...linear, ["x", { type: "leaf", targetId: "nope" }]]);
    expect(currentLeaf(entries)).toBe("f");
    expect(() => pathTo(entries, "nope")).toThrow("No entry nope");
    expect(currentLeaf([])).toBeNull();
    expect(new SessionTree([]).pathTo()).toEqual([]);
    expect(branchesOf([])).toEqual([]);
  });

  it("a parentId that names a missing or a later entry (a damaged file) makes a root: no walk loops", () => {
    const entries: TreeEntry[] = [
      { type: "agent_text", id: "a", parentId: "c", at: "t", text: "names a later entry" },
      { type: "agent_text", id: "b", parentId: "a", at: "t", text: "" },
      { type: "agent_text", id: "c", parentId: "b", at: "t", text: "" },
      { type: "agent_text", id: "d", parentId: "gone", at: "t", text: "" },
      { type: "agent_text", id: "e", parentId: "d", at: "t", text: "" },
    ];
    const tree = new SessionTree(entries);
    expect(tree.pathTo("c").map((e) => e.id)).toEqual(["a", "b", "c"]);
    expect(tree.pathTo().map((e) => e.id)).toEqual(["d", "e"]);
    expect(tree.branches()).toEqual([
      { tipId: "c", forkId: null, length: 3 },
      { tipId: "e", forkId: "e", length: 0 },
    ]);
  });

  it("new entry ids are 8 hex characters that no entry has", () => {
    let asked = 0;
    const id = newEntryId({ has: () => ++asked <= 3 });
    expect(asked).toBe(4);
    expect(id).toMatch(/^[0-9a-f]{8}$/);
    const ids = new Set<string>();
    for (let i = 0; i < 2000; i++) ids.add(newEntryId(ids));
    expect(ids.size).toBe(2000);
  });

  it("walks 50,000 entries in one pass: the index, the path and the branches", () => {
    const n = 50_000;
    const entries: TreeEntry[] = [];
    let parentId: string | null = null;
    for (let i = 0; i < n; i++) {
      const id = `e${i}`;
      // Every 1,000th entry a rewind of 10 entries: the branch entry hangs under the entry 10 back.
      const branch = i % 1000 === 999;
      const parent = branch ? `e${i - 11}` : parentId;
      entries.push(
        branch
          ? { type: "branch", id, parentId: parent, at: "t", fromId: parentId!, summary: "s" }
          : { type: "agent_text", id, parentId: parent, at: "t", text: "x" },
      );
      parentId = id;
    }
    const started = performance.now();
    const tree = new SessionTree(entries);
    const path = tree.pathTo();
    const branches = tree.branches();
    const ms = performance.now() - started;
    expect(path).toHaveLength(n - 50 * 10);
    expect(path[0]!.id).toBe("e0");
    expect(branches).toHaveLength(51);
    // Linear work is a few milliseconds; a walk that went quadratic would take minutes.
    expect(ms).toBeLessThan(1000);
  });
});
