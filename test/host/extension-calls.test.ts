import * as fsp from "node:fs/promises";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { extensionLoader } from "../../src/agent/extension-loader.js";
import { invoke } from "../../src/host/invoke.js";
import { buildToolset, type Toolset } from "../../src/host/toolset.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import { errorOf, output, tempDir, useAgentEnv } from "../helpers.js";

// Extension tools go through the same pipeline as the locked ones: validation, capability
// check, cancellation, timeouts, truncation and the envelope.
const TOOLS = `import { defineTool, ToolError, z } from "toolhost";

// id, kind and what it is for; no arguments and no requirements unless a tool says otherwise.
const tool = (id, kind, description, rest) => defineTool({ id, kind, description, parameters: z.object({}), requires: {}, ...rest });
const workspaceReader = { fs: { read: ["{workspace}/**"] } };

export const tools = [
  tool("big_output", "read", "Returns a lot of text", {
    parameters: z.object({ kb: z.number().int() }),
    execute: async ({ kb }) => "x".repeat(kb * 1024),
  }),
  tool("peek_hostname", "read", "Reads /etc/hostname without declaring it", {
    requires: workspaceReader,
    execute: async (_args, ctx) => new TextDecoder().decode(await ctx.fs.readFile("/etc/hostname")),
  }),
  tool("read_notes", "read", "Reads a workspace file it declared", {
    parameters: z.object({ path: z.string() }),
    requires: workspaceReader,
    execute: async ({ path }, ctx) => new TextDecoder().decode(await ctx.fs.readFile(path)),
  }),
  tool("run_undeclared", "execute", "Runs a command it did not declare", {
    requires: workspaceReader,
    execute: async (_args, ctx) => ctx.shell.exec("id", []),
  }),
  tool("hang", "other", "Never finishes and ignores its signal", {
    timeoutMs: 1000,
    execute: () => new Promise(() => {}),
  }),
  tool("wait_for_cancel", "other", "Waits until its signal aborts", {
    execute: (_args, ctx) =>
      new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(new ToolError("aborted", "saw the abort")))),
  }),
  tool("fails", "other", "Throws", {
    parameters: z.object({ expected: z.boolean() }),
    execute: async ({ expected }) => {
      if (expected) throw new ToolError("not_found", "no such widget");
      throw new RangeError("widget index out of range");
    },
  }),
  tool("returns", "think", "Returns a value that may not be JSON data", {
    parameters: z.object({ what: z.enum(["function", "undefined", "map", "nested_set", "cycle", "bigint", "optional_field"]) }),
    execute: async ({ what }) => {
      const cycle = { name: "loop" };
      cycle.self = cycle;
      return {
        function: () => 1,
        undefined: undefined,
        map: new Map([["a", 1]]),
        nested_set: { rows: [{ tags: new Set(["x"]) }] },
        cycle,
        bigint: { n: 10n },
        optional_field: { kept: 1, skipped: undefined },
      }[what];
    },
  }),
  tool("throws_value", "other", "Throws something that is not an Error", {
    parameters: z.object({ what: z.enum(["object", "string", "empty_error"]) }),
    execute: async ({ what }) => {
      if (what === "object") throw { code: 5 };
      if (what === "string") throw "plain words";
      throw new Error("");
    },
  }),
  tool("long_error", "other", "Fails with a 200 KB message", {
    parameters: z.object({ tool_error: z.boolean() }),
    execute: async ({ tool_error }) => {
      const text = "line of a long failure\\n".repeat(9000);
      if (tool_error) throw new ToolError("not_found", text);
      throw new Error(text);
    },
  }),
  tool("json_args", "think", "Declares a plain JSON Schema", {
    parameters: { type: "object", properties: { count: { type: "integer", minimum: 1 } }, required: ["count"], additionalProperties: false },
    execute: async (args) => ({ doubled: (args.count as number) * 2 }),
  }),
];
`;

let toolset: Toolset;
const sessions: RuntimeSession[] = [];
const session = () => {
  const s = new RuntimeSession({ workspace: t.ws });
  sessions.push(s);
  return s;
};
const call = (id: string, args: unknown, options: { signal?: AbortSignal; s?: RuntimeSession } = {}) =>
  invoke(toolset.registry, id, args, { session: options.s ?? session(), manifest: toolset.manifest, signal: options.signal });

const t = useAgentEnv({
  shared: true,
  files: { "notes.md": "remember the milk\n", ".toolhost/tools/everything.ts": TOOLS },
  home: { "config.json": "{}" },
});
beforeAll(async () => {
  toolset = await buildToolset({ loader: extensionLoader(), cwd: t.ws, trusted: true });
  expect(toolset.report.errors).toEqual([]);
});
afterEach(async () => {
  await Promise.all(sessions.splice(0).map((s) => s.close()));
});

