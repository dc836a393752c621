import http from "node:http";
import net from "node:net";
import { isPrivateAddress, systemResolve } from "../addresses.js";
import { hostMatcher } from "../scope.js";

/**
 * One request through the sandbox proxy (`proxy.ts` listens and tracks connections):
 * what the client asked for, whether that host may be reached and on which addresses, then a
 * CONNECT tunnel or a plain-HTTP request forwarded, every refusal a short text answer.
 */

/** Who may be reached through a proxy. */
export interface HostRules {
  /** Host patterns a request may reach (`*.github.com`), matched as the scope's `net.hosts` are. */
  allowedHosts: readonly string[];
  /** Host patterns refused even when an allowed pattern matches (the session's deny rules for net.fetch). */
  deniedHosts?: readonly string[];
  /** Host patterns that may reach private, loopback or link-local addresses (default: none). */
  privateHosts?: readonly string[];
  /** Resolves a host name to its addresses (default: the system resolver, every address). */
  resolve?: (host: string) => Promise<readonly string[]>;
}

/** A host's verdict: the checked addresses to connect to, or the answer that refuses it. */
type Verdict = { ok: true; addresses: readonly string[] } | { ok: false; status: number; message: string };

/** What a request's handling needs of its proxy. */
export interface ForwardContext {
  judge(host: string): Promise<Verdict>;
  /** Counts a socket among the proxy's connections (idle timeout, ended on close). */
  track(socket: net.Socket): void;
  connectTimeoutMs: number;
}

/** A host as the client named it: lower case, no brackets, no final dot. */
function normalizeHost(host: string): string {
  let h = host.trim().toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h;
}

/** `host:port` of a CONNECT request, or undefined when it is not one. */
function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const port = Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host: normalizeHost(match[1] as string), port };
}

/** The absolute http:// URL of a plain proxy request, or why it is not one. */
function parseProxyUrl(raw: string | undefined): { url: URL } | { error: string } {
  let url: URL;
  try {
    url = new URL(raw ?? "");
  } catch {
    return { error: `only absolute http:// URLs and CONNECT are proxied, not ${JSON.stringify(raw)}` };
  }
  if (url.protocol !== "http:") {
    return { error: `only http:// URLs are proxied in the clear (https goes through CONNECT), not ${url.protocol}` };
  }
  return { url };
}

/**
 * The host check: a denied pattern refuses, an allowed one is needed, the name is resolved and
 * a private or loopback address refuses unless the host is one of `privateHosts`.
 */
export function hostJudge(rules: HostRules): (host: string) => Promise<Verdict> {
  const allowed = rules.allowedHosts.map(hostMatcher);
  const denied = (rules.deniedHosts ?? []).map(hostMatcher);
  const privateOk = (rules.privateHosts ?? []).map(hostMatcher);
  const resolve = rules.resolve ?? systemResolve;
  return async (host) => {
    const allowedList = rules.allowedHosts.join(", ") || "none";
    const deniedBy = rules.deniedHosts?.find((_, i) => denied[i]?.(host));
    if (deniedBy !== undefined) return { ok: false, status: 403, message: `${host} is denied for this sandbox (${deniedBy})` };
    if (!allowed.some((m) => m(host))) {
      return { ok: false, status: 403, message: `${host} is not an allowed host for this sandbox (allowed: ${allowedList})` };
    }
    let addresses: readonly string[];
    try {
      addresses = net.isIP(host) ? [host] : await resolve(host);
    } catch (err) {
      return { ok: false, status: 502, message: `${host} could not be resolved: ${(err as Error).message}` };
    }
    if (addresses.length === 0) return { ok: false, status: 502, message: `${host} has no address` };
    const blocked = addresses.find(isPrivateAddress);
    if (blocked !== undefined && !privateOk.some((m) => m(host))) {
      return {
        ok: false,
        status: 403,
        message: `${host} resolves to ${blocked}, a private or loopback address, which the sandbox may not reach`,
      };
    }
    return { ok: true, addresses };
  };
}

/**
 * A lookup that answers only the addresses that were checked: the connection goes to one of
 * them (trying each in turn, as autoSelectFamily does), never to what a second resolution says.
 */
function pinnedLookup(addresses: readonly string[]): net.LookupFunction {
  const entries = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
  return (_hostname, options, callback) => {
    if (options.all) callback(null, entries);
    else callback(null, entries[0]?.address ?? "", entries[0]?.family ?? 4);
  };
}

