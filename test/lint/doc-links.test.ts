// Every relative link of README.md, docs/*.md and the folders' READMEs points at a file that
// exists, and every #anchor at a heading of that file (GitHub's slugs): moving a section into
// docs/ or renaming a heading without fixing its links fails here.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

const root = path.resolve(import.meta.dirname, "../..");

const markdownFiles = (): string[] => [
  "README.md",
  ...fs
    .readdirSync(path.join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
  ...fs
    .readdirSync(path.join(root, "src"), { withFileTypes: true })
    .filter((d) => d.isDirectory() && fs.existsSync(path.join(root, "src", d.name, "README.md")))
    .map((d) => `src/${d.name}/README.md`),
];

/** The text outside fenced code blocks and inline code (a link or heading there is an example). */
const prose = (text: string): string => text.replace(/^(```|~~~)[^]*?^\1/gm, "").replace(/`[^`\n]*`/g, "``");

/** GitHub's anchors of a file's headings: lower case, punctuation dropped, spaces to dashes, repeats numbered. */
function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading = ""] of text.replace(/^(```|~~~)[^]*?^\1/gm, "").matchAll(/^#{1,6}\s+(.+?)\s*#*$/gm)) {
    const slug = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, "")
      .replace(/\s/g, "-");
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

/** Every broken relative link of one file, as `file: target (why)`. */
function brokenLinks(file: string): string[] {
  const text = fs.readFileSync(path.join(root, file), "utf8");
  const broken: string[] = [];
  for (const [, target = ""] of prose(text).matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [where, anchor] = target.split("#", 2) as [string, string | undefined];
    const abs = where ? path.resolve(path.dirname(path.join(root, file)), decodeURIComponent(where)) : path.join(root, file);
    if (!fs.existsSync(abs)) {
      broken.push(`${file}: ${target} (no such file)`);
      continue;
    }
    if (anchor === undefined || !abs.endsWith(".md")) continue;
    if (!anchors(fs.readFileSync(abs, "utf8")).has(anchor)) broken.push(`${file}: ${target} (no such heading)`);
  }
  return broken;
}

describe("the documentation's links", () => {
  it("slugs headings as GitHub does", () => {
    expect([
      ...anchors("# Serve it over the network: containers, SSH\n## The tools\n## The tools\n### tool_search and deferral\n"),
    ]).toEqual(["serve-it-over-the-network-containers-ssh", "the-tools", "the-tools-1", "tool_search-and-deferral"]);
  });

  it("every relative link and anchor of README.md, docs/ and src/*/README.md resolves", () => {
    const files = markdownFiles();
    expect(files).toContain("docs/configuration.md");
    expect(files.flatMap(brokenLinks)).toEqual([]);
  });
});
