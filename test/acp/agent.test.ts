import { readFileSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";

import { describe, expect, it } from "vitest";
import { sleepMarker, survivors } from "../helpers.js";
import { Harness, selected, textOf, lastUpdate, useAcpTest } from "./harness.js";

const t = useAcpTest({
  "src/a.ts": "export const a = 1; // TODO: rename\n",
  "src/b.ts": "export const b = 2;\n",
});

async function start(options: ConstructorParameters<typeof Harness>[0] = {}) {
  t.h = new Harness(options);
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  return { h: t.h, sessionId };
}

describe("initialize and sessions", () => {
  it("answers protocol version 1 whatever the client asks, with honest capabilities", async () => {
    t.h = new Harness();
    const response = await t.h.agent.request("initialize", { protocolVersion: 7, clientCapabilities: {} });
    expect(response.protocolVersion).toBe(1);
    // No terminal login for a client that cannot run one (test/acp/auth.test.ts): the agent method alone.
    expect(response.authMethods?.map((m) => m.id)).toEqual(["saved-login"]);
    const { version } = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string };
    expect(response.agentInfo).toEqual({ name: "toolhost", title: "toolhost", version });
    expect(response.agentCapabilities?.promptCapabilities).toMatchObject({ image: true, embeddedContext: true });
  });

  it("refuses a relative cwd and offers modes, config options and commands", async () => {
    t.h = new Harness();
    await t.h.initialize();
    await expect(t.h.agent.request("session/new", { cwd: "relative/dir", mcpServers: [] })).rejects.toMatchObject({ code: -32602 });
    const response = await t.h.agent.request("session/new", { cwd: t.ws, mcpServers: [] });
    expect(response.modes?.currentModeId).toBe("ask");
    expect(response.modes?.availableModes.map((m) => m.id)).toEqual(["read-only", "ask", "accept-edits", "full"]);
    expect(response.configOptions?.[0]).toMatchObject({ id: "mode", category: "mode", currentValue: "ask" });
    await t.h.waitFor(() => t.h!.updatesOf(response.sessionId, "available_commands_update").length > 0);
    const names = t.h.updatesOf(response.sessionId, "available_commands_update")[0]!.availableCommands.map((c) => c.name);
    expect(names).toEqual(expect.arrayContaining(["read", "grep", "glob", "edit", "write", "bash", "todo", "tools", "help"]));
  });

  it("answers a plain prompt with how to run tools, and /help and /tools", async () => {
    const { h, sessionId } = await start();
    expect((await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "hello" }] })).stopReason).toBe("end_turn");
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/tools" }] });
    const text = h
      .updatesOf(sessionId, "agent_message_chunk")
      .map((u) => (u.content.type === "text" ? u.content.text : ""))
      .join("\n");
    expect(text).toMatch(/Slash commands run tools directly/);
    expect(text).toMatch(/\| grep \| search \| builtin \|/);
  });
});

