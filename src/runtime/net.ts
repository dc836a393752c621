import net from "node:net";
import type { Agent } from "undici";
import type { NetFetchInit, ToolNet } from "../tool/context.js";
import { ToolError } from "../tool/errors.js";
import { isPrivateAddress, systemResolve } from "./addresses.js";
import { hostAllowed, hostMatcher, type CompiledScope } from "./scope.js";

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
/** The fetch standard's redirect limit. */
const MAX_REDIRECTS = 20;
const BODY_HEADERS = ["content-type", "content-length", "content-encoding", "content-language", "content-location"];
const CREDENTIAL_HEADERS = ["authorization", "proxy-authorization", "cookie"];

export interface NetGuardOptions {
  /**
   * Host patterns that may reach private, loopback and link-local addresses (read on each
   * connection: the agent hands in the hosts its net.fetch allow rules name). Default: none.
   */
  privateHosts?: () => readonly string[];
  /** Resolves a host name to its addresses (default: the system resolver, every address). */
  resolve?: (host: string) => Promise<readonly string[]>;
}

/** A connection the guard refused while resolving: carried out of fetch's "fetch failed". */
class PrivateAddressRefused extends Error {}

/** A host as the URL spells it, without the brackets of an IPv6 literal, lower case, no final dot. */
function bareHost(hostname: string): string {
  let h = hostname.toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.endsWith(".")) h = h.slice(0, -1);
  return h;
}

const HOW_TO_ALLOW = (host: string) => `a net.fetch allow rule naming ${host} lets tools reach it`;

/**
 * The session's guard against server-side request forgery: no tool's fetch reaches a private,
 * loopback, link-local or metadata address unless a rule names the host, or the tool's own scope
 * names it exactly (web_search's configured providers, an extension's declared host). The check runs on the
 * resolved addresses inside the connection's own DNS lookup, so the connection goes to an
 * address that was checked (a second resolution cannot rebind it), and again on every redirect.
 */
export class NetGuard {
  /** undici's fetch and one agent per set of hosts a scope names exactly (most sessions: one). */
  private readonly clients = new Map<string, Promise<Fetcher>>();

  constructor(private readonly options: NetGuardOptions = {}) {}

  /** Whether a host may reach private addresses: a rule names it, or the call's scope names it exactly (`named`). */
  privateAllowed(host: string, named: readonly string[] = []): boolean {
    const h = bareHost(host);
    return named.includes(h) || (this.options.privateHosts?.() ?? []).some((pattern) => hostMatcher(pattern)(h));
  }

  /** The refusal for an IP literal that may not be reached, or undefined. */
  refuseLiteral(hostname: string, named: readonly string[] = []): string | undefined {
    const host = bareHost(hostname);
    if (net.isIP(host) === 0 || !isPrivateAddress(host) || this.privateAllowed(host, named)) return undefined;
    return `${host} is a private, loopback or link-local address, which tools may not reach (${HOW_TO_ALLOW(host)})`;
  }

  /** The addresses of a host, every one checked; throws PrivateAddressRefused when one may not be reached. */
  private async checkedAddresses(hostname: string, named: readonly string[]): Promise<readonly string[]> {
    const host = bareHost(hostname);
    const addresses = net.isIP(host) ? [host] : await (this.options.resolve ?? systemResolve)(host);
    if (addresses.length === 0) throw new Error(`${host} has no address`);
    const blocked = addresses.find(isPrivateAddress);
    if (blocked !== undefined && !this.privateAllowed(host, named)) {
      throw new PrivateAddressRefused(
        `${host} resolves to ${blocked}, a private, loopback or link-local address, which tools may not reach (${HOW_TO_ALLOW(host)})`,
      );
    }
    return addresses;
  }

  /**
   * undici's fetch with an agent whose every connection resolves through the check (loaded on
   * first use). `named`: the hosts the call's scope names exactly, which may be private too.
   */
  fetcher(named: readonly string[] = []): Promise<Fetcher> {
    const key = [...named].sort().join(" ");
    let client = this.clients.get(key);
    if (!client) {
      client = import("undici").then((loaded) => {
        // undici is CommonJS: bundled, its exports come as the namespace's default.
        const { Agent, fetch } = ((loaded as unknown as { default?: typeof loaded }).default ?? loaded) as typeof loaded;
        const lookup: net.LookupFunction = (hostname, options, callback) => {
          this.checkedAddresses(hostname, named).then(
            (addresses) => {
              const entries = addresses.map((address) => ({ address, family: net.isIPv6(address) ? 6 : 4 }));
              if (options.all) callback(null, entries);
              else callback(null, entries[0]?.address ?? "", entries[0]?.family ?? 4);
            },
            (err: Error) => callback(err as NodeJS.ErrnoException, ""),
          );
        };
        return { fetch, agent: new Agent({ connect: { lookup } }) };
      });
      this.clients.set(key, client);
    }
    return client;
  }

