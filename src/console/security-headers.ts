/**
 * The headers of the console's pages and files and of the API reference (docs/console.md
 * "Security"). Pure. The console loads only its own script and stylesheet: no inline script or
 * style, no third-party origin, and it talks to this origin alone (fetch and the live WebSocket,
 * which `'self'` covers). The API reference's page is Scalar's (src/system/routes/api-docs.ts): its one
 * inline configuration script is allowed by its SHA-256, its bundle is served from this origin, and
 * only its styles need `'unsafe-inline'` (the bundle injects style elements at run time).
 */
import { base64url } from "../access-control/crypto";

/** Headers every page and file of the console and the reference carries. */
export const BASE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "x-frame-options": "DENY",
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-resource-policy": "same-origin",
  "permissions-policy": "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
};

/**
 * The console's policy: everything from this origin only, nothing inline, and Trusted Types
 * required with no policy allowed: the console builds elements and text nodes only, so a message's
 * text can never reach an HTML sink.
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join("; ");

/** The inline `<script>` bodies of `html` (scripts with a `src` are not inline). */
export function inlineScripts(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)) {
    if (!/\bsrc\s*=/i.test(m[1])) out.push(m[2]);
  }
  return out;
}

/** A CSP source for `text`'s SHA-256 (`'sha256-…'`, standard base64). */
export async function cspHash(text: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)));
  const b64 = base64url(digest).replace(/-/g, "+").replace(/_/g, "/");
  return `'sha256-${b64}${"=".repeat((4 - (b64.length % 4)) % 4)}'`;
}

/** The API reference's policy for its page `html`: its inline scripts by hash, the rest from this origin. */
export async function docsCsp(html: string): Promise<string> {
  const hashes = await Promise.all(inlineScripts(html).map(cspHash));
  return [
    "default-src 'none'",
    `script-src 'self' ${hashes.join(" ")}`.trim(),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "worker-src 'self' blob:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
}

/** `headers` with the security headers and `csp` set (an asset's own headers kept otherwise). */
export function secured(headers: Headers, csp: string): Headers {
  const out = new Headers(headers);
  for (const [k, v] of Object.entries(BASE_SECURITY_HEADERS)) out.set(k, v);
  out.set("content-security-policy", csp);
  // Fixed file names: always revalidate, so a deploy is seen at once (ETags keep it cheap).
  out.set("cache-control", "no-cache");
  return out;
}
