import { describe, expect, it } from "vitest";
import { describeDropped, guardLines, type DroppedMessage } from "../../src/acp/line-guard.js";

/** Runs chunks through the guard; returns what passed and what was dropped. */
async function through(chunks: string[], max: number, replace: (d: DroppedMessage) => string | null = () => null) {
  const dropped: DroppedMessage[] = [];
  const input = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(new TextEncoder().encode(c));
      controller.close();
    },
  });
  const reader = guardLines(
    input,
    (d) => {
      dropped.push(d);
      return replace(d);
    },
    max,
  ).getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  return { text, dropped };
}

describe("guardLines", () => {
  it("passes lines within the limit whole, however they are split", async () => {
    const { text, dropped } = await through(['{"a":', '1}\n{"b"', ":2}\n", '{"c":3}'], 20);
    expect(text).toBe('{"a":1}\n{"b":2}\n{"c":3}');
    expect(dropped).toEqual([]);
  });

  it("drops a longer line, split or not, and keeps the lines around it", async () => {
    const big = `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"text":"${"x".repeat(100)}"}}`;
    const { text, dropped } = await through(['{"a":1}\n', big.slice(0, 30), big.slice(30), '\n{"b":2}\n'], 40);
    expect(text).toBe('{"a":1}\n{"b":2}\n');
    expect(dropped).toEqual([{ bytes: big.length, id: 7, method: "session/prompt" }]);
  });

  it("puts the replacement line in place of the dropped one", async () => {
    const big = `{"jsonrpc":"2.0","id":"r1","result":{"content":"${"y".repeat(100)}"}}\n`;
    const { text } = await through([big, '{"b":2}\n'], 40, (d) => JSON.stringify({ id: d.id, error: {} }));
    expect(text).toBe('{"id":"r1","error":{}}\n{"b":2}\n');
  });
});

describe("describeDropped", () => {
  it("finds the id and method before params, or in the members that close the message", () => {
    expect(describeDropped('{"jsonrpc":"2.0","id":3,"method":"a/b","params":{"id":99', "", 10)).toEqual({
      bytes: 10,
      id: 3,
      method: "a/b",
    });
    expect(describeDropped('{"params":{"id":99,', 'xx"}},"id":"k","method":"a/c"}', 10)).toEqual({ bytes: 10, id: "k", method: "a/c" });
    expect(describeDropped('{"params":{"id":99,', 'xx"}}}', 10)).toEqual({ bytes: 10 });
  });
});
