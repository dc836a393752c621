import { describe, expect, it } from "vitest";
import {
  applyCandidates,
  findMatches,
  firstChangedLine,
  foldUnicode,
  noMatchHint,
  nonOverlapping,
  reindent,
  stripTrailing,
  unescapeOverEscaped,
} from "../../src/tools/edit-match.js";

/** Runs the ladder and applies the single (or every) candidate. */
function edit(text: string, oldString: string, newString: string, all = false) {
  const found = findMatches(text, oldString, newString);
  if (!found) return { tier: null, count: 0, result: text };
  const chosen = all ? nonOverlapping(found.candidates) : found.candidates;
  return { tier: found.tier, count: found.candidates.length, result: applyCandidates(text, chosen), found };
}

describe("findMatches: exact", () => {
  it("finds a unique span and reports its line", () => {
    const found = findMatches("a\nb\nfoo(1)\nc\n", "foo(1)", "foo(2)");
    expect(found?.tier).toBe("exact");
    expect(found?.candidates).toEqual([{ start: 4, end: 10, replacement: "foo(2)", line: 3 }]);
  });

  it("counts overlapping occurrences as ambiguous, but replaces them left to right", () => {
    const found = findMatches("ababa", "aba", "X");
    expect(found?.candidates.map((c) => c.start)).toEqual([0, 2]);
    expect(applyCandidates("ababa", nonOverlapping(found!.candidates))).toBe("Xba");
  });

  it("keeps $ patterns literal", () => {
    expect(edit("price = 1;", "1", "$& and $1 and $$ and $`").result).toBe("price = $& and $1 and $$ and $`;");
  });

  it("returns null when no tier matches", () => {
    expect(findMatches("hello world", "goodbye", "x")).toBeNull();
  });
});

describe("findMatches: line endings", () => {
  it("matches LF old_string in a CRLF file and writes CRLF back, never splitting a pair", () => {
    const text = "one\r\ntwo\r\nthree\r\n";
    expect(edit(text, "one\ntwo\n", "1\n2\n").result).toBe("1\r\n2\r\nthree\r\n");
    expect(edit(text, "two", "2\nand a half").result).toBe("one\r\n2\r\nand a half\r\nthree\r\n");
    // A span starting at a line break takes the CR with it.
    const found = findMatches(text, "\ntwo", "\nTWO");
    expect(found?.candidates[0]).toMatchObject({ start: 3, end: 8, replacement: "\r\nTWO" });
    expect(applyCandidates(text, found!.candidates)).toBe("one\r\nTWO\r\nthree\r\n");
  });

  it("keeps each match's own line ending in a mixed file", () => {
    const text = "a1\r\na2\r\nb1\nb2\n";
    expect(edit(text, "a1\n", "x\ny\n").result).toBe("x\r\ny\r\na2\r\nb1\nb2\n");
    expect(edit(text, "b1\n", "x\ny\n").result).toBe("a1\r\na2\r\nx\ny\nb2\n");
    // CRLF in new_string is converted to the LF used at the match.
    expect(edit(text, "b2", "p\r\nq").result).toBe("a1\r\na2\r\nb1\np\nq\n");
  });

  it("treats a lone CR as an ordinary character", () => {
    expect(edit("a\rb\nc", "b\nc", "B\nC").result).toBe("a\rB\nC");
  });
});

describe("findMatches: unicode fold", () => {
  it("folds quotes, dashes and special spaces, rewriting only the span", () => {
    const text = "say(\u201chi\u201d) \u2014 it\u2019s\u00a0fine\nkeep \u201cthis\u201d\n";
    const r = edit(text, `say("hi") - it's fine`, `say("bye")`);
    expect(r.tier).toBe("unicode");
    expect(r.result).toBe(`say("bye")\nkeep \u201cthis\u201d\n`);
  });

  it("is not NFKC: ligatures and full-width forms do not match", () => {
    expect(findMatches("\ufb01le", "file", "x")).toBeNull();
    expect(findMatches("\uff21BC", "ABC", "x")).toBeNull();
    expect(foldUnicode("\u2212\u2010\u2018\u201f\u3000\u205f")).toBe("--'\"  ");
  });

  it("reports several fuzzy candidates instead of picking one", () => {
    const found = findMatches("x = \u201ca\u201d\ny = \u201ca\u201d\n", `"a"`, `"b"`);
    expect(found?.tier).toBe("unicode");
    expect(found?.candidates.map((c) => c.line)).toEqual([1, 2]);
  });
});

