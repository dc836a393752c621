import { existsSync, readFileSync } from "node:fs";
import * as fsp from "node:fs/promises";
import path from "node:path";

import { beforeEach, describe, expect, it } from "vitest";
import { startFakeOpenAI } from "../fixtures/fake-openai.mjs";
import { Harness, selected, type PermissionHandler, lastUpdate, textOf, messageText, useAcpTest } from "./harness.js";

let marker: string;

/** A drop-in tool file as a user writes it: no node_modules beside it. */
function helloTool(greeting: string, description = "Says hello"): string {
  return `import { defineTool, z } from "toolhost";
export default defineTool({
  id: "hello",
  description: "${description}",
  kind: "other",
  parameters: z.object({ name: z.string().default("world") }),
  requires: {},
  title: (args) => \`Say hello to \${args.name}\`,
  async execute(args) {
    return { greeting: \`${greeting}, \${args.name}\` };
  },
});
`;
}

const t = useAcpTest(
  // Project files: one shadowed by the profile's hello (and one of its own, below).
  { "src/a.ts": "export const a = 1;\n", ".toolhost/tools/hello.ts": helloTool("hello from the project") },
  { home: { "profiles/default/tools/hello.ts": helloTool("hello from the profile") } },
);

beforeEach(async () => {
  marker = path.join(t.ws, "imported.marker");
  // The project's own tool records being imported.
  await fsp.writeFile(
    path.join(t.ws, ".toolhost/tools/project_only.ts"),
    `import { writeFileSync } from "node:fs";
import { defineTool, z } from "toolhost";
writeFileSync(${JSON.stringify(marker)}, "imported");
export default defineTool({ id: "project_only", description: "A project tool", kind: "read", parameters: z.object({}), requires: {},
  async execute() { return "project tool ran"; } });
`,
  );
});

async function start(permission?: PermissionHandler, env: Record<string, string> = {}) {
  t.h = new Harness({ env: { TOOLHOST_HOME: t.home, ...env }, permission });
  await t.h.initialize();
  const sessionId = await t.h.newSession(t.ws);
  await t.h.waitFor(() => t.h!.updatesOf(sessionId, "available_commands_update").length > 0);
  return { h: t.h, sessionId };
}

const prompt = (h: Harness, sessionId: string, text: string) =>
  h.agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text }] });

function commands(h: Harness, sessionId: string): string[] {
  return h
    .updatesOf(sessionId, "available_commands_update")
    .at(-1)!
    .availableCommands.map((c) => c.name);
}

