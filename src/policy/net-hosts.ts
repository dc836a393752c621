import type { SourcedRule } from "./ruleset.js";

/**
 * The hosts a sandboxed command may reach through its network proxy, from the rules in force
 * (for `bubblewrapSandbox`'s `allowedHosts` and `deniedHosts`): the patterns of `allow
 * net.fetch` rules are allowed; those of `deny` and `ask` net.fetch rules are refused, since
 * the proxy cannot ask. The proxy is stricter than the ruleset is for one call: there the more
 * specific rule wins; at the proxy a refusal always does. `private`: the allowed patterns that
 * name one host, which the tools' fetch (ScopedNet) may reach on a private address.
 */
export function netFetchHosts(rules: readonly SourcedRule[]): { allowed: string[]; denied: string[]; private: string[] } {
  const allowed: string[] = [];
  const denied: string[] = [];
  for (const rule of rules) {
    if (rule.permission !== "net.fetch") continue;
    (rule.action === "allow" ? allowed : denied).push(rule.pattern);
  }
  return { allowed, denied, private: allowed.filter(namesOneHost) };
}

/**
 * Whether a pattern names one host exactly (`127.0.0.1`, `wiki.corp.internal`): only such an
 * allow rule lets tools reach a private, loopback or link-local address (`private` above), so a
 * broad `*` or `*.com` never opens the local network. Remembered "always" answers never do.
 */
function namesOneHost(pattern: string): boolean {
  return pattern !== "" && !/[*?[\]{}()!+@\\]/.test(pattern);
}
