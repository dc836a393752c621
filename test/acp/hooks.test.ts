import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { firstUserText, startFakeOpenAI, type FakeBody, type FakeReply } from "../fixtures/fake-openai.mjs";
import { SessionStore } from "../../src/agent/record/session-store.js";
import { Harness, lastUpdate, messageText, textOf, useAcpTest } from "./harness.js";

// Hooks at their sites over the real ACP wire with the fake model: a Claude Code hook script,
// unmodified, that blocks `rm` in a subagent's bash call; a rewrite of a call's arguments; a
// redaction of a result the model sees (the editor still shows it); a stop hook that keeps the
// turn going once; a hook that hangs (no opinion, or refused with failClosed).

const t = useAcpTest({ "victim.txt": "keep me\n", "secret.txt": "token=SECRET-12345\n" }, { userHome: {} });

const node = JSON.stringify(process.execPath);

/** A hook script (node) in the temporary HOME; its command line. */
async function script(name: string, body: string): Promise<string> {
  const file = path.join(t.userHome, name);
  await fsp.writeFile(file, body);
  return `${node} ${JSON.stringify(file)}`;
}

/** The user's ~/.toolhost/config.json: no sandbox (the machine may have none), and these hooks. */
async function userConfig(hooks: unknown): Promise<void> {
  await fsp.writeFile(path.join(t.home, "config.json"), JSON.stringify({ sandbox: "off", hooks }));
}

