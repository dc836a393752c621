import { describe, expect, expectTypeOf, it } from "vitest";
import * as z from "zod";
import { defineTool, type JsonArgs, type ToolDisplay } from "../../src/tool/define.js";
import { displayResult, fallbackDisplay } from "../../src/tool/display.js";
import { selfTruncated } from "../../src/tool/envelope.js";
import bash, { type BashResult } from "../../src/tools/bash.js";

const doubler = defineTool({
  id: "doubler",
  description: "Doubles a number.",
  kind: "other",
  parameters: z.object({ n: z.number() }),
  requires: {},
  async execute(args) {
    return { doubled: args.n * 2 };
  },
  display(data, args) {
    // The data's type comes from execute, the arguments' from the schema.
    expectTypeOf(data).toEqualTypeOf<{ doubled: number }>();
    expectTypeOf(args).toEqualTypeOf<{ n: number }>();
    return { text: `${args.n} × 2 = ${data.doubled}`, locations: [{ path: "/ws/n.txt", line: data.doubled }] };
  },
  shorthand: (text) => ({ n: Number(text) }),
  shorthandHint: "a number",
});

/** A tool whose display hook returns `value` (or throws it, as a function). */
const showing = (value: unknown) => ({ display: typeof value === "function" ? (value as () => ToolDisplay) : () => value as ToolDisplay });

describe("displayResult", () => {
  it("uses the tool's hook with the result and the arguments", () => {
    expect(displayResult(doubler, { doubled: 6 }, { n: 3 })).toEqual({ text: "3 × 2 = 6", locations: [{ path: "/ws/n.txt", line: 6 }] });
  });

  it("passes every ToolDisplay field through and drops anything else", () => {
    const display = {
      text: "# Answer",
      language: "md",
      markdown: true,
      diffs: [{ path: "/ws/a.ts", oldText: null, newText: "x\n", extra: 1 }],
      images: [{ data: "iVBORw0KGgo=", mimeType: "image/png" }],
      locations: [{ path: "/ws/a.ts" }, { path: "/ws/b.ts", line: 0 }],
      secret: "not shown",
    };
    expect(displayResult(showing(display), {}, {})).toEqual({
      text: "# Answer",
      language: "md",
      markdown: true,
      diffs: [{ path: "/ws/a.ts", oldText: null, newText: "x\n" }],
      images: [{ data: "iVBORw0KGgo=", mimeType: "image/png" }],
      locations: [{ path: "/ws/a.ts" }, { path: "/ws/b.ts", line: 0 }],
    });
  });

  it("keeps an empty display: the tool chose to show nothing", () => {
    expect(displayResult(showing({}), { big: "data" }, {})).toEqual({});
  });

  it("falls back when the hook throws", () => {
    const throwing = showing(() => {
      throw new Error("display bug");
    });
    expect(displayResult(throwing, { a: 1 }, {})).toEqual({ text: '{\n  "a": 1\n}' });
  });

  it.each([
    ["not an object", "text"],
    ["null", null],
    ["an array", [{ text: "x" }]],
    ["text that is not a string", { text: 5 }],
    ["markdown that is not a boolean", { text: "x", markdown: "yes" }],
    ["a relative location", { text: "x", locations: [{ path: "src/a.ts" }] }],
    ["a negative line", { locations: [{ path: "/ws/a.ts", line: -1 }] }],
    ["a fractional line", { locations: [{ path: "/ws/a.ts", line: 1.5 }] }],
    ["locations that are not a list", { locations: { path: "/ws/a.ts" } }],
    ["a diff without newText", { diffs: [{ path: "/ws/a.ts", oldText: "x" }] }],
    ["an image without a MIME type", { images: [{ data: "AAAA" }] }],
  ])("falls back when the hook returns %s", (_, junk) => {
    expect(displayResult(showing(junk), { a: 1 }, {})).toEqual({ text: '{\n  "a": 1\n}' });
  });

  it("falls back for a tool without a hook, or no tool at all", () => {
    expect(displayResult({}, "plain words", {})).toEqual({ text: "plain words" });
    expect(displayResult(undefined, ["a", "b"], {})).toEqual({ text: '[\n  "a",\n  "b"\n]' });
  });
});

describe("fallbackDisplay", () => {
  it("shows a string as it is and anything else as pretty JSON", () => {
    expect(fallbackDisplay("line 1\nline 2")).toEqual({ text: "line 1\nline 2" });
    expect(fallbackDisplay({ stdout: "hi\n", exit_code: 0 })).toEqual({ text: '{\n  "stdout": "hi\\n",\n  "exit_code": 0\n}' });
    expect(fallbackDisplay(42)).toEqual({ text: "42" });
    expect(fallbackDisplay(null)).toEqual({ text: "null" });
  });

  it("never throws: no data shows nothing, unserialisable data shows as a string", () => {
    expect(fallbackDisplay(undefined)).toEqual({});
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    expect(fallbackDisplay(cyclic)).toEqual({ text: "[object Object]" });
    expect(fallbackDisplay(10n)).toEqual({ text: "10" });
  });
});

describe("the display contract", () => {
  it("keeps display and shorthandHint on the defined tool", () => {
    expect(doubler.shorthandHint).toBe("a number");
    expect(typeof doubler.display).toBe("function");
  });

  it("types a JSON Schema tool's display with its data and plain arguments", () => {
    const counter = defineTool({
      id: "counter",
      description: "Counts the keys of its arguments.",
      kind: "other",
      parameters: { type: "object", properties: { a: { type: "string" } } },
      requires: {},
      execute: async (args) => ({ keys: Object.keys(args).length }),
      display(data, args) {
        expectTypeOf(data).toEqualTypeOf<{ keys: number }>();
        expectTypeOf(args).toEqualTypeOf<JsonArgs>();
        // @ts-expect-error the data has no such field
        void data.missing;
        return { text: `${data.keys} keys` };
      },
    });
    expect(displayResult(counter, { keys: 2 }, { a: "x", b: 1 })).toEqual({ text: "2 keys" });
  });

  it("types a self-truncated result's display with the data inside", () => {
    const capped = defineTool({
      id: "capped",
      description: "Caps its own output.",
      kind: "other",
      parameters: z.object({}),
      requires: {},
      execute: async () => selfTruncated({ out: "head…tail" }, { truncated: true }),
      display: (data) => ({ text: data.out }),
    });
    expectTypeOf<Parameters<NonNullable<typeof capped.display>>[0]>().toEqualTypeOf<{ out: string }>();
    expectTypeOf<Parameters<NonNullable<typeof bash.display>>[0]>().toEqualTypeOf<BashResult>();
    expect(displayResult(capped, { out: "head…tail" }, {})).toEqual({ text: "head…tail" });
  });
});
