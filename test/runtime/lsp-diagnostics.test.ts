import { describe, expect, it } from "vitest";
import type { Diagnostic } from "vscode-languageserver-protocol/node";
import { newErrors, problemsBlock } from "../../src/runtime/lsp/diagnostics.js";

// What counts as new after an edit, and the block's caps: 20 problems a file, 5 files.

const d = (line: number, message: string, severity: 1 | 2 | 3 = 1, code?: number): Diagnostic => ({
  range: { start: { line, character: 2 }, end: { line, character: 5 } },
  message,
  severity,
  ...(code ? { code } : {}),
});

describe("newErrors", () => {
  it("an error that only moved is old; a second one with the same message is new; warnings only when asked", () => {
    const before = [d(3, "Cannot find name 'x'.", 1, 2304), d(9, "unused", 2)];
    const after = [
      d(5, "Cannot find name 'x'.", 1, 2304),
      d(7, "Cannot find name 'x'.", 1, 2304),
      d(9, "unused", 2),
      d(10, "deprecated", 2),
      d(11, "hint", 3),
    ];
    expect(newErrors(before, after)).toEqual([after[1]]);
    // Which of the two is "the old one": the one at the old line first, else either; one is new either way.
    expect(newErrors(before, after, true).map((x) => x.message)).toEqual(["Cannot find name 'x'.", "deprecated"]);
    expect(newErrors(after, before)).toEqual([]);
  });

  it("the same message under another code is new", () => {
    expect(newErrors([d(1, "m", 1, 1)], [d(1, "m", 1, 2)])).toHaveLength(1);
  });
});

describe("problemsBlock", () => {
  it("is capped at 20 a file and 5 files, relative paths, warnings marked", () => {
    const files = Array.from({ length: 7 }, (_, f) => ({
      path: `/ws/src/f${f}.ts`,
      errors: Array.from({ length: f === 0 ? 23 : 1 }, (_, i) => d(i, `problem ${i}\nsecond line`, i === 0 && f === 1 ? 2 : 1)),
    }));
    const lines = problemsBlock(files, "/ws")!.split("\n");
    expect(lines[0]).toBe("New problems after this edit:");
    expect(lines[1]).toBe("src/f0.ts:1:3 problem 0 second line");
    expect(lines[21]).toBe("… and 3 more in src/f0.ts");
    expect(lines[22]).toBe("src/f1.ts:1:3 warning: problem 0 second line");
    expect(lines.at(-1)).toBe("… and new problems in 2 more files");
    expect(lines).toHaveLength(1 + 20 + 1 + 4 + 1);
    expect(problemsBlock([{ path: "/ws/a.ts", errors: [] }], "/ws")).toBeUndefined();
  });
});
