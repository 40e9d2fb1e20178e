/**
 * The outbound address guard's pure policy (src/platform/net/address-guard.ts, decisions §14). URLs go
 * through the runtime's WHATWG parser, which already normalises many IPv4 spellings; bare hosts
 * reach ipaddr.js unnormalised, so every spelling is pinned both ways.
 */
import { describe, expect, it } from "vitest";
import { checkHost, checkOutboundUrl } from "../../../src/platform/net/address-guard";

const STRICT = { allowPrivateHosts: false };
const LOCAL_DEV = { allowPrivateHosts: true };

/** [host as written in a URL, the kind of host the reason must name] */
const REFUSED: Array<[string, string]> = [
  // loopback in every IPv4 spelling
  ["127.0.0.1", "loopback"],
  ["127.255.255.254", "loopback"],
  ["2130706433", "loopback"],
  ["0x7f000001", "loopback"],
  ["0x7F000001", "loopback"],
  ["0177.0.0.1", "loopback"],
  ["0177.0000.0000.0001", "loopback"],
  ["127.1", "loopback"],
  ["127.0.1", "loopback"],
  ["0x7f.1", "loopback"],
  ["0x7f.0.0.1", "loopback"],
  ["0177.0.0x0.1", "loopback"],
  ["127.0.0.1.", "loopback"],
  ["[::1]", "loopback"],
  ["[0:0:0:0:0:0:0:1]", "loopback"],
  // IPv4-mapped / compatible / translated / NAT64 / 6to4 IPv6
  ["[::ffff:127.0.0.1]", "embedding a loopback"],
  ["[::ffff:7f00:1]", "embedding a loopback"],
  ["[0:0:0:0:0:ffff:7f00:1]", "embedding a loopback"],
  ["[::127.0.0.1]", "embedding a loopback"],
  ["[::ffff:0:127.0.0.1]", "embedding a loopback"],
  ["[64:ff9b::127.0.0.1]", "embedding a loopback"],
  ["[2002:7f00:1::]", "embedding a loopback"],
  ["[::ffff:10.0.0.1]", "embedding a private (RFC 1918)"],
  ["[::ffff:192.168.1.1]", "embedding a private (RFC 1918)"],
  // RFC 1918, carrier-grade NAT, unique local
  ["10.0.0.1", "private (RFC 1918)"],
  ["10.255.255.255", "private (RFC 1918)"],
  ["172.16.0.1", "private (RFC 1918)"],
  ["172.31.255.1", "private (RFC 1918)"],
  ["192.168.0.1", "private (RFC 1918)"],
  ["167772161", "private (RFC 1918)"], // 10.0.0.1 as one number
  ["100.64.0.1", "carrier-grade NAT"],
  ["100.127.255.254", "carrier-grade NAT"],
  ["[fc00::1]", "unique local"],
  ["[fd12:3456::1]", "unique local"],
  // link-local, unspecified, multicast, broadcast, reserved
  ["169.254.1.1", "link-local"],
  ["[fe80::1]", "link-local"],
  ["[febf::1]", "link-local"],
  ["0.0.0.0", "unspecified"],
  ["0", "unspecified"],
  ["[::]", "unspecified"],
  ["224.0.0.1", "multicast"],
  ["239.255.255.250", "multicast"],
  ["[ff02::1]", "multicast"],
  ["255.255.255.255", "broadcast"],
  ["240.0.0.1", "reserved"],
  ["192.0.2.1", "reserved"],
  ["[2001:db8::1]", "reserved"],
  // local names
  ["localhost", "local name (localhost)"],
  ["LOCALHOST", "local name (localhost)"],
  ["localhost.", "local name (localhost)"],
  ["api.localhost", "local name (*.localhost)"],
  ["printer.local", "local name (*.local)"],
  ["service.internal", "local name (*.internal)"],
  ["db.corp.internal", "local name (*.internal)"],
  ["router.home.arpa", "local name (*.home.arpa)"],
  ["intranet", "single-label name"],
  ["local%68ost", "local name (localhost)"],
];

