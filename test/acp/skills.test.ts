import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { Harness, lastUpdate, useAcpTest, messageText, textOf, prompt } from "./harness.js";

// Agent Skills through a real ACP client over stdio, the model a local fake server: the system
// prompt's list, the skill tool (body and files, then a read of a skill file), the slash command.

const REVIEW = `---
name: review-code
description: Review a change for bugs and style. Use when the user asks for a review.
---

# Reviewing

SKILL-BODY-MARKER: read checklist.md and apply every item.
`;

const t = useAcpTest(
  { "src/a.ts": "export const a = 1;\n" },
  {
    home: {
      "skills/review-code/SKILL.md": REVIEW,
      "skills/review-code/checklist.md": "CHECKLIST-MARKER: no TODOs left.\n",
      "skills/broken/SKILL.md": "---\nname: broken\n---\nno description\n",
    },
    userHome: {
      ".claude/skills/from-claude/SKILL.md": "---\nname: from-claude\ndescription: A skill from ~/.claude.\n---\nClaude body.\n",
    },
  },
);

async function start(script: FakeReply[]) {
  t.fake = await startFakeOpenAI({ script });
  t.h = new Harness({
    env: {
      TOOLHOST_MODEL: "openai-compatible/fake",
      TOOLHOST_BASE_URL: t.fake.url,
      TOOLHOST_HOME: t.home,
      HOME: t.userHome,
    },
  });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  await t.h.waitFor(() => t.h!.updatesOf(sessionId, "available_commands_update").length > 0);
  return { h: t.h, fake: t.fake, sessionId };
}

const systemOf = (body: FakeBody) => {
  const system = body.messages?.find((m) => m.role === "system");
  return typeof system?.content === "string" ? system.content : JSON.stringify(system?.content);
};
const toolResults = (body: FakeBody) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));
const userText = (body: FakeBody) => JSON.stringify((body.messages ?? []).filter((m) => m.role === "user").map((m) => m.content));

