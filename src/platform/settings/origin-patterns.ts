/**
 * Origin patterns: where deployment configuration lets a secret be sent. Used by
 * `SECRET_REFERENCE_ORIGINS` (which origins each `{"env"}` reference may go to) and by a connector
 * provider's `api_origins` (which origins its connections' tokens may go to).
 *
 * A pattern is an origin, `scheme://host[:port]`, and nothing more: no path, query, fragment or
 * user:password. The scheme is https, or http only for a loopback host (127.0.0.1, localhost,
 * [::1]), which local development needs and which never crosses a network. The port matches
 * exactly as a URL's origin does: no port is the scheme's default (443, 80), so
 * `https://api.example.com` never matches `https://api.example.com:8443`. A port of `*` matches any
 * port of that host, for servers on ports chosen at run time (local development, tests). Hosts
 * compare as the URL parser writes them (lower case, punycode).
 *
 * Pure; settings infrastructure (the settings registry may import it).
 */

export interface OriginPattern {
  protocol: "https:" | "http:";
  /** As `URL.hostname` writes it: lower case, IPv6 in brackets. */
  hostname: string;
  /** `URL.port` of the origin ("" for the scheme's default), or "*" for any port. */
  port: string;
}

/** The rule a pattern follows, for settings errors (never echoes the value). */
export const ORIGIN_PATTERN_RULE =
  "must be an origin: https://host[:port], or http:// for 127.0.0.1, localhost or [::1] only; :* for any port; no path, query, fragment or user:password";

const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Longest pattern accepted. */
const MAX_PATTERN_CHARS = 512;

/** `scheme://authority` with at most a trailing `/`: the text shape of a pattern before parsing. */
const PATTERN_SHAPE = /^(https?):\/\/([^/?#@\s\\]+)\/?$/i;

/** A pattern, or null when `text` is not one (see ORIGIN_PATTERN_RULE). */
export function parseOriginPattern(text: unknown): OriginPattern | null {
  if (typeof text !== "string" || text.length > MAX_PATTERN_CHARS) return null;
  const shape = PATTERN_SHAPE.exec(text);
  if (!shape) return null;
  let authority = shape[2];
  const anyPort = authority.endsWith(":*");
  if (anyPort) {
    authority = authority.slice(0, -2);
    // `host:8080:*` names two ports.
    if (/:\d*$/.test(authority)) return null;
  }
  let u: URL;
  try {
    u = new URL(`${shape[1]}://${authority}`);
  } catch {
    return null;
  }
  if (u.hostname === "" || u.username || u.password || u.pathname !== "/" || u.search || u.hash) return null;
  // A host name, an IPv4 address or a bracketed IPv6 one: no wildcard or other character the URL
  // parser lets through (`*.example` would be a literal host that no request ever has).
  if (!/^(?:[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?|\[[0-9a-f:.]+\])$/.test(u.hostname)) return null;
  const protocol = u.protocol;
  if (protocol !== "https:" && protocol !== "http:") return null;
  if (protocol === "http:" && !LOOPBACK_HOSTS.has(u.hostname)) return null;
  return { protocol, hostname: u.hostname, port: anyPort ? "*" : u.port };
}

/** The pattern as text, e.g. `https://api.example.com` or `http://127.0.0.1:*`. */
export function formatOriginPattern(p: OriginPattern): string {
  return `${p.protocol}//${p.hostname}${p.port === "" ? "" : `:${p.port}`}`;
}

/** Does one of `patterns` admit the origin `url` sends to? A URL that does not parse matches none. */
export function originAllowed(patterns: readonly OriginPattern[], url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  return patterns.some((p) => p.protocol === u.protocol && p.hostname === u.hostname && (p.port === "*" || p.port === u.port));
}
