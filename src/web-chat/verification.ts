/**
 * Verified visitors (docs/channels.md, "Verified visitors"): a site whose pages are behind its own
 * login tells the widget who its user is, and proves it with the identity's secret, which only the
 * site's backend and this service hold. Two proofs are accepted:
 *
 * - `user_token`: a compact HS256 token `{sub, iat, exp, name?, email?}` signed with the secret,
 *   living at most an hour. The stronger one: a leaked token stops working when it expires.
 * - `user_id` + `user_hash` (hex HMAC-SHA256 of the user id): what sites coming from other chat
 *   tools already compute. It never expires, so a leaked hash logs that user in until the secret
 *   is rotated; the docs say to prefer the token.
 *
 * The secret is sealed at rest under SETTINGS_ENCRYPTION_KEY (AAD names the identity) and shown
 * only in the answer that minted it. A verified user's visitor id is derived from the identity and
 * the user id, so the same user lands in the same thread from any device.
 */
import { z } from "zod";
import { openText, sealText, sealingRing, settingsKeyRing } from "../config/secrets";
import { HttpError } from "../platform/http/errors";
import { d1, first, run } from "../platform/persistence/d1";
import type { ConfigSettings } from "../platform/settings/config-settings";

/** The longest user id a proof may carry (the site's own key for its user). */
export const MAX_USER_ID = 256;
/** How far ahead of now a token's `exp` may be. */
export const MAX_TOKEN_LIFETIME_S = 3600;
/** The clock skew tolerated between the site's backend and this service. */
export const CLOCK_SKEW_S = 60;

const aad = (identity: string) => `web-verification\0${identity}`;

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const bin = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
    return Uint8Array.from(bin, (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

const utf8 = (text: string) => new TextEncoder().encode(text);

/** A fresh secret: 32 random bytes, base64url, prefixed so a leaked one is recognisable. */
const mintSecret = () => `tws_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;

/** The body of `PUT …/verification`: the switch, and whether to mint a new secret. */
export const VerificationBody = z
  .object({
    require_verified: z.boolean().optional(),
    rotate: z.boolean().optional(),
  })
  .strict();

/** The setting as the doors show it: never the secret, except `secret` in the answer that minted it. */
export const VerificationView = z
  .object({
    identity: z.string(),
    has_secret: z.boolean(),
    secret_created_at: z.string().nullable(),
    require_verified: z.boolean(),
    secret: z.string().optional().describe("Only in the answer that minted it: keep it in the site's backend; it is never shown again."),
  })
  .strict()
  .describe("WebVerification");
export type VerificationView = z.infer<typeof VerificationView>;

const Row = z.object({ require_verified: z.number().int(), verify_secret_at: z.string().nullable() });

/** `identity`'s verification setting (none: no secret, anonymous visitors welcome). */
export async function readVerification(db: D1Database, identity: string): Promise<VerificationView> {
  const row = await first(Row, d1(db)`SELECT require_verified, verify_secret_at FROM web_sites WHERE identity = ${identity}`);
  return {
    identity,
    has_secret: Boolean(row?.verify_secret_at),
    secret_created_at: row?.verify_secret_at ?? null,
    require_verified: row?.require_verified === 1,
  };
}

/**
 * Writes the setting: mints (and seals) a secret when the identity has none or `rotate` asks for
 * one, and sets the switch when given. The answer carries the secret only when one was minted.
 * 501 without SETTINGS_ENCRYPTION_KEY, since a secret could not be kept sealed.
 */
export async function writeVerification(
  db: D1Database,
  config: ConfigSettings,
  identity: string,
  body: z.infer<typeof VerificationBody>,
  nowIso: string,
  by: string,
): Promise<VerificationView> {
  const current = await readVerification(db, identity);
  const require = body.require_verified ?? current.require_verified;
  const flag = require ? 1 : 0;
  if (current.has_secret && !body.rotate) {
    await run(d1(db)`UPDATE web_sites SET require_verified = ${flag}, updated_at = ${nowIso}, updated_by = ${by} WHERE identity = ${identity}`);
    return { ...current, require_verified: require };
  }
  const secret = mintSecret();
  const sealed = await sealText(await sealingRing(config), secret, aad(identity));
  await run(
    d1(db)`INSERT INTO web_sites (identity, allowed_origins, gate_enabled, require_verified, verify_secret_sealed, verify_secret_at, updated_at, updated_by)
      VALUES (${identity}, '[]', 0, ${flag}, ${sealed}, ${nowIso}, ${nowIso}, ${by})
      ON CONFLICT(identity) DO UPDATE SET require_verified = excluded.require_verified, verify_secret_sealed = excluded.verify_secret_sealed,
        verify_secret_at = excluded.verify_secret_at, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
  );
  return { identity, has_secret: true, secret_created_at: nowIso, require_verified: require, secret };
}

/** Forgets the secret and turns the switch off: the identity takes anonymous visitors only. */
export async function clearVerification(db: D1Database, identity: string, nowIso: string, by: string): Promise<VerificationView> {
  await run(
    d1(
      db,
    )`UPDATE web_sites SET require_verified = 0, verify_secret_sealed = NULL, verify_secret_at = NULL, updated_at = ${nowIso}, updated_by = ${by} WHERE identity = ${identity}`,
  );
  return { identity, has_secret: false, secret_created_at: null, require_verified: false };
}

