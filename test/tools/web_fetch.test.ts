import { EventEmitter, once } from "node:events";
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemResolve } from "../../src/runtime/addresses.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import web_fetch, { BODY_MAX_BYTES, type WebFetchResult } from "../../src/tools/web_fetch.js";
import { displayResult } from "../../src/tool/display.js";
import { call, errorOf, output } from "../helpers.js";

// web_fetch against local HTTP servers only. The server listens on 127.0.0.1, which tools may not
// reach: the sessions here let one name through (`site.test`, resolved to 127.0.0.1 by an
// injected resolver), the way a net.fetch allow rule naming a host does.

const ARTICLE = `<!doctype html><html><head><title>Tide tables</title>
<style>.nav{color:red}</style><script>window.tracker = "TRACKER-SCRIPT";</script></head>
<body><header><nav class="menu"><a href="/">Home</a> <a href="/shop">Shop NAV-LINK</a></nav></header>
<div class="ad banner sponsored"><a href="https://ads.example/x">Buy SPONSORED-AD now</a></div>
<main><article><h1>How tides work</h1>
<p>Tides are the rise and fall of sea levels caused by the combined effects of the gravitational forces exerted by the Moon and the Sun, and the rotation of the Earth.</p>
<p>Most places in the ocean usually experience two high tides and two low tides each day, a pattern called semi-diurnal, and the <a href="/glossary#spring">spring tides</a> come at new and full moon.</p>
<h2>Reading a table</h2>
<p>A tide table lists the times and heights of high and low water for a harbour, day by day, and sailors plan their passages with it, crossing bars at high water.</p>
<pre><code class="language-python">height = mean + amplitude * cos(omega * t)</code></pre>
<table><tr><th>Time</th><th>Height</th></tr><tr><td>06:12</td><td>4.1 m</td></tr></table>
</article></main>
<aside class="sidebar"><h3>Related</h3><a href="/r">RELATED-LINK</a></aside>
<footer>FOOTER-TEXT © 2026</footer><script>track("FOOTER-SCRIPT")</script></body></html>`;

const PNG = Buffer.from(
  "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f2e1d30000000049454e44ae426082",
  "hex",
);

let server: Server;
let port: number;
let hits: Record<string, number> = {};
let hugeSent = 0;
/** Emits a page's path once its whole body is written. */
const served = new EventEmitter();

