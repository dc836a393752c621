import { describe, expect, it } from "vitest";
import { compileScope, expandPattern, hostAllowed, PathMatcher, ScopeError, shellAllowed } from "../../src/runtime/scope.js";

const vars = { workspace: ["/ws", "/ws2"], "ad-hoc": [], "user-data": ["/home/u/.toolhost"] };

describe("pattern variables", () => {
  it("expands a variable to each of its values", () => {
    expect(expandPattern("{workspace}/**", vars)).toEqual(["/ws/**", "/ws2/**"]);
  });
  it("throws on an undefined variable (a typo must not change the scope)", () => {
    expect(() => expandPattern("{worksapce}/**", vars)).toThrow(ScopeError);
    expect(() => compileScope({ fs: { read: ["{nope}"] } }, vars, "/ws")).toThrow(/Undefined variable \{nope\}/);
  });
  it("fails closed on an empty expansion", () => {
    const scope = compileScope({ fs: { read: ["{ad-hoc}/**"] } }, vars, "/ws");
    expect(scope.read.empty).toBe(true);
    expect(scope.read.matches("/ws/a.ts")).toBe(false);
    expect(scope.read.matches("/")).toBe(false);
  });
});

describe("PathMatcher", () => {
  const m = new PathMatcher(["/ws/**", "docs/*.md"], "/base");
  it("covers the root itself and everything below", () => {
    expect(m.matches("/ws")).toBe(true);
    expect(m.matches("/ws/a/b/.hidden")).toBe(true);
    expect(m.matches("/wsx/a")).toBe(false);
    expect(m.matches("/other")).toBe(false);
  });
  it("resolves relative patterns against the base", () => {
    expect(m.matches("/base/docs/a.md")).toBe(true);
    expect(m.matches("/base/docs/a.txt")).toBe(false);
    expect(m.roots).toEqual(["/ws", "/base/docs"]);
  });
  it("treats a plain directory pattern as that directory and below", () => {
    const plain = new PathMatcher(["/data"], "/");
    expect(plain.matches("/data/x/y")).toBe(true);
    expect(plain.matches("/database")).toBe(false);
  });
});

describe("shell and host requirements", () => {
  const scope = compileScope(
    {
      shell: [
        { cmd: "git", args: ["status"] },
        { cmd: "git", args: ["log", { prefix: "--max-count=" }, { wildcard: true }] },
        { cmd: "ls" },
      ],
      net: { hosts: ["*.example.com", "api.test"] },
    },
    vars,
    "/ws",
  );
  it("matches executables and ordered argument patterns", () => {
    expect(shellAllowed(scope, "git", ["status"])).toBe(true);
    expect(shellAllowed(scope, "/usr/bin/git", ["status"])).toBe(true);
    expect(shellAllowed(scope, "git", ["status", "-s"])).toBe(false);
    expect(shellAllowed(scope, "git", ["log", "--max-count=3", "main"])).toBe(true);
    expect(shellAllowed(scope, "git", ["log", "-n3", "main"])).toBe(false);
    expect(shellAllowed(scope, "git", ["push"])).toBe(false);
    expect(shellAllowed(scope, "ls", ["-la", "/"])).toBe(true);
    expect(shellAllowed(scope, "rm", ["-rf", "/"])).toBe(false);
  });
  it("matches hosts case-insensitively with globs", () => {
    expect(hostAllowed(scope, "docs.Example.com")).toBe(true);
    expect(hostAllowed(scope, "example.com")).toBe(false);
    expect(hostAllowed(scope, "api.test")).toBe(true);
    expect(hostAllowed(scope, "evil.test")).toBe(false);
  });
});
