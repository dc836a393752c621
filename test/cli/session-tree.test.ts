import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SessionTree } from "../../src/agent/record/session-format.js";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { useAgentEnv } from "../helpers.js";
import { closeAndCheck, Harness } from "../acp/harness.js";
import { runCli } from "./harness.js";

// `toolhost sessions tree|rewind|fork ID` on a session an editor recorded (over the real ACP wire,
// a local model server): its prompts and the branch a rewind leaves, a rewind of the files and the
// conversation without an editor, forward again to the state it saved, a forced rewind that keeps
// a copy of what it overwrites, a fork; and `sessions delete` drops the session's checkpoints.

const t = useAgentEnv({ files: { "a.txt": "one\n", "gone.txt": "bye\n" } });

/** Two prompts: an edit, then a command that creates one file and deletes another; the session is closed after. */
async function recorded(): Promise<string> {
  t.fake = await startFakeOpenAI({
    script: [
      { toolCalls: [{ id: "e1", name: "edit", arguments: { path: "a.txt", old_string: "one", new_string: "two" } }] },
      { text: "Edited." },
      { toolCalls: [{ id: "b1", name: "bash", arguments: { command: "printf 'new\\n' > made.txt && rm gone.txt" } }] },
      { text: "Ran it." },
    ],
  });
  const h = new Harness({ env: { TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url, TOOLHOST_HOME: t.home } });
  try {
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    for (const text of ["edit a", "make and remove", "/label keep-me"])
      await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
    return sessionId;
  } finally {
    await closeAndCheck(h);
  }
}

const sessions = (args: string[]) => runCli(["sessions", ...args], { cwd: t.ws, env: t.env() });

