import type { ModelMessage } from "ai";
import { describe, expect, it } from "vitest";
import { planCompaction } from "../../src/agent/turn/compaction.js";
import { History } from "../../src/agent/turn/history.js";

// Planning a compaction: which tool outputs are pruned (with the sidecar named), what stays verbatim.

function history(messages: ModelMessage[]): History {
  const h = new History();
  h.replace(messages);
  return h;
}

const call = (id: string): ModelMessage => ({
  role: "assistant",
  content: [{ type: "tool-call", toolCallId: id, toolName: "bash", input: { command: "make" } }],
});
const result = (id: string, value: string): ModelMessage => ({
  role: "tool",
  content: [{ type: "tool-result", toolCallId: id, toolName: "bash", output: { type: "text", value } }],
});

describe("planCompaction", () => {
  it("prunes old tool outputs to a stub that names the saved output, and keeps the recent turn verbatim", () => {
    const big = JSON.stringify({ stdout: "x".repeat(5000), output_path: "/tmp/sidecars/s1/bash-1.txt" });
    const h = history([
      { role: "user", content: "build it" },
      call("c1"),
      result("c1", big),
      { role: "assistant", content: "Built." },
      { role: "user", content: "and now?" },
      call("c2"),
      result("c2", "ok"),
    ]);
    const plan = planCompaction(h, 4000);
    expect(plan).not.toBeNull();
    expect(plan!.pruned).toBe(1);
    expect(plan!.summarize).toBe(false);
    const pruned = plan!.messages[2] as Extract<ModelMessage, { role: "tool" }>;
    const output = (pruned.content[0] as { output: { value: string } }).output.value;
    expect(output).toMatch(
      /^\[Output pruned when the conversation was compacted \(\d+ characters\)\. The full output is in \/tmp\/sidecars\/s1\/bash-1\.txt\.\]$/,
    );
    // The recent turn, its small output included, is untouched; the history itself is not changed by planning.
    expect(plan!.messages.slice(4)).toEqual(h.messages.slice(4));
    expect(h.messages[2]).toEqual(result("c1", big));
  });

  it("plans a summary when pruning is not enough, and nothing when there is nothing to gain", () => {
    const long: ModelMessage[] = [
      { role: "user", content: "word ".repeat(3000) },
      { role: "assistant", content: "ok" },
      { role: "user", content: "next" },
    ];
    const plan = planCompaction(history(long), 4000);
    expect(plan).toMatchObject({ summarize: true, start: 1, pruned: 0 });
    // A lone prompt is never summarized away, and small histories need nothing.
    expect(planCompaction(history([{ role: "user", content: "word ".repeat(3000) }]), 4000)).toBeNull();
    expect(
      planCompaction(
        history([
          { role: "user", content: "hi" },
          { role: "assistant", content: "hello" },
        ]),
        4000,
      ),
    ).toBeNull();
    // Forced (/compact): the older turns are summarized even when small.
    expect(
      planCompaction(
        history([
          { role: "user", content: "hi" },
          { role: "assistant", content: "hello" },
          { role: "user", content: "more" },
        ]),
        4000,
        true,
      ),
    ).toMatchObject({ summarize: true });
  });

  it("prunes old images from tool results, keeping their text", () => {
    const picture: ModelMessage = {
      role: "tool",
      content: [
        {
          type: "tool-result",
          toolCallId: "c1",
          toolName: "mcp__fx__picture",
          output: {
            type: "content",
            value: [
              { type: "text", text: "a red pixel" },
              { type: "image-data", data: "AAEC".repeat(5000), mediaType: "image/png" },
            ],
          },
        },
      ],
    };
    const plan = planCompaction(
      history([{ role: "user", content: "show it" }, call("c1"), picture, { role: "user", content: "next" }]),
      4000,
    );
    expect(plan?.pruned).toBe(1);
    const output = (plan!.messages[2] as Extract<ModelMessage, { role: "tool" }>).content[0] as { output: unknown };
    expect(output.output).toEqual({
      type: "content",
      value: [
        { type: "text", text: "a red pixel" },
        { type: "text", text: "[An image, pruned when the conversation was compacted.]" },
      ],
    });
  });
});
