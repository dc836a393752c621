import * as fsp from "node:fs/promises";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { invoke } from "../../src/host/invoke.js";
import { ToolRegistry, RegistryError } from "../../src/host/registry.js";
import { defineTool } from "../../src/tool/define.js";
import { selfTruncated } from "../../src/tool/envelope.js";
import { ToolError } from "../../src/tool/errors.js";
import { diskWorkspace, errorOf, output, type Workspace } from "../helpers.js";

const echo = defineTool({
  id: "echo",
  description: "Echoes text",
  kind: "other",
  parameters: z.object({ text: z.string(), repeat: z.number().int().min(1).default(1) }),
  requires: {},
  output: { field: "text", maxBytes: 1000 },
  execute: async (args) => ({ text: args.text.repeat(args.repeat) }),
});

const thrower = defineTool({
  id: "thrower",
  description: "Throws",
  kind: "other",
  parameters: z.object({ expected: z.boolean() }),
  requires: {},
  execute: async (args) => {
    if (args.expected) throw new ToolError("not_found", "nothing there");
    throw new TypeError("boom");
  },
});

const stubborn = defineTool({
  id: "stubborn",
  description: "Ignores its abort signal",
  kind: "other",
  parameters: z.object({}),
  requires: {},
  execute: () => new Promise((resolve) => setTimeout(() => resolve("late"), 5000)),
});

const needsTypo = defineTool({
  id: "typo",
  description: "Declares an undefined variable",
  kind: "read",
  parameters: z.object({}),
  requires: { fs: { read: ["{worksapce}/**"] } },
  execute: async () => "never",
});

const needsCap = defineTool({
  id: "needs_cap",
  description: "Needs a capability",
  kind: "other",
  parameters: z.object({}),
  requires: { capabilities: ["clipboard"] },
  execute: async () => "clipboard read",
});

const selfCapped = defineTool({
  id: "self_capped",
  description: "Truncates itself",
  kind: "other",
  parameters: z.object({}),
  requires: {},
  output: { maxBytes: 10 },
  execute: async () => selfTruncated({ out: "x".repeat(100) }, { truncated: true, output_path: "/somewhere" }),
});

const loose = defineTool({
  id: "loose",
  description: "Takes any extra keys",
  kind: "other",
  parameters: z.looseObject({ name: z.string() }),
  requires: {},
  execute: async (args) => Object.keys(args).sort(),
});

const registry = new ToolRegistry();
for (const t of [echo, thrower, stubborn, needsTypo, needsCap, selfCapped, loose]) registry.register(t, "builtin");

let ws: Workspace;
afterEach(async () => ws?.cleanup());

