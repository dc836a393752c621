import { describe, expect, it } from "vitest";
import { parseFrontMatter } from "../../src/config/frontmatter.js";

describe("parseFrontMatter", async () => {
  it("splits YAML front matter from the body", async () => {
    const text = "---\nname: pdf\ndescription: |\n  Fill PDF forms.\n  Two lines.\ntools: [read, grep]\n---\n# PDF\nbody\n";
    expect(await parseFrontMatter(text)).toEqual({
      ok: true,
      data: { name: "pdf", description: "Fill PDF forms.\nTwo lines.\n", tools: ["read", "grep"] },
      body: "# PDF\nbody\n",
    });
  });

  it("reads CRLF files and a byte-order mark", async () => {
    expect(await parseFrontMatter("\uFEFF---\r\nname: x\r\n---\r\nbody")).toEqual({ ok: true, data: { name: "x" }, body: "body" });
  });

  it("a text without front matter has none; an empty block is an empty mapping", async () => {
    expect(await parseFrontMatter("# title\n")).toEqual({ ok: true, data: {}, body: "# title\n" });
    expect(await parseFrontMatter("---\n\n---\nbody")).toEqual({ ok: true, data: {}, body: "body" });
  });

  it("invalid YAML or a non-mapping is an error that says why", async () => {
    expect(await parseFrontMatter("---\nname: [unclosed\n---\n")).toMatchObject({
      ok: false,
      error: expect.stringContaining("not valid YAML"),
    });
    expect(await parseFrontMatter("---\n- a\n- b\n---\n")).toEqual({
      ok: false,
      error: "the front matter must be a YAML mapping (key: value lines)",
    });
  });
});
