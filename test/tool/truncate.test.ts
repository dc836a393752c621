import * as fsp from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { applyOutputLimit, utf8Head, utf8HeadEnd, utf8Tail, utf8TailStart } from "../../src/tool/truncate.js";
import { defineTool } from "../../src/tool/define.js";
import { z } from "zod";
import { tempDir } from "../helpers.js";
import path from "node:path";

async function sinkInto(dir: string) {
  let n = 0;
  const written: string[] = [];
  const sink = async (text: string) => {
    const p = path.join(dir, `side-${++n}.txt`);
    await fsp.writeFile(p, text);
    written.push(p);
    return p;
  };
  return { sink, written };
}

describe("utf8 cuts", () => {
  it("never splits a multi-byte character", () => {
    const text = "aé€😀b";
    for (let n = 0; n <= 12; n++) {
      const head = utf8Head(text, n);
      expect(Buffer.byteLength(head)).toBeLessThanOrEqual(n);
      expect(text.startsWith(head)).toBe(true);
      const tail = utf8Tail(text, n);
      expect(Buffer.byteLength(tail)).toBeLessThanOrEqual(n);
      expect(text.endsWith(tail)).toBe(true);
    }
  });
});

describe("utf8 byte offsets", () => {
  const strict = new TextDecoder("utf-8", { fatal: true });
  // 1-, 2-, 3- and 4-byte characters, each at every position relative to a cut.
  const bytes = Buffer.from("aé€😀bé😀€a", "utf8");

  it("never cut a multi-byte character, at any offset", () => {
    for (let at = 0; at <= bytes.length; at++) {
      const end = utf8HeadEnd(bytes, at);
      const start = utf8TailStart(bytes, at);
      expect(end).toBeLessThanOrEqual(at);
      expect(at - end).toBeLessThan(4);
      expect(start).toBeGreaterThanOrEqual(at);
      expect(start - at).toBeLessThan(4);
      // Both sides decode strictly: no half character on either side of the cut.
      expect(() => strict.decode(bytes.subarray(0, end))).not.toThrow();
      expect(() => strict.decode(bytes.subarray(start))).not.toThrow();
      // On a character boundary both leave the offset alone, so head + tail lose nothing.
      if (end === at) expect(start).toBe(at);
    }
  });

  it("judges a head by the bytes before the cut alone (a window whose next byte is unknown)", () => {
    const euro = Buffer.from("x€", "utf8");
    expect(utf8HeadEnd(euro.subarray(0, 3), 3)).toBe(1);
    expect(utf8HeadEnd(euro, 4)).toBe(4);
    // Invalid input is cut as is rather than walked back without end.
    expect(utf8HeadEnd(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80]), 5)).toBe(5);
    expect(utf8TailStart(Buffer.from([0x80, 0x80, 0x80, 0x80, 0x41]), 0)).toBe(3);
  });
});