describe("invoke", () => {
  it("returns the output envelope with a duration", async () => {
    ws = await diskWorkspace();
    const env = await invoke(registry, "echo", { text: "hi", repeat: 2 }, { session: ws.session });
    expect(output(env)).toEqual({ text: "hihi" });
    expect(env.metadata.duration_ms).toBeGreaterThanOrEqual(0);
    expect(env.metadata.truncated).toBeUndefined();
  });

  it("turns schema failures into error envelopes with the validation message", async () => {
    ws = await diskWorkspace();
    for (const args of [{}, { text: 5 }, { text: "a", repeat: 0 }, null, "text", [1]]) {
      const env = await invoke(registry, "echo", args, { session: ws.session });
      const text = errorOf(env, "invalid_arguments");
      expect(text).toMatch(/echo tool was called with invalid arguments/);
    }
    const env = await invoke(registry, "echo", { text: 5 }, { session: ws.session });
    expect(errorOf(env)).toMatch(/text/);
  });

  it("rejects misspelled argument keys with the valid ones, unless the schema allows more", async () => {
    ws = await diskWorkspace();
    const misspelled = errorOf(await invoke(registry, "echo", { text: "hi", repaet: 2 }, { session: ws.session }), "invalid_arguments");
    expect(misspelled).toBe(
      'The echo tool has no argument "repaet" (did you mean "repeat"?). Its arguments are: text, repeat. Call it again with only those keys.',
    );
    const two = errorOf(await invoke(registry, "echo", { txt: "hi", colour: "red" }, { session: ws.session }), "invalid_arguments");
    expect(two).toMatch(/^The echo tool has no arguments "txt" \(did you mean "text"\?\), "colour"\. Its arguments are: text, repeat\./);
    expect(output(await invoke(registry, "loose", { name: "a", extra: 1 }, { session: ws.session }))).toEqual(["extra", "name"]);
  });

  it("names the available tools for an unknown id", async () => {
    ws = await diskWorkspace();
    expect(errorOf(await invoke(registry, "nope", {}, { session: ws.session }), "unknown_tool")).toMatch(/echo/);
  });

  it("maps ToolError codes and unexpected throws onto error envelopes", async () => {
    ws = await diskWorkspace();
    expect(errorOf(await invoke(registry, "thrower", { expected: true }, { session: ws.session }), "not_found")).toBe("nothing there");
    expect(errorOf(await invoke(registry, "thrower", { expected: false }, { session: ws.session }), "execution_failed")).toMatch(/boom/);
  });

  it("refuses a tool whose requirements use an undefined variable or a missing capability", async () => {
    ws = await diskWorkspace();
    expect(errorOf(await invoke(registry, "typo", {}, { session: ws.session }), "capability_denied")).toMatch(/worksapce/);
    expect(errorOf(await invoke(registry, "needs_cap", {}, { session: ws.session }), "capability_denied")).toMatch(/clipboard/);
    const granted = await invoke(registry, "needs_cap", {}, { session: ws.session, hostCapabilities: new Set(["clipboard"]) });
    expect(output(granted)).toBe("clipboard read");
  });

  it("lets the policy hook deny a call before it runs", async () => {
    ws = await diskWorkspace();
    let ran = false;
    const env = await invoke(
      registry,
      "echo",
      { text: "x" },
      {
        session: ws.session,
        authorize: async (call) => {
          ran = true;
          expect(call.args).toEqual({ text: "x", repeat: 1 });
          return { outcome: "deny", reason: "not today" };
        },
      },
    );
    expect(ran).toBe(true);
    expect(errorOf(env, "rejected")).toBe("not today");
  });

  it("truncates in the host and removes the sidecar when the session closes", async () => {
    ws = await diskWorkspace();
    const env = await invoke(registry, "echo", { text: "0123456789\n", repeat: 500 }, { session: ws.session });
    const data = output<{ text: string }>(env);
    expect(env.metadata.truncated).toBe(true);
    expect(data.text.length).toBeLessThan(1300);
    const sidecar = env.metadata.output_path!;
    expect(sidecar.startsWith(ws.session.sidecars.dir)).toBe(true);
    expect(await fsp.readFile(sidecar, "utf8")).toBe("0123456789\n".repeat(500));
    await ws.session.close();
    await expect(fsp.stat(sidecar)).rejects.toThrow(/ENOENT/);
  });

  it("leaves a self-truncated result as the tool made it", async () => {
    ws = await diskWorkspace();
    const env = await invoke(registry, "self_capped", {}, { session: ws.session });
    expect(output(env)).toEqual({ out: "x".repeat(100) });
    expect(env.metadata).toMatchObject({ truncated: true, output_path: "/somewhere" });
  });

  it("abandons a tool that ignores its abort signal after the grace period", async () => {
    ws = await diskWorkspace();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const env = await invoke(registry, "stubborn", {}, { session: ws.session, signal: controller.signal, abortGraceMs: 100 });
    errorOf(env, "aborted");
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

describe("ToolRegistry", () => {
  it("reserves locked ids for builtins and refuses duplicates", () => {
    const r = new ToolRegistry();
    const fakeRead = defineTool({ ...echo, id: "read" });
    expect(() => r.register(fakeRead, "/x/read.ts")).toThrow(RegistryError);
    r.register(echo, "/x/echo.ts");
    expect(() => r.register(echo, "/y/echo.ts")).toThrow(/already registered from \/x\/echo.ts/);
  });
});