describe("skills in an ACP session", () => {
  it("lists skills in the system prompt, loads one on demand, and makes its files readable", async () => {
    const checklist = path.join(t.home, "skills/review-code/checklist.md");
    const { h, fake, sessionId } = await start([
      { toolCalls: [{ id: "c0", name: "skill", arguments: { name: "nope" } }] },
      { toolCalls: [{ id: "c1", name: "skill", arguments: { name: "review-code" } }] },
      { toolCalls: [{ id: "c2", name: "read", arguments: { path: checklist } }] },
      { text: "Reviewed." },
    ]);
    // The broken skill is reported at session start, never fatal.
    await h.waitFor(() => messageText(h, sessionId).includes("Some skills could not be loaded"));
    expect(messageText(h, sessionId)).toContain(`${path.join(t.home, "skills/broken/SKILL.md")}: the front matter has no \`description\``);

    expect(await prompt(h, sessionId, "Please review my change")).toMatchObject({ stopReason: "end_turn" });
    const [first, second, third, fourth] = fake.requests.map((r) => r.body);
    expect(fake.requests).toHaveLength(4);
    expect(first!.tools?.map((t) => t.function.name)).toContain("skill");
    expect(systemOf(first!)).toContain(
      "- review-code: Review a change for bugs and style. Use when the user asks for a review.\n- from-claude: A skill from ~/.claude.",
    );
    // The body is not in the prompt until the skill is loaded.
    expect(JSON.stringify(first!.messages)).not.toContain("SKILL-BODY-MARKER");

    // An unknown name is an error that lists the available skills.
    expect(toolResults(second!).at(-1)).toContain('There is no skill named "nope". Available skills: review-code, from-claude.');

    const loaded = toolResults(third!).at(-1) ?? "";
    expect(loaded).toContain("SKILL-BODY-MARKER");
    expect(loaded).toMatch(/files:\s*(\n\s*- )?\[?"?checklist\.md/);
    expect(loaded).not.toContain("description: Review");

    // The skill's folder joined the read scope: the read works, without asking.
    expect(toolResults(fourth!).at(-1)).toContain("CHECKLIST-MARKER");
    expect(h.permissionRequests).toEqual([]);

    const calls = h.updatesOf(sessionId, "tool_call");
    expect(calls.map((c) => [c.toolCallId, c.kind])).toEqual([
      ["call_1", "read"],
      ["call_2", "read"],
      ["call_3", "read"],
    ]);
    expect(lastUpdate(h, sessionId, "call_1").status).toBe("failed");
    expect(lastUpdate(h, sessionId, "call_2").status).toBe("completed");
    expect(textOf(lastUpdate(h, sessionId, "call_2"))).toContain("SKILL-BODY-MARKER");
    expect(lastUpdate(h, sessionId, "call_3").status).toBe("completed");
  });

  it("a skill's file stays unreadable until the skill is loaded", async () => {
    const checklist = path.join(t.home, "skills/review-code/checklist.md");
    const { h, fake, sessionId } = await start([
      { toolCalls: [{ id: "r1", name: "read", arguments: { path: checklist } }] },
      { text: "Could not." },
    ]);
    await prompt(h, sessionId, "read it");
    expect(toolResults(fake.requests[1]!.body).at(-1)).not.toContain("CHECKLIST-MARKER");
    expect(toolResults(fake.requests[1]!.body).at(-1)).toContain("outside_root");
  });

  it("each skill is a slash command that runs a model turn with the skill loaded", async () => {
    const checklist = path.join(t.home, "skills/review-code/checklist.md");
    const { h, fake, sessionId } = await start([
      { toolCalls: [{ id: "r1", name: "read", arguments: { path: checklist } }] },
      { text: "Reviewed src/a.ts." },
    ]);
    const commands = h.updatesOf(sessionId, "available_commands_update")[0]!.availableCommands;
    const command = commands.find((c) => c.name === "review-code");
    expect(command?.description).toBe("Skill: Review a change for bugs and style.");
    expect(commands.map((c) => c.name)).toContain("from-claude");

    expect(await prompt(h, sessionId, "/review-code src/a.ts")).toMatchObject({ stopReason: "end_turn" });
    expect(fake.requests).toHaveLength(2);
    const sent = userText(fake.requests[0]!.body);
    expect(sent).toContain("SKILL-BODY-MARKER");
    expect(sent).toContain("src/a.ts");
    expect(sent).toContain("checklist.md");
    // Its folder is readable, as after the skill tool.
    expect(toolResults(fake.requests[1]!.body).at(-1)).toContain("CHECKLIST-MARKER");
    expect(messageText(h, sessionId, "")).toContain("Reviewed src/a.ts.");
  });

  it("/reload picks up a new skill, and a tool's name wins over a skill's", async () => {
    const { h, sessionId } = await start([]);
    await fsp.mkdir(path.join(t.home, "skills/fresh"), { recursive: true });
    await fsp.writeFile(path.join(t.home, "skills/fresh/SKILL.md"), "---\nname: fresh\ndescription: A new skill.\n---\nFresh.\n");
    await fsp.mkdir(path.join(t.home, "skills/read"), { recursive: true });
    await fsp.writeFile(path.join(t.home, "skills/read/SKILL.md"), "---\nname: read\ndescription: Shadowed by the read tool.\n---\nNo.\n");
    await prompt(h, sessionId, "/reload");
    const updates = h.updatesOf(sessionId, "available_commands_update");
    expect(updates.length).toBeGreaterThan(1);
    const names = updates.at(-1)!.availableCommands.map((c) => c.name);
    expect(names).toContain("fresh");
    expect(names.filter((n) => n === "read")).toHaveLength(1);
    // The reload's answer repeats the skill problems, after the start message.
    expect(messageText(h, sessionId).split("Some skills could not be loaded")).toHaveLength(3);
  });
});
