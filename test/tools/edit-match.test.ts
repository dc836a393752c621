import { describe, expect, it } from "vitest";
import editTool from "../../src/tools/edit.js";
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
import { encodeText } from "../../src/tools/text.js";
import { call, diskWorkspace, errorOf, hex, output, useWorkspace } from "../helpers.js";

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

describe("findMatches: a BOM copied into old_string", () => {
  it("drops a leading U+FEFF from old_string (and new_string): the decoded text never holds the BOM", () => {
    const r = edit("first\nsecond\n", "\uFEFFfirst\n", "\uFEFFFIRST\n");
    expect(r.tier).toBe("bom");
    expect(r.result).toBe("FIRST\nsecond\n");
    // new_string without the BOM is taken as it is.
    expect(edit("first\nsecond\n", "\uFEFFfirst", "1st").result).toBe("1st\nsecond\n");
  });

  it("counts every place the rest matches", () => {
    const found = findMatches("x = 1\nx = 1\n", "\uFEFFx = 1", "x = 2");
    expect(found?.tier).toBe("bom");
    expect(found?.candidates.map((c) => c.line)).toEqual([1, 2]);
  });

  it("drops only a leading BOM, and only when the rest matches", () => {
    expect(findMatches("ab\n", "a\uFEFFb", "x")).toBeNull();
    expect(findMatches("ab\n", "\uFEFFzz", "x")).toBeNull();
    expect(findMatches("ab\n", "\uFEFF", "x")).toBeNull();
  });
});

describe("findMatches: a final newline the file lacks", () => {
  it("matches old_string without its final newline at the end of the file, which keeps no final newline", () => {
    const r = edit("a\nlast", "last\n", "LAST\n");
    expect(r.tier).toBe("eof_newline");
    expect(r.result).toBe("a\nLAST");
    expect(edit("a\nb\nlast", "b\nlast\n", "B\n").result).toBe("a\nB");
    // CRLF file: the replacement takes its line endings, still without a final one.
    expect(edit("a\r\nlast", "a\nlast\n", "x\ny\n").result).toBe("x\r\ny");
  });

  it("deleting the last line deletes the break before it, so the file still ends without one", () => {
    expect(edit("a\nlast", "last\n", "").result).toBe("a");
    expect(edit("a\r\nlast", "last\n", "").result).toBe("a");
    expect(edit("last", "last\n", "").result).toBe("");
  });

  it("never competes with a place inside the file: the exact tier finds that one first", () => {
    const found = findMatches("last\nlast", "last\n", "x\n");
    expect(found?.tier).toBe("exact");
    expect(found?.candidates).toHaveLength(1);
    expect(applyCandidates("last\nlast", found!.candidates)).toBe("x\nlast");
  });

  it("does not match when the file ends with a newline, or lacks more than one", () => {
    expect(findMatches("a\nlast\n", "last\n\n", "x")).toBeNull();
    expect(findMatches("a\nlast", "last\n\n", "x")).toBeNull();
    expect(findMatches("a\nlast ", "last\n", "x")).toBeNull();
  });
});

describe("findMatches: canonically equivalent unicode (NFC)", () => {
  const nfd = "cafe\u0301";
  const nfc = "caf\u00e9";

  it("matches an NFC old_string in an NFD file, rewriting only the span", () => {
    const text = `keep ${nfd}\nname = "${nfd}";\nkeep2 ${nfd}\n`;
    const r = edit(text, `name = "${nfc}";`, `name = "tea";`);
    expect(r.tier).toBe("nfc");
    expect(r.result).toBe(`keep ${nfd}\nname = "tea";\nkeep2 ${nfd}\n`);
    // The span ends right after the combining mark, never between it and its base.
    expect(edit(`x${nfd}y`, nfc, "Z").result).toBe("xZy");
  });

  it("matches an NFD old_string in an NFC file", () => {
    const r = edit(`a ${nfc} b\n`, nfd, "tea");
    expect(r.tier).toBe("nfc");
    expect(r.result).toBe("a tea b\n");
  });

  it("keeps offsets right after composed characters, surrogate pairs and Hangul", () => {
    const text = `\u1100\u1161 \u{1F600} o\u0308 ${nfd}\n`;
    const r = edit(text, `\uAC00 \u{1F600} \u00f6 ${nfc}`, "X");
    expect(r.tier).toBe("nfc");
    expect(r.result).toBe("X\n");
    expect(edit(text, "\u00f6", "oe").result).toBe(`\u1100\u1161 \u{1F600} oe ${nfd}\n`);
  });

  it("reports several equivalent places as ambiguous", () => {
    const found = findMatches(`${nfd}\n${nfd}\n`, nfc, "x");
    expect(found?.tier).toBe("nfc");
    expect(found?.candidates.map((c) => c.line)).toEqual([1, 2]);
  });

  it("is never NFKC, and never splits a character from its combining marks", () => {
    expect(findMatches("\ufb01le\n", "file", "x")).toBeNull();
    expect(findMatches("x\u00b2\n", "x2", "x")).toBeNull();
    // "e\u0301\u0323": the old_string "e\u0323" is not a whole character of the file.
    expect(findMatches("e\u0301\u0323\n", "e\u0323", "x")).toBeNull();
  });
});

