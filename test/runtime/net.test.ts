import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createToolContext } from "../../src/runtime/context.js";
import { RuntimeSession } from "../../src/runtime/session.js";
import type { ToolNet } from "../../src/tool/context.js";
import { toolErrorOf } from "../helpers.js";

interface Seen {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local server: `/redirect?to=URL&status=N` redirects, `/loop` redirects to itself, the rest echo. */
async function startServer(seen: Seen[]): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => (body += chunk.toString("utf8")));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://x");
      seen.push({ method: req.method ?? "", path: url.pathname, headers: req.headers, body });
      if (url.pathname === "/redirect") {
        res.writeHead(Number(url.searchParams.get("status") ?? 302), { location: url.searchParams.get("to") ?? "/" });
        res.end("moved");
      } else if (url.pathname === "/loop") {
        res.writeHead(302, { location: "/loop" });
        res.end();
      } else {
        res.writeHead(200, { "content-type": "text/plain" });
        res.end(`${req.method} ${url.pathname}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const seen: Seen[] = [];
let server: Server;
let base: string;
/** A second server: same host, another origin. */
let other: Server;
let otherBase: string;
let session: RuntimeSession;

function netFor(hosts: string[], signal = new AbortController().signal): ToolNet {
  return createToolContext({ session, toolId: "t", callId: "c", requires: { net: { hosts } }, signal }).net;
}
const paths = () => seen.map((s) => s.path);

beforeAll(async () => {
  ({ server, base } = await startServer(seen));
  ({ server: other, base: otherBase } = await startServer(seen));
  session = new RuntimeSession({ workspace: "/ws", net: { privateHosts: () => ["127.0.0.1"] } });
});
afterAll(async () => {
  await session.close();
  await Promise.all([server, other].map((s) => new Promise((resolve) => s.close(resolve))));
});

describe("ScopedNet", () => {
  it("fetches from an allowed host", async () => {
    seen.length = 0;
    const response = await netFor(["127.0.0.1"]).fetch(`${base}/hello`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("GET /hello");
  });

  it("refuses another host, an empty scope, other protocols and bad URLs before connecting", async () => {
    seen.length = 0;
    const port = new URL(base).port;
    const refused = await toolErrorOf(netFor(["127.0.0.1"]).fetch(`http://localhost:${port}/x`));
    expect(refused.code).toBe("capability_denied");
    expect(refused.message).toMatch(/Host localhost is outside this tool's net.hosts \(127\.0\.0\.1\)/);
    expect((await toolErrorOf(netFor([]).fetch(`${base}/x`))).message).toMatch(/net.hosts \(none\)/);
    expect((await toolErrorOf(netFor(["127.0.0.1"]).fetch("file:///etc/passwd"))).code).toBe("invalid_arguments");
    expect((await toolErrorOf(netFor(["127.0.0.1"]).fetch("not a url"))).code).toBe("invalid_arguments");
    expect(seen).toEqual([]);
  });

  it("follows a redirect within the scope", async () => {
    seen.length = 0;
    const response = await netFor(["127.0.0.1"]).fetch(`${base}/redirect?to=/target`);
    expect(await response.text()).toBe("GET /target");
    expect(paths()).toEqual(["/redirect", "/target"]);
  });

  it("refuses a redirect to a host outside the scope, without requesting it", async () => {
    seen.length = 0;
    const port = new URL(base).port;
    const to = encodeURIComponent(`http://localhost:${port}/secret`);
    const err = await toolErrorOf(netFor(["127.0.0.1"]).fetch(`${base}/redirect?to=${to}`));
    expect(err.code).toBe("capability_denied");
    expect(err.message).toMatch(/redirects to http:\/\/localhost:\d+\/secret: Host localhost is outside/);
    expect(paths()).toEqual(["/redirect"]);
  });

  it("turns a POST into a GET on 303 and keeps it on 307, as fetch does", async () => {
    seen.length = 0;
    const net = netFor(["127.0.0.1"]);
    const post = { method: "POST", body: "payload", headers: { "content-type": "text/plain" } };
    expect(await (await net.fetch(`${base}/redirect?status=303&to=/after`, post)).text()).toBe("GET /after");
    expect(await (await net.fetch(`${base}/redirect?status=307&to=/again`, post)).text()).toBe("POST /again");
    const [, after, , again] = seen;
    expect(after).toMatchObject({ method: "GET", body: "" });
    expect(after?.headers["content-type"]).toBeUndefined();
    expect(again).toMatchObject({ method: "POST", body: "payload" });
  });

  it("keeps credentials on the same origin and drops them on another", async () => {
    seen.length = 0;
    const net = netFor(["127.0.0.1"]);
    const auth = { headers: { authorization: "Bearer secret", "x-other": "kept" } };
    await net.fetch(`${base}/redirect?to=/same`, auth);
    await net.fetch(`${base}/redirect?to=${encodeURIComponent(`${otherBase}/elsewhere`)}`, auth);
    const byPath = Object.fromEntries(seen.map((s) => [s.path, s.headers]));
    expect(byPath["/same"]?.authorization).toBe("Bearer secret");
    expect(byPath["/elsewhere"]?.authorization).toBeUndefined();
    expect(byPath["/elsewhere"]?.["x-other"]).toBe("kept");
  });

  it("stops a redirect loop, and leaves redirect: manual to the caller", async () => {
    seen.length = 0;
    const net = netFor(["127.0.0.1"]);
    expect((await toolErrorOf(net.fetch(`${base}/loop`))).message).toMatch(/Too many redirects/);
    expect(seen).toHaveLength(21);
    const manual = await net.fetch(`${base}/redirect?to=/target`, { redirect: "manual" });
    expect(manual.status).toBe(302);
    expect(manual.headers.get("location")).toBe("/target");
  });

  it("is aborted with the call", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(netFor(["127.0.0.1"], controller.signal).fetch(`${base}/hello`)).rejects.toThrow(/abort/i);
  });
});