describe("toolhost sessions tree, rewind and fork", () => {
  // A recorded session and a dozen CLI runs: over 30 s on a busy two-core machine.
  it(
    "shows the tree, rewinds without an editor (dry run first), goes forward again, forces with a copy kept, forks, and delete drops the checkpoints",
    { timeout: 90_000 },
    async () => {
      const id = await recorded();
      expect(await fsp.readFile(path.join(t.ws, "made.txt"), "utf8")).toBe("new\n");
      const tree = await sessions(["tree", id]);
      expect(tree.code).toBe(0);
      expect(tree.stdout).toMatch(/^ +1 {2}[0-9a-f]{8} {2}\S+ \S+ {2}edit a {2}1 file changed$/m);
      expect(tree.stdout).toMatch(/^ +2 {2}[0-9a-f]{8} {2}\S+ \S+ {2}make and remove {2}2 files changed {2}\[keep-me\]$/m);

      const dry = await sessions(["rewind", id, "--to", "2", "--dry-run"]);
      expect(dry).toMatchObject({ code: 0 });
      expect(dry.stdout).toContain(
        'A rewind to prompt 2 ("make and remove") would: Files: 1 deleted file to be brought back, 1 created file to be removed.',
      );
      // Each file, with what would happen to it.
      expect(dry.stdout).toContain("\n  bring back gone.txt\n  remove made.txt\n");
      expect(await fsp.readFile(path.join(t.ws, "made.txt"), "utf8")).toBe("new\n");

      const done = await sessions(["rewind", id, "--to", "2"]);
      expect(done.code).toBe(0);
      expect(done.stdout).toMatch(/^The conversation is back to before prompt 2/);
      await expect(fsp.stat(path.join(t.ws, "made.txt"))).rejects.toThrow();
      expect(await fsp.readFile(path.join(t.ws, "gone.txt"), "utf8")).toBe("bye\n");
      expect(await fsp.readFile(path.join(t.ws, "a.txt"), "utf8")).toBe("two\n");
      expect(done.stdout).toContain("The state before this rewind is saved as point 2: a rewind to it comes back.");
      const after = await sessions(["tree", id]);
      // Prompt 2 is no longer on the path; the state the rewind left is point 2.
      expect(after.stdout).toMatch(/^ +2 {2}[0-9a-f]{8} {2}\S+ \S+ {2}saved: before rewinding both to "make and remove"$/m);
      expect(after.stdout).toMatch(
        /Branches left by rewinds[^\n]*\n {2}from [0-9a-f]{8}: 1 prompt left: "make and remove"; files changed: gone\.txt, made\.txt\n {8}[0-9a-f]{8} .* make and remove {2}\[keep-me\]/,
      );

      // Forward again: back to the saved state, the newest prompt's changes and its conversation with it.
      const forward = await sessions(["rewind", id, "--to", "2"]);
      expect(forward.code).toBe(0);
      expect(forward.stdout).toMatch(/^The conversation is back to the state saved at .* \(point 2, before a rewind\)/);
      expect(await fsp.readFile(path.join(t.ws, "made.txt"), "utf8")).toBe("new\n");
      await expect(fsp.stat(path.join(t.ws, "gone.txt"))).rejects.toThrow();
      expect((await sessions(["tree", id])).stdout).toMatch(
        /^ +2 {2}[0-9a-f]{8} {2}\S+ \S+ {2}make and remove {2}2 files changed {2}\[keep-me\]$/m,
      );

      // force: a file changed outside toolhost is copied aside before it is overwritten, and the message says where.
      await fsp.writeFile(path.join(t.ws, "made.txt"), "my own words\n");
      const conflict = await sessions(["rewind", id, "--to", "2", "--files"]);
      expect(conflict.stdout).toContain("made.txt (changed since the last checkpoint); force overwrites them.");
      expect(await fsp.readFile(path.join(t.ws, "made.txt"), "utf8")).toBe("my own words\n");
      const forced = await sessions(["rewind", id, "--to", "2", "--files", "--force", "--json"]);
      expect(forced.code).toBe(0);
      const { kept, message } = JSON.parse(forced.stdout) as { kept: string; message: string };
      expect(message).toContain(
        `Overwritten although changed outside toolhost (force): made.txt (changed since the last checkpoint); what they were just before is kept in ${kept}.`,
      );
      await expect(fsp.stat(path.join(t.ws, "made.txt"))).rejects.toThrow();
      expect(await fsp.readFile(path.join(kept, "made.txt"), "utf8")).toBe("my own words\n");

      // Usage problems: exit 2 without --to, 1 for a prompt that is not there.
      expect((await sessions(["rewind", id])).code).toBe(2);
      const missing = await sessions(["rewind", id, "--to", "9"]);
      expect(missing).toMatchObject({ code: 1, stderr: expect.stringContaining("There is no prompt 9: the prompts are 1 to 6.") });

      const forked = await sessions(["fork", id, "--at", "1", "--json"]);
      expect(forked.code).toBe(0);
      const forkId = (JSON.parse(forked.stdout) as { id: string }).id;
      const store = new SessionStore(t.home);
      const fork = (await store.read(forkId))!;
      const original = (await store.read(id))!;
      const firstTurn = new SessionTree(original.entries).pathTo().filter((e) => e.type !== "branch" && e.type !== "checkpoint");
      expect(fork.header.forkedFrom?.session).toBe(id);
      expect(fork.entries.map((e) => e.id)).toEqual(expect.arrayContaining(firstTurn.slice(0, 3).map((e) => e.id)));
      expect((await sessions(["tree", forkId])).stdout).toContain(`Forked from ${id} at `);

      // delete takes the session's checkpoints with it (the fork keeps the ones it copied).
      const project = path.basename(path.dirname(original.file));
      const refs = (session: string) =>
        execFileSync(
          "git",
          ["--git-dir", path.join(t.home, "checkpoints", project), "for-each-ref", "--format=%(refname)", `refs/toolhost/${session}/`],
          {
            encoding: "utf8",
          },
        ).trim();
      expect(refs(id)).not.toBe("");
      expect((await sessions(["delete", id])).code).toBe(0);
      expect(refs(id)).toBe("");
      expect(refs(forkId)).not.toBe("");
    },
  );
});
