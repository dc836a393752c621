import { describe, expect, it } from "vitest";
import { netFetchHosts } from "../../src/policy/net-hosts.js";
import type { SourcedRule } from "../../src/policy/ruleset.js";

const rule = (permission: string, pattern: string, action: SourcedRule["action"], source: SourcedRule["source"] = "user"): SourcedRule => ({
  permission,
  pattern,
  action,
  source,
});

describe("netFetchHosts", () => {
  it("allows the patterns of allow net.fetch rules and refuses those of deny and ask ones", () => {
    const hosts = netFetchHosts([
      rule("net.fetch", "*.github.com", "allow", "manifest"),
      rule("net.fetch", "registry.npmjs.org", "allow"),
      rule("net.fetch", "gist.github.com", "deny", "project"),
      rule("net.fetch", "uploads.github.com", "ask", "session"),
    ]);
    expect(hosts).toEqual({
      allowed: ["*.github.com", "registry.npmjs.org"],
      denied: ["gist.github.com", "uploads.github.com"],
      private: ["registry.npmjs.org"],
    });
  });

  it("leaves out rules about tools, commands, paths and everything", () => {
    const hosts = netFetchHosts([
      rule("bash", "curl*", "allow"),
      rule("shell.run", "*", "allow"),
      rule("fs.read", "~/.ssh/**", "deny"),
      rule("*", "*", "allow"),
      rule("fetch", "example.com", "allow"),
    ]);
    expect(hosts).toEqual({ allowed: [], denied: [], private: [] });
  });

  it("lets only a pattern naming one host reach private addresses: never *, *.corp or a class", () => {
    const hosts = netFetchHosts([
      rule("net.fetch", "127.0.0.1", "allow"),
      rule("net.fetch", "wiki.corp.internal", "allow"),
      rule("net.fetch", "*", "allow"),
      rule("net.fetch", "*.corp.internal", "allow"),
      rule("net.fetch", "10.0.0.[0-9]", "allow"),
      rule("net.fetch", "db.corp.internal", "deny"),
    ]);
    expect(hosts.private).toEqual(["127.0.0.1", "wiki.corp.internal"]);
  });
});
