/**
 * The outbound address guard (decisions §14): one pure policy that every request to an
 * operator- or user-declared URL passes, at declaration and again right before each send.
 *
 * It refuses literal addresses that ipaddr.js does not classify as global unicast (loopback,
 * RFC 1918, carrier-grade NAT, unique local, link-local, unspecified, multicast, broadcast,
 * reserved, …), IPv4 embedded in IPv6 whose IPv4 is refused, and names that only make sense on
 * a local network (`localhost`, `*.local`, `*.internal`, single-label names, cloud metadata
 * names). It sees the host only; a public name that resolves to a private address is out of its
 * reach (see docs/security.md: deployed Workers cannot reach private networks through fetch).
 *
 * Reasons name the kind of host and the setting, never the URL: a URL may carry a token.
 */
import ipaddr from "ipaddr.js";

/** The setting that lets local development and the end-to-end tests reach private hosts. */
export const ALLOW_PRIVATE_HOSTS_SETTING = "OUTBOUND_ALLOW_PRIVATE_HOSTS";

/** What the guard is told by the settings. */
export interface OutboundPolicy {
  /** `OUTBOUND_ALLOW_PRIVATE_HOSTS=true`: private and local hosts pass (cloud metadata never does). */
  allowPrivateHosts: boolean;
}

/** The guard's answer; `reason` is safe to show (no URL, no host). */
export type GuardVerdict = { ok: true } | { ok: false; reason: string };

/** Names of cloud instance-metadata services (compared lowercased, without a trailing dot). */
const METADATA_NAMES: ReadonlySet<string> = new Set([
  "metadata",
  "metadata.google.internal",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "metadata.tencentyun.com",
  "metadata.platformequinix.com",
  "metadata.packet.net",
]);

/**
 * Metadata services reached by literal address. These are refused even when private hosts are
 * allowed: a local receiver never lives there, and the credentials behind them are the classic
 * prize of a server-side request forgery. (Specific addresses, not ranges: the ranges they sit
 * in are classified by ipaddr.js below.)
 */
const METADATA_ADDRESSES: ReadonlySet<string> = new Set([
  "169.254.169.254", // AWS, GCP, Azure, OCI, DigitalOcean, …
  "169.254.170.2", // AWS ECS task metadata
  "100.100.100.200", // Alibaba Cloud
  "fd00:ec2::254", // AWS over IPv6
]);

/** Suffixes (and the names themselves) reserved for local networks. */
const LOCAL_SUFFIXES = ["localhost", "local", "internal", "localdomain", "home.arpa"];

/** ipaddr.js range names, in words for a refusal reason. */
const RANGE_WORDS: Readonly<Record<string, string>> = {
  loopback: "a loopback address",
  private: "a private (RFC 1918) address",
  carrierGradeNat: "a carrier-grade NAT (100.64.0.0/10) address",
  uniqueLocal: "a unique local (fc00::/7) address",
  linkLocal: "a link-local address",
  unspecified: "the unspecified address",
  multicast: "a multicast address",
  broadcast: "the broadcast address",
  reserved: "a reserved address",
};

const METADATA_REASON = "the host is a cloud metadata service (refused even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true)";

type HostClass = { kind: "public" } | { kind: "private"; what: string } | { kind: "metadata" };

function words(range: string): string {
  return RANGE_WORDS[range] ?? `a special-purpose address (${range})`;
}

function ipv4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

/**
 * The IPv4 address carried inside an IPv6 one, where ipaddr.js classifies the IPv6 as a form
 * that embeds it: mapped (::ffff:a.b.c.d), translated (::ffff:0:a.b.c.d), the NAT64 well-known
 * prefix (64:ff9b::a.b.c.d), 6to4 (2002:aabb:ccdd::) and the deprecated IPv4-compatible form
 * (::a.b.c.d, which ipaddr.js leaves as plain unicast).
 */
function embeddedIpv4(a: ipaddr.IPv6): ipaddr.IPv4 | null {
  const p = a.parts;
  switch (a.range()) {
    case "ipv4Mapped":
    case "rfc6145":
      return ipv4FromParts(p[6], p[7]);
    case "rfc6052":
      // Only the /96 well-known prefix puts the IPv4 in the last 32 bits; the local-use /48 is
      // left to the range check (refused).
      return a.match(ipaddr.IPv6.parse("64:ff9b::"), 96) ? ipv4FromParts(p[6], p[7]) : null;
    case "6to4":
      return ipv4FromParts(p[1], p[2]);
    case "unicast":
      return a.match(ipaddr.IPv6.parse("::"), 96) ? ipv4FromParts(p[6], p[7]) : null;
    default:
      return null;
  }
}

