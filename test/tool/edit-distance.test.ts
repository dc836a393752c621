import { describe, expect, it } from "vitest";
import { editDistance } from "../../src/tool/edit-distance.js";

describe("editDistance", () => {
  it("counts insertions, deletions and substitutions", () => {
    expect(editDistance("kitten", "sitting")).toBe(3);
    expect(editDistance("offest", "offset")).toBe(2);
    expect(editDistance("", "abc")).toBe(3);
    expect(editDistance("same", "same")).toBe(0);
  });

  it("stops at the cap and says cap + 1 for anything farther", () => {
    expect(editDistance("kitten", "sitting", 3)).toBe(3);
    expect(editDistance("kitten", "sitting", 2)).toBe(3);
    expect(editDistance("a", "abcdef", 2)).toBe(3);
    expect(editDistance("abcdefgh", "hgfedcba", 1)).toBe(2);
  });
});
