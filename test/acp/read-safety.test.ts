import { execFileSync } from "node:child_process";
import * as fsp from "node:fs/promises";
import path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { trust } from "../../src/host/trust.js";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { Harness, selected, useAcpTest } from "./harness.js";

// Files toolhost reads itself (AGENTS.md, SKILL.md, agent files, .mcp.json) over real stdio: a
// symlink out of the project never reaches the model, and a FIFO never hangs the session.

const SECRET = "SECRET-7f3a9c-never-send-me";
const front = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nBody of ${name}.\n`;

const t = useAcpTest({
  "src/a.ts": "export const a = 1;\n",
  // In-project files of each kind: they do reach the model, so the path a leak would take is live.
  ".toolhost/skills/good-skill/SKILL.md": front("good-skill", "GOOD-SKILL-DESCRIPTION"),
  ".toolhost/agents/good-agent.md": front("good-agent", "GOOD-AGENT-DESCRIPTION"),
});
let outside: string;

beforeEach(async () => {
  outside = await t.dir({
    "secret.txt": `${SECRET}\n`,
    "skill/SKILL.md": front("leak", SECRET),
    "agent.md": front("leak-agent", SECRET),
  });
});

/** A trusted project's session with a fake model; one prompt, answered. Returns every model request as text. */
async function promptOnce(): Promise<string> {
  await trust(t.ws, t.home);
  t.fake = await startFakeOpenAI({ script: [{ text: "Done." }] });
  t.h = new Harness({
    env: { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url },
    permission: () => selected("allow_once"),
  });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  const response = await t.h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] });
  expect(response.stopReason).toBe("end_turn");
  expect(t.fake.requests.length).toBeGreaterThan(0);
  return JSON.stringify(t.fake.requests.map((r) => r.body));
}

describe("files toolhost reads itself", () => {
  it("a symlinked AGENTS.md, SKILL.md or agent file leading out of the project never reaches the model", async () => {
    await fsp.symlink(path.join(outside, "secret.txt"), path.join(t.ws, "AGENTS.md"));
    await fsp.mkdir(path.join(t.ws, ".toolhost/skills/leak"), { recursive: true });
    await fsp.symlink(path.join(outside, "skill/SKILL.md"), path.join(t.ws, ".toolhost/skills/leak/SKILL.md"));
    await fsp.symlink(path.join(outside, "agent.md"), path.join(t.ws, ".toolhost/agents/leak-agent.md"));
    const sent = await promptOnce();
    expect(sent).toContain("GOOD-SKILL-DESCRIPTION");
    expect(sent).toContain("GOOD-AGENT-DESCRIPTION");
    expect(sent).not.toContain(SECRET);
    expect(sent).not.toContain("Project instructions");
    expect(t.h!.stderr.join("")).toMatch(/AGENTS\.md is not read: it leads to .*secret\.txt, outside/);
  });

  it("a symlinked CLAUDE.md that stays inside the project is read", async () => {
    await fsp.writeFile(path.join(t.ws, "docs.md"), "Use tabs, INSIDE-INSTRUCTIONS.\n");
    await fsp.symlink(path.join(t.ws, "docs.md"), path.join(t.ws, "CLAUDE.md"));
    expect(await promptOnce()).toContain("INSIDE-INSTRUCTIONS");
  });

  it("FIFOs named AGENTS.md, SKILL.md, an agent file and .mcp.json do not hang session/new or the prompt", async () => {
    execFileSync("mkfifo", [path.join(t.ws, "AGENTS.md")]);
    await fsp.mkdir(path.join(t.ws, ".toolhost/skills/pipe"), { recursive: true });
    execFileSync("mkfifo", [path.join(t.ws, ".toolhost/skills/pipe/SKILL.md")]);
    execFileSync("mkfifo", [path.join(t.ws, ".toolhost/agents/pipe.md")]);
    execFileSync("mkfifo", [path.join(t.ws, ".mcp.json")]);
    const sent = await promptOnce();
    expect(sent).toContain("GOOD-SKILL-DESCRIPTION");
    expect(sent).toContain("GOOD-AGENT-DESCRIPTION");
  });
});