  /** Ends the agents' connections. */
  async close(): Promise<void> {
    const clients = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(clients.map(async (client) => (await client).agent.close()));
  }
}

type Fetcher = { fetch: typeof import("undici").fetch; agent: Agent };

/** The scope's host patterns that name one host exactly (no wildcard): such a host may be private. */
function namedHosts(scope: CompiledScope): string[] {
  return scope.hostPatterns.filter((p) => p !== "" && !/[*?[\]{}()!+@\\]/.test(p)).map(bareHost);
}

/** The guard's refusal inside an error's cause chain, if that is why it failed. */
function refusalOf(err: unknown): PrivateAddressRefused | undefined {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof PrivateAddressRefused) return e;
  }
  return undefined;
}

/**
 * fetch() limited to the scope's net.hosts, http(s) only, aborted with the call, through the
 * session's NetGuard. Redirects are followed here, one hop at a time, so a redirect cannot carry
 * the call to a host outside the scope or to a private address (fetch would follow it silently).
 */
export class ScopedNet implements ToolNet {
  /** Hosts the scope names exactly (web_search's configured providers): the guard lets them be private. */
  private readonly named: readonly string[];

  constructor(
    private readonly scope: CompiledScope,
    private readonly signal: AbortSignal,
    private readonly guard: NetGuard,
  ) {
    this.named = namedHosts(scope);
  }

  async fetch(url: string | URL, init: NetFetchInit = {}): Promise<Response> {
    const { maxRedirects = MAX_REDIRECTS, ...rest } = init;
    let target = this.check(url);
    const signal = rest.signal ? AbortSignal.any([rest.signal, this.signal]) : this.signal;
    // "manual" and "error" keep their meaning: nothing is followed.
    if (rest.redirect !== undefined && rest.redirect !== "follow") return this.send(target, { ...rest, signal });

    let request: RequestInit = { ...rest, signal, redirect: "manual" };
    let via: string | undefined;
    for (let hops = 0; ; hops++) {
      const response = await this.send(target, request, via);
      const location = response.headers.get("location");
      if (!REDIRECTS.has(response.status) || location === null) return response;
      await response.body?.cancel();
      if (hops >= maxRedirects)
        throw new ToolError("execution_failed", `Too many redirects (more than ${maxRedirects}) fetching ${String(url)}`);
      const next = this.check(new URL(location, target), `${target.href} redirects to`);
      request = redirectedRequest(request, response.status, target, next);
      via = `${target.href} redirects to`;
      target = next;
    }
  }

  /** One request through the guard's agent; a refusal at connect time becomes capability_denied. */
  private async send(target: URL, init: RequestInit, via?: string): Promise<Response> {
    const { fetch, agent } = await this.guard.fetcher(this.named);
    try {
      // undici's own fetch and Response: the same API as the global ones, typed apart.
      return (await fetch(target, { ...init, dispatcher: agent } as Parameters<typeof fetch>[1])) as unknown as Response;
    } catch (err) {
      const refused = refusalOf(err);
      if (refused) throw new ToolError("capability_denied", via ? `${via} ${target.href}: ${refused.message}` : refused.message);
      throw err;
    }
  }

  /** The URL, parsed and checked against the scope and the guard; `via` names the redirect that led there. */
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
    if (!hostAllowed(this.scope, bareHost(parsed.hostname))) {
      const allowed = this.scope.hostPatterns.length ? this.scope.hostPatterns.join(", ") : "none";
      throw new ToolError("capability_denied", `${what} Host ${parsed.hostname} is outside this tool's net.hosts (${allowed})`.trim());
    }
    const refused = this.guard.refuseLiteral(parsed.hostname, this.named);
    if (refused) throw new ToolError("capability_denied", `${what} ${refused}`.trim());
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
