import { gfm } from "@joplin/turndown-plugin-gfm";
import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import TurndownService from "turndown";

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

/** A parsed page with absolute links and without what is never content. */
function parsePage(html: string, url: string): Doc {
  const { document } = parseHTML(html);
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
