import { lookup as dnsLookup } from "node:dns/promises";
import net from "node:net";

// Which addresses are not on the public internet: what the sandbox proxy and ScopedNet (the
// tools' fetch) refuse to reach unless a rule names the host.

const BLOCKED_V4 = new net.BlockList();
for (const [prefix, bits] of [
  ["0.0.0.0", 8], // "this" network
  ["10.0.0.0", 8],
  ["100.64.0.0", 10], // carrier-grade NAT
  ["127.0.0.0", 8],
  ["169.254.0.0", 16], // link-local, cloud metadata
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4], // multicast
  ["240.0.0.0", 4], // reserved, broadcast
] as const) {
  BLOCKED_V4.addSubnet(prefix, bits, "ipv4");
}
const BLOCKED_V6 = new net.BlockList();
for (const [prefix, bits] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7], // unique local
  ["fe80::", 10], // link-local
  ["fec0::", 10], // site-local (deprecated)
  ["ff00::", 8], // multicast
] as const) {
  BLOCKED_V6.addSubnet(prefix, bits, "ipv6");
}

/** The IPv4 address an IPv6 address carries (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`), or undefined. */
function embeddedV4(address: string): string | undefined {
  const lower = address.toLowerCase();
  for (const prefix of ["::ffff:", "64:ff9b::"]) {
    if (!lower.startsWith(prefix)) continue;
    const rest = lower.slice(prefix.length);
    if (net.isIPv4(rest)) return rest;
    const groups = rest.split(":");
    if (groups.length === 2 && groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) {
      const [hi, lo] = groups.map((g) => parseInt(g, 16)) as [number, number];
      return [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
    }
  }
  return undefined;
}

/** Whether an address is private, loopback, link-local or otherwise not on the public internet. */
export function isPrivateAddress(address: string): boolean {
  if (net.isIPv4(address)) return BLOCKED_V4.check(address, "ipv4");
  // A zone (`fe80::1%eth0`) is only ever on a local link.
  if (address.includes("%")) return true;
  if (!net.isIPv6(address)) return true;
  const v4 = embeddedV4(address);
  if (v4 !== undefined) return BLOCKED_V4.check(v4, "ipv4");
  return BLOCKED_V6.check(address, "ipv6");
}

/** Every address the system resolver gives for a host name. */
export async function systemResolve(host: string): Promise<readonly string[]> {
  const found = await dnsLookup(host, { all: true, verbatim: true });
  return found.map((entry) => entry.address);
}
