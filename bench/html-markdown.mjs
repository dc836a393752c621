// web_fetch's HTML → Markdown (issue 13): pages shaped like real ones (navigation, inline scripts
// and styles, ads, sidebars, comments, footers around an article) generated here, reduced by
// web_fetch's extractor (linkedom + Readability + turndown), timed and sized against the raw HTML.
// Also: turndown on the whole page without Readability (what the reduction saves), and, when they
// are installed (they are not dependencies), happy-dom for the DOM and node-html-markdown for the
// conversion. Run after `npm run build`: node bench/html-markdown.mjs
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fmt, median } from "./lib.mjs";

const root = fileURLToPath(new URL("..", import.meta.url));
const { extractHtml } = await import(path.join(root, "dist", "tools", "web-extract.js"));
// What web_fetch runs: the same extraction in its persistent worker thread (message round trip included).
const { extractInWorker } = await import(path.join(root, "dist", "tools", "web-extract-pool.js"));
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const WORDS = (
  "the agent fetches pages and reduces them to their main content so that a model reads the article " +
  "and not the navigation around it while the host keeps every limit of size and time"
).split(" ");
let seed = 7;
const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
const sentence = (n) => Array.from({ length: n }, () => WORDS[Math.floor(random() * WORDS.length)]).join(" ");

/** A page: site chrome (nav, styles, a data script, ads, sidebars, footer) around an article of `sections` sections. */
function page(kind, sections) {
  const nav = `<nav class="site-nav"><ul>${Array.from({ length: 60 }, (_, k) => `<li><a href="/section/${k}">Section ${k}</a></li>`).join("")}</ul></nav>`;
  const data = `<script>window.__DATA__=${JSON.stringify({ items: Array.from({ length: 300 }, (_, k) => ({ id: k, t: sentence(6) })) })};</script>`;
  const style = `<style>${Array.from({ length: 200 }, (_, k) => `.c${k}{margin:${k}px}`).join("")}</style>`;
  const ad = (i) =>
    `<div class="ad sponsored" id="ad-${i}"><a href="https://ads.example/click?id=${i}"><img src="https://ads.example/b${i}.png" alt="Buy now"></a><p>Sponsored: ${sentence(8)}</p></div>`;
  const body = [];
  for (let s = 0; s < sections; s++) {
    body.push(`<h2 id="s${s}">Section ${s}: ${sentence(4)}</h2>`);
    for (let p = 0; p < 5; p++)
      body.push(
        `<p>${sentence(40)} <a href="/ref/${s}/${p}">reference ${p}</a> and <strong>${sentence(3)}</strong>, <em>${sentence(2)}</em>.</p>`,
      );
    if (kind !== "news" || s % 3 === 0)
      body.push(`<pre><code class="language-js">function f${s}(x) {\n  return x * ${s};\n}\n</code></pre>`);
    body.push(`<ul>${Array.from({ length: 5 }, () => `<li>${sentence(8)}</li>`).join("")}</ul>`);
    if (kind === "docs" && s % 2 === 0) {
      const rows = Array.from({ length: 6 }, (_, k) => `<tr><td><code>opt${k}</code></td><td>${k}</td><td>${sentence(8)}</td></tr>`).join(
        "",
      );
      body.push(`<table><thead><tr><th>Option</th><th>Default</th><th>Meaning</th></tr></thead><tbody>${rows}</tbody></table>`);
    }
    if (s % 4 === 1) body.push(ad(s));
    if (kind === "news" && s % 5 === 2)
      body.push(`<figure><img src="/img/${s}.jpg" alt="${sentence(3)}"><figcaption>${sentence(6)}</figcaption></figure>`);
  }
  const comments =
    kind === "forum"
      ? `<section class="comments">${Array.from({ length: 200 }, (_, k) => `<div class="comment"><span class="author">user${k}</span><p>${sentence(20)}</p><a href="#reply">reply</a></div>`).join("")}</section>`
      : "";
  const related = Array.from({ length: 40 }, (_, k) => `<a href="/related/${k}">${sentence(5)}</a>`).join("<br>");
  return `<!doctype html><html><head><meta charset="utf-8"><title>${kind}: ${sentence(4)}</title>${style}${data}<script src="/analytics.js"></script></head><body><header>${nav}<form class="search"><input name="q"></form></header><div class="layout"><aside class="sidebar">${ad(0)}${nav}</aside><main><article><h1>The ${kind} article</h1><p class="byline">By Someone</p>${body.join("\n")}</article>${comments}</main><aside class="related">${related}</aside></div><footer>${nav}<p>© Example</p></footer>${data}</body></html>`;
}

