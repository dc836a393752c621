import { gfm } from "@joplin/turndown-plugin-gfm";
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";
import { ToolError } from "../tool/errors.js";

// web_fetch's HTML → main content: linkedom (a light DOM), Mozilla's Readability (Firefox's
// reader view) and turndown with GitHub-flavoured tables. Loaded with import() on the first
// HTML page, so nothing of it is on the session's start-up path. docs/performance.md says why
// these three (bench/html-markdown.mjs).

export interface Extracted {
  title?: string;
  content: string;
}

/** Elements that are never content, removed before anything reads the page. */
const NEVER_CONTENT = "script, style, noscript, template, iframe, object, embed, svg, canvas, nav, dialog, button";
/** Page chrome, removed too when Readability finds no article. */
const CHROME = "header, footer, aside, form";
/** Elements after which plain text breaks the line. */
const BLOCKS =
  "p, div, section, article, h1, h2, h3, h4, h5, h6, li, pre, blockquote, tr, table, ul, ol, dl, dt, dd, figure, figcaption, hr";

/**
 * Deeper pages are refused: Readability's cost grows with the cube of the nesting (1000 levels:
 * 6 s, 2000: 42 s, a pathological page: minutes), and no browser builds a tree deeper than this
 * (Chromium's parser stops nesting at 512).
 */
export const MAX_DEPTH = 512;

/** linkedom's document (the project has no DOM lib types). */
type Doc = ReturnType<typeof parseHTML>["document"];

let turndown: TurndownService | undefined;

