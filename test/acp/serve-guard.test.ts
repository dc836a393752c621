import { describe, expect, it } from "vitest";
import { bearerMatches, isLoopback, newToken, parseListen, refusal } from "../../src/acp/serve-guard.js";

// The checks `toolhost serve` makes before the SDK sees a request, one rule at a time.

const token = newToken();
const guard = { token, allowOrigins: ["https://app.example"], checkHost: true };
const auth = { authorization: `Bearer ${token}` };

describe("serve's guard", () => {
  it("makes 43-character random tokens", () => {
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newToken()).not.toBe(token);
  });

  it("takes only `Bearer <the token>`", () => {
    expect(bearerMatches(`Bearer ${token}`, token)).toBe(true);
    expect(bearerMatches(`bearer ${token}`, token)).toBe(true);
    expect(bearerMatches(token, token)).toBe(false);
    expect(bearerMatches(`Bearer ${token}x`, token)).toBe(false);
    expect(bearerMatches(`Bearer ${token.slice(1)}`, token)).toBe(false);
    // Every proper prefix, down to one character: a comparison that stopped at the shorter side would take them.
    for (let n = 1; n < token.length; n++) expect(bearerMatches(`Bearer ${token.slice(0, n)}`, token), `prefix of ${n}`).toBe(false);
    expect(bearerMatches("Bearer ", token)).toBe(false);
    expect(bearerMatches(undefined, token)).toBe(false);
    expect(bearerMatches("Bearer ", "")).toBe(false);
  });

  it("refuses other paths, rebinding hosts, foreign origins and missing tokens, in that order", () => {
    expect(refusal("/acp", { host: "127.0.0.1:7700", ...auth }, guard)).toBeNull();
    expect(refusal("/acp?x=1", { host: "localhost:7700", ...auth }, guard)).toBeNull();
    expect(refusal("/acp", { host: "[::1]:7700", ...auth }, guard)).toBeNull();
    expect(refusal("/acp", { host: "127.0.0.1:7700", origin: "https://app.example", ...auth }, guard)).toBeNull();
    expect(refusal("/", { host: "127.0.0.1:7700", ...auth }, guard)?.status).toBe(404);
    expect(refusal("/acp", { host: "evil.example:7700", ...auth }, guard)?.status).toBe(421);
    expect(refusal("/acp", { host: "localhost.evil.example", ...auth }, guard)?.status).toBe(421);
    expect(refusal("/acp", { ...auth }, guard)?.status).toBe(421);
    // A non-loopback bind (a container) does not check the Host: the token is what guards it.
    expect(refusal("/acp", { host: "toolhost.internal:7700", ...auth }, { ...guard, checkHost: false })).toBeNull();
    expect(refusal("/acp", { host: "127.0.0.1", origin: "null", ...auth }, guard)?.status).toBe(403);
    expect(refusal("/acp", { host: "127.0.0.1", origin: "https://app.example.evil", ...auth }, guard)?.status).toBe(403);
    expect(refusal("/acp", { host: "127.0.0.1" }, guard)).toMatchObject({
      status: 401,
      headers: { "WWW-Authenticate": expect.any(String) },
    });
  });

  it("reads --listen", () => {
    expect(parseListen("127.0.0.1:7700")).toEqual({ host: "127.0.0.1", port: 7700 });
    expect(parseListen("0.0.0.0:0")).toEqual({ host: "0.0.0.0", port: 0 });
    expect(parseListen("[::1]:8000")).toEqual({ host: "::1", port: 8000 });
    expect(parseListen("9000")).toEqual({ host: "127.0.0.1", port: 9000 });
    expect(parseListen("localhost:70000")).toMatch(/HOST:PORT/);
    expect(parseListen("nohost")).toMatch(/HOST:PORT/);
    expect(isLoopback("127.0.0.1")).toBe(true);
    expect(isLoopback("::1")).toBe(true);
    expect(isLoopback("0.0.0.0")).toBe(false);
  });
});