describe("findMatches: runs of spaces", () => {
  it("treats runs of spaces and tabs inside a line as one space; indentation and other bytes stay", () => {
    const text = "  const a  =   1;\t// one\n  const bb = 2;\n";
    const r = edit(text, "const a = 1; // one\n  const bb = 2;", "const a = 3;\n  const bb = 2;");
    expect(r.tier).toBe("spaces");
    expect(r.found?.uniqueOnly).toBe(true);
    expect(r.result).toBe("  const a = 3;\n  const bb = 2;\n");
    // old_string's runs may be the longer ones.
    expect(edit("x = 1\n", "x   =  1", "y").result).toBe("y\n");
  });

  it("maps spans back exactly in a CRLF file", () => {
    expect(edit("a  = 1\r\nb   = 2\r\n", "a = 1\nb = 2\n", "c\n").result).toBe("c\r\n");
  });

  it("accepts one place only", () => {
    const found = findMatches("a  = 1\na   = 1\n", "a = 1", "x");
    expect(found?.tier).toBe("spaces");
    expect(found?.uniqueOnly).toBe(true);
    expect(found?.candidates.map((c) => c.line)).toEqual([1, 2]);
  });

  it("does not invent spaces, join lines or change indentation", () => {
    expect(findMatches("a=1\n", "a = 1", "x")).toBeNull();
    expect(findMatches("a\nb\n", "a b", "x")).toBeNull();
    expect(findMatches("x  = 1\n", "x=1", "x")).toBeNull();
    expect(findMatches("f(\n  a  b)\n", "f(\n a b)", "x")).toBeNull();
  });
});

describe("findMatches: block anchored by its first and last lines", () => {
  const file = [
    "class A {",
    "    run(x) {",
    "        const total = compute(x, 2);",
    '        log("start", total);',
    "        save(total);",
    "        return total;",
    "    }",
    "}",
    "",
  ].join("\n");

  it("matches one block whose middle lines differ slightly, re-indented like the indentation tier", () => {
    const old = [
      "run(x) {",
      "    const total = compute(x,2);",
      "    log('start', total);",
      "    save(total);",
      "    return total;",
      "}",
    ].join("\n");
    const neu = ["run(x) {", "    return compute(x, 2);", "}"].join("\n");
    const r = edit(file, old, neu);
    expect(r.tier).toBe("block");
    expect(r.found?.uniqueOnly).toBe(true);
    expect(r.result).toBe(["class A {", "    run(x) {", "        return compute(x, 2);", "    }", "}", ""].join("\n"));
  });

  it("takes a trailing newline of old_string with the block", () => {
    const old =
      '    run(x) {\n        const total = compute(x,2);\n        log("start", total);\n        save(total);\n        return total;\n    }\n';
    expect(edit(file, old, "").result).toBe("class A {\n}\n");
  });

  it("accepts one block only", () => {
    const two = "f() {\n  a(1);\n  b(2);\n  c(3);\n}\n\nf() {\n  a(1);\n  b(2);\n  c(3);\n}\n";
    const found = findMatches(two, "f() {\n  a(1);\n  b(2) ;\n  c(3);\n}", "g");
    expect(found?.tier).toBe("block");
    expect(found?.uniqueOnly).toBe(true);
    expect(found?.candidates.map((c) => c.line)).toEqual([1, 7]);
  });

  it("refuses middle lines that differ too much, too many of them, or a different line count", () => {
    // One changed value in the only middle line is a different block, not a typo.
    expect(findMatches("function f() {\n  return 1;\n}\n", "function f() {\n  return 2;\n}", "x")).toBeNull();
    const base = ["run(x) {", "    const total = compute(x, 2);", '    log("start", total);', "    save(total);", "    return total;", "}"];
    const tooDifferent = [...base];
    tooDifferent[3] = "    persist(sum);";
    expect(findMatches(file, tooDifferent.join("\n"), "x")).toBeNull();
    const mostChanged = base.map((l, i) => (i > 0 && i < 4 ? l.replace(";", " ;") : l));
    expect(findMatches(file, mostChanged.join("\n"), "x")).toBeNull();
    const shorter = base.filter((_, i) => i !== 3);
    expect(findMatches(file, shorter.map((l, i) => (i === 1 ? l.replace(", ", ",") : l)).join("\n"), "x")).toBeNull();
    // The anchors must match exactly, after one indentation shift.
    const anchorOff = [...base];
    anchorOff[0] = "run(y) {";
    anchorOff[1] = "    const total = compute(x,2);";
    expect(findMatches(file, anchorOff.join("\n"), "x")).toBeNull();
    const skewed = [...base];
    skewed[5] = "  }";
    skewed[1] = "    const total = compute(x,2);";
    expect(findMatches(file, skewed.join("\n"), "x")).toBeNull();
  });
});