describe("slash commands run tools through the pipeline", () => {
  it("/grep and /read report kind, title, locations and results", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/grep TODO" }] });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/read src/a.ts" }] });
    const calls = h.updatesOf(sessionId, "tool_call");
    expect(calls.map((c) => [c.name, c.kind, c.status])).toEqual([
      ["grep", "search", "pending"],
      ["read", "read", "pending"],
    ]);
    expect(calls[0]!.title).toMatch(/grep "TODO"/);
    expect(calls[1]!.title).toMatch(/Read src\/a\.ts/);
    expect(calls[1]!.locations).toEqual([{ path: path.join(t.ws, "src/a.ts"), line: 1 }]);
    const grepDone = lastUpdate(h, sessionId, calls[0]!.toolCallId);
    expect(grepDone.status).toBe("completed");
    expect(textOf(grepDone)).toMatch(/src\/a\.ts:1: export const a = 1; \/\/ TODO/);
    const readDone = lastUpdate(h, sessionId, calls[1]!.toolCallId);
    expect(textOf(readDone)).toMatch(/export const a = 1/);
    expect(readDone.rawOutput).toMatchObject({ type: "output" });
    expect(h.permissionRequests).toEqual([]);
  });

  it("reports a failed call for bad JSON arguments and schema failures", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: '/read {"path": 5}' }] });
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.status).toBe("failed");
    expect(textOf(done)).toMatch(/invalid arguments/);
  });

  it("/edit asks with the diff and four scoped options; reject writes nothing", async () => {
    const { h, sessionId } = await start();
    const response = await h.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: '/edit {"path":"src/a.ts","old_string":"= 1","new_string":"= 42"}' }],
    });
    expect(response.stopReason).toBe("end_turn");
    expect(h.permissionRequests).toHaveLength(1);
    const request = h.permissionRequests[0]!;
    expect(request.options.map((o) => o.kind)).toEqual(["allow_once", "allow_always", "reject_once", "reject_always"]);
    expect(request.options[1]!.name).toMatch(/edit on src\/a\.ts/);
    expect(request.toolCall.content).toEqual([
      {
        type: "diff",
        path: path.join(t.ws, "src/a.ts"),
        oldText: "export const a = 1; // TODO: rename\n",
        newText: "export const a = 42; // TODO: rename\n",
      },
      { type: "content", content: { type: "text", text: "Why it asks: no rule matched; ask mode asks before changing files." } },
    ]);
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.status).toBe("failed");
    expect(textOf(done)).toMatch(/rejected/);
    expect(await fsp.readFile(path.join(t.ws, "src/a.ts"), "utf8")).toBe("export const a = 1; // TODO: rename\n");
  });

  it("allow once asks again; allow always is remembered for that file only", async () => {
    const { h, sessionId } = await start({ permission: () => selected("allow_once") });
    const edit = (file: string, from: string, to: string) =>
      h.agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: `/edit ${JSON.stringify({ path: file, old_string: from, new_string: to })}` }],
      });
    await edit("src/a.ts", "= 1", "= 2");
    await edit("src/a.ts", "= 2", "= 3");
    expect(h.permissionRequests).toHaveLength(2);
    h.permission = () => selected("allow_always");
    await edit("src/a.ts", "= 3", "= 4");
    await edit("src/a.ts", "= 4", "= 5");
    expect(h.permissionRequests).toHaveLength(3);
    await edit("src/b.ts", "= 2", "= 6");
    expect(h.permissionRequests).toHaveLength(4);
    expect(await fsp.readFile(path.join(t.ws, "src/a.ts"), "utf8")).toBe("export const a = 5; // TODO: rename\n");
    const statuses = h.updatesOf(sessionId, "tool_call_update").filter((u) => u.status === "completed");
    expect(statuses).toHaveLength(5);
    const completed = statuses[0]!;
    // The diff was shown once, as the call ran; the completed update leaves that content as it is.
    const shown = h.updatesOf(sessionId, "tool_call_update").filter((u) => u.toolCallId === completed.toolCallId && u.content?.length);
    expect(shown.map((u) => u.content?.[0])).toEqual([expect.objectContaining({ type: "diff", path: path.join(t.ws, "src/a.ts") })]);
    expect(completed.content).toBeUndefined();
    expect(completed.locations?.[0]).toMatchObject({ path: path.join(t.ws, "src/a.ts"), line: 1 });
  });

  it("a client that fails the permission request rejects the call instead of hanging", async () => {
    const { h, sessionId } = await start({
      permission: () => {
        throw new Error("no permission UI");
      },
    });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/bash touch should-not-exist" }] });
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(h, sessionId, call.toolCallId).status).toBe("failed");
    await expect(fsp.stat(path.join(t.ws, "should-not-exist"))).rejects.toThrow();
  });

  it("todo sends the complete plan", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/prompt", {
      sessionId,
      prompt: [
        {
          type: "text",
          text: '/todo {"todos":[{"content":"Read","status":"completed"},{"content":"Write","status":"in_progress","priority":"high"}]}',
        },
      ],
    });
    expect(h.updatesOf(sessionId, "plan")[0]!.entries).toEqual([
      { content: "Read", status: "completed", priority: "medium" },
      { content: "Write", status: "in_progress", priority: "high" },
    ]);
  });
});