function markdownConverter(): TurndownService {
  if (turndown) return turndown;
  const service = new TurndownService({ headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-", emDelimiter: "_" });
  service.use(gfm);
  service.remove(["script", "style", "noscript", "template", "iframe"]);
  // A code block keeps its language (`<pre><code class="language-ts">`).
  service.addRule("fencedCodeWithLanguage", {
    filter: (node) => node.nodeName === "PRE" && node.firstChild?.nodeName === "CODE",
    replacement: (_content, node) => {
      const code = node.firstChild as unknown as { getAttribute(name: string): string | null; textContent: string | null };
      const language = /(?:^|\s)(?:language|lang)-(\S+)/.exec(code.getAttribute("class") ?? "")?.[1] ?? "";
      const text = (code.textContent ?? "").replace(/\n$/, "");
      const fence = "`".repeat(Math.max(3, ...[...text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
      return `\n\n${fence}${language}\n${text}\n${fence}\n\n`;
    },
  });
  // "- item", not turndown's "-   item"; nested lines indented under the text.
  service.addRule("listItem", {
    filter: "li",
    replacement: (content, node, options) => {
      const parent = node.parentNode as unknown as {
        nodeName: string;
        getAttribute(name: string): string | null;
        children: ArrayLike<unknown>;
      } | null;
      let prefix = `${options.bulletListMarker ?? "-"} `;
      if (parent?.nodeName === "OL") {
        const start = Number(parent.getAttribute("start") ?? 1);
        prefix = `${(Number.isFinite(start) ? start : 1) + Array.prototype.indexOf.call(parent.children, node)}. `;
      }
      const body = content
        .replace(/^\n+/, "")
        .replace(/\n+$/, "\n")
        .replace(/\n(?!$)/g, `\n${" ".repeat(prefix.length)}`);
      return prefix + body + (node.nextSibling && !body.endsWith("\n") ? "\n" : "");
    },
  });
  turndown = service;
  return service;
}

/** Links and images made absolute against the page's URL (the model cannot resolve `/docs`); `javascript:` links dropped. */
function absolutize(document: Doc, base: string): void {
  for (const [selector, attribute] of [
    ["a[href]", "href"],
    ["img[src]", "src"],
  ] as const) {
    for (const element of document.querySelectorAll(selector)) {
      const value = element.getAttribute(attribute) ?? "";
      if (/^\s*javascript:/i.test(value)) {
        element.removeAttribute(attribute);
        continue;
      }
      try {
        element.setAttribute(attribute, new URL(value, base).href);
      } catch {
        // left as written
      }
    }
  }
}

/** The text of some HTML, a line per block and a tab between table cells. */
function plainText(html: string): string {
  const { document } = parseHTML(`<html><body>${html}</body></html>`);
  for (const element of document.querySelectorAll("br")) element.replaceWith(document.createTextNode("\n"));
  for (const element of document.querySelectorAll("td, th")) element.append(document.createTextNode("\t"));
  for (const element of document.querySelectorAll(BLOCKS)) element.append(document.createTextNode("\n"));
  return tidyText(document.body?.textContent ?? "");
}

const tidyText = (text: string) =>
  text
    .replace(/[ \f\v\r]+/g, " ")
    .replace(/ *\n */g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();

interface Node {
  children: ArrayLike<Node>;
}

/** How deep the elements nest (iteratively: a page may nest far deeper than the stack). */
function depthOf(root: Node): number {
  let deepest = 0;
  const stack: [Node, number][] = [[root, 1]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    if (depth > deepest) deepest = depth;
    for (let i = 0; i < node.children.length; i++) stack.push([node.children[i] as Node, depth + 1]);
  }
  return deepest;
}

/** Elements that never hold others, or whose end tag the parser implies: they add no depth here. */
const FLAT = new Set(
  "area base br col embed hr img input link meta param source track wbr p li td th tr dt dd option optgroup thead tbody tfoot colgroup rp rt html head body".split(
    " ",
  ),
);
/** Elements whose content is text, up to their own end tag. */
const RAW = new Set(["script", "style", "textarea", "title", "xmp", "noscript", "template"]);

/**
 * Whether the markup nests deeper than `limit`, before parsing it (the parser itself is quadratic
 * in the depth: a million unclosed tags take it minutes): a linear pass over the tags that keeps
 * the open ones as the parser would, an end tag closing everything opened since its start tag.
 */
function nestsDeeperThan(html: string, limit: number): boolean {
  const open: string[] = [];
  const counts = new Map<string, number>();
  const tag = /<(\/?)([a-zA-Z][^\s/>]*)[^>]*>/g;
  let lower: string | undefined;
  for (let match = tag.exec(html); match; match = tag.exec(html)) {
    const name = (match[2] as string).toLowerCase();
    if (match[1]) {
      if (!counts.get(name)) continue;
      for (let top = open.pop(); top !== undefined; top = open.pop()) {
        counts.set(top, (counts.get(top) ?? 1) - 1);
        if (top === name) break;
      }
      continue;
    }
    if (RAW.has(name)) {
      const end = (lower ??= html.toLowerCase()).indexOf(`</${name}`, tag.lastIndex);
      if (end === -1) break;
      tag.lastIndex = end;
      continue;
    }
    if (FLAT.has(name) || match[0].endsWith("/>")) continue;
    open.push(name);
    counts.set(name, (counts.get(name) ?? 0) + 1);
    if (open.length > limit) return true;
  }
  return false;
}

function tooDeep(url: string, depth: string): ToolError {
  return new ToolError(
    "too_large",
    `${url} nests its elements ${depth} deep, deeper than web_fetch reduces (${MAX_DEPTH} levels; extracting such a page takes minutes): format "html" returns it as it is`,
  );
}

/** The page as a document with an <html> element (a fragment or plain words parse to none). */
function parseDocument(html: string): Doc {
  const { document } = parseHTML(html);
  if (document.documentElement?.localName === "html") return document;
  return parseHTML(/<body[\s>]/i.test(html) ? `<!doctype html><html>${html}</html>` : `<!doctype html><html><body>${html}</body></html>`)
    .document;
}

/** A parsed page with absolute links and without what is never content. */
function parsePage(html: string, url: string): Doc {
  // The cheap pass has slack (it only approximates the parser); the tree is then measured exactly.
  if (nestsDeeperThan(html, 2 * MAX_DEPTH)) throw tooDeep(url, `over ${2 * MAX_DEPTH}`);
  const document = parseDocument(html);
  const depth = depthOf(document.documentElement as unknown as Node);
  if (depth > MAX_DEPTH) throw tooDeep(url, String(depth));
  absolutize(document, url);
  for (const element of document.querySelectorAll(NEVER_CONTENT)) element.remove();
  return document;
}

/** The page's main content as Markdown or plain text, and its title. */
export function extractHtml(html: string, url: string, format: "markdown" | "text"): Extracted {
  const document = parsePage(html, url);
  const pageTitle = document.querySelector("title")?.textContent?.trim() || undefined;
  // Readability changes the document it reads. (Not a clone: Readability runs 3x slower on linkedom's clones.)
  const article = new Readability(document as unknown as ConstructorParameters<typeof Readability>[0], { keepClasses: true }).parse();
  const title = article?.title?.trim() || pageTitle;
  if (article?.content && (article.textContent ?? "").trim() !== "") {
    const content = format === "text" ? plainText(article.content) : markdownConverter().turndown(article.content).trim();
    return { ...(title ? { title } : {}), content };
  }
  // No article (a short page, an index): the page again, without scripts, navigation, forms and the rest of its chrome.
  const again = parsePage(html, url);
  for (const element of again.querySelectorAll(CHROME)) element.remove();
  const rest = (again.body ?? again.documentElement)?.innerHTML ?? "";
  const content = format === "text" ? plainText(rest) : markdownConverter().turndown(rest).trim();
  return { ...(title ? { title } : {}), content };
}
