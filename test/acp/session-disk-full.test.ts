import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { closeAndCheck, Harness, messageText, useAcpTest } from "./harness.js";

// Issue 21 item 20: a full disk stopped a session's recording with a line on stderr only. The
// editor is told once, and the session goes on.

const t = useAcpTest({});
let mounted = false;

beforeEach(() => {
  // A tiny tmpfs as ~/.toolhost, where the test can mount one (root); else /dev/full stands in.
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", t.home], { stdio: "ignore" });
    mounted = true;
  } catch {
    mounted = false;
  }
  // Before the folder goes: the agent writing to it, then the mount.
  t.defer(async () => {
    await closeAndCheck(t.h);
    t.h = undefined;
    if (mounted) execFileSync("umount", [t.home]);
  });
});

/** Fills the file system under `dir` to the last byte. */
async function fill(dir: string): Promise<void> {
  const handle = await fsp.open(path.join(dir, "filler"), "w");
  try {
    for (const size of [64 * 1024, 4096, 1]) {
      for (;;) {
        try {
          const { bytesWritten } = await handle.write(Buffer.alloc(size, 120));
          if (bytesWritten < size) break;
        } catch {
          break;
        }
      }
    }
  } finally {
    await handle.close().catch(() => {});
  }
}

const NOTICE = "Saving this session stopped";

describe("a session whose file cannot be written", () => {
  it("tells the editor exactly once and goes on", async () => {
    t.fake = await startFakeOpenAI({ script: [{ text: "one" }, { text: "two" }, { text: "three" }, { text: "four" }] });
    t.h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home } });
    await t.h.initialize();
    const h = t.h;
    const sessionId = await h.newSession(t.ws);
    const file = new SessionStore(t.home).fileFor(sessionId, t.ws);
    // Without a tmpfs: the file is /dev/full from the start (every write fails ENOSPC).
    if (!mounted) {
      await fsp.mkdir(path.dirname(file), { recursive: true });
      await fsp.symlink("/dev/full", file);
    }
    const prompt = (text: string) => h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
    await prompt("first");
    if (mounted) {
      expect((await fsp.readFile(file, "utf8")).split("\n").length).toBeGreaterThan(3);
      await fill(t.home);
    }
    // Long prompts: past whatever is left of the file's last page.
    const answers = [await prompt(`second ${"x".repeat(20_000)}`), await prompt(`third ${"y".repeat(20_000)}`)];
    expect(answers.map((a) => a.stopReason)).toEqual(["end_turn", "end_turn"]);
    await h.waitFor(() => messageText(h, sessionId).includes(NOTICE));
    expect(messageText(h, sessionId, "")).toMatch(/three/);
    // A later prompt brings no second notice (the one above was the only one, whenever it came).
    await prompt("fourth");
    const notices = h
      .updatesOf(sessionId, "agent_message_chunk")
      .filter((u) => u.content.type === "text" && u.content.text.includes(NOTICE));
    expect(notices).toHaveLength(1);
    expect(notices[0]!.content.type === "text" && notices[0]!.content.text).toMatch(/ENOSPC|no space/i);
    expect(h.stderr.join("")).toContain(`recording session ${sessionId} stopped`);
  });
});
