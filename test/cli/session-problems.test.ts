import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { Harness, useAcpTest } from "../acp/harness.js";
import { runCli } from "./harness.js";

// Issue 21 item 18: session files that cannot be opened (damaged, a newer format) were left out of
// `toolhost sessions list` and session/list without a word, and a copied file was listed under
// its header's id, which does not open it.

const t = useAcpTest({ "a.txt": "a\n" });

const GOOD = "00000000-good-4000-8000-000000000001";
const COPY = "00000000-copy-4000-8000-000000000002";
const DAMAGED = "00000000-damg-4000-8000-000000000003";
const NEWER = "00000000-newr-4000-8000-000000000004";

/** A saved session, a copy of it under another name, a damaged file and one of a newer format. */
async function fixtures(): Promise<string> {
  const store = new SessionStore(t.home);
  const writer = store.writer({ id: GOOD, cwd: t.ws });
  writer.append({ type: "title", id: "a1b2c3d4", parentId: null, at: new Date().toISOString(), title: "Good one" });
  writer.append({
    type: "message",
    id: "a1b2c3d5",
    parentId: "a1b2c3d4",
    at: new Date().toISOString(),
    message: { role: "user", content: "hi" },
  });
  writer.close();
  const dir = path.dirname(writer.file);
  await fsp.copyFile(writer.file, path.join(dir, `${COPY}.jsonl`));
  await fsp.writeFile(path.join(dir, `${DAMAGED}.jsonl`), '{"type":"sess\u0000\u0000 garbage\n{"type":"title"}\n');
  const header = { type: "session", format: 3, id: NEWER, cwd: t.ws, created: new Date().toISOString(), toolhost: "9.0.0" };
  await fsp.writeFile(path.join(dir, `${NEWER}.jsonl`), `${JSON.stringify(header)}\n`);
  return dir;
}

describe("session files that cannot be opened, and copied ones", () => {
  it("toolhost sessions list shows each with its problem, and a copy under its file name, which opens", async () => {
    const dir = await fixtures();
    const env = t.env();
    const listed = await runCli(["sessions", "list"], { cwd: t.ws, env });
    expect(listed.code).toBe(0);
    const line = (id: string) => listed.stdout.split("\n").find((l) => l.includes(id)) ?? "";
    expect(line(GOOD)).toContain("Good one");
    expect(line(COPY)).toContain("Good one");
    expect(line(COPY)).toContain(`its header names session ${GOOD}`);
    expect(line(DAMAGED)).toContain("cannot be opened: damaged");
    expect(line(DAMAGED)).toContain(path.join(dir, `${DAMAGED}.jsonl`));
    expect(line(NEWER)).toMatch(/cannot be opened: format 3, written by toolhost 9\.0\.0, is newer than this toolhost .* reads/);

    const shown = await runCli(["sessions", "show", COPY, "--json"], { cwd: t.ws, env });
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: COPY, messages: 1 });
  });

  it("session/list keeps the editor's list to sessions it can open and names the others on stderr; load says why", async () => {
    await fixtures();
    t.h = new Harness({ env: { TOOLHOST_HOME: t.home } });
    await t.h.initialize();
    const listed = await t.h.agent.request("session/list", { cwd: t.ws });
    expect(listed.sessions.map((s) => s.sessionId).sort()).toEqual([GOOD, COPY].sort());
    expect(t.h.stderr.join("")).toContain("session/list leaves out 2 session file(s)");
    expect(t.h.stderr.join("")).toContain(`${NEWER}.jsonl: format 3`);

    // The copy opens under the id it is listed with.
    await t.h.agent.request("session/resume", { sessionId: COPY, cwd: t.ws });
    await expect(t.h.agent.request("session/load", { sessionId: NEWER, cwd: t.ws, mcpServers: [] })).rejects.toMatchObject({
      message: expect.stringContaining("is newer than this toolhost"),
    });
  });
});