const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

function withoutHopByHop(headers: http.IncomingHttpHeaders | http.OutgoingHttpHeaders): http.OutgoingHttpHeaders {
  const listed = String(headers.connection ?? "")
    .split(",")
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || HOP_BY_HOP.has(name) || listed.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

const refusalBody = (message: string) => `toolhost sandbox proxy: ${message}\n`;

/** A refusal as the answer to a plain-HTTP request. */
function refuse(res: http.ServerResponse, status: number, message: string): void {
  const body = refusalBody(message);
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8", "content-length": Buffer.byteLength(body), connection: "close" });
  res.end(body);
}

/** A refusal written on a CONNECT request's raw socket, which is then ended. */
function refuseTunnel(client: net.Socket, status: number, message: string): void {
  const body = refusalBody(message);
  const reason = http.STATUS_CODES[status] ?? "Error";
  client.end(
    `HTTP/1.1 ${status} ${reason}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** A plain-HTTP request (absolute URI) forwarded to its checked host, the answer streamed back. */
export async function forwardHttp(req: http.IncomingMessage, res: http.ServerResponse, ctx: ForwardContext): Promise<void> {
  const parsed = parseProxyUrl(req.url);
  if ("error" in parsed) {
    refuse(res, 400, parsed.error);
    return;
  }
  const { url } = parsed;
  const host = normalizeHost(url.hostname);
  const verdict = await ctx.judge(host);
  if (!verdict.ok) {
    req.resume();
    refuse(res, verdict.status, verdict.message);
    return;
  }
  // The Host header names the host that was checked, whatever the client wrote.
  const headers = { ...withoutHopByHop(req.headers), host: url.host };
  const upstream = http.request({
    host,
    // Node 20 tries each address in turn (autoSelectFamily is on by default).
    lookup: pinnedLookup(verdict.addresses),
    port: url.port === "" ? 80 : Number(url.port),
    method: req.method,
    path: url.pathname + url.search,
    headers,
    setHost: false,
    agent: false,
    timeout: ctx.connectTimeoutMs,
  });
  upstream.on("socket", (socket) => ctx.track(socket));
  upstream.on("timeout", () => upstream.destroy(new Error(`no answer from ${url.host} within ${ctx.connectTimeoutMs} ms`)));
  upstream.on("response", (answer) => {
    upstream.setTimeout(0);
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, withoutHopByHop(answer.headers));
    answer.pipe(res);
    answer.on("error", () => res.destroy());
  });
  upstream.on("error", (err) => {
    if (!res.headersSent) refuse(res, 502, `${url.host} could not be reached: ${err.message}`);
    else res.destroy();
  });
  // A client gone before the answer ends takes the upstream request with it.
  res.on("close", () => upstream.destroy());
  req.pipe(upstream);
}

/** A CONNECT request: a tunnel to the checked host's port, bytes passed both ways once it connects. */
export async function openTunnel(req: http.IncomingMessage, client: net.Socket, head: Buffer, ctx: ForwardContext): Promise<void> {
  client.on("error", () => client.destroy());
  const target = parseAuthority(req.url ?? "");
  if (!target) {
    refuseTunnel(client, 400, `CONNECT needs host:port, not ${JSON.stringify(req.url)}`);
    return;
  }
  const verdict = await ctx.judge(target.host);
  if (!verdict.ok) {
    refuseTunnel(client, verdict.status, verdict.message);
    return;
  }
  const upstream = net.connect({
    host: target.host,
    port: target.port,
    lookup: pinnedLookup(verdict.addresses),
    autoSelectFamily: true,
  });
  ctx.track(upstream);
  const connectTimer = setTimeout(() => upstream.destroy(new Error(`timed out after ${ctx.connectTimeoutMs} ms`)), ctx.connectTimeoutMs);
  let established = false;
  upstream.once("connect", () => {
    clearTimeout(connectTimer);
    established = true;
    client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    if (head.length) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  upstream.on("error", (err) => {
    clearTimeout(connectTimer);
    if (!established) refuseTunnel(client, 502, `${target.host}:${target.port} could not be reached: ${err.message}`);
    else client.destroy();
  });
  upstream.on("close", () => {
    if (established) client.destroy();
  });
  client.on("close", () => upstream.destroy());
}