describe("findMatches: trailing whitespace", () => {
  it("ignores trailing whitespace per line; whitespace at the span's edges stays", () => {
    const text = "keep  \nfoo  \nbar\t\nbaz\n";
    const r = edit(text, "foo\nbar", "FOO\nBAR");
    expect(r.tier).toBe("trailing_whitespace");
    expect(r.result).toBe("keep  \nFOO\nBAR\t\nbaz\n");
  });

  it("matches old_string lines that carry trailing whitespace the file lacks", () => {
    expect(edit("a\nb\nc\n", "a  \nb \n", "x\n").result).toBe("x\nc\n");
  });

  it("maps stripped offsets back exactly", () => {
    const s = stripTrailing("ab  \ncd\t\n  \n");
    expect(s.text).toBe("ab\ncd\n\n");
  });
});

describe("findMatches: indentation shift", () => {
  const file = ["class A {", "    run() {", "        if (x) {", "            go();", "        }", "", "    }", "}", ""].join("\n");

  it("matches a block given with less indentation and re-indents new_string", () => {
    const r = edit(file, "if (x) {\n    go();\n}", "if (y) {\n    stop();\n}");
    expect(r.tier).toBe("indentation");
    expect(r.result).toBe(file.replace("if (x) {\n            go();", "if (y) {\n            stop();"));
  });

  it("matches a block given with more indentation and removes the delta", () => {
    const r = edit(file, "          run() {\n              if (x) {", "          walk() {\n              if (x) {");
    expect(r.tier).toBe("indentation");
    expect(r.result).toBe(file.replace("run()", "walk()"));
  });

  it("allows blank lines with any whitespace and keeps a trailing newline", () => {
    const r = edit("x\n  a\n  \n  b\ny\n", "a\n\nb\n", "a\n\nc\n");
    expect(r.tier).toBe("indentation");
    expect(r.result).toBe("x\n  a\n\n  c\ny\n");
  });

  it("refuses a shift that is not uniform", () => {
    expect(findMatches(file, "run() {\nif (x) {", "x")).toBeNull();
  });

  it("reindent adds or strips the delta on non-blank lines", () => {
    expect(reindent("a\n\n  b", "+\t")).toBe("\ta\n\n\t  b");
    expect(reindent("    a\n  b\n", "-    ")).toBe("a\nb\n");
  });
});

describe("findMatches: over-escaped strings", () => {
  it("unescapes old and new together", () => {
    const text = 'log("a\nb");\nsay("it\'s");\n';
    const r = edit(text, 'say(\\"it\\\'s\\");', 'say(\\"it is\\");');
    expect(r.tier).toBe("unescaped");
    expect(r.result).toBe('log("a\nb");\nsay("it is");\n');
    expect(unescapeOverEscaped("a\\nb\\tc\\\"d\\'e\\\\n")).toBe("a\nb\tc\"d'e\\\n");
  });
});

describe("the ladder", () => {
  it("stops at the first tier with a candidate; no fall-through to a looser tier", () => {
    // Exact finds one place; the trailing-whitespace tier would have found two.
    const text = "a \nb\n--\na\nb\n";
    const found = findMatches(text, "a\nb", "X");
    expect(found?.tier).toBe("exact");
    expect(found?.candidates).toHaveLength(1);
    expect(applyCandidates(text, found!.candidates)).toBe("a \nb\n--\nX\n");
  });

  it("reports the first changed line after a shared prefix", () => {
    const text = "l1\nl2\nl3\nl4\n";
    const found = findMatches(text, "l2\nl3\nl4", "l2\nl3\nL4")!;
    expect(found.candidates[0]?.line).toBe(2);
    expect(firstChangedLine(text, found.candidates[0]!)).toBe(4);
  });
});

describe("noMatchHint", () => {
  it("names the line where old_string starts to differ", () => {
    const hint = noMatchHint("function f() {\n  return 1;\n}\n", "function f() {\n  return 2;\n}");
    expect(hint).toBe(
      'old_string\'s first line matches line 1, but line 2 differs: the file has "  return 1;", old_string has "  return 2;".',
    );
  });

  it("points at the closest line", () => {
    expect(noMatchHint("alpha\nconst total = compute(a, b);\nomega\n", "const totl = compute(a, b);")).toMatch(/closest .* line 2/);
    expect(noMatchHint("alpha\n", "zzzz")).toMatch(/Nothing similar/);
  });

  it("says when only whitespace differs", () => {
    expect(noMatchHint("if (a) {\n\tb();\n  }\n", "if (a) {\n    b();\n}")).toMatch(/except for whitespace/);
  });
});
