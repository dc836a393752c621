import * as fsp from "node:fs/promises";
import path from "node:path";
import type { ContentBlock, PromptResponse } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { sleepMarker, survivors } from "../helpers.js";
import { Harness, selected, lastUpdate, textOf, messageText, useAcpTest } from "./harness.js";

// Issue 10's defects on the wire: each case failed before its fix.

const t = useAcpTest({ "src/a.ts": "export const a = 1;\n" });

async function start(options: ConstructorParameters<typeof Harness>[0] = {}) {
  t.h = new Harness(options);
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  return { h: t.h, sessionId };
}

const prompt = (h: Harness, sessionId: string, ...texts: string[]): Promise<PromptResponse> => {
  const blocks: ContentBlock[] = texts.map((text) => ({ type: "text", text }));
  return h.agent.request("session/prompt", { sessionId, prompt: blocks });
};

describe("a command's end as the editor sees it", () => {
  it("a non-zero exit ends the call failed, showing the exit code", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "/bash echo out; exit 3");
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.status).toBe("failed");
    expect(textOf(done)).toMatch(/out\n[\s\S]*exit code 3/);
    await prompt(h, sessionId, "/bash echo fine");
    const ok = h.updatesOf(sessionId, "tool_call")[1]!;
    expect(lastUpdate(h, sessionId, ok.toolCallId).status).toBe("completed");
  });

  for (const terminal of [false, true]) {
    it(`a cancelled command ends failed (terminal: ${terminal})`, async () => {
      const marker = sleepMarker();
      const { h, sessionId } = await start({ capabilities: { terminal }, permission: () => selected("allow_once") });
      const running = prompt(h, sessionId, `/bash sleep ${marker}`);
      await h.waitFor(async () => (await survivors(`sleep ${marker}`)).length > 0);
      await h.agent.notify("session/cancel", { sessionId });
      expect((await running).stopReason).toBe("cancelled");
      const call = h.updatesOf(sessionId, "tool_call")[0]!;
      expect(lastUpdate(h, sessionId, call.toolCallId).status).toBe("failed");
    });
  }

  it("long output shows its head and its tail: the last stderr line and the exit code", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "/bash seq 1 20000; echo LAST-STDERR-LINE >&2; exit 4");
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    const done = lastUpdate(h, sessionId, call.toolCallId);
    const text = textOf(done);
    expect(text).toMatch(/^`+console\n1\n2\n3\n/);
    expect(text).toMatch(/19999\n20000\n/);
    expect(text).toMatch(/LAST-STDERR-LINE\n\[exit code 4\]/);
    expect(text).toMatch(/… \(\d+ bytes? not shown; output shortened for display/);
    expect(Buffer.byteLength(text)).toBeLessThan(11 * 1024);
  });
});

describe("session lifecycle errors", () => {
  it("session/new refuses a cwd that does not exist or is a file", async () => {
    t.h = new Harness();
    await t.h.initialize();
    const missing = path.join(t.ws, "no/such/dir");
    await expect(t.h.agent.request("session/new", { cwd: missing, mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/does not exist/),
    });
    const file = path.join(t.ws, "src/a.ts");
    await expect(t.h.agent.request("session/new", { cwd: file, mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/not a directory/),
    });
    expect(await t.h.newSession(t.ws)).toBeTruthy();
  });

  it("session/close of an unknown id answers Resource not found on the wire, like every other method", async () => {
    // The SDK's client turns -32002 for session/close into success (as ACP recommends), so read the raw answers.
    t.h = new Harness();
    await t.h.initialize();
    const sessionId = await t.h.newSession(t.ws);
    await t.h.agent.request("session/close", { sessionId });
    t.h.sendRaw('{"jsonrpc":"2.0","id":911,"method":"session/close","params":{"sessionId":"nope"}}');
    t.h.sendRaw(`{"jsonrpc":"2.0","id":912,"method":"session/close","params":{"sessionId":"${sessionId}"}}`);
    t.h.sendRaw(`{"jsonrpc":"2.0","id":913,"method":"session/prompt","params":{"sessionId":"${sessionId}","prompt":[]}}`);
    const errors = () => t.h!.checker.messages.filter((m) => m.direction === "agent->client" && "error" in m.json);
    await t.h.waitFor(() => errors().length >= 3);
    const byId = new Map(errors().map((m) => [m.json.id, m.json.error as { code: number; message: string }]));
    for (const id of [911, 912, 913]) expect(byId.get(id)).toMatchObject({ code: -32002, message: expect.stringMatching(/not found/) });
  });
});

describe("prompt blocks", () => {
  it("a slash command is the first text block only: more text blocks are refused, nothing runs", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    const response = await prompt(h, sessionId, "/bash echo one > one.txt", "what does this project do?");
    expect(response.stopReason).toBe("end_turn");
    expect(h.updatesOf(sessionId, "tool_call")).toEqual([]);
    await expect(fsp.stat(path.join(t.ws, "one.txt"))).rejects.toThrow();
    expect(messageText(h, sessionId)).toMatch(/slash command must be the only text/i);
  });

  it("refuses audio, which the agent does not advertise", async () => {
    const { h, sessionId } = await start();
    await expect(
      h.agent.request("session/prompt", {
        sessionId,
        prompt: [
          { type: "text", text: "listen" },
          { type: "audio", data: Buffer.from("RIFF").toString("base64"), mimeType: "audio/wav" },
        ],
      }),
    ).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/audio/i) });
  });
});

describe("a message over 32 MiB", () => {
  it("is answered with an error, logged, and the agent keeps serving its sessions", async () => {
    const { h, sessionId } = await start();
    const huge = "x".repeat(40 * 1024 * 1024);
    h.sendRaw(
      `{"jsonrpc":"2.0","id":921,"method":"session/prompt","params":{"sessionId":"${sessionId}","prompt":[{"type":"text","text":"${huge}"}]}}`,
    );
    const answer = () => h.checker.messages.find((m) => m.direction === "agent->client" && m.json.id === 921);
    await h.waitFor(() => answer() !== undefined, 30_000);
    expect(answer()!.json.error).toMatchObject({ code: -32600, message: expect.stringMatching(/too large: \d+ bytes[\s\S]*32 MiB/) });
    await h.waitFor(() => /dropped a \d+-byte session\/prompt \(id 921\)/.test(h.stderr.join("")));
    // The same session still answers, and so does a new one.
    expect((await prompt(h, sessionId, "/tools")).stopReason).toBe("end_turn");
    expect(await h.newSession(t.ws)).toBeTruthy();
  }, 60_000);
});

describe("the profile option", () => {
  it("lists every profile in the session/new answer, as the update after loading does", async () => {
    // A user profile of its own, and a user folder with only tools/ (an extension of nothing: not a profile).
    const home = await t.dir({
      "profiles/mine/profile.json": JSON.stringify({ name: "mine", description: "Mine" }),
      "profiles/ghost/tools/x.ts": "export {};\n",
    });
    t.h = new Harness({ env: { TOOLHOST_HOME: home } });
    await t.h.initialize();
    const response = await t.h.agent.request("session/new", { cwd: t.ws, mcpServers: [] });
    const names = (options: typeof response.configOptions) => {
      const profile = options?.find((o) => o.id === "profile");
      return profile && "options" in profile ? (profile.options as { value: string }[]).map((o) => o.value) : [];
    };
    expect(names(response.configOptions)).toEqual(["default", "mine", "read-only", "release"]);
    await t.h.waitFor(() => t.h!.updatesOf(response.sessionId, "config_option_update").length > 0);
    expect(names(t.h.updatesOf(response.sessionId, "config_option_update")[0]!.configOptions)).toEqual(names(response.configOptions));
  });
});

describe("slash command friction", () => {
  it("a command without its arguments shows its usage, not schema errors", async () => {
    const { h, sessionId } = await start();
    await prompt(h, sessionId, "/read");
    await prompt(h, sessionId, "/edit");
    expect(h.updatesOf(sessionId, "tool_call")).toEqual([]);
    const text = messageText(h, sessionId);
    expect(text).toMatch(/\/read needs arguments: a path \(src\/a\.ts or src\/a\.ts:10-40\), or a JSON object/);
    expect(text).toMatch(/- `path` \(required\)/);
    expect(text).toMatch(/\/edit needs arguments: a JSON object/);
    expect(text).toMatch(/- `old_string` \(required\)/);
    expect(text).not.toMatch(/invalid arguments|expected string/i);
  });

  it("/read with a range that ends before it starts is refused with a clear message", async () => {
    const { h, sessionId } = await start();
    await prompt(h, sessionId, "/read src/a.ts:5-1");
    expect(h.updatesOf(sessionId, "tool_call")).toEqual([]);
    expect(messageText(h, sessionId)).toMatch(/src\/a\.ts:5-1: the range ends before it starts/);
  });
});

describe("permission rules at session start", () => {
  it('a bad "model" next to a deny rule: the editor is told the key, and the rule holds (issue 21)', async () => {
    const home = await t.dir({
      "config.json": JSON.stringify({ model: 42, permissions: [{ permission: "bash", pattern: "rm *", action: "deny" }] }),
    });
    await fsp.writeFile(path.join(t.ws, "keep"), "k");
    const { h, sessionId } = await start({ env: { TOOLHOST_HOME: home } });
    await h.waitFor(() => /"model" is ignored/.test(messageText(h, sessionId)));
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "/bash rm keep");
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(h, sessionId, call.toolCallId).status).toBe("failed");
    await expect(fsp.stat(path.join(t.ws, "keep"))).resolves.toBeTruthy();
  });

  it("says which rules of the user config were left out, and keeps serving", async () => {
    const home = await t.dir({
      "config.json": JSON.stringify({
        permissions: [
          { permission: "bash", pattern: "git push*", action: "deny" },
          { permission: "bash", action: "maybe" },
        ],
      }),
    });
    const { h, sessionId } = await start({ env: { TOOLHOST_HOME: home } });
    await h.waitFor(() => messageText(h, sessionId).includes("Permission rules left out"));
    expect(messageText(h, sessionId)).toMatch(/config\.json/);
    expect((await prompt(h, sessionId, "/tools")).stopReason).toBe("end_turn");
  });
});

describe("the workspace folder (issue 21)", () => {
  it("refuses / and system folders as cwd or additional directory, before and after the SDK loads", async () => {
    t.h = new Harness();
    await t.h.initialize();
    const h = t.h;
    await expect(h.agent.request("session/new", { cwd: "/", mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/root of the file system/),
    });
    await expect(h.agent.request("session/new", { cwd: t.ws, additionalDirectories: ["/usr"], mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
    });
    await h.newSession(t.ws);
    await expect(h.agent.request("session/new", { cwd: "/etc", mcpServers: [] })).rejects.toMatchObject({
      code: -32602,
      message: expect.stringMatching(/\/etc is a system folder/),
    });
  });

  it("the home folder itself is accepted, said at start, and every command asks whatever the mode", async () => {
    const { h, sessionId } = await start({ env: { HOME: t.ws } });
    await h.waitFor(() => messageText(h, sessionId).includes("whole home folder"));
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "/bash touch made-here");
    expect(h.permissionRequests).toHaveLength(1);
    await expect(fsp.stat(path.join(t.ws, "made-here"))).rejects.toThrow();
  });

  it("the home folder as an additional directory asks the same way", async () => {
    const home = await t.dir();
    const { h } = await start({ env: { HOME: home } });
    const { sessionId } = await h.agent.request("session/new", { cwd: t.ws, additionalDirectories: [home], mcpServers: [] });
    await h.waitFor(() => messageText(h, sessionId).includes("whole home folder"));
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await prompt(h, sessionId, "/bash touch made-here");
    expect(h.permissionRequests).toHaveLength(1);
    await expect(fsp.stat(path.join(t.ws, "made-here"))).rejects.toThrow();
  });
});
