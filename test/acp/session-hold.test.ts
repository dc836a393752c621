import { spawn } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { holdPathFor } from "../../src/agent/record/session-hold.js";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { runCli } from "../cli/harness.js";
import { CLI_PATH } from "../helpers.js";
import { closeAndCheck, Harness, messageText, useAcpTest } from "./harness.js";

// Issue 21 item 3: a session is held by one agent process at a time (a live chat, and a load or
// resume of it in another editor window, would both append to its file).

const t = useAcpTest({ "a.txt": "a\n" });
let other: Harness | undefined;

beforeEach(() =>
  t.defer(async () => {
    await closeAndCheck(other);
    other = undefined;
  }),
);

const env = () => ({ TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake!.url, TOOLHOST_HOME: t.home });
const prompt = (h: Harness, sessionId: string, text: string) =>
  h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

async function agent(): Promise<Harness> {
  const h = new Harness({ env: env() });
  await h.initialize();
  return h;
}

describe("one process holds a session", () => {
  it("a load or resume in a second process is refused naming the holder's pid; once closed there, it loads", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "one" }, { text: "two" }, { text: "three" }] });
    t.h = await agent();
    const sessionId = await t.h.newSession(t.ws);
    await prompt(t.h, sessionId, "first");
    const file = (await new SessionStore(t.home).find(sessionId))!;
    const size = (await fsp.stat(file)).size;
    expect(JSON.parse(await fsp.readFile(holdPathFor(file), "utf8"))).toMatchObject({ pid: t.h.child.pid });

    other = await agent();
    const refusal = { code: -32600, message: expect.stringContaining(`another toolhost process (pid ${t.h.child.pid}`) };
    await expect(other.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] })).rejects.toMatchObject(refusal);
    await expect(other.agent.request("session/resume", { sessionId, cwd: t.ws })).rejects.toMatchObject(refusal);
    // The second process wrote nothing to the file, and replayed nothing.
    expect((await fsp.stat(file)).size).toBe(size);
    expect(other.updates.filter((u) => u.sessionId === sessionId)).toEqual([]);
    // The holder goes on.
    await prompt(t.h, sessionId, "second");
    expect(messageText(t.h, sessionId, "")).toBe("onetwo");

    // Closed there: the hold is released, and the other process loads it and continues.
    await t.h.agent.request("session/close", { sessionId });
    await expect(fsp.stat(holdPathFor(file))).rejects.toThrow();
    await other.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    expect(JSON.parse(await fsp.readFile(holdPathFor(file), "utf8"))).toMatchObject({ pid: other.child.pid });
    await prompt(other, sessionId, "third");
    expect(messageText(other, sessionId, "")).toMatch(/three$/);
    // The process exits on stdin EOF: the hold goes with it.
    await closeAndCheck(other);
    other = undefined;
    await expect(fsp.stat(holdPathFor(file))).rejects.toThrow();
  });

  it("the hold of a process that died (kill -9) is taken over", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "one" }, { text: "two" }] });
    const first = await agent();
    const sessionId = await first.newSession(t.ws);
    await prompt(first, sessionId, "first");
    const file = (await new SessionStore(t.home).find(sessionId))!;
    const exited = new Promise((resolve) => first.child.once("exit", resolve));
    first.child.kill("SIGKILL");
    await exited;
    // Left behind by the dead process.
    expect(JSON.parse(await fsp.readFile(holdPathFor(file), "utf8"))).toMatchObject({ pid: first.child.pid });

    t.h = await agent();
    await t.h.agent.request("session/resume", { sessionId, cwd: t.ws });
    expect(JSON.parse(await fsp.readFile(holdPathFor(file), "utf8"))).toMatchObject({ pid: t.h.child.pid });
    await prompt(t.h, sessionId, "again");
    expect(messageText(t.h, sessionId, "")).toBe("two");
  });

  it("a delete from another process (an editor, the CLI) is refused while it is open, and goes through once closed", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "one" }] });
    t.h = await agent();
    const sessionId = await t.h.newSession(t.ws);
    await prompt(t.h, sessionId, "first");
    const file = (await new SessionStore(t.home).find(sessionId))!;
    const before = await fsp.readFile(file, "utf8");

    other = await agent();
    await expect(other.agent.request("session/delete", { sessionId })).rejects.toMatchObject({
      code: -32600,
      message: expect.stringContaining(`another toolhost process (pid ${t.h.child.pid}`),
    });
    const cli = await runCli(["sessions", "delete", sessionId], { cwd: t.ws, env: { ...process.env, ...env() } });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(`another toolhost process (pid ${t.h.child.pid}`);
    // Nothing was deleted: the file is whole and the holder keeps its hold.
    expect(await fsp.readFile(file, "utf8")).toBe(before);
    expect(JSON.parse(await fsp.readFile(holdPathFor(file), "utf8"))).toMatchObject({ pid: t.h.child.pid });

    // Closed there: the delete goes through, hold file and all.
    await t.h.agent.request("session/close", { sessionId });
    await expect(other.agent.request("session/delete", { sessionId })).resolves.toEqual({});
    await expect(fsp.stat(file)).rejects.toThrow();
    await expect(fsp.stat(holdPathFor(file))).rejects.toThrow();
  });

  it("a session made by session/new and never prompted loads in another process (acpx: sessions new, then prompt -s), listed from its first prompt", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "one" }] });
    const first = await agent();
    const sessionId = await first.newSession(t.ws);
    await first.agent.request("session/set_mode", { sessionId, modeId: "full" });
    // The process ends with the session never prompted, as acpx's `sessions new` does.
    await closeAndCheck(first);

    t.h = await agent();
    const listed = async () => (await t.h!.agent.request("session/list", { cwd: t.ws })).sessions.map((s) => s.sessionId);
    // No conversation yet: not in the list, so editors' histories get no empty rows.
    expect(await listed()).toEqual([]);
    const loaded = await t.h.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    expect(loaded.modes?.currentModeId).toBe("full");
    expect(t.h.updatesOf(sessionId, "user_message_chunk")).toEqual([]);
    expect((await prompt(t.h, sessionId, "first")).stopReason).toBe("end_turn");
    expect(messageText(t.h, sessionId, "")).toBe("one");
    expect(await listed()).toEqual([sessionId]);
  });

  it("a client that leaves right after session/new gets its session written, and nothing of it starts (ACP-SHUTDOWN-001)", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "one" }] });
    // A tool file of the user's that says when it is imported: a session that starts loads it.
    const imported = path.join(t.home, "imported.txt");
    await fsp.mkdir(path.join(t.home, "profiles", "default", "tools"), { recursive: true });
    await fsp.writeFile(
      path.join(t.home, "profiles", "default", "tools", "marker.ts"),
      `import { writeFileSync } from "node:fs";
import { defineTool, z } from "toolhost";
writeFileSync(${JSON.stringify(imported)}, "imported");
export default defineTool({ id: "marker", description: "Says it was imported", kind: "other", parameters: z.object({}), requires: {}, async execute() { return "ok"; } });
`,
    );
    // initialize and session/new, then the end of stdin as soon as the session is answered (acpx's `sessions new`).
    const child = spawn(process.execPath, [CLI_PATH], { env: { ...process.env, ...env() }, stdio: ["pipe", "pipe", "inherit"] });
    const send = (message: object) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
    let sessionId = "";
    let buffered = "";
    child.stdout.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let end = buffered.indexOf("\n"); end >= 0; end = buffered.indexOf("\n")) {
        const message = JSON.parse(buffered.slice(0, end)) as { id?: number; result?: { sessionId?: string } };
        buffered = buffered.slice(end + 1);
        if (message.id === 1) send({ id: 2, method: "session/new", params: { cwd: t.ws, mcpServers: [] } });
        if (message.id === 2) {
          sessionId = message.result?.sessionId ?? "";
          child.stdin.end();
        }
      }
    });
    send({ id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {}, clientInfo: { name: "t", version: "1" } } });
    expect(await new Promise((resolve) => child.on("exit", resolve))).toBe(0);
    expect(sessionId).not.toBe("");
    // Nothing of the session started: its tools were never loaded.
    await expect(fsp.stat(imported)).rejects.toThrow();
    // Its file is there, with no hold left: another process loads it and goes on.
    const file = (await new SessionStore(t.home).find(sessionId))!;
    await expect(fsp.stat(holdPathFor(file))).rejects.toThrow();
    t.h = await agent();
    await t.h.agent.request("session/load", { sessionId, cwd: t.ws, mcpServers: [] });
    expect((await prompt(t.h, sessionId, "first")).stopReason).toBe("end_turn");
    expect(messageText(t.h, sessionId, "")).toBe("one");
    // The control: a session that starts does import the tool file.
    await fsp.stat(imported);
  });
});
