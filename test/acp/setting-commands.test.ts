import * as fsp from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { startFakeOpenAI, type FakeBody } from "../fixtures/fake-openai.mjs";
import { Harness, prompt, useAcpTest } from "./harness.js";

// `/model`, `/mode`, `/cost`, `/clear` and `/help` over the real ACP wire, for clients that do not
// render config options: each answers without the model, a change is sent as set_mode /
// set_config_option's would be, and `/clear` empties the conversation and fires the `clear` hooks.

const t = useAcpTest({}, { userHome: {} });

describe("setting slash commands over ACP", () => {
  it("/help, /mode, /model, /cost and /clear answer without the model and change what they say", async () => {
    const marker = path.join(t.userHome, "clear-hook.log");
    const hook = path.join(t.userHome, "clear-hook.js");
    await fsp.writeFile(
      hook,
      `let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => require("fs").appendFileSync(${JSON.stringify(marker)}, s + "\\n"));`,
    );
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(hook)}`;
    // The same hook for every start source, its matcher `clear`: only /clear fires it.
    await fsp.writeFile(
      path.join(t.home, "config.json"),
      JSON.stringify({ sandbox: "off", hooks: { session_start: [{ matcher: "clear", command }] } }),
    );
    t.fake = await startFakeOpenAI({ fallback: () => ({ text: "Hello back." }) });
    t.h = new Harness({ env: { TOOLHOST_HOME: t.home, TOOLHOST_MODEL: "openai-compatible/fake", TOOLHOST_BASE_URL: t.fake.url } });
    const h = t.h;
    await h.initialize();
    const sessionId = await h.newSession(t.ws);
    await h.waitFor(() => h.updatesOf(sessionId, "available_commands_update").length > 0);
    const menu = h
      .updatesOf(sessionId, "available_commands_update")
      .at(-1)!
      .availableCommands.map((c) => c.name);
    expect(menu).toEqual(expect.arrayContaining(["help", "model", "mode", "cost", "clear"]));

    /** Runs a prompt; what the agent said during it. */
    const run = async (text: string) => {
      const before = h.updates.length;
      expect((await prompt(h, sessionId, text)).stopReason).toBe("end_turn");
      return h.updates
        .slice(before)
        .filter((n) => n.sessionId === sessionId)
        .map((n) => (n.update.sessionUpdate === "agent_message_chunk" && n.update.content.type === "text" ? n.update.content.text : ""))
        .join("");
    };
    const lastOption = (id: string) =>
      h
        .updatesOf(sessionId, "config_option_update")
        .at(-1)!
        .configOptions.find((o) => o.id === id)!.currentValue;

    expect(await run("Remember the word PELICAN")).toContain("Hello back.");
    expect(t.fake.requests.length).toBe(1);
    await expect(fsp.access(marker)).rejects.toThrow();

    const help = await run("/help");
    for (const name of ["help", "model", "mode", "cost", "clear", "tools", "rewind"]) expect(help).toContain(`\`/${name}\` — `);

    expect(await run("/mode")).toMatch(/The mode is `ask`[\s\S]*`read-only`[\s\S]*`full`/);
    expect(await run("/mode read-only")).toContain("The mode is now `read-only`.");
    expect(h.updatesOf(sessionId, "current_mode_update").at(-1)!.currentModeId).toBe("read-only");
    expect(lastOption("mode")).toBe("read-only");
    expect(await run("/mode nonsense")).toContain("Unknown mode nonsense");
    expect(lastOption("mode")).toBe("read-only");

    expect(await run("/model")).toContain("- `openai-compatible/fake` (current)");
    expect(await run("/model openai-compatible/other")).toContain("The model is now `openai-compatible/other`.");
    expect(lastOption("model")).toBe("openai-compatible/other");
    expect(await run("/model no-slash")).not.toContain("The model is now");
    expect(lastOption("model")).toBe("openai-compatible/other");

    expect(await run("/cost")).toMatch(/This session so far: \$0\.00 .*, [1-9]\d* tokens, 1 model requests, 0 tool calls\./);

    expect(await run("/clear")).toContain("The conversation was cleared");
    const fired = (await fsp.readFile(marker, "utf8"))
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(fired).toMatchObject([{ hook_event_name: "session_start", source: "clear", session_id: sessionId }]);

    // None of the commands reached the model; the next prompt starts a conversation without the old one.
    expect(t.fake.requests.length).toBe(1);
    await run("What was the word?");
    expect(t.fake.requests.length).toBe(2);
    const after = t.fake.requests[1]!.body as FakeBody;
    expect(after.model).toBe("other");
    expect(JSON.stringify(after.messages)).not.toContain("PELICAN");
    expect(JSON.stringify(after.messages)).toContain("What was the word?");
    expect(JSON.stringify((t.fake.requests[0]!.body as FakeBody).messages)).toContain("PELICAN");
  });
});