describe("ScopedNet's private-address guard", () => {
  /** A session whose fetch resolves `*.test` to 127.0.0.1 and lets `allowed.test` reach it. */
  const guarded = () =>
    new RuntimeSession({
      workspace: "/ws",
      net: { privateHosts: () => ["allowed.test"], resolve: async (host) => (host.endsWith(".test") ? ["127.0.0.1"] : []) },
    });
  const scoped = (s: RuntimeSession) =>
    createToolContext({ session: s, toolId: "t", callId: "c", requires: { net: { hosts: ["*"] } }, signal: new AbortController().signal })
      .net;

  it("refuses a private literal and a name resolving to one, before any request; a host a rule names gets through", async () => {
    const s = guarded();
    const net = scoped(s);
    const port = new URL(base).port;
    seen.length = 0;
    expect((await toolErrorOf(net.fetch(`${base}/x`))).message).toMatch(/^127\.0\.0\.1 is a private, loopback or link-local address/);
    expect((await toolErrorOf(net.fetch(`http://other.test:${port}/x`))).message).toMatch(/^other\.test resolves to 127\.0\.0\.1/);
    expect(seen).toEqual([]);
    expect(await (await net.fetch(`http://allowed.test:${port}/ok`)).text()).toBe("GET /ok");
    // A redirect from the allowed name to the literal is refused at the hop.
    const err = await toolErrorOf(net.fetch(`http://allowed.test:${port}/redirect?to=${encodeURIComponent(`${base}/secret`)}`));
    expect(err.message).toMatch(/redirects to http:\/\/127\.0\.0\.1:\d+\/secret: 127\.0\.0\.1 is a private/);
    expect(paths()).toEqual(["/ok", "/redirect"]);
    await s.close();
  });

  it("lets a tool reach a private address of a host its own net.hosts names exactly (web_search's providers), never through a wildcard", async () => {
    const s = new RuntimeSession({ workspace: "/ws", net: { resolve: async () => ["127.0.0.1"] } });
    const port = new URL(base).port;
    const withHosts = (hosts: string[]) =>
      createToolContext({ session: s, toolId: "t", callId: "c", requires: { net: { hosts } }, signal: new AbortController().signal }).net;
    expect(await (await withHosts(["search.test"]).fetch(`http://search.test:${port}/ok`)).text()).toBe("GET /ok");
    expect(await (await withHosts(["127.0.0.1"]).fetch(`${base}/ok`)).text()).toBe("GET /ok");
    expect((await toolErrorOf(withHosts(["*.test"]).fetch(`http://search.test:${port}/ok`))).message).toMatch(
      /search\.test resolves to 127/,
    );
    expect((await toolErrorOf(withHosts(["*"]).fetch(`${base}/ok`))).message).toMatch(/127\.0\.0\.1 is a private/);
    await s.close();
  });

  it("follows at most maxRedirects hops", async () => {
    const s = guarded();
    const port = new URL(base).port;
    const err = await toolErrorOf(scoped(s).fetch(`http://allowed.test:${port}/loop`, { maxRedirects: 2 }));
    expect(err.message).toMatch(/more than 2/);
    await s.close();
  });
});