/** Cloud metadata: refused even when private hosts are allowed. */
const METADATA = [
  "metadata.google.internal",
  "METADATA.GOOGLE.INTERNAL.",
  "metadata",
  "metadata.goog",
  "instance-data",
  "instance-data.ec2.internal",
  "169.254.169.254",
  "2852039166", // 169.254.169.254 as one number
  "0xa9fea9fe",
  "[::ffff:169.254.169.254]",
  "169.254.170.2",
  "100.100.100.200",
  "[fd00:ec2::254]",
];

const ALLOWED = [
  "example.com",
  "api.openai.com",
  "hooks.example.com",
  "tools.example",
  "weather.internal.example", // `.internal` only as the last label counts
  "localhost.example.com",
  "my-local.dev",
  "1.1.1.1",
  "8.8.8.8",
  "134744072", // 8.8.8.8 as one number
  "0x08080808",
  "172.32.0.1", // just outside 172.16/12
  "100.128.0.1", // just outside 100.64/10
  "192.169.0.1",
  "[2001:4860:4860::8888]",
  "[2606:4700:4700::1111]",
  "[::ffff:8.8.8.8]",
  "[64:ff9b::8.8.8.8]",
  "xn--bcher-kva.example",
];

describe("the outbound address guard (pure)", () => {
  it.each(REFUSED)("refuses https://%s/ as %s, naming OUTBOUND_ALLOW_PRIVATE_HOSTS", (host, kind) => {
    const v = checkOutboundUrl(`https://${host}/hook?token=abc`, STRICT);
    expect(v.ok).toBe(false);
    if (!v.ok) {
      expect(v.reason).toContain(kind);
      expect(v.reason).toContain("OUTBOUND_ALLOW_PRIVATE_HOSTS=true");
      expect(v.reason).not.toContain("abc");
    }
    expect(checkOutboundUrl(`https://${host}/`, LOCAL_DEV)).toEqual({ ok: true });
  });

  it.each(METADATA)("refuses the cloud metadata host %s even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true", (host) => {
    for (const policy of [STRICT, LOCAL_DEV]) {
      const v = checkOutboundUrl(`http://${host}/latest/meta-data/`, policy);
      expect(v).toEqual({ ok: false, reason: "the host is a cloud metadata service (refused even with OUTBOUND_ALLOW_PRIVATE_HOSTS=true)" });
    }
  });

  it.each(ALLOWED)("lets the public host %s through", (host) => {
    expect(checkOutboundUrl(`https://${host}/path`, STRICT)).toEqual({ ok: true });
    expect(checkOutboundUrl(`http://${host}:8080/path`, STRICT)).toEqual({ ok: true });
  });

  it("reads IPv4 spellings itself when given a bare host (no URL parser in front)", () => {
    for (const host of [
      "2130706433",
      "0x7f000001",
      "0177.0.0.1",
      "127.1",
      "0x7f.0x0.0x0.0x1",
      "::1",
      "[::1]",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "fe80::1%eth0",
      "LOCALHOST.",
    ]) {
      const v = checkHost(host, STRICT);
      expect(v.ok, host).toBe(false);
    }
    // A numeric-looking host no parser reads as an address is not passed on as a name.
    expect(checkHost("999.1.1.1", STRICT).ok).toBe(false);
    expect(checkHost("8.8.8.8", STRICT)).toEqual({ ok: true });
    expect(checkHost("example.com", STRICT)).toEqual({ ok: true });
  });

  it("refuses what it cannot read: unparseable URLs and non-http(s) schemes", () => {
    expect(checkOutboundUrl("not a url", LOCAL_DEV)).toEqual({ ok: false, reason: "the URL does not parse" });
    expect(checkOutboundUrl("ftp://example.com/", LOCAL_DEV)).toEqual({ ok: false, reason: "the URL is not http(s)" });
    expect(checkOutboundUrl("file:///etc/passwd", LOCAL_DEV)).toEqual({ ok: false, reason: "the URL is not http(s)" });
  });

  it("accepts a URL object as well as a string", () => {
    expect(checkOutboundUrl(new URL("https://example.com/"), STRICT)).toEqual({ ok: true });
    expect(checkOutboundUrl(new URL("https://127.0.0.1/"), STRICT).ok).toBe(false);
  });
});