const PAGES = [
  ["news", page("news", 40)],
  ["forum thread", page("forum", 60)],
  ["docs page", page("docs", 120)],
  ["large docs page", page("docs", 1200)],
];

async function optional(name) {
  try {
    return await import(name);
  } catch {
    return undefined;
  }
}
const { default: TurndownService } = await import("turndown");
const happy = await optional("happy-dom");
const nhm = await optional("node-html-markdown");
const { Readability } = await import("@mozilla/readability");

/** Median milliseconds of `fn` over the rounds (one warm-up first), and its last result. */
function time(fn, rounds = ROUNDS) {
  let out = fn();
  const ms = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    out = fn();
    ms.push(performance.now() - start);
  }
  return { ms: median(ms), out };
}

/** The same, for an async `fn`. */
async function timeAsync(fn, rounds = ROUNDS) {
  let out = await fn();
  const ms = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    out = await fn();
    ms.push(performance.now() - start);
  }
  return { ms: median(ms), out };
}

const kb = (chars) => `${fmt(chars / 1024, 0)} KB`;
console.log(
  `| page | raw HTML | web_fetch (linkedom + Readability + turndown) | in its worker thread | Markdown | of raw | turndown alone, whole page | its Markdown |${happy ? " happy-dom + Readability |" : ""}${nhm ? " node-html-markdown on the article |" : ""}`,
);
const signal = new AbortController().signal;
// The worker's start and first load (once per process), apart from the rows.
const firstStart = performance.now();
await extractInWorker("<html><body><p>warm-up</p></body></html>", "https://example.com/", "markdown", { timeoutMs: 60_000, signal });
const firstMs = performance.now() - firstStart;
console.log(`|---|---|---|---|---|---|---|---|${happy ? "---|" : ""}${nhm ? "---|" : ""}`);
for (const [name, html] of PAGES) {
  const rounds = html.length > 1e6 ? Math.min(ROUNDS, 3) : ROUNDS;
  const ours = time(() => extractHtml(html, "https://example.com/page", "markdown"), rounds);
  const whole = time(() => new TurndownService().turndown(html), rounds);
  const inWorker = await timeAsync(
    () => extractInWorker(html, "https://example.com/page", "markdown", { timeoutMs: 60_000, signal }),
    rounds,
  );
  const cells = [
    name,
    kb(html.length),
    `${fmt(ours.ms, 0)} ms`,
    `${fmt(inWorker.ms, 0)} ms`,
    kb(ours.out.content.length),
    `${fmt((100 * ours.out.content.length) / html.length, 0)} %`,
    `${fmt(whole.ms, 0)} ms`,
    kb(whole.out.length),
  ];
  if (happy) {
    const r = time(() => {
      const window = new happy.Window();
      window.document.write(html);
      const article = new Readability(window.document).parse();
      window.close();
      return article;
    }, rounds);
    cells.push(`${fmt(r.ms, 0)} ms (DOM + Readability only)`);
  }
  if (nhm) {
    const { parseHTML } = await import("linkedom");
    const article = new Readability(parseHTML(html).document).parse();
    // node-html-markdown is pathological on large tables: one round.
    const r = time(() => nhm.NodeHtmlMarkdown.translate(article.content), 1);
    cells.push(`${fmt(r.ms, 0)} ms`);
  }
  console.log(`| ${cells.join(" | ")} |`);
}
console.log(`\nweb_fetch's worker thread: started and loaded on the first HTML page in ${fmt(firstMs, 0)} ms (once per process).`);
process.exit(0);