describe("bash", () => {
  it("without the terminal capability: asks with the exact command, runs locally, shows text", async () => {
    const { h, sessionId } = await start({ permission: () => selected("allow_once") });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/bash echo out; echo err >&2; exit 3" }] });
    expect(h.permissionRequests[0]!.toolCall.content?.[0]).toMatchObject({
      type: "content",
      content: { type: "text", text: expect.stringContaining("echo out; echo err >&2; exit 3") },
    });
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(call.title).toBe("echo out; echo err >&2; exit 3");
    expect(call.kind).toBe("execute");
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.status).toBe("failed");
    expect(textOf(done)).toMatch(/out\n[\s\S]*err[\s\S]*exit code 3/);
    expect(h.clientCalls.filter((c) => c.method.startsWith("terminal/"))).toEqual([]);
  });

  it("with the terminal capability: runs in an editor terminal embedded in the call, released after", async () => {
    const { h, sessionId } = await start({ capabilities: { terminal: true }, permission: () => selected("allow_once") });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/bash echo from-terminal" }] });
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.status).toBe("completed");
    expect(done.content).toEqual([{ type: "terminal", terminalId: "term_1" }]);
    expect((done.rawOutput as { data: { stdout: string } }).data.stdout).toBe("from-terminal\n");
    const methods = h.clientCalls.map((c) => c.method);
    expect(methods).toContain("terminal/create");
    expect(methods.filter((m) => m === "terminal/release")).toHaveLength(1);
  });

  for (const terminal of [false, true]) {
    it(`cancel during /bash sleep ends the prompt cancelled exactly once and leaves no process (terminal: ${terminal})`, async () => {
      const marker = sleepMarker(); // unique: another test run on the machine must not look the same
      const { h, sessionId } = await start({ capabilities: { terminal }, permission: () => selected("allow_once") });
      const prompt = h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `/bash sleep ${marker}` }] });
      await h.waitFor(() => h.updatesOf(sessionId, "tool_call_update").some((u) => u.status === "in_progress"));
      await h.waitFor(async () => (await survivors(`sleep ${marker}`)).length > 0);
      await h.agent.notify("session/cancel", { sessionId });
      expect((await prompt).stopReason).toBe("cancelled");
      await h.waitFor(async () => (await survivors(`sleep ${marker}`)).length === 0, 5000);
      const responses = h.checker.messages.filter(
        (m) => m.direction === "agent->client" && "result" in m.json && (m.json.result as { stopReason?: string })?.stopReason,
      );
      expect(responses).toHaveLength(1);
      const call = h.updatesOf(sessionId, "tool_call")[0]!;
      expect(lastUpdate(h, sessionId, call.toolCallId).status).toBe("failed");
    });
  }

  it("cancel while a permission request is pending answers the prompt cancelled", async () => {
    const { h, sessionId } = await start({ permission: () => new Promise(() => {}) });
    const prompt = h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/bash echo never" }] });
    await h.waitFor(() => h.permissionRequests.length === 1);
    await h.agent.notify("session/cancel", { sessionId });
    expect((await prompt).stopReason).toBe("cancelled");
    expect(h.checker.seenMethods.has("$/cancel_request")).toBe(true);
  });
});

describe("editor-backed fs", () => {
  it("reads unsaved buffers and writes through the editor when advertised", async () => {
    const file = path.join(t.ws, "src/a.ts");
    const buffers = new Map([[file, "export const a = 'unsaved';\n"]]);
    const { h, sessionId } = await start({
      capabilities: { fs: { readTextFile: true, writeTextFile: true } },
      permission: () => selected("allow_once"),
      buffers,
    });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/read src/a.ts" }] });
    const read = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(textOf(lastUpdate(h, sessionId, read.toolCallId))).toMatch(/unsaved/);
    await h.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: '/edit {"path":"src/a.ts","old_string":"unsaved","new_string":"saved"}' }],
    });
    expect(h.clientCalls.some((c) => c.method === "fs/write_text_file" && (c.params as { path: string }).path === file)).toBe(true);
    expect(await fsp.readFile(file, "utf8")).toBe("export const a = 'saved';\n");
  });

  it("never calls fs methods the client did not advertise", async () => {
    const { h, sessionId } = await start({ permission: () => selected("allow_once") });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/read src/a.ts" }] });
    await h.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: '/write {"path":"new.txt","content":"x"}' }],
    });
    expect(h.clientCalls).toEqual([]);
    expect(await fsp.readFile(path.join(t.ws, "new.txt"), "utf8")).toBe("x");
  });
});

describe("modes", () => {
  it("read-only refuses mutating tools without asking; full runs them; accept-edits asks only for commands", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/set_mode", { sessionId, modeId: "read-only" });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: '/write {"path":"x.txt","content":"x"}' }] });
    expect(h.permissionRequests).toHaveLength(0);
    await expect(fsp.stat(path.join(t.ws, "x.txt"))).rejects.toThrow();

    const set = await h.agent.request("session/set_config_option", { sessionId, configId: "mode", value: "accept-edits" });
    expect(set.configOptions[0]).toMatchObject({ currentValue: "accept-edits" });
    expect(h.updatesOf(sessionId, "current_mode_update").at(-1)?.currentModeId).toBe("accept-edits");
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: '/write {"path":"x.txt","content":"x"}' }] });
    expect(await fsp.readFile(path.join(t.ws, "x.txt"), "utf8")).toBe("x");
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/bash touch y.txt" }] });
    expect(h.permissionRequests).toHaveLength(1);

    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "/bash touch z.txt" }] });
    expect(h.permissionRequests).toHaveLength(1);
    await fsp.stat(path.join(t.ws, "z.txt"));
    await expect(h.agent.request("session/set_mode", { sessionId, modeId: "yolo" })).rejects.toMatchObject({ code: -32602 });
  });
});