describe("extension tools in the editor", () => {
  it("a profile's drop-in tool is a command and a tool call with its own kind and title", async () => {
    const { h, sessionId } = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "reject" : "allow_once"));
    expect(commands(h, sessionId)).toContain("hello");
    await prompt(h, sessionId, "/hello");
    const call = h.updatesOf(sessionId, "tool_call").find((c) => c.name === "hello")!;
    expect(call).toMatchObject({ kind: "other", title: "Say hello to world" });
    const done = lastUpdate(h, sessionId, call.toolCallId);
    expect(done.status).toBe("completed");
    expect(done.rawOutput).toMatchObject({ type: "output", data: { greeting: "hello from the profile, world" } });
  });

  it("an untrusted project's tools are not imported until the user allows them, asked once", async () => {
    const { h, sessionId } = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "reject" : "allow_once"));
    expect(existsSync(marker)).toBe(false);
    await prompt(h, sessionId, "/project_only");
    const ask = h.permissionRequests[0]!;
    expect(ask.toolCall).toMatchObject({ kind: "other" });
    expect(JSON.stringify(ask.toolCall.content)).toContain("project_only.ts");
    expect(ask.options.map((o) => o.kind)).toEqual(["allow_once", "allow_always", "reject_once"]);
    expect(existsSync(marker)).toBe(false);
    expect(messageText(h, sessionId)).toMatch(/Unknown command \/project_only/);
    await prompt(h, sessionId, "/tools");
    expect(h.permissionRequests).toHaveLength(1);
    expect(existsSync(marker)).toBe(false);
  });

  it("'for this session' loads them; the profile's hello still wins and the shadow is reported", async () => {
    const { h, sessionId } = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "session" : "allow_once"));
    await prompt(h, sessionId, "/project_only");
    expect(existsSync(marker)).toBe(true);
    const run = h.updatesOf(sessionId, "tool_call").find((c) => c.name === "project_only")!;
    expect(lastUpdate(h, sessionId, run.toolCallId).status).toBe("completed");
    const trustCall = lastUpdate(h, sessionId, "trust_1");
    expect(trustCall.status).toBe("completed");
    expect(JSON.stringify(trustCall.content)).toMatch(/project_only/);
    expect(commands(h, sessionId)).toContain("project_only");
    await prompt(h, sessionId, "/hello");
    const hello = h
      .updatesOf(sessionId, "tool_call")
      .filter((c) => c.name === "hello")
      .at(-1)!;
    expect(lastUpdate(h, sessionId, hello.toolCallId).rawOutput).toMatchObject({ data: { greeting: "hello from the profile, world" } });
    await prompt(h, sessionId, "/reload");
    expect(messageText(h, sessionId)).toMatch(/Tools reloaded/);
    expect(existsSync(path.join(t.home, "trusted.json")) && readFileSync(path.join(t.home, "trusted.json"), "utf8").includes(t.ws)).toBe(
      false,
    );
  });

  it("'always' trusts the project: the next session loads its tools without asking", async () => {
    const first = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "always" : "allow_once"));
    await prompt(first.h, first.sessionId, "/tools");
    expect(first.h.permissionRequests).toHaveLength(1);
    const second = await first.h.newSession(t.ws);
    await first.h.waitFor(() => first.h.updatesOf(second, "available_commands_update").length > 0);
    expect(commands(first.h, second)).toContain("project_only");
    await prompt(first.h, second, "/tools");
    expect(first.h.permissionRequests).toHaveLength(1);
  });

  it("/reload picks up an edited file and sends fresh commands", async () => {
    const { h, sessionId } = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "reject" : "allow_once"));
    await fsp.writeFile(path.join(t.home, "profiles/default/tools/hello.ts"), helloTool("edited hello", "Says hello, edited"));
    const before = h.updatesOf(sessionId, "available_commands_update").length;
    await prompt(h, sessionId, "/reload");
    // The menu changed (the tool's description): one fresh update; an unchanged menu is not sent again.
    const updates = h.updatesOf(sessionId, "available_commands_update");
    expect(updates.length).toBe(before + 1);
    expect(updates.at(-1)!.availableCommands.find((c) => c.name === "hello")?.description).toBe("Says hello, edited");
    await prompt(h, sessionId, "/hello");
    const hello = h
      .updatesOf(sessionId, "tool_call")
      .filter((c) => c.name === "hello")
      .at(-1)!;
    expect(lastUpdate(h, sessionId, hello.toolCallId).rawOutput).toMatchObject({ data: { greeting: "edited hello, world" } });
  });

  it("shows load problems once at session start, and switches profiles through the config option", async () => {
    await fsp.writeFile(path.join(t.home, "profiles/default/tools/broken.ts"), "export default defineTool({ this is not typescript");
    const { h, sessionId } = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "reject" : "allow_once"));
    await h.waitFor(() => /broken\.ts/.test(messageText(h, sessionId)));
    expect(commands(h, sessionId)).toEqual(expect.arrayContaining(["write", "edit", "bash", "hello"]));
    const set = await h.agent.request("session/set_config_option", { sessionId, configId: "profile", value: "read-only" });
    expect(set.configOptions.find((o) => o.id === "profile")).toMatchObject({ currentValue: "read-only" });
    const after = commands(h, sessionId);
    expect(after).not.toContain("write");
    expect(after).not.toContain("bash");
    expect(after).toContain("read");
    await expect(h.agent.request("session/set_config_option", { sessionId, configId: "profile", value: "nope" })).rejects.toMatchObject({
      code: -32602,
    });
  });

  it("the model sees the drop-in tool and calls it like a locked one", async () => {
    const fake = await startFakeOpenAI({
      script: [{ toolCalls: [{ name: "hello", arguments: { name: "model" } }] }, { text: "It said hello." }],
    });
    try {
      const { h, sessionId } = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "reject" : "allow_once"), {
        TOOLHOST_MODEL: "openai-compatible/fake",
        TOOLHOST_BASE_URL: fake.url,
      });
      const response = await prompt(h, sessionId, "greet the model");
      expect(response.stopReason).toBe("end_turn");
      const declared = (fake.requests[0]!.body as { tools?: { function: { name: string } }[] }).tools?.map((t) => t.function.name);
      expect(declared).toContain("hello");
      const call = h.updatesOf(sessionId, "tool_call").find((c) => c.name === "hello")!;
      expect(call.kind).toBe("other");
      expect(lastUpdate(h, sessionId, call.toolCallId).rawOutput).toMatchObject({ data: { greeting: "hello from the profile, model" } });
      expect(JSON.stringify((fake.requests[1]!.body as { messages: unknown[] }).messages)).toContain("hello from the profile, model");
    } finally {
      await fake.close();
    }
  });
});

