import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";
import { isIP } from "node:net";

// What `toolhost serve` checks before the SDK sees a request (acp/serve.ts): the bearer token,
// the browser's Origin, the Host of a loopback bind (DNS rebinding), the path. Pure, so each rule
// is tested alone.

/** The ACP endpoint of the Remote Transports RFD: Streamable HTTP and the WebSocket upgrade. */
export const ACP_PATH = "/acp";

/** A token for a run: 32 random bytes, base64url (43 characters). */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

const digest = (text: string) => createHash("sha256").update(text, "utf8").digest();

/** Whether `Authorization` carries `Bearer <token>`, compared in constant time (digests of equal length). */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(header ?? "");
  const given = match?.[1] ?? "";
  // Both sides are hashed, so neither the comparison's time nor a length check tells anything of the token.
  return timingSafeEqual(digest(given), digest(token)) && given.length > 0;
}

const LOOPBACK_NAMES = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** Whether a bind address is the loopback interface (its Host headers are then checked). */
export function isLoopback(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** The name of a Host header without its port. */
function hostName(host: string): string {
  if (host.startsWith("[")) return host.slice(0, host.indexOf("]") + 1);
  const colon = host.lastIndexOf(":");
  return colon >= 0 && isIP(host) !== 6 ? host.slice(0, colon) : host;
}

export interface GuardOptions {
  token: string;
  /** Browser origins let in (`scheme://host[:port]`, exact); every other Origin is refused. */
  allowOrigins: readonly string[];
  /** Loopback binds refuse a Host that is not a loopback name: a DNS-rebinding page names its own host. */
  checkHost: boolean;
}

export interface Refusal {
  status: number;
  message: string;
  headers?: Record<string, string>;
}

/** Why a request to the server is refused, or null to hand it to the SDK. */
export function refusal(url: string | undefined, headers: IncomingHttpHeaders, options: GuardOptions): Refusal | null {
  const path = (url ?? "/").split("?", 1)[0];
  if (path !== ACP_PATH) return { status: 404, message: `Not found: ACP is served on ${ACP_PATH}` };
  if (options.checkHost) {
    const host = headers.host ?? "";
    if (!LOOPBACK_NAMES.has(hostName(host).toLowerCase()) && !/^127\.\d+\.\d+\.\d+$/.test(hostName(host)))
      return { status: 421, message: `Host ${JSON.stringify(host)} is not this loopback server's name (localhost, 127.0.0.1, [::1])` };
  }
  const origin = headers.origin;
  if (origin !== undefined && !options.allowOrigins.includes(origin))
    return { status: 403, message: `Origin ${origin} is not allowed (toolhost serve --allow-origin ${origin} lets it in)` };
  if (!bearerMatches(headers.authorization, options.token))
    return {
      status: 401,
      message: "A bearer token is needed: Authorization: Bearer <the token toolhost serve printed, or TOOLHOST_SERVE_TOKEN>",
      headers: { "WWW-Authenticate": 'Bearer realm="toolhost"' },
    };
  return null;
}

/** `HOST:PORT` (`[::1]:PORT` for IPv6; a bare port means 127.0.0.1) as listen() takes it, or an error message. */
export function parseListen(text: string): { host: string; port: number } | string {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d+)$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (!match || !Number.isInteger(port) || port > 65535) return `--listen takes HOST:PORT (as 127.0.0.1:7700), not ${JSON.stringify(text)}`;
  const host = (match[1] ?? "127.0.0.1").replace(/^\[(.*)\]$/, "$1");
  return { host, port };
}
