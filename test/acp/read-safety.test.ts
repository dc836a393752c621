import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import * as fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { trust } from "../../src/host/trust.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { tempDir } from "../helpers.js";
import { Harness, closeAndCheck, selected } from "./harness.js";

// Files toolhost reads itself (AGENTS.md, SKILL.md, agent files, .mcp.json) over real stdio: a
// symlink out of the project never reaches the model, and a FIFO never hangs the session.

const SECRET = "SECRET-7f3a9c-never-send-me";
const front = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nBody of ${name}.\n`;

let home: string;
let ws: string;
let outside: string;
let h: Harness | undefined;
let fake: Awaited<ReturnType<typeof startFakeOpenAI>> | undefined;

beforeEach(async () => {
  home = mkdtempSync(path.join(os.tmpdir(), "toolhost-home-"));
  ws = await tempDir({
    "src/a.ts": "export const a = 1;\n",
    // In-project files of each kind: they do reach the model, so the path a leak would take is live.
    ".toolhost/skills/good-skill/SKILL.md": front("good-skill", "GOOD-SKILL-DESCRIPTION"),
    ".toolhost/agents/good-agent.md": front("good-agent", "GOOD-AGENT-DESCRIPTION"),
  });
  outside = await tempDir({
    "secret.txt": `${SECRET}\n`,
    "skill/SKILL.md": front("leak", SECRET),
    "agent.md": front("leak-agent", SECRET),
  });
});

afterEach(async () => {
  await closeAndCheck(h);
  h = undefined;
  await fake?.close();
  fake = undefined;
  for (const dir of [ws, outside, home]) await fsp.rm(dir, { recursive: true, force: true });
});

/** A trusted project's session with a fake model; one prompt, answered. Returns every model request as text. */
async function promptOnce(): Promise<string> {
  await trust(ws, home);
  fake = await startFakeOpenAI({ script: [{ text: "Done." }] });
  h = new Harness({
    env: { TOOLHOST_HOME: home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: fake.url },
    permission: () => selected("allow_once"),
  });
  await h.initialize();
  const sessionId = await h.newSession(ws);
  const response = await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] });
  expect(response.stopReason).toBe("end_turn");
  expect(fake.requests.length).toBeGreaterThan(0);
  return JSON.stringify(fake.requests.map((r) => r.body));
}

describe("files toolhost reads itself", () => {
  it("a symlinked AGENTS.md, SKILL.md or agent file leading out of the project never reaches the model", async () => {
    await fsp.symlink(path.join(outside, "secret.txt"), path.join(ws, "AGENTS.md"));
    await fsp.mkdir(path.join(ws, ".toolhost/skills/leak"), { recursive: true });
    await fsp.symlink(path.join(outside, "skill/SKILL.md"), path.join(ws, ".toolhost/skills/leak/SKILL.md"));
    await fsp.symlink(path.join(outside, "agent.md"), path.join(ws, ".toolhost/agents/leak-agent.md"));
    const sent = await promptOnce();
    expect(sent).toContain("GOOD-SKILL-DESCRIPTION");
    expect(sent).toContain("GOOD-AGENT-DESCRIPTION");
    expect(sent).not.toContain(SECRET);
    expect(sent).not.toContain("Project instructions");
    expect(h!.stderr.join("")).toMatch(/AGENTS\.md is not read: it leads to .*secret\.txt, outside/);
  });

  it("a symlinked CLAUDE.md that stays inside the project is read", async () => {
    await fsp.writeFile(path.join(ws, "docs.md"), "Use tabs, INSIDE-INSTRUCTIONS.\n");
    await fsp.symlink(path.join(ws, "docs.md"), path.join(ws, "CLAUDE.md"));
    expect(await promptOnce()).toContain("INSIDE-INSTRUCTIONS");
  });

  it("FIFOs named AGENTS.md, SKILL.md, an agent file and .mcp.json do not hang session/new or the prompt", async () => {
    execFileSync("mkfifo", [path.join(ws, "AGENTS.md")]);
    await fsp.mkdir(path.join(ws, ".toolhost/skills/pipe"), { recursive: true });
    execFileSync("mkfifo", [path.join(ws, ".toolhost/skills/pipe/SKILL.md")]);
    execFileSync("mkfifo", [path.join(ws, ".toolhost/agents/pipe.md")]);
    execFileSync("mkfifo", [path.join(ws, ".mcp.json")]);
    const sent = await promptOnce();
    expect(sent).toContain("GOOD-SKILL-DESCRIPTION");
    expect(sent).toContain("GOOD-AGENT-DESCRIPTION");
  });
});