describe("project trust after the first answer", () => {
  it("after refusing, /trust loads the project's tools for the session and /trust always trusts the project", async () => {
    const { h, sessionId } = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "reject" : "allow_once"));
    await prompt(h, sessionId, "/tools");
    expect(existsSync(marker)).toBe(false);
    expect(textOf(lastUpdate(h, sessionId, "trust_1"))).toMatch(/not loaded[\s\S]*\/trust/);
    await prompt(h, sessionId, "/trust");
    expect(existsSync(marker)).toBe(true);
    expect(commands(h, sessionId)).toContain("project_only");
    expect(messageText(h, sessionId)).toMatch(/project's tools were loaded for this session/);
    expect(h.permissionRequests).toHaveLength(1);
    const trusted = () =>
      existsSync(path.join(t.home, "trusted.json")) && readFileSync(path.join(t.home, "trusted.json"), "utf8").includes(t.ws);
    expect(trusted()).toBe(false);
    await prompt(h, sessionId, "/trust always");
    expect(trusted()).toBe(true);
    await prompt(h, sessionId, "/trust sometimes");
    expect(messageText(h, sessionId)).toMatch(/\/trust takes nothing \(this session\) or `always`/);
  });

  it("a trusted project whose tool file changed is asked about again, naming the files; yes loads and re-records, unchanged loads unasked", async () => {
    const first = await start((req) => selected(req.toolCall.toolCallId.startsWith("trust_") ? "always" : "allow_once"));
    const h = first.h;
    await prompt(h, first.sessionId, "/tools");
    expect(h.permissionRequests).toHaveLength(1);
    expect(readFileSync(marker, "utf8")).toBe("imported");

    // Written behind the user's back (a sandboxed command, an unapproved edit): a new marker text.
    const file = path.join(t.ws, ".toolhost/tools/project_only.ts");
    await fsp.writeFile(file, (await fsp.readFile(file, "utf8")).replace('"imported"', '"changed"'));
    await fsp.writeFile(path.join(t.ws, ".mcp.json"), '{"mcpServers": {}}\n');
    await fsp.rm(marker);

    const second = await h.newSession(t.ws);
    await h.waitFor(() => h.updatesOf(second, "available_commands_update").length > 0);
    expect(commands(h, second)).not.toContain("project_only");
    expect(existsSync(marker)).toBe(false);
    await prompt(h, second, "/tools");
    expect(h.permissionRequests).toHaveLength(2);
    const ask = h.permissionRequests[1]!;
    expect(ask.toolCall.title).toMatch(/changed since you trusted it \(2 files\)/);
    const shown = JSON.stringify(ask.toolCall.content);
    expect(shown).toContain("modified: .toolhost/tools/project_only.ts");
    expect(shown).toContain("added: .mcp.json");
    // "always": loaded now, and recorded as it is.
    expect(readFileSync(marker, "utf8")).toBe("changed");
    expect(commands(h, second)).toContain("project_only");

    const third = await h.newSession(t.ws);
    await h.waitFor(() => h.updatesOf(third, "available_commands_update").length > 0);
    expect(commands(h, third)).toContain("project_only");
    await prompt(h, third, "/tools");
    expect(h.permissionRequests).toHaveLength(2);
  });

  it("a trust question that fails or is cancelled leaves the project's tools unloaded and says so", async () => {
    let answer: "throw" | "cancelled" = "throw";
    const { h, sessionId } = await start((req) => {
      if (!req.toolCall.toolCallId.startsWith("trust_")) return selected("allow_once");
      if (answer === "throw") throw new Error("the client's permission UI crashed");
      return { outcome: { outcome: "cancelled" } };
    });
    await prompt(h, sessionId, "/tools");
    const second = await h.newSession(t.ws);
    await h.waitFor(() => h.updatesOf(second, "available_commands_update").length > 0);
    answer = "cancelled";
    await prompt(h, second, "/tools");
    for (const id of [sessionId, second]) {
      const done = lastUpdate(h, id, "trust_1");
      expect(done.status).toBe("failed");
      expect(textOf(done)).toMatch(/project's tools were not loaded/);
      expect(commands(h, id)).not.toContain("project_only");
    }
    expect(existsSync(marker)).toBe(false);
  });
});