describe("extension tools through invoke", () => {
  it("caps an oversized output on the host side and writes the whole of it to a sidecar", async () => {
    const envelope = await call("big_output", { kb: 200 });
    expect(envelope.metadata).toMatchObject({ truncated: true });
    const sidecar = envelope.metadata.output_path!;
    expect((await fsp.stat(sidecar)).size).toBe(200 * 1024);
    expect(JSON.stringify(output(envelope)).length).toBeLessThan(60 * 1024);
  });

  it("refuses what the tool's requires do not cover: a path outside the workspace, an undeclared command", async () => {
    expect(errorOf(await call("peek_hostname", {}), "outside_root")).toMatch(/etc\/hostname/);
    expect(errorOf(await call("read_notes", { path: "../../etc/hostname" }), "outside_root")).toBeTruthy();
    expect(output(await call("read_notes", { path: "notes.md" }))).toBe("remember the milk\n");
    expect(errorOf(await call("run_undeclared", {}), "capability_denied")).toMatch(/`id`/);
  });

  it("abandons a hanging tool at its timeout while other calls keep working", async () => {
    let settled = false;
    const hanging = call("hang", {}).finally(() => (settled = true));
    // Another session works while the first call hangs.
    const other = await call("read_notes", { path: "notes.md" });
    expect(output(other)).toBe("remember the milk\n");
    expect(settled).toBe(false);
    const envelope = await hanging;
    expect(errorOf(envelope, "timeout")).toBe("The hang tool did not finish within 1 s and was abandoned");
    expect(envelope.metadata.duration_ms).toBeGreaterThanOrEqual(990);
    expect(envelope.metadata.duration_ms).toBeLessThan(3000);
  });

  it("passes the abort signal to extension code on cancel", async () => {
    const controller = new AbortController();
    const running = call("wait_for_cancel", {}, { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("user cancelled")), 50);
    expect(errorOf(await running, "aborted")).toBe("saw the abort");
  });

  it("turns throws into error envelopes: a ToolError keeps its code, anything else is execution_failed", async () => {
    expect(errorOf(await call("fails", { expected: true }), "not_found")).toBe("no such widget");
    expect(errorOf(await call("fails", { expected: false }), "execution_failed")).toMatch(/widget index out of range/);
  });

  it("refuses results that are not JSON data, saying what and where", async () => {
    const notJson = async (what: string) => errorOf(await call("returns", { what }), "execution_failed");
    expect(await notJson("function")).toMatch(/returned a function, which is not JSON data/);
    expect(await notJson("undefined")).toMatch(/returned undefined/);
    expect(await notJson("map")).toMatch(/returned a Map/);
    expect(await notJson("nested_set")).toMatch(/a Set at rows\[0\]\.tags/);
    expect(await notJson("cycle")).toMatch(/a circular reference at self/);
    expect(await notJson("bigint")).toMatch(/a bigint at n/);
    expect(await notJson("map")).toMatch(/plain objects, arrays, strings, numbers, booleans or null/);
    // An absent optional field is fine: JSON leaves it out.
    expect(output(await call("returns", { what: "optional_field" }))).toEqual({ kept: 1, skipped: undefined });
  });

  it("says what a tool threw when it is not an Error", async () => {
    expect(errorOf(await call("throws_value", { what: "object" }), "execution_failed")).toBe(
      'The throws_value tool failed: it threw a non-Error value: {"code":5}',
    );
    expect(errorOf(await call("throws_value", { what: "string" }), "execution_failed")).toBe("The throws_value tool failed: plain words");
    expect(errorOf(await call("throws_value", { what: "empty_error" }), "execution_failed")).toBe(
      "The throws_value tool failed: Error (no message)",
    );
  });

  it("caps a long error text like output, with the whole text in a sidecar", async () => {
    for (const tool_error of [true, false]) {
      const envelope = await call("long_error", { tool_error });
      const text = errorOf(envelope, tool_error ? "not_found" : "execution_failed");
      expect(Buffer.byteLength(text)).toBeLessThan(52 * 1024);
      expect(text).toMatch(/^(The long_error tool failed: )?line of a long failure\n/);
      expect(text).toMatch(/error text truncated at \d+ of \d+ bytes; the full text is in .+; read it with the read tool/);
      expect(envelope.metadata).toMatchObject({ truncated: true });
      const whole = await fsp.readFile(envelope.metadata.output_path!, "utf8");
      expect(whole).toContain("line of a long failure\n".repeat(9000));
    }
  });

  it("validates arguments against a plain JSON Schema before execute", async () => {
    expect(output(await call("json_args", { count: 3 }))).toEqual({ doubled: 6 });
    for (const bad of [{}, { count: 0 }, { count: "3" }]) {
      expect(errorOf(await call("json_args", bad), "invalid_arguments")).toMatch(/json_args tool was called with invalid arguments/);
    }
    expect(errorOf(await call("json_args", { count: 1, more: true }), "invalid_arguments")).toBe(
      'The json_args tool has no argument "more". Its arguments are: count. Call it again with only those keys.',
    );
  });
});

describe("an extension declaring an undefined {variable}", () => {
  it("is a load error for that tool only", async () => {
    const dir = await tempDir({
      ".toolhost/tools/typo.ts": `import { defineTool, z } from "toolhost";
export const tools = [
  defineTool({ id: "typo", description: "d", kind: "read", parameters: z.object({}), requires: { fs: { read: ["{worksapce}/**"] } }, execute: async () => 1 }),
  defineTool({ id: "fine", description: "d", kind: "read", parameters: z.object({}), requires: { fs: { read: ["{user-data}/notes/**"] } }, execute: async () => 1 }),
];`,
    });
    const { registry, report } = await buildToolset({ loader: extensionLoader(), cwd: dir, trusted: true });
    expect(registry.has("typo")).toBe(false);
    expect(registry.has("fine")).toBe(true);
    expect(report.errors).toEqual([
      expect.objectContaining({ id: "typo", message: expect.stringMatching(/Undefined variable \{worksapce\}/) }),
    ]);
  });
});