function route(path: string, res: ServerResponse): void {
  switch (path) {
    case "/article":
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
      return void res.end(ARTICLE);
    case "/json":
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end('{"name":"tide","heights":[4.1,0.7]}');
    case "/text":
      res.writeHead(200, { "content-type": "text/plain; charset=utf-8" });
      return void res.end("plain  text\nkept as it is\n");
    case "/latin1":
      res.writeHead(200, { "content-type": "text/plain; charset=iso-8859-1" });
      return void res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    case "/pdf":
      res.writeHead(200, { "content-type": "application/pdf" });
      return void res.end("%PDF-1.7\n%âãÏÓ\n1 0 obj\n");
    case "/untyped-pdf":
      res.writeHead(200, { "content-type": "application/octet-stream" });
      return void res.end("%PDF-1.4\n");
    case "/zip":
      res.writeHead(200, { "content-type": "application/zip" });
      return void res.end(Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0]));
    case "/image":
      res.writeHead(200, { "content-type": "image/png" });
      return void res.end(PNG);
    case "/missing":
      res.writeHead(404, { "content-type": "text/plain" });
      return void res.end("no such page");
    case "/to-loopback":
      res.writeHead(302, { location: `http://127.0.0.1:${port}/secret` });
      return void res.end();
    case "/to-rebound":
      res.writeHead(302, { location: `http://rebound.test:${port}/secret` });
      return void res.end();
    case "/to-localhost":
      res.writeHead(302, { location: `http://localhost:${port}/secret` });
      return void res.end();
    case "/to-article":
      res.writeHead(301, { location: "/article" });
      return void res.end();
    case "/big-html": {
      // 3 M characters of HTML: extraction reads the first 2 M.
      res.writeHead(200, { "content-type": "text/html" });
      const paragraph = `<p>${"Words of a very long page, sentence after sentence, with commas, ".repeat(15)}</p>\n`;
      const count = Math.ceil((3 * 1024 * 1024) / paragraph.length);
      return void res.end(
        `<html><head><title>Big</title></head><body><article><h1>FIRST-HEADING</h1>${paragraph.repeat(count)}<p>LAST-PARAGRAPH</p></article></body></html>`,
      );
    }
    case "/deep":
      // Nested 5000 deep: Readability alone would take hours.
      res.writeHead(200, { "content-type": "text/html" });
      return void res.end(`<html><body>${"<div>".repeat(5000)}deep${"</div>".repeat(5000)}</body></html>`);
    case "/unclosed":
      // A million unclosed tags: the parser alone would take minutes.
      res.writeHead(200, { "content-type": "text/html" });
      return void res.end("<b>".repeat(1_000_000));
    case "/tangled": {
      // Under every cap, 2 M characters nested 250 deep: extracting it takes tens of seconds.
      res.writeHead(200, { "content-type": "text/html" });
      const unit = `${"<div>".repeat(250)}<p>some words, and more</p>${"</div>".repeat(250)}`;
      res.end(`<html><body>${unit.repeat(Math.floor((2 * 1024 * 1024) / unit.length))}</body></html>`);
      return void res.once("finish", () => served.emit("tangled"));
    }
    case "/tagless":
      // 10 MB of words without a tag, as HTML.
      res.writeHead(200, { "content-type": "text/html" });
      return void res.end("words without markup ".repeat(500_000));
    case "/fragment":
      res.writeHead(200, { "content-type": "text/html" });
      return void res.end("<p>only a FRAGMENT</p>");
    case "/slow":
      // Headers never come: the call's timeout ends it.
      return;
    case "/huge": {
      // "10 GB": written as fast as the client reads, until it stops reading.
      res.writeHead(200, { "content-type": "text/plain" });
      const chunk = Buffer.alloc(64 * 1024, "x");
      const pump = () => {
        while (hugeSent < 10 * 1024 ** 3) {
          hugeSent += chunk.byteLength;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      res.on("close", () => res.removeAllListeners("drain"));
      return pump();
    }
  }
  const hop = /^\/hop\/(\d+)$/.exec(path);
  if (hop) {
    const n = Number(hop[1]);
    res.writeHead(302, { location: n > 0 ? `/hop/${n - 1}` : "/text" });
    return void res.end();
  }
  res.writeHead(404);
  res.end();
}

/** A session whose fetch may reach `site.test` (127.0.0.1, named by a rule); `rebound.test` resolves there too, unnamed. */
function session(privateHosts: string[] = ["site.test"]): RuntimeSession {
  const resolve = async (host: string) => (host.endsWith(".test") ? ["127.0.0.1"] : systemResolve(host));
  return new RuntimeSession({ workspace: "/ws", net: { privateHosts: () => privateHosts, resolve } });
}

const site = (path: string) => `http://site.test:${port}${path}`;

