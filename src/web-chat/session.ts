/**
 * A web visitor's credential, as the doors read and write it (docs/channels.md "Web"):
 *
 * - the token is `<visitor id>.<secret>`; the visitor id names the thread (with the route), the
 *   secret proves the session, and only its SHA-256 is kept, in the visitor's thread object;
 * - the page carries it in an HttpOnly cookie scoped to the web doors and named after the identity,
 *   so two web routes on one host never share one; the widget in an `Authorization: Bearer`
 *   header, which no browser attaches on its own, so neither way can be ridden by another site;
 * - every POST and the stream must come from an allowed origin: the service's own for the cookie,
 *   an origin the operator listed for the identity for the bearer.
 */
import type { Context } from "hono";
import { SESSION_SECRET, VISITOR_ID } from "../conversations/model/web";
import type { AppEnv } from "../platform/http/app-env";
import { HttpError } from "../platform/http/errors";
import type { CookieSecure } from "../platform/settings/web-settings";

/** Where the session came from: the page's cookie or the widget's bearer header. */
export type CredentialMode = "cookie" | "bearer";

export interface Credential {
  mode: CredentialMode;
  /** The token as presented (a live cookie is set again as it is). */
  token: string;
  visitorId: string;
  secretHash: string;
}

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

/** A fresh visitor id and session secret. */
export function mintToken(): { visitorId: string; secret: string; token: string } {
  const visitorId = `w_${base64url(crypto.getRandomValues(new Uint8Array(16)))}`;
  const secret = base64url(crypto.getRandomValues(new Uint8Array(32)));
  return { visitorId, secret, token: `${visitorId}.${secret}` };
}

export async function secretHash(secret: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(secret)));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The cookie's name for `identity` (an identity is a cookie-name-safe path segment). */
export const cookieName = (identity: string) => `tai_web_${identity}`;

/** Splits a token; null when it is not shaped like one (then nothing is looked up). */
function splitToken(token: string): { visitorId: string; secret: string } | null {
  const dot = token.indexOf(".");
  if (dot < 0) return null;
  const visitorId = token.slice(0, dot);
  const secret = token.slice(dot + 1);
  return VISITOR_ID.test(visitorId) && SESSION_SECRET.test(secret) ? { visitorId, secret } : null;
}

function cookieValue(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The bearer token, when the request carries one (the widget). */
export function bearerToken(req: Request): string | null {
  const h = req.headers.get("authorization");
  if (!h) return null;
  const m = /^Bearer\s+(\S+)$/i.exec(h);
  return m ? m[1] : "";
}

/**
 * The credential the request carries for `identity`: the bearer header when present, else the
 * identity's cookie. Null when there is none or it is malformed.
 */
export async function readCredential(req: Request, identity: string): Promise<Credential | null> {
  const bearer = bearerToken(req);
  const mode: CredentialMode = bearer !== null ? "bearer" : "cookie";
  const raw = bearer ?? cookieValue(req.headers.get("cookie"), cookieName(identity));
  const parts = raw ? splitToken(raw) : null;
  if (!parts) return null;
  return { mode, token: `${parts.visitorId}.${parts.secret}`, visitorId: parts.visitorId, secretHash: await secretHash(parts.secret) };
}

/** A token given in a body (not a header), as the credential it would be; null when it is not shaped like one. */
export async function tokenCredential(token: string): Promise<Credential | null> {
  const parts = splitToken(token);
  if (!parts) return null;
  return { mode: "bearer", token, visitorId: parts.visitorId, secretHash: await secretHash(parts.secret) };
}

/** The session cookie: HttpOnly, SameSite=Lax, only on the web doors, `Secure` per the setting. */
export function sessionCookie(identity: string, token: string, maxAgeSeconds: number, secure: CookieSecure, requestUrl: string): string {
  const https = new URL(requestUrl).protocol === "https:";
  const flagSecure = secure === "true" || (secure === "auto" && https);
  return `${cookieName(identity)}=${token}; Path=/api/channels/web/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${flagSecure ? "; Secure" : ""}`;
}

export const sessionMissing = () => new HttpError(401, "no web session for this conversation: open the chat page again", "session_missing");
export const originMismatch = () =>
  new HttpError(403, "this request must come from the chat page's own origin or an origin allowed for this identity", "origin_mismatch");

/** The service's own origin, as the request reached it. */
export const ownOrigin = (c: Context<AppEnv>) => new URL(c.req.url).origin;

/**
 * Checks the request's Origin for its credential mode: the page's own origin for the cookie, an
 * allowed origin for the bearer (the service's own origin too, which hosts the page).
 */
export function requireOrigin(c: Context<AppEnv>, mode: CredentialMode, allowed: readonly string[]): string {
  const origin = c.req.header("origin");
  if (!origin) throw originMismatch();
  const own = ownOrigin(c);
  if (origin === own) return origin;
  if (mode === "bearer" && allowed.includes(origin)) return origin;
  throw originMismatch();
}

/**
 * The network bucket a visitor's messages are capped by: the client's IPv4 address, or the /64 of
 * an IPv6 one (a host commonly holds a whole /64), from the edge's CF-Connecting-IP.
 */
export function networkBucket(req: Request): string {
  const ip = (req.headers.get("cf-connecting-ip") ?? "").trim();
  if (!ip) return "web:unknown";
  if (!ip.includes(":")) return `web:${ip}`;
  const groups = expandIpv6(ip);
  return groups ? `web:${groups.slice(0, 4).join(":")}::/64` : `web:${ip}`;
}

function expandIpv6(ip: string): string[] | null {
  const [head, tail] = ip.split("::");
  const h = head ? head.split(":") : [];
  const t = tail !== undefined && tail !== "" ? tail.split(":") : [];
  if (ip.includes("::")) {
    const fill = 8 - h.length - t.length;
    if (fill < 0) return null;
    return [...h, ...Array(fill).fill("0"), ...t].map((g) => g.toLowerCase().replace(/^0+(?=.)/, ""));
  }
  return h.length === 8 ? h.map((g) => g.toLowerCase().replace(/^0+(?=.)/, "")) : null;
}