describe("the new tiers through the edit tool", () => {
  const workspaces = useWorkspace();
  const run = (args: unknown) => call(editTool, args, workspaces.current.session);

  it("edits a BOM file from an old_string that carries the BOM, keeping one BOM", async () => {
    const ws = await workspaces.use(diskWorkspace({ "b.txt": encodeText("first\nsecond\n", "utf-8-bom") }));
    const data = output<{ match: string; notice?: string }>(
      (await run({ path: "b.txt", old_string: "\uFEFFfirst", new_string: "\uFEFFFIRST" })).envelope,
    );
    expect(data.match).toBe("bom");
    expect(data.notice).toMatch(/byte order mark/);
    expect(hex(await ws.bytes("b.txt"))).toBe(hex(encodeText("FIRST\nsecond\n", "utf-8-bom")));
  });

  it("refuses replace_all for a match that must be unique, and says what to do", async () => {
    const ws = await workspaces.use(diskWorkspace({ "a.ts": "a  = 1\na   = 1\n" }));
    const text = errorOf(
      (await run({ path: "a.ts", old_string: "a = 1", new_string: "a = 2", replace_all: true })).envelope,
      "ambiguous_match",
    );
    expect(text).toMatch(/matches 2 places in a\.ts \(after treating each run of spaces.*\): lines 1, 2\. /);
    expect(text).toMatch(/replace_all does not apply/);
    expect(text).not.toMatch(/set replace_all: true/);
    expect(await ws.text("a.ts")).toBe("a  = 1\na   = 1\n");
  });

  it("keeps the missing final newline through the tool", async () => {
    const ws = await workspaces.use(diskWorkspace({ "e.txt": "a\nlast" }));
    const data = output<{ match: string }>((await run({ path: "e.txt", old_string: "last\n", new_string: "LAST\n" })).envelope);
    expect(data.match).toBe("eof_newline");
    expect(await ws.text("e.txt")).toBe("a\nLAST");
  });
});

describe("the ladder on a 10 MB file without a match", () => {
  it("stays linear: every tier, the hint included, answers in seconds", () => {
    const block = ["function f(x) {", "    const  total = compute(x, 2);", '    log("caf\u00e9", total);', "    return total;", "}", ""];
    const lines: string[] = [];
    for (let size = 0; size < 10 * 1024 * 1024;) {
      for (const l of block) {
        lines.push(l);
        size += l.length + 1;
      }
    }
    const text = lines.join("\n");
    // Anchors match at every block, middle lines are close but not close enough; NFD and runs of spaces everywhere.
    const olds = [
      'function f(x) {\n    const total = compute(y, 3);\n    log("cafe\u0301", sum);\n    return totals;\n}',
      "\uFEFFfunction f(x) {\n  nothing here\n}\n",
      '    const total  = compute(x, 3);\n    log("cafe\u0301", total);\n',
    ];
    const started = performance.now();
    for (const old of olds) {
      expect(findMatches(text, old, "x")).toBeNull();
      noMatchHint(text, old);
    }
    const ms = performance.now() - started;
    console.log(`ladder + hint on ${(text.length / 1048576).toFixed(1)} MB without a match: ${Math.round(ms / olds.length)} ms per edit`);
    expect(ms / olds.length).toBeLessThan(4000);
  });

  it("gives the block tier a budget: anchors on every line and a thousand middle lines stay cheap", () => {
    const text = "abcdefghij\n".repeat(950_000);
    const old = ["abcdefghij", ...Array.from({ length: 998 }, () => "abcdefghiX"), "abcdefghij"].join("\n");
    const started = performance.now();
    expect(findMatches(text, old, "x")).toBeNull();
    const ms = performance.now() - started;
    console.log(`ladder on ${(text.length / 1048576).toFixed(1)} MB, anchors on every line, 1000-line old_string: ${Math.round(ms)} ms`);
    expect(ms).toBeLessThan(4000);
  });
});
