import { describe, expect, it } from "vitest";
import { answerEarly, type EarlyAnswer } from "../../src/acp/early.js";

// The early reader in front of the SDK: answers what it may, hands the rest over in order.

const encoder = new TextEncoder();
const line = (message: object) => `${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`;

function source(chunks: string[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

const answerHandshake: EarlyAnswer = ({ id, method }) =>
  method === "initialize" || method === "session/new" ? JSON.stringify({ jsonrpc: "2.0", id, result: { method } }) : null;

async function run(chunks: string[], answer = answerHandshake) {
  const written: string[] = [];
  let handedOver = 0;
  const { stream } = answerEarly(source(chunks), {
    answer,
    write: async (text) => void written.push(text),
    onHandOver: () => void handedOver++,
  });
  const rest = await new Response(stream).text();
  return { written, rest, handedOver };
}

describe("answerEarly", () => {
  it("answers initialize and session/new, then hands the rest over unchanged", async () => {
    const prompt = line({ id: 3, method: "session/prompt", params: { sessionId: "s", prompt: [] } });
    const later = line({ id: 4, method: "initialize", params: {} });
    const { written, rest, handedOver } = await run([
      line({ id: 1, method: "initialize", params: {} }) + line({ id: 2, method: "session/new", params: { cwd: "/" } }),
      prompt,
      later,
    ]);
    expect(written.map((w) => JSON.parse(w).id)).toEqual([1, 2]);
    // Once a line is left to the SDK, everything after it is too (no reordering).
    expect(rest).toBe(prompt + later);
    expect(handedOver).toBe(1);
  });

  it("leaves a malformed or unanswerable first line, and all after it, to the SDK", async () => {
    const init = line({ id: 2, method: "initialize", params: {} });
    for (const first of ["{not json\n", line({ method: "initialize" }), line({ id: 1, method: "authenticate", params: {} })]) {
      const { written, rest } = await run([first, init]);
      expect(written).toEqual([]);
      expect(rest).toBe(first + init);
    }
  });

  it("reassembles lines split across chunks, and passes a last line without a newline on", async () => {
    const init = line({ id: 1, method: "initialize", params: { protocolVersion: 1 } });
    const { written, rest } = await run([init.slice(0, 10), init.slice(10, 30), init.slice(30), '{"jsonrpc":"2.0","id":2,"met']);
    expect(written).toHaveLength(1);
    expect(rest).toBe('{"jsonrpc":"2.0","id":2,"met');
  });

  it("hands over a line too long to be a handshake without parsing it", async () => {
    const written: string[] = [];
    const huge = `${JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { pad: "x".repeat(5000) } })}\n`;
    const { stream } = answerEarly(source([huge.slice(0, 3000), huge.slice(3000)]), {
      answer: answerHandshake,
      write: async (text) => void written.push(text),
      onHandOver: () => {},
      maxLineBytes: 1024,
    });
    expect(await new Response(stream).text()).toBe(huge);
    expect(written).toEqual([]);
  });

  it("stops answering once the SDK is ready", async () => {
    let push: (text: string) => void = () => {};
    let close: () => void = () => {};
    const input = new ReadableStream<Uint8Array>({
      start(controller) {
        push = (text) => controller.enqueue(encoder.encode(text));
        close = () => controller.close();
      },
    });
    const written: string[] = [];
    const early = answerEarly(input, { answer: answerHandshake, write: async (t) => void written.push(t), onHandOver: () => {} });
    push(line({ id: 1, method: "initialize", params: {} }));
    await new Promise((resolve) => setTimeout(resolve, 10));
    early.endEarly();
    const second = line({ id: 2, method: "session/new", params: {} });
    push(second);
    close();
    expect(await new Response(early.stream).text()).toBe(second);
    expect(written).toHaveLength(1);
  });
});