async function fetchOk(s: RuntimeSession, args: Record<string, unknown>): Promise<WebFetchResult> {
  return output<WebFetchResult>((await call(web_fetch, args, s)).envelope);
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://x").pathname;
    hits[path] = (hits[path] ?? 0) + 1;
    route(path, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe("web_fetch", () => {
  it("reduces a page with scripts, navigation and ads to its article, as Markdown with absolute links", async () => {
    const s = session();
    const data = await fetchOk(s, { url: site("/article") });
    expect(data).toMatchObject({ url: site("/article"), final_url: site("/article"), status: 200, title: "Tide tables" });
    expect(data.content_type).toBe("text/html; charset=utf-8");
    expect(data.content).toContain("Tides are the rise and fall of sea levels");
    expect(data.content).toContain("## Reading a table");
    expect(data.content).toContain(`[spring tides](http://site.test:${port}/glossary#spring)`);
    expect(data.content).toContain("```python\nheight = mean + amplitude * cos(omega * t)\n```");
    expect(data.content).toContain("| Time | Height |");
    for (const chrome of [
      "TRACKER-SCRIPT",
      "FOOTER-SCRIPT",
      "NAV-LINK",
      "SPONSORED-AD",
      "RELATED-LINK",
      "FOOTER-TEXT",
      "<p>",
      "color:red",
    ]) {
      expect(data.content).not.toContain(chrome);
    }
    await s.close();
  });

  it("honours format text and html", async () => {
    const s = session();
    const text = await fetchOk(s, { url: site("/article"), format: "text" });
    expect(text.content).toMatch(/^How tides work\n\nTides are the rise/);
    expect(text.content).toContain("Time\tHeight");
    expect(text.content).not.toMatch(/NAV-LINK|\[|##/);
    const html = await fetchOk(s, { url: site("/article"), format: "html" });
    expect(html.content).toBe(ARTICLE);
    await s.close();
  });

  it("pretty-prints JSON, passes text through in its charset, and reports the status of an error page", async () => {
    const s = session();
    expect((await fetchOk(s, { url: site("/json") })).content).toBe('{\n  "name": "tide",\n  "heights": [\n    4.1,\n    0.7\n  ]\n}');
    expect((await fetchOk(s, { url: site("/text") })).content).toBe("plain  text\nkept as it is\n");
    expect((await fetchOk(s, { url: site("/latin1") })).content).toBe("café");
    expect(await fetchOk(s, { url: site("/missing") })).toMatchObject({ status: 404, content: "no such page" });
    await s.close();
  });

  it("shows the editor the Markdown rendered, other formats as text, and an image as an image", async () => {
    const s = session();
    const shown = async (args: Record<string, unknown>) => displayResult(web_fetch, await fetchOk(s, args), args);
    const page = await shown({ url: site("/article") });
    expect(page.markdown).toBe(true);
    expect(page.text).toContain("Tides are the rise and fall");
    expect((await shown({ url: site("/article"), format: "html" })).markdown).toBe(false);
    expect((await shown({ url: site("/json") })).markdown).toBe(false);
    expect(await shown({ url: site("/image") })).toEqual({
      text: `${site("/image")} (image/png)`,
      images: [{ data: PNG.toString("base64"), mimeType: "image/png" }],
    });
    await s.close();
  });

  it("returns an image as an image, and refuses PDFs and archives, saying what they are", async () => {
    const s = session();
    const image = await fetchOk(s, { url: site("/image") });
    expect(image.content).toBe(`[image: image/png, ${PNG.byteLength} bytes]`);
    expect(image.image).toEqual({ data: PNG.toString("base64"), mimeType: "image/png" });
    expect(errorOf((await call(web_fetch, { url: site("/pdf") }, s)).envelope, "binary_file")).toMatch(/is a PDF document, \d+ bytes/);
    expect(errorOf((await call(web_fetch, { url: site("/untyped-pdf") }, s)).envelope, "binary_file")).toMatch(/is a PDF document/);
    expect(errorOf((await call(web_fetch, { url: site("/zip") }, s)).envelope, "binary_file")).toMatch(
      /is an archive \(application\/zip\)/,
    );
    await s.close();
  });

  it("follows at most 5 redirects, and reports where it landed", async () => {
    const s = session();
    expect(await fetchOk(s, { url: site("/to-article") })).toMatchObject({ final_url: site("/article"), title: "Tide tables" });
    expect((await fetchOk(s, { url: site("/hop/4") })).content).toBe("plain  text\nkept as it is\n");
    expect(errorOf((await call(web_fetch, { url: site("/hop/5") }, s)).envelope, "execution_failed")).toMatch(/more than 5/);
    await s.close();
  });

  it("refuses every private-address trick: a redirect to 127.0.0.1, a name resolving there, localhost, literals", async () => {
    const s = session();
    hits = {};
    const refused = async (url: string) => errorOf((await call(web_fetch, { url }, s)).envelope, "capability_denied");
    expect(await refused(site("/to-loopback"))).toMatch(
      /redirects to http:\/\/127\.0\.0\.1:\d+\/secret: 127\.0\.0\.1 is a private, loopback or link-local address/,
    );
    expect(await refused(site("/to-rebound"))).toMatch(/rebound\.test resolves to 127\.0\.0\.1, a private, loopback or link-local address/);
    expect(await refused(site("/to-localhost"))).toMatch(/localhost resolves to (127\.0\.0\.1|::1)/);
    expect(await refused(`http://rebound.test:${port}/article`)).toMatch(/a net.fetch allow rule naming rebound.test lets tools reach it/);
    for (const literal of [
      "127.0.0.1",
      "[::1]",
      "[::ffff:127.0.0.1]",
      "0x7f000001",
      "2130706433",
      "10.0.0.1",
      "169.254.169.254",
      "[fd00::1]",
    ]) {
      expect(await refused(`http://${literal}:${port}/secret`)).toMatch(/is a private, loopback or link-local address/);
    }
    // Nothing was requested but the pages that redirected.
    expect(hits).toEqual({ "/to-loopback": 1, "/to-rebound": 1, "/to-localhost": 1 });
    await s.close();
  });

  it("connects to the address it checked: the session's resolver, consulted once per connection", async () => {
    let lookups = 0;
    const s = new RuntimeSession({
      workspace: "/ws",
      net: { privateHosts: () => ["pinned.test"], resolve: async () => (lookups++, ["127.0.0.1"]) },
    });
    expect((await fetchOk(s, { url: `http://pinned.test:${port}/text` })).content).toContain("plain");
    expect(lookups).toBe(1);
    // A name with one public and one private address is refused: every address is checked.
    const mixed = new RuntimeSession({ workspace: "/ws", net: { resolve: async () => ["93.184.216.34", "10.1.2.3"] } });
    const err = errorOf((await call(web_fetch, { url: `http://mixed.test:${port}/text` }, mixed)).envelope, "capability_denied");
    expect(err).toMatch(/mixed\.test resolves to 10\.1\.2\.3/);
    await Promise.all([s.close(), mixed.close()]);
  });

  it("cuts a '10 GB' body at the hard limit without buffering it: the server stops, memory stays flat", async () => {
    const s = session();
    hugeSent = 0;
    const before = process.memoryUsage().rss;
    const { envelope } = await call(web_fetch, { url: site("/huge") }, s);
    const data = output<WebFetchResult>(envelope);
    const grew = process.memoryUsage().rss - before;
    expect(data.cut).toBe(true);
    // The host's 200 KB cap, the whole cut body in the sidecar.
    expect(envelope.metadata.truncated).toBe(true);
    expect(Buffer.byteLength(data.content)).toBeLessThan(201 * 1024);
    expect(data.content).toContain(envelope.metadata.output_path);
    // Back-pressure: the server got no further than the limit plus socket buffers.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(hugeSent).toBeGreaterThanOrEqual(BODY_MAX_BYTES);
    expect(hugeSent).toBeLessThan(BODY_MAX_BYTES + 16 * 1024 * 1024);
    console.error(`web_fetch 10 GB body: server sent ${hugeSent} bytes, RSS grew ${(grew / 1024 / 1024).toFixed(1)} MiB`);
    expect(grew).toBeLessThan(160 * 1024 * 1024);
    await s.close();
  });

  it("extracts from the first 2 M characters of a larger HTML page, and says it was cut", async () => {
    const s = session();
    const data = await fetchOk(s, { url: site("/big-html"), format: "text" });
    expect(data.cut).toBe(true);
    expect(data.content.startsWith("FIRST-HEADING")).toBe(true);
    expect(data.content).not.toContain("LAST-PARAGRAPH");
    await s.close();
  });

  it("times out a server that does not answer, with the call's timeout_ms", async () => {
    const s = session();
    const started = Date.now();
    const err = errorOf((await call(web_fetch, { url: site("/slow"), timeout_ms: 1000 }, s)).envelope, "timeout");
    expect(err).toMatch(/did not answer within 1000 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
    await s.close();
  });

  it("refuses a page nested deeper than 512 levels, or a million unclosed tags, at once and saying why", async () => {
    const s = session();
    for (const page of ["/deep", "/unclosed"]) {
      const err = errorOf((await call(web_fetch, { url: site(page) }, s)).envelope, "too_large");
      expect(err).toMatch(/nests its elements (5002|over 1024) deep, deeper than web_fetch reduces \(512 levels/);
      expect(err).toMatch(/format "html" returns it/);
    }
    // The raw page is still there for whoever wants it.
    expect((await fetchOk(s, { url: site("/deep"), format: "html" })).content).toContain("deep");
    await s.close();
  });

  it("stops an extraction at the call's timeout_ms, and serves other calls while one extracts", async () => {
    const s = session();
    const events: string[] = [];
    // The download is quick; extracting takes tens of seconds, in a worker thread.
    const controller = new AbortController();
    const cancelled = call(web_fetch, { url: site("/tangled"), timeout_ms: 60_000 }, s, { signal: controller.signal });
    void cancelled.then(() => events.push("cancelled done"));
    await once(served, "tangled");
    // The page is down and being extracted. Another call is answered meanwhile…
    const quick = await fetchOk(s, { url: site("/article") });
    events.push("quick done");
    expect(quick.content).toContain("# How tides work");
    // …and a cancel stops an extraction.
    controller.abort();
    const { envelope } = await cancelled;
    expect(envelope.metadata.error_code).toBe("aborted");
    expect(events).toEqual(["quick done", "cancelled done"]);
    // A short timeout_ms bounds the extraction too: it fails with a clear timeout.
    const bounded = errorOf((await call(web_fetch, { url: site("/tangled"), timeout_ms: 1500 }, s)).envelope, "timeout");
    expect(bounded).toMatch(/Extracting the main content of .*\/tangled took longer than \d+ ms .*timeout_ms.*format "html" returns it/);
    await s.close();
  }, 60_000);

  it("extracts a 10 MB body without tags, and a fragment without <html>, as text", async () => {
    const s = session();
    const tagless = await fetchOk(s, { url: site("/tagless") });
    expect(tagless.cut).toBe(true);
    expect(tagless.content.startsWith("words without markup words")).toBe(true);
    expect((await fetchOk(s, { url: site("/fragment") })).content).toBe("only a FRAGMENT");
    await s.close();
  });

  it("is aborted with the call", async () => {
    const s = session();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const { envelope } = await call(web_fetch, { url: site("/slow") }, s, { signal: controller.signal });
    expect(envelope.type).toBe("error");
    expect(envelope.metadata.error_code).toMatch(/aborted|cancelled/);
    await s.close();
  });

  it("answers the same URL from the session's cache for 15 minutes; another format or session fetches again", async () => {
    const s = session();
    hits = {};
    await fetchOk(s, { url: site("/json") });
    await fetchOk(s, { url: site("/json") });
    expect(hits["/json"]).toBe(1);
    await fetchOk(s, { url: site("/json"), format: "text" });
    expect(hits["/json"]).toBe(2);
    const other = session();
    await fetchOk(other, { url: site("/json") });
    expect(hits["/json"]).toBe(3);
    await Promise.all([s.close(), other.close()]);
  });

  it("names the host as the call's target, and refuses a URL that is not http(s) before anything runs", async () => {
    const s = session();
    expect(errorOf((await call(web_fetch, { url: "file:///etc/passwd" }, s)).envelope, "invalid_arguments")).toMatch(/not file:/);
    expect(errorOf((await call(web_fetch, { url: "not a url" }, s)).envelope, "invalid_arguments")).toMatch(/Not a valid URL/);
    const seen: string[][] = [];
    await call(web_fetch, { url: site("/text") }, s, {
      authorize: async (c) => {
        seen.push(c.targets.hosts);
        return { outcome: "allow" };
      },
    });
    expect(seen).toEqual([["site.test"]]);
    expect(web_fetch.title?.({ url: "https://example.com/a" })).toBe("Fetch https://example.com/a");
    await s.close();
  });
});