describe("applyOutputLimit", () => {
  it("leaves output under the cap untouched and writes no sidecar", async () => {
    const { sink, written } = await sinkInto(await tempDir());
    const data = { content: "short", other: 1 };
    const out = await applyOutputLimit(data, { field: "content", maxBytes: 100 }, sink);
    expect(out).toEqual({ data, truncated: false });
    expect(written).toHaveLength(0);
  });

  it("keeps the head of a text field and puts the whole text in the sidecar", async () => {
    const { sink } = await sinkInto(await tempDir());
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join("\n");
    const out = await applyOutputLimit({ content: lines, path: "/x" }, { field: "content", maxBytes: 1000 }, sink);
    expect(out.truncated).toBe(true);
    const data = out.data as { content: string; path: string };
    expect(data.path).toBe("/x");
    expect(data.content.startsWith("line 0\nline 1\n")).toBe(true);
    expect(data.content).toContain(out.output_path!);
    expect(data.content).toContain("read tool");
    expect(await fsp.readFile(out.output_path!, "utf8")).toBe(lines);
  });

  it("keeps head and tail when asked", async () => {
    const { sink } = await sinkInto(await tempDir());
    const text = "HEAD" + "x".repeat(10_000) + "TAIL";
    const out = await applyOutputLimit(text, { maxBytes: 200, keep: "head_tail" }, sink);
    const data = out.data as string;
    expect(data.startsWith("HEAD")).toBe(true);
    expect(data.endsWith("TAIL")).toBe(true);
    expect(data).toMatch(/bytes omitted/);
  });

  it("caps a list by entries, one sidecar line per entry", async () => {
    const { sink } = await sinkInto(await tempDir());
    const matches = Array.from({ length: 250 }, (_, i) => ({ path: `f${i}.ts`, line: i }));
    const out = await applyOutputLimit(
      { matches },
      { field: "matches", maxItems: 200, formatItem: (m) => `${(m as { path: string }).path}:${(m as { line: number }).line}` },
      sink,
    );
    const data = out.data as { matches: unknown[]; notice: string };
    expect(data.matches).toHaveLength(200);
    expect(data.notice).toMatch(/Showing 200 of 250/);
    const side = (await fsp.readFile(out.output_path!, "utf8")).trimEnd().split("\n");
    expect(side).toHaveLength(250);
    expect(side[249]).toBe("f249.ts:249");
  });

  it("caps any other data by its JSON size into data.head", async () => {
    const { sink } = await sinkInto(await tempDir());
    const data = { rows: Array.from({ length: 1000 }, (_, i) => ({ i, text: "some text here" })) };
    const out = await applyOutputLimit(data, { maxBytes: 2000 }, sink);
    expect(out.truncated).toBe(true);
    const capped = out.data as { head: string; notice: string };
    expect(Buffer.byteLength(capped.head)).toBeLessThanOrEqual(2000);
    expect(JSON.parse(await fsp.readFile(out.output_path!, "utf8"))).toEqual(data);
  });
});

describe("defineTool", () => {
  it("publishes an input JSON Schema and refuses bad ids", () => {
    const tool = defineTool({
      id: "hello_world",
      description: "d",
      kind: "other",
      parameters: z.object({ name: z.string().describe("who"), times: z.number().int().default(1) }),
      requires: {},
      execute: async () => "hi",
    });
    expect(tool.inputSchema).toMatchObject({
      type: "object",
      properties: { name: { type: "string", description: "who" }, times: { type: "integer", default: 1 } },
      required: ["name"],
    });
    // zod's safe-integer bounds of .int() cost tokens on every request and say nothing.
    expect(JSON.stringify(tool.inputSchema)).not.toContain(String(Number.MAX_SAFE_INTEGER));
    expect(tool.parameters.safeParse({ name: "a", times: 2 ** 60 }).success).toBe(false);
    expect(() => defineTool({ ...tool, id: "Bad-Id" })).toThrow(/Invalid tool id/);
    expect(() => defineTool({ ...tool, id: "a".repeat(65) })).toThrow(/Invalid tool id/);
  });
});

describe("envelopeToText", () => {
  it("keeps file content and command output raw, lists one entry per line", async () => {
    const { envelopeToText } = await import("../../src/tool/envelope.js");
    const text = envelopeToText({
      type: "output",
      data: {
        path: "/ws/a.ts",
        start_line: 1,
        content: '1\tconst s = "x";\n2\tlet y = 2;',
        matches: [{ path: "a.ts", line: 1 }],
        total: 1,
      },
      metadata: { duration_ms: 1 },
    });
    expect(text).toBe(
      'path: /ws/a.ts\nstart_line: 1\ntotal: 1\ncontent:\n1\tconst s = "x";\n2\tlet y = 2;\nmatches:\n{"path":"a.ts","line":1}',
    );
    expect(envelopeToText({ type: "error", error_text: "gone", metadata: { duration_ms: 1, error_code: "not_found" } })).toBe(
      "Error (not_found): gone",
    );
  });
});
