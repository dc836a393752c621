import * as fsp from "node:fs/promises";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentSession, headlessFrontEnd } from "../../src/agent/session/agent-session.js";
import { newSessionRecorder } from "../../src/agent/record/session-recorder.js";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { SessionTools } from "../../src/agent/session/tools.js";
import { resolveWorkspace } from "../../src/config/workspace.js";
import { readTrust, trust } from "../../src/host/trust.js";
import { tempDir } from "../helpers.js";

// A session's workspace is resolved once, at its start, and every part of the session takes that
// one value: the toolset's trust check, the recorder's file in the store, the runtime's roots. To show nothing below resolves the folder again, the symlinked cwd is pointed
// elsewhere after the start: the session keeps the project it started in.

let home: string;
let real: string;
let other: string;
let link: string;
const saved = process.env.TOOLHOST_HOME;
const made: string[] = [];

beforeEach(async () => {
  home = await tempDir();
  process.env.TOOLHOST_HOME = home;
  real = await tempDir({ "a.txt": "in the project\n" });
  other = await tempDir({ "b.txt": "somewhere else\n" });
  const parent = await tempDir();
  link = path.join(parent, "project");
  await fsp.symlink(real, link);
  made.push(home, real, other, parent);
});
afterEach(async () => {
  if (saved === undefined) delete process.env.TOOLHOST_HOME;
  else process.env.TOOLHOST_HOME = saved;
  await Promise.all(made.splice(0).map((dir) => fsp.rm(dir, { recursive: true, force: true })));
});

const signal = new AbortController().signal;

describe("a session's workspace", () => {
  it("is resolved once: trust key, store folder and runtime roots stay those of the start after the link moves", async () => {
    const workspace = resolveWorkspace(link);
    await trust(workspace);
    expect(Object.keys((await readTrust(home)).projects)).toEqual([real]);

    // From here on the cwd's spelling leads elsewhere; the session was started in `real`.
    await fsp.rm(link);
    await fsp.symlink(other, link);

    const tools = await SessionTools.create(workspace);
    // Checked under the trust key of the start (the link now leads to a folder never trusted).
    expect(tools.toolset.report.trusted).toBe(true);
    expect(tools.toolset.report.cwd).toBe(link);

    const store = new SessionStore(home);
    const s = new AgentSession({ id: "ws1", tools, frontEnd: headlessFrontEnd(), recorder: newSessionRecorder(store, "ws1", workspace) });
    try {
      expect(s.workspace).toBe(workspace);
      expect(s.runtime.roots).toEqual([link]);
      // The runtime's real root is the start's: a file there reads; one where the link leads now is outside.
      expect((await s.callTool("read", { path: path.join(real, "a.txt") }, signal)).type).toBe("output");
      const moved = await s.callTool("read", { path: path.join(link, "b.txt") }, signal);
      expect(moved).toMatchObject({ type: "error", metadata: { error_code: "outside_root" } });
    } finally {
      await s.close();
    }
    // The recorder writes under the workspace's folder of the store, with the cwd as the client gave it.
    expect(await store.find("ws1")).toBe(path.join(store.root, workspace.projectFolder, "ws1.jsonl"));
    expect((await store.read("ws1"))?.header).toMatchObject({ id: "ws1", cwd: link });
  });

  it("is the same value in the toolset, the session and the store, for every root", async () => {
    const workspace = resolveWorkspace(link, [other]);
    const tools = await SessionTools.create(workspace);
    const store = new SessionStore(home);
    const s = new AgentSession({ id: "ws2", tools, frontEnd: headlessFrontEnd(), recorder: newSessionRecorder(store, "ws2", workspace) });
    try {
      expect(tools.workspace).toBe(workspace);
      expect(s.workspace).toBe(workspace);
      expect(s.runtime.roots).toEqual([link, other]);
      // A file of the additional root reads, by its own path and by its real one.
      expect((await s.callTool("read", { path: path.join(other, "b.txt") }, signal)).type).toBe("output");
      expect((await s.callTool("read", { path: path.join(link, "a.txt") }, signal)).type).toBe("output");
      await s.prompt({ text: "/help", content: () => "/help" });
    } finally {
      await s.close();
    }
    expect((await store.read("ws2"))?.header).toMatchObject({ cwd: link, additionalDirectories: [other] });
    expect((await store.list({ cwd: link })).sessions.map((row) => row.id)).toEqual(["ws2"]);
  });
});