function classifyIpv4(a: ipaddr.IPv4): HostClass {
  if (METADATA_ADDRESSES.has(a.toString())) return { kind: "metadata" };
  const range = a.range();
  return range === "unicast" ? { kind: "public" } : { kind: "private", what: words(range) };
}

function classifyIp(a: ipaddr.IPv4 | ipaddr.IPv6): HostClass {
  if (a.kind() === "ipv4") return classifyIpv4(a as ipaddr.IPv4);
  const v6 = a as ipaddr.IPv6;
  if (METADATA_ADDRESSES.has(v6.toString())) return { kind: "metadata" };
  const inner = embeddedIpv4(v6);
  if (inner) {
    const c = classifyIpv4(inner);
    return c.kind === "private" ? { kind: "private", what: `an IPv6 address embedding ${c.what}` } : c;
  }
  const range = v6.range();
  return range === "unicast" ? { kind: "public" } : { kind: "private", what: words(range) };
}

/**
 * Parses a literal address in any spelling a URL parser or a resolver accepts: dotted, short
 * (127.1), decimal (2130706433), hex (0x7f000001), octal (0177.0.0.1), mixed, and IPv6 with or
 * without brackets. `null` when the host is a name.
 */
function parseLiteral(host: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (bare.includes(":")) {
    // A zone id (fe80::1%eth0) is link-local whatever follows the %.
    const noZone = bare.split("%")[0];
    return ipaddr.IPv6.isValid(noZone) ? ipaddr.IPv6.parse(noZone) : null;
  }
  return ipaddr.IPv4.isValid(bare) ? ipaddr.IPv4.parse(bare) : null;
}

/** Classifies a host (a URL's `hostname`, or a bare name or address). Pure. */
function classifyHost(rawHost: string): HostClass {
  // URL hostnames are already lowercased and percent-decoded; a bare host may not be, and a
  // trailing dot names the same host (`localhost.`).
  const host = rawHost.trim().toLowerCase().replace(/\.+$/, "");
  if (host === "") return { kind: "private", what: "an empty host" };
  const literal = parseLiteral(host);
  if (literal) return classifyIp(literal);
  if (METADATA_NAMES.has(host)) return { kind: "metadata" };
  for (const suffix of LOCAL_SUFFIXES) {
    if (host === suffix) return { kind: "private", what: `a local name (${suffix})` };
    if (host.endsWith(`.${suffix}`)) return { kind: "private", what: `a local name (*.${suffix})` };
  }
  // A URL parser reads a host whose last label is numeric as an IPv4 address; one ipaddr.js
  // could not read is not passed on as a name.
  if (/^(0x[0-9a-f]*|[0-9]+)$/.test(host.slice(host.lastIndexOf(".") + 1))) return { kind: "private", what: "a numeric host that is not a valid address" };
  if (!host.includes(".")) return { kind: "private", what: "a single-label name (resolved only inside a local network)" };
  return { kind: "public" };
}

function verdict(c: HostClass, policy: OutboundPolicy): GuardVerdict {
  if (c.kind === "public") return { ok: true };
  if (c.kind === "metadata") return { ok: false, reason: METADATA_REASON };
  if (policy.allowPrivateHosts) return { ok: true };
  return {
    ok: false,
    reason: `the host is ${c.what}; private and local hosts are refused unless ${ALLOW_PRIVATE_HOSTS_SETTING}=true`,
  };
}

/** Checks one host (name or literal address, brackets optional) against the policy. Pure. */
export function checkHost(host: string, policy: OutboundPolicy): GuardVerdict {
  return verdict(classifyHost(host), policy);
}

/**
 * Checks an outbound URL against the policy. Pure. A URL that does not parse, or is not http(s),
 * is refused: the guard never lets through what it cannot read.
 */
export function checkOutboundUrl(url: string | URL, policy: OutboundPolicy): GuardVerdict {
  let u: URL;
  try {
    u = typeof url === "string" ? new URL(url) : url;
  } catch {
    return { ok: false, reason: "the URL does not parse" };
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return { ok: false, reason: "the URL is not http(s)" };
  return checkHost(u.hostname, policy);
}
