import type { ToolNet } from "../tool/context.js";
import { ToolError } from "../tool/errors.js";
import { hostAllowed, type CompiledScope } from "./scope.js";

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** The fetch standard's redirect limit. */
const MAX_REDIRECTS = 20;
const BODY_HEADERS = ["content-type", "content-length", "content-encoding", "content-language", "content-location"];
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie"];

/**
 * fetch() limited to the scope's net.hosts, http(s) only, aborted with the call. Redirects are
 * followed here, one hop at a time, so a redirect cannot carry the call to a host outside the
 * scope (fetch would follow it silently).
 */
export class ScopedNet implements ToolNet {
  constructor(
    private readonly scope: CompiledScope,
    private readonly signal: AbortSignal,
  ) {}

  async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    let target = this.check(url);
    const signal = init.signal ? AbortSignal.any([init.signal, this.signal]) : this.signal;
    // "manual" and "error" keep their meaning: nothing is followed.
    if (init.redirect !== undefined && init.redirect !== "follow") return fetch(target, { ...init, signal });

    let request: RequestInit = { ...init, signal, redirect: "manual" };
    for (let hops = 0; ; hops++) {
      const response = await fetch(target, request);
      const location = response.headers.get("location");
      if (!REDIRECTS.has(response.status) || location === null) return response;
      await response.body?.cancel();
      if (hops >= MAX_REDIRECTS)
        throw new ToolError("execution_failed", `Too many redirects (more than ${MAX_REDIRECTS}) fetching ${String(url)}`);
      const next = this.check(new URL(location, target), `${target.href} redirects to`);
      request = redirectedRequest(request, response.status, target, next);
      target = next;
    }
  }

  /** The URL, parsed and checked against the scope; `via` names the redirect that led there. */
  private check(url: string | URL, via?: string): URL {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new ToolError("invalid_arguments", `Not a valid URL: ${String(url)}`);
    }
    const what = via ? `${via} ${parsed.href}:` : "";
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw new ToolError(
        via ? "capability_denied" : "invalid_arguments",
        `${what} Only http and https URLs can be fetched, not ${parsed.protocol}`.trim(),
      );
    }
    if (!hostAllowed(this.scope, parsed.hostname)) {
      const allowed = this.scope.hostPatterns.length ? this.scope.hostPatterns.join(", ") : "none";
      throw new ToolError("capability_denied", `${what} Host ${parsed.hostname} is outside this tool's net.hosts (${allowed})`.trim());
    }
    return parsed;
  }
}

/** The next request of a redirect chain, as the fetch standard makes it. */
function redirectedRequest(request: RequestInit, status: number, from: URL, to: URL): RequestInit {
  const method = (request.method ?? "GET").toUpperCase();
  const headers = new Headers(request.headers);
  let next: RequestInit = request;
  // 303 turns anything but HEAD into a GET; 301 and 302 do so for POST (what browsers do).
  if ((status === 303 && method !== "GET" && method !== "HEAD") || ((status === 301 || status === 302) && method === "POST")) {
    for (const name of BODY_HEADERS) headers.delete(name);
    next = { ...request, method: "GET", body: null };
  } else if (request.body instanceof ReadableStream) {
    throw new ToolError(
      "execution_failed",
      `${from.href} redirects to ${to.href} with ${status}, which needs the request body again, but it was a stream`,
    );
  }
  // Credentials stay with the origin they were meant for.
  if (from.origin !== to.origin) for (const name of CREDENTIAL_HEADERS) headers.delete(name);
  return { ...next, headers };
}
