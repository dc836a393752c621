import * as fsp from "node:fs/promises";
import path from "node:path";
import type { ClientCapabilities } from "@agentclientprotocol/sdk";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { CLI_PATH, runToEnd, type Ran } from "../helpers.js";
import { Harness, messageText, useAcpTest, type HarnessOptions, prompt } from "./harness.js";

// Issue 26 §1: the login over ACP. initialize offers a terminal login (`toolhost login`) to a
// client that runs terminal methods, and an agent method whose `authenticate` says whether a
// model and its key are there (AUTH-003); `logout` removes the stored login (AUTH-004); a prompt
// with no model answers auth_required to a client offered the login, and slash commands work.

const t = useAcpTest({ "a.txt": "alpha\n" });

const TERMINAL = { auth: { terminal: true } };

async function start(options: HarnessOptions = {}) {
  t.h = new Harness({ ...options, env: { TOOLHOST_HOME: t.home, ...options.env } });
  return t.h;
}

const initialize = (h: Harness, clientCapabilities: Record<string, unknown> = {}) =>
  h.agent.request("initialize", {
    protocolVersion: 1,
    clientCapabilities: clientCapabilities as ClientCapabilities,
    clientInfo: { name: "toolhost-test", version: "1.0.0" },
  });

/** `toolhost login` with these answers on stdin, as a terminal login runs it. */
function login(answers: string[], env: Record<string, string> = {}): Promise<Ran> {
  return runToEnd([process.execPath, CLI_PATH, "login"], { cwd: t.ws, env: t.env(env), stdin: answers.map((a) => `${a}\n`).join("") });
}

describe("initialize's authMethods", () => {
  it("offers the terminal login only to a client that runs terminal methods, and says logout works", async () => {
    const h = await start();
    const plain = await initialize(h);
    expect(plain.authMethods?.map((m) => m.id)).toEqual(["saved-login"]);
    expect(plain.authMethods?.some((m) => "type" in m && m.type === "terminal")).toBe(false);
    expect(plain.agentCapabilities?.auth?.logout).toEqual({});

    const h2 = new Harness({ env: { TOOLHOST_HOME: t.home } });
    try {
      const res = await initialize(h2, TERMINAL);
      expect(res.authMethods?.[0]).toMatchObject({ id: "toolhost-login", type: "terminal", args: ["login"] });
      expect(res.authMethods?.[0]?._meta).toBeUndefined();
    } finally {
      expect(await h2.close()).toBe(0);
      expect(h2.checker.problems).toEqual([]);
    }
  });

  it("answers the ACP registry's probe (its `_meta` terminal-auth flag) with a terminal method and the command to run", async () => {
    const h = await start();
    // The registry's verify_agents.py --auth-check sends exactly these capabilities.
    const res = await initialize(h, {
      terminal: true,
      fs: { readTextFile: true, writeTextFile: true },
      _meta: { terminal_output: true, "terminal-auth": true },
    });
    const terminal = res.authMethods?.find((m) => "type" in m && m.type === "terminal");
    expect(terminal).toMatchObject({ id: "toolhost-login", args: ["login"] });
    expect(terminal?._meta?.["terminal-auth"]).toEqual({ command: process.execPath, args: [CLI_PATH, "login"], label: "toolhost login" });
  });
});

describe("AUTH-003: authenticate", () => {
  it("refuses without a login, succeeds after `toolhost login`, and the next prompt reaches the model", async () => {
    const fake = (t.fake = await startFakeOpenAI({ script: [{ text: "Logged in and answering." }] }));
    const h = await start({ capabilities: TERMINAL });
    await h.initialize();
    await expect(h.agent.request("authenticate", { methodId: "saved-login" })).rejects.toMatchObject({ code: -32000 });
    // A terminal method is the client's to run: never passed to authenticate.
    await expect(h.agent.request("authenticate", { methodId: "toolhost-login" })).rejects.toMatchObject({ code: -32602 });
    await expect(h.agent.request("authenticate", { methodId: "nope" })).rejects.toMatchObject({ code: -32602 });

    // Provider 3 (openai-compatible): its URL, no key, a model name.
    const done = await login(["3", fake.url, "", "fake"]);
    expect(done.stderr).toBe("");
    expect(done.code).toBe(0);
    expect(done.stdout).toContain("Sessions use openai-compatible/fake from now on");
    const file = path.join(t.home, "credentials.json");
    expect((await fsp.stat(file)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await fsp.readFile(file, "utf8"))).toEqual({
      model: "openai-compatible/fake",
      providers: { "openai-compatible": { baseURL: fake.url } },
    });

    expect(await h.agent.request("authenticate", { methodId: "saved-login" })).toEqual({});
    const sessionId = await h.newSession(t.ws);
    expect((await prompt(h, sessionId, "hello")).stopReason).toBe("end_turn");
    expect(messageText(h, sessionId, "")).toContain("Logged in and answering.");
    expect(fake.requests).toHaveLength(1);
  });

  it("keys in the environment win over the stored login", async () => {
    const fake = (t.fake = await startFakeOpenAI({ script: [{ text: "From the environment's server." }] }));
    // The stored login points at a port nothing listens on; the environment's URL wins.
    expect((await login(["3", "http://127.0.0.1:9/v1", "", "fake"])).code).toBe(0);
    const h = await start({ env: { TOOLHOST_BASE_URL: fake.url } });
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    expect((await prompt(h, sessionId, "hello")).stopReason).toBe("end_turn");
    expect(messageText(h, sessionId, "")).toContain("From the environment's server.");
  });
});

describe("AUTH-004: logout", () => {
  it("removes the stored login: authenticate refuses again, a prompt answers auth_required, slash commands still run", async () => {
    const fake = (t.fake = await startFakeOpenAI({ script: [{ text: "First answer." }] }));
    expect((await login(["3", fake.url, "", "fake"])).code).toBe(0);
    const h = await start({ capabilities: TERMINAL });
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    expect((await prompt(h, sessionId, "hello")).stopReason).toBe("end_turn");

    expect(await h.agent.request("logout", {})).toEqual({});
    await expect(fsp.stat(path.join(t.home, "credentials.json"))).rejects.toMatchObject({ code: "ENOENT" });
    await expect(h.agent.request("authenticate", { methodId: "saved-login" })).rejects.toMatchObject({ code: -32000 });
    // The same live session: the login is read per turn, so it is gone for it too.
    const refused = prompt(h, sessionId, "hello again");
    await expect(refused).rejects.toMatchObject({ code: -32000, data: { authMethods: ["toolhost-login", "saved-login"] } });
    await expect(refused).rejects.toThrow(/No model is configured/);
    expect(fake.requests).toHaveLength(1);
    // No key, no model: a slash command runs a tool directly.
    expect((await prompt(h, sessionId, "/read a.txt")).stopReason).toBe("end_turn");
    expect(JSON.stringify(h.updatesOf(sessionId, "tool_call_update"))).toContain("alpha");
  });

  it("without a terminal login to offer, a prompt with no model says how to set one (as before)", async () => {
    const h = await start();
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    expect((await prompt(h, sessionId, "hello")).stopReason).toBe("end_turn");
    expect(messageText(h, sessionId)).toMatch(/Run `toolhost login` in a terminal/);
  });
});
