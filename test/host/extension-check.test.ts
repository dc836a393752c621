import { describe, expect, it } from "vitest";
import * as z from "zod";
import { checkExtensionTool } from "../../src/host/extension-check.js";
import { displayResult } from "../../src/tool/display.js";

/** An extension tool as a hand-written object (no defineTool), with some fields replaced. */
const tool = (extra: Record<string, unknown>) => ({
  id: "word_count",
  description: "Counts words.",
  kind: "read",
  parameters: z.object({ text: z.string() }),
  requires: {},
  execute: async ({ text }: { text: string }) => ({ words: text.split(/\s+/).filter(Boolean).length }),
  ...extra,
});

describe("extension display hooks", () => {
  it("accepts display and shorthandHint, and the host shows the result with them", async () => {
    const checked = checkExtensionTool(
      tool({
        display: (data: { words: number }) => ({ text: `${data.words} words` }),
        shorthand: (text: string) => ({ text }),
        shorthandHint: "some text",
      }),
    );
    if (!checked.ok) throw new Error(checked.problems.join("; "));
    expect(checked.tool.shorthandHint).toBe("some text");
    const data = await checked.tool.execute({ text: "one two three" }, {} as never);
    expect(displayResult(checked.tool, data, { text: "one two three" })).toEqual({ text: "3 words" });
  });

  it("refuses a display that is not a function and a shorthandHint that is not text", () => {
    expect(checkExtensionTool(tool({ display: { text: "static" } }))).toEqual({
      ok: false,
      id: "word_count",
      problems: ["display must be a function"],
    });
    for (const shorthandHint of [42, "  "]) {
      expect(checkExtensionTool(tool({ shorthandHint }))).toEqual({
        ok: false,
        id: "word_count",
        problems: ["shorthandHint must be a non-empty string"],
      });
    }
  });
});