async function start(route: (body: FakeBody) => FakeReply): Promise<string> {
  t.fake = await startFakeOpenAI({ fallback: route });
  t.h = new Harness({ env: { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  await t.h.agent.request("session/set_mode", { sessionId, modeId: "full" });
  return sessionId;
}

function prompt(sessionId: string, text: string) {
  return t.h!.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });
}

const toolResults = (body: FakeBody) => (body.messages ?? []).filter((m) => m.role === "tool").map((m) => String(m.content));

/** Replies with one bash call, then with what the call returned. */
function bashOnce(command: string) {
  return (body: FakeBody): FakeReply => {
    const results = toolResults(body);
    if (!results.length) return { toolCalls: [{ id: "b", name: "bash", arguments: { command } }] };
    return { text: `Saw: ${results[0]}` };
  };
}

describe("hooks over ACP", () => {
  it("an unmodified Claude Code PreToolUse script blocks rm in a subagent's bash call; the child's model sees the reason", async () => {
    const log = path.join(t.userHome, "pre-tool-use.log");
    // Claude Code's shape: ~/.claude/settings.json, PreToolUse, matcher "Bash", exit 2 with the reason on stderr.
    const check = await script(
      "no-rm.js",
      `const fs = require("fs");
let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const input = JSON.parse(s);
  fs.appendFileSync(${JSON.stringify(log)}, JSON.stringify(input) + "\\n");
  if (/\\brm\\b/.test(input.tool_input.command || "")) {
    process.stderr.write("rm is not allowed here: move files to trash/ instead");
    process.exit(2);
  }
  process.exit(0);
});
`,
    );
    await fsp.mkdir(path.join(t.userHome, ".claude"), { recursive: true });
    await fsp.writeFile(
      path.join(t.userHome, ".claude/settings.json"),
      JSON.stringify({ hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: check }] }] } }),
    );
    await userConfig(undefined);
    const sessionId = await start((body) => {
      const results = toolResults(body);
      if (firstUserText(body).includes("Child")) {
        if (!results.length) return { toolCalls: [{ id: "rm", name: "bash", arguments: { command: "rm victim.txt" } }] };
        return { text: `Child saw: ${results[0]}` };
      }
      if (!results.length)
        return {
          toolCalls: [
            { id: "t", name: "task", arguments: { description: "Clean up", prompt: "Child: remove victim.txt", agent: "general-purpose" } },
          ],
        };
      return { text: "Done." };
    });
    expect((await prompt(sessionId, "Clean up the workspace")).stopReason).toBe("end_turn");

    expect(await fsp.readFile(path.join(t.ws, "victim.txt"), "utf8")).toBe("keep me\n");
    // The child's model got the hook's reason as the call's result.
    const childAfter = t
      .fake!.requests.map((r) => r.body as FakeBody)
      .find((b) => firstUserText(b).includes("Child") && toolResults(b).length);
    expect(toolResults(childAfter!)[0]).toContain("rm is not allowed here: move files to trash/ instead");
    const bash = t.h!.updatesOf(sessionId, "tool_call").find((c) => c.name === "bash")!;
    expect(lastUpdate(t.h!, sessionId, bash.toolCallId).status).toBe("failed");
    // The script got Claude Code's input, and the subagent's task id.
    const seen = JSON.parse((await fsp.readFile(log, "utf8")).trim().split("\n")[0]!);
    expect(seen).toMatchObject({ hook_event_name: "PreToolUse", tool_name: "Bash", tool_input: { command: "rm victim.txt" }, cwd: t.ws });
    expect(seen.agent_id).toMatch(/^task_/);
    // A subagent's hooks get its parent's session file.
    expect(seen.transcript_path).toBe((await new SessionStore(t.home).read(sessionId))!.file);
  });

  it("a hook's updatedInput rewrites the call: it runs with the new value", async () => {
    const rewrite = await script(
      "rewrite.js",
      `let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const input = JSON.parse(s);
  const command = input.tool_input.command.replace("original", "rewritten");
  process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: "PreToolUse", updatedInput: { command } } }));
});
`,
    );
    await userConfig({ tool_call: [{ matcher: "bash", command: rewrite }] });
    const sessionId = await start(bashOnce("echo original-value"));
    expect((await prompt(sessionId, "Echo it")).stopReason).toBe("end_turn");
    const after = t.fake!.requests.at(-1)!.body as FakeBody;
    expect(toolResults(after)[0]).toContain("rewritten-value");
    expect(toolResults(after)[0]).not.toContain("original-value");
    const bash = t.h!.updatesOf(sessionId, "tool_call").find((c) => c.name === "bash")!;
    expect(textOf(lastUpdate(t.h!, sessionId, bash.toolCallId))).toContain("rewritten-value");
  });

  it("a tool_result hook redacts a secret: the next model request lacks it, the editor's update has it", async () => {
    const redact = await script(
      "redact.js",
      `let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const input = JSON.parse(s);
  const text = JSON.stringify(input.tool_response).replace(/SECRET-\\d+/g, "[redacted]");
  process.stdout.write(JSON.stringify({ hookSpecificOutput: { hookEventName: "PostToolUse", updatedToolOutput: JSON.parse(text) } }));
});
`,
    );
    await userConfig({ PostToolUse: [{ matcher: "Read", hooks: [{ type: "command", command: redact }] }] });
    const sessionId = await start((body) => {
      const results = toolResults(body);
      if (!results.length) return { toolCalls: [{ id: "r", name: "read", arguments: { path: "secret.txt" } }] };
      return { text: "Read it." };
    });
    expect((await prompt(sessionId, "Read the secret")).stopReason).toBe("end_turn");
    const after = t.fake!.requests.at(-1)!.body as FakeBody;
    expect(JSON.stringify(after)).not.toContain("SECRET-12345");
    expect(toolResults(after)[0]).toContain("[redacted]");
    const read = t.h!.updatesOf(sessionId, "tool_call").find((c) => c.name === "read")!;
    expect(JSON.stringify(t.h!.updatesOf(sessionId, "tool_call_update").filter((u) => u.toolCallId === read.toolCallId))).toContain(
      "SECRET-12345",
    );
  });

  it("a stop hook makes the model continue once; it reads the turn so far from transcript_path", async () => {
    const log = path.join(t.userHome, "stop.log");
    // transcript_path is the session's own file (format 2: a header, then one entry per line), written up to the hook.
    const stop = await script(
      "stop.js",
      `const fs = require("fs");
let s = "";
process.stdin.on("data", (d) => (s += d)).on("end", () => {
  const input = JSON.parse(s);
  const entries = fs.readFileSync(input.transcript_path, "utf8").trim().split("\\n").map((line) => JSON.parse(line));
  const said = entries.filter((e) => e.type === "agent_text").map((e) => e.text).join("");
  const asked = entries.filter((e) => e.type === "user").map((e) => e.text).join("|");
  fs.appendFileSync(${JSON.stringify(log)}, [input.stop_hook_active, entries[0].type, asked, said].join(" ") + "\\n");
  if (!input.stop_hook_active) process.stdout.write(JSON.stringify({ decision: "block", reason: "Also run the tests." }));
});
`,
    );
    await userConfig({ Stop: [{ hooks: [{ type: "command", command: stop }] }] });
    const sessionId = await start((body) => {
      const last = body.messages?.at(-1);
      return { text: JSON.stringify(last?.content).includes("Also run the tests.") ? "Tests pass." : "Fixed it." };
    });
    expect((await prompt(sessionId, "Fix it")).stopReason).toBe("end_turn");
    expect(t.fake!.requests).toHaveLength(2);
    expect(messageText(t.h!, sessionId, "")).toBe("Fixed it.Tests pass.");
    expect((await fsp.readFile(log, "utf8")).trim().split("\n")).toEqual([
      "false session Fix it Fixed it.",
      "true session Fix it Fixed it.Tests pass.",
    ]);
  });

  it('a tool_result hook\'s "continue": false ends the turn after the call', async () => {
    const halt = await script("halt.js", `process.stdout.write(JSON.stringify({ continue: false, stopReason: "enough for today" }));\n`);
    await userConfig({ tool_result: [{ matcher: "bash", command: halt }] });
    const sessionId = await start(bashOnce("echo once"));
    expect((await prompt(sessionId, "Run it")).stopReason).toBe("end_turn");
    expect(t.fake!.requests).toHaveLength(1);
    expect(messageText(t.h!, sessionId)).toContain("A hook ended the turn: enough for today");
  });

  it("a hook that hangs is timed out: no opinion, the call runs; with failClosed the call is refused", async () => {
    const hang = await script("hang.js", `setTimeout(() => {}, 60_000);\n`);
    await userConfig({ tool_call: [{ matcher: "bash", command: hang, timeout: 0.5 }] });
    let sessionId = await start(bashOnce("echo ran-anyway"));
    expect((await prompt(sessionId, "Run it")).stopReason).toBe("end_turn");
    expect(toolResults(t.fake!.requests.at(-1)!.body as FakeBody)[0]).toContain("ran-anyway");
    expect(messageText(t.h!, sessionId)).toMatch(/did not finish in time .*it counts as no opinion/);

    await t.h!.close();
    t.h = undefined;
    await t.fake!.close();
    await userConfig({ tool_call: [{ matcher: "bash", command: hang, timeout: 0.5, failClosed: true }] });
    sessionId = await start(bashOnce("echo must-not-run"));
    expect((await prompt(sessionId, "Run it")).stopReason).toBe("end_turn");
    const result = toolResults(t.fake!.requests.at(-1)!.body as FakeBody)[0];
    expect(result).toMatch(/refused by the hook .*fails closed/);
    const bash = t.h!.updatesOf(sessionId, "tool_call").find((c) => c.name === "bash")!;
    expect(lastUpdate(t.h!, sessionId, bash.toolCallId).status).toBe("failed");
  });
});
