import * as fsp from "node:fs/promises";
import path from "node:path";
import type { RequestPermissionRequest } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { isTrusted, trust } from "../../src/host/trust.js";
import { Harness, selected, useAcpTest, textOf, type PermissionHandler } from "./harness.js";

// The approval over the real wire: why it asks (in _meta.permission and in the call's content),
// "always" remembered as rules, and "always, for this project" written to the project's config.
// Every message is checked against the ACP schema (closeAndCheck).

const t = useAcpTest({ "a.txt": "a\n" });

async function start(permission: PermissionHandler) {
  t.h = new Harness({ permission, env: { TOOLHOST_HOME: t.home } });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  const bash = (command: string) =>
    t.h!.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `/bash ${command}` }] });
  return { h: t.h, sessionId, bash };
}

const meta = (r: RequestPermissionRequest | undefined) => (r?._meta as { permission?: { title: string; description: string } })?.permission;
const lastText = (r: RequestPermissionRequest | undefined) => {
  const block = r?.toolCall.content?.at(-1);
  return block?.type === "content" && block.content.type === "text" ? block.content.text : undefined;
};

describe("session/request_permission", () => {
  it("says why it asks, in _meta.permission and in the call's content; 'always' covers the parser's prefix", async () => {
    const { h, bash } = await start(() => selected("allow_always"));
    await bash("git status");
    expect(h.permissionRequests).toHaveLength(1);
    const request = h.permissionRequests[0];
    expect(request?.options.map((o) => o.optionId)).toEqual(["allow_once", "allow_always", "reject_once", "reject_always"]);
    expect(request?.options[1]?.name).toBe("Always allow `git status …` commands in this session");
    expect(meta(request)).toEqual({
      title: "Allow git status?",
      description: 'Why: no rule matched; ask mode asks before running commands. "Always" covers `git status …` commands.',
    });
    expect(lastText(request)).toBe("Why it asks: no rule matched; ask mode asks before running commands.");
    // The request with its _meta is valid ACP (every message is checked against the schema).
    expect(h.checker.seenMethods.has("session/request_permission")).toBe(true);
    expect(h.checker.problems).toEqual([]);
    await bash("git status --short");
    expect(h.permissionRequests).toHaveLength(1);
    h.permission = () => selected("reject_once");
    await bash("git statusfoo");
    expect(h.permissionRequests).toHaveLength(2);
  });

  it("'always' for a command without subcommands remembers the command name alone (issue 21)", async () => {
    const { h, bash } = await start(() => selected("allow_always"));
    await bash("echo hi");
    expect(h.permissionRequests).toHaveLength(1);
    expect(h.permissionRequests[0]?.options[1]?.name).toBe("Always allow `echo …` commands in this session");
    await bash("echo other words");
    expect(h.permissionRequests).toHaveLength(1);
  });

  it("offers 'always, for this project' in a trusted project and saves the rule there; the next call runs unasked", async () => {
    await fsp.mkdir(path.join(t.ws, ".toolhost"));
    const file = path.join(t.ws, ".toolhost", "config.json");
    await fsp.writeFile(file, JSON.stringify({ note: "kept", permissions: [{ permission: "read", pattern: "*", action: "allow" }] }));
    // Trust covers the project's files as they are: trusted after the config is written.
    await trust(t.ws, t.home);
    const { h, bash } = await start(() => selected("allow_always_project"));
    await bash("npm run lint --if-present");
    const request = h.permissionRequests[0];
    const option = request?.options.find((o) => o.optionId === "allow_always_project");
    expect(option).toEqual({
      optionId: "allow_always_project",
      kind: "allow_always",
      name: "Always allow `npm run lint …` commands in this project (saved to .toolhost/config.json)",
    });
    expect(JSON.parse(await fsp.readFile(file, "utf8"))).toEqual({
      note: "kept",
      permissions: [
        { permission: "read", pattern: "*", action: "allow" },
        { permission: "bash", pattern: "npm run lint", action: "allow" },
        { permission: "bash", pattern: "npm run lint *", action: "allow" },
      ],
    });
    h.permission = () => selected("reject_once");
    await bash("npm run lint --if-present --silent");
    expect(h.permissionRequests).toHaveLength(1);
    // toolhost's own write to the config is recorded in the project's trust: not a change to ask about.
    expect(await isTrusted(t.ws, t.home)).toBe(true);
  });

  it("a project config that is not valid JSON is left alone: the answer holds for the session, and the user is told", async () => {
    await fsp.mkdir(path.join(t.ws, ".toolhost"));
    const file = path.join(t.ws, ".toolhost", "config.json");
    await fsp.writeFile(file, "{ broken");
    await trust(t.ws, t.home);
    const { h, sessionId, bash } = await start(() => selected("allow_always_project"));
    await bash("git log -1");
    expect(h.permissionRequests).toHaveLength(1);
    expect(await fsp.readFile(file, "utf8")).toBe("{ broken");
    const said = h
      .updatesOf(sessionId, "agent_message_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""))
      .join("\n");
    expect(said).toContain(`The rule was not saved to ${file} (it is not valid JSON`);
    expect(said).toContain("it holds for this session only");
    await bash("git log -2");
    expect(h.permissionRequests).toHaveLength(1);
  });

  it("an untrusted project is not offered the project option", async () => {
    const { h, sessionId, bash } = await start(() => selected("allow_always_project"));
    await bash("true");
    expect(h.permissionRequests[0]?.options.map((o) => o.optionId)).not.toContain("allow_always_project");
    // Picking an option that was not offered counts as no answer: refused.
    const done = h.updatesOf(sessionId, "tool_call_update").at(-1);
    expect(done?.status).toBe("failed");
    expect(textOf(done!)).toMatch(/not answered/);
    await fsp.access(path.join(t.ws, ".toolhost")).then(
      () => expect.fail("no project config may be written"),
      () => undefined,
    );
  });
});