/** The identity's secret in plain text, for checking a proof; null when it has none or it cannot be opened. */
async function openSecret(db: D1Database, config: ConfigSettings, identity: string): Promise<string | null> {
  const row = await first(
    z.object({ verify_secret_sealed: z.string().nullable() }),
    d1(db)`SELECT verify_secret_sealed FROM web_sites WHERE identity = ${identity}`,
  );
  if (!row?.verify_secret_sealed) return null;
  return openText(await settingsKeyRing(config), row.verify_secret_sealed, aad(identity));
}

/** What a session request may carry to be a verified user. */
export interface UserProof {
  user_id?: string;
  user_hash?: string;
  user_token?: string;
}

/** The user a proof vouched for. */
export interface VerifiedUser {
  userId: string;
  name?: string;
  email?: string;
}

const malformed = (what: string) => new HttpError(400, `invalid user proof: ${what}`, "invalid_user_proof");
const forged = () => new HttpError(401, "the user proof does not match this identity's secret", "user_unverified");

/** True when the request carries any part of a proof. */
export const hasProof = (p: UserProof) => p.user_id !== undefined || p.user_hash !== undefined || p.user_token !== undefined;

async function hmacKey(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", utf8(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
}

const HEX_SHA256 = /^[0-9a-fA-F]{64}$/;
const hexBytes = (hex: string) => Uint8Array.from(hex.match(/../g) ?? [], (h) => Number.parseInt(h, 16));

const TokenHeader = z.object({ alg: z.literal("HS256"), typ: z.string().optional() });
const TokenClaims = z.object({
  sub: z.string().min(1).max(MAX_USER_ID),
  iat: z.number().int(),
  exp: z.number().int(),
  name: z.string().max(200).optional(),
  email: z.string().max(320).optional(),
});

function decodeJson(part: string): unknown {
  const bytes = fromBase64url(part);
  if (!bytes) return undefined;
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
  } catch {
    return undefined;
  }
}

/**
 * Checks `proof` against `identity`'s secret and answers the user it vouches for. Exactly one proof:
 * a token, or a user id with its hash. The signature is checked by WebCrypto's verify, which
 * compares in constant time; the refusals name the problem, never a presented value.
 */
export async function verifyUser(db: D1Database, config: ConfigSettings, identity: string, proof: UserProof, nowMs: number): Promise<VerifiedUser> {
  const token = proof.user_token;
  if (token !== undefined && (proof.user_id !== undefined || proof.user_hash !== undefined))
    throw malformed("send either user_token or user_id with user_hash, not both");
  if (token === undefined && (proof.user_id === undefined || proof.user_hash === undefined)) throw malformed("user_id and user_hash go together");
  const secret = await openSecret(db, config, identity);
  if (secret === null)
    throw new HttpError(400, "this identity verifies no users: its operator has minted no verification secret", "verification_not_configured");
  const key = await hmacKey(secret);
  if (token === undefined) {
    const userId = proof.user_id ?? "";
    const hash = proof.user_hash ?? "";
    if (userId.length < 1 || userId.length > MAX_USER_ID) throw malformed(`user_id must be 1 to ${MAX_USER_ID} characters`);
    if (!HEX_SHA256.test(hash)) throw malformed("user_hash must be 64 hex characters (HMAC-SHA256)");
    if (!(await crypto.subtle.verify("HMAC", key, hexBytes(hash), utf8(userId)))) throw forged();
    return { userId };
  }
  const parts = token.split(".");
  if (parts.length !== 3) throw malformed("user_token must be three base64url parts");
  const [head, body, sig] = parts as [string, string, string];
  if (!TokenHeader.safeParse(decodeJson(head)).success) throw malformed("user_token's header must be {alg: HS256}");
  const signature = fromBase64url(sig);
  if (!signature || signature.length !== 32) throw malformed("user_token's signature must be 32 bytes");
  if (!(await crypto.subtle.verify("HMAC", key, signature, utf8(`${head}.${body}`)))) throw forged();
  const claims = TokenClaims.safeParse(decodeJson(body));
  if (!claims.success) throw malformed("user_token's claims must be {sub, iat, exp} (seconds), name and email optional");
  const now = Math.floor(nowMs / 1000);
  const c = claims.data;
  if (c.exp <= now - CLOCK_SKEW_S) throw new HttpError(401, "the user token has expired: mint a fresh one", "user_token_expired");
  if (c.iat > now + CLOCK_SKEW_S) throw malformed("user_token's iat is in the future");
  if (c.exp <= c.iat || c.exp > now + MAX_TOKEN_LIFETIME_S + CLOCK_SKEW_S)
    throw malformed(`user_token's exp must be after its iat and at most ${MAX_TOKEN_LIFETIME_S} s ahead`);
  return { userId: c.sub, name: c.name, email: c.email };
}

/**
 * The visitor id of a verified user: `u_` and 16 bytes of SHA-256 over the identity and the user
 * id, so one user is one thread per identity, and two identities' users never share one.
 */
export async function userVisitorId(identity: string, userId: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", utf8(`web-user\0${identity}\0${userId}`)));
  return `u_${base64url(digest.slice(0, 16))}`;
}

export const verificationRequired = () =>
  new HttpError(401, "this chat is for signed-in users only: the site must open the session with a user proof", "verification_required");