describe("content and frame sizes", () => {
  it("accepts text, image, resource_link and resource blocks in one prompt", async () => {
    const { h, sessionId } = await start();
    const response = await h.agent.request("session/prompt", {
      sessionId,
      prompt: [
        { type: "text", text: "/read src/a.ts" },
        { type: "image", data: Buffer.from("png").toString("base64"), mimeType: "image/png" },
        { type: "resource_link", uri: `file://${t.ws}/src/b.ts`, name: "b.ts" },
        { type: "resource", resource: { uri: `file://${t.ws}/notes.md`, text: "notes", mimeType: "text/markdown" } },
      ],
    });
    expect(response.stopReason).toBe("end_turn");
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    expect(lastUpdate(h, sessionId, call.toolCallId).status).toBe("completed");
  });

  it("never sends a huge frame: a 1 MB output reaches the client capped, with the way to read on", async () => {
    const { h, sessionId } = await start();
    await h.agent.request("session/set_mode", { sessionId, modeId: "full" });
    await h.agent.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "/bash head -c 1000000 /dev/zero | tr '\\0' 'x' | fold -w 100" }],
    });
    const call = h.updatesOf(sessionId, "tool_call")[0]!;
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.status).toBe("completed");
    const largest = Math.max(...h.checker.messages.filter((m) => m.direction === "agent->client").map((m) => Buffer.byteLength(m.raw)));
    expect(largest).toBeLessThan(64 * 1024);
    expect(textOf(done)).toMatch(/full output in \S+/);
    const raw = done.rawOutput as { metadata: { truncated?: boolean; output_path?: string } };
    expect(raw.metadata.truncated).toBe(true);
    expect((await fsp.stat(raw.metadata.output_path!)).size).toBe(1_009_999);
  });
});

describe("robustness", () => {
  it("answers garbage and unknown methods with JSON-RPC errors and keeps serving", async () => {
    t.h = new Harness();
    await t.h.initialize();
    t.h.sendRaw("this is not json");
    t.h.sendRaw('{"jsonrpc":"2.0","id":901,"method":"_vendor.example/ping","params":{}}');
    t.h.sendRaw('{"jsonrpc":"2.0","id":902,"method":"no/such_method","params":{}}');
    t.h.sendRaw('{"jsonrpc":"2.0","method":"_vendor.example/note","params":{}}');
    t.h.sendRaw('{"jsonrpc":"2.0","id":903,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}');
    t.h.sendRaw('{"jsonrpc":"2.0","id":904,"method":"session/new","params":{"cwd":5}}');
    const errors = () => t.h!.checker.messages.filter((m) => m.direction === "agent->client" && "error" in m.json);
    await t.h.waitFor(() => errors().length >= 5);
    const byId = new Map(errors().map((m) => [m.json.id, (m.json.error as { code: number }).code]));
    expect(byId.get(null)).toBe(-32700);
    expect(byId.get(901)).toBe(-32601);
    expect(byId.get(902)).toBe(-32601);
    expect(byId.get(903)).toBe(-32002);
    expect(byId.get(904)).toBe(-32602);
    const sessionId = await t.h.newSession(t.ws);
    expect(sessionId).toBeTruthy();
    for (const m of t.h.checker.messages.filter((x) => x.direction === "agent->client")) expect(m.json.jsonrpc).toBe("2.0");
  });

  it("exits 0 on SIGTERM and kills the command it was running", async () => {
    const { h, sessionId } = await start({ permission: () => selected("allow_once") });
    const marker = sleepMarker();
    void h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: `/bash sleep ${marker}` }] }).catch(() => {});
    await h.waitFor(async () => (await survivors(`sleep ${marker}`)).length > 0);
    const exited = new Promise<number | null>((resolve) => h.child.once("exit", (code) => resolve(code)));
    h.child.kill("SIGTERM");
    expect(await exited).toBe(0);
    await h.waitFor(async () => (await survivors(`sleep ${marker}`)).length === 0, 5000);
  });
});
