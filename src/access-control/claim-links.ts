/**
 * Claim links (docs/login.md): a one-time `clm-` token that carries a key to another
 * device. Creating a link stores the key's policy and the SHA-256 of the token, nothing else; the
 * key is minted only when the token is claimed, and the raw key is shown once there.
 *
 * The claim is one D1 batch (one transaction): consume the link (a conditional UPDATE only one
 * claim can win), mint the key from the consumed row, write the key's first version, delete the
 * row. Two concurrent claims of one token cannot both mint, and a used link leaves nothing behind.
 */
import { z } from "zod";
import { d1, first, run } from "../platform/persistence/d1";
import { jsonColumn } from "../platform/persistence/stored-json";
import { constantTimeEqual, randomFingerprint, randomToken, sha256Hex } from "./crypto";
import { mintSnapshot } from "./key-store";

export const CLAIM_TOKEN_PREFIX = "clm-";
export const DEFAULT_CLAIM_TTL_SECONDS = 600;
export const MAX_CLAIM_TTL_SECONDS = 3600;

/** A fresh claim token: `clm-` + 32 CSPRNG bytes as unpadded base64url (43 characters). */
export function newClaimToken(): string {
  return `${CLAIM_TOKEN_PREFIX}${randomToken()}`;
}

/**
 * The throttle row of a client's claim attempts (src/access-control/throttle.ts, keyed per client like
 * bootstrap). Prefixed so bad claim tokens and bad bootstrap tokens back off independently: a
 * client guessing claim tokens does not lock a deployment's bootstrap, nor the reverse.
 */
export function claimThrottleKey(clientIp: string): string {
  return `claim:${clientIp}`;
}

/** The key a link carries: minted at claim time, owned by the link's creator. */
export interface ClaimLinkPolicy {
  user_id: string;
  description: string;
  scopes: string[];
  condition: string | null;
  role: string | null;
  owner_user_id: string;
}

/**
 * Stores a link whose token hashes to `tokenHash`, open until `nowMs + ttlSeconds`. In one
 * statement, so the check and the write cannot interleave with another creation: refused (null)
 * when `policy.user_id` names an existing key, is reserved by another open link, or is retired (a
 * revoked key held it: a link never issues such an id again, not even an admin's; an admin
 * re-issues one with the mint door).
 */
export async function createClaimLink(
  db: D1Database,
  policy: ClaimLinkPolicy,
  tokenHash: string,
  nowMs: number,
  ttlSeconds: number,
): Promise<{ expires_at: string } | null> {
  const expiresAt = nowMs + ttlSeconds * 1000;
  const res = await run(
    d1(db)`INSERT INTO claim_links (token_hash, user_id, description, scopes, condition, role, owner_user_id, created_at, expires_at)
       SELECT ${tokenHash}, ${policy.user_id}, ${policy.description}, ${JSON.stringify(policy.scopes)}, ${policy.condition}, ${policy.role},
         ${policy.owner_user_id}, ${new Date(nowMs).toISOString()}, ${expiresAt}
       WHERE NOT EXISTS (SELECT 1 FROM api_keys WHERE user_id = ${policy.user_id})
         AND NOT EXISTS (SELECT 1 FROM claim_links WHERE user_id = ${policy.user_id} AND expires_at > ${nowMs})
         AND NOT EXISTS (SELECT 1 FROM user_id_tombstones WHERE user_id = ${policy.user_id})`,
  );
  return res.changes > 0 ? { expires_at: new Date(expiresAt).toISOString() } : null;
}

const LinkRow = z.object({
  token_hash: z.string(),
  user_id: z.string(),
  description: z.string(),
  scopes: jsonColumn(z.array(z.string())),
  condition: z.string().nullable(),
  role: z.string().nullable(),
  owner_user_id: z.string(),
  expires_at: z.number(),
});

/** What a claim gave: the key (shown once), or a refusal that does not say why. */
export type ClaimOutcome = { ok: true; api_key: string; user_id: string; key_fingerprint: string } | { ok: false };

/**
 * Exchanges `token` for the key its link carries, at most once. Refused alike (`{ok: false}`) when
 * the token is unknown, malformed, expired or used, when another claim of it won, when the
 * creator was revoked, disabled or made an owned key since (or the creator's user_id now names a
 * later lineage than the one that made the link), when its `user_id` was minted by other means
 * meanwhile, or was retired (a key minted under it was revoked since). Those last refusals burn
 * the link: it could never succeed.
 */
export async function claimLink(db: D1Database, token: string, nowMs: number): Promise<ClaimOutcome> {
  const refused = { ok: false } as const;
  const hash = await sha256Hex(token);
  const link = await first(
    LinkRow,
    d1(db)`SELECT token_hash, user_id, description, scopes, condition, role, owner_user_id, expires_at FROM claim_links WHERE token_hash = ${hash}`,
  );
  // The indexed lookup finds the row; the hash is compared again in constant time (as for keys).
  if (!link || !token.startsWith(CLAIM_TOKEN_PREFIX)) return refused;
  if (!constantTimeEqual(link.token_hash, hash) || link.expires_at <= nowMs) return refused;

  const apiKey = `sk-${randomToken()}`;
  const fingerprint = randomFingerprint();
  const now = new Date(nowMs).toISOString();
  const keyHash = await sha256Hex(apiKey);
  const q = d1(db);
  try {
    // Batched raw (not through the kit's `batch`): the key's snapshot comes prepared from the key
    // store, and the UNIQUE check below reads D1's own error.
    const [consumed, minted] = await db.batch([
      // Only one claim can set the fingerprint; the statements below act only for the winner.
      q`UPDATE claim_links SET claim_fingerprint = ${fingerprint} WHERE token_hash = ${hash} AND claim_fingerprint IS NULL AND expires_at > ${nowMs}`.prepared(),
      // The key is minted from the consumed row itself, and only while its creator is a live,
      // enabled, unowned key (an owned key cannot own keys) of the lineage that made the link,
      // and while the user_id is not retired (src/access-control/identity.ts).
      q`INSERT INTO api_keys (user_id, key_hash, description, scopes, condition, owner_user_id, role, disabled, key_fingerprint, created_at, updated_at)
           SELECT l.user_id, ${keyHash}, l.description, l.scopes, l.condition, l.owner_user_id, l.role, 0, l.claim_fingerprint, ${now}, ${now}
           FROM claim_links l JOIN api_keys o ON o.user_id = l.owner_user_id AND o.disabled = 0 AND o.owner_user_id IS NULL AND o.created_at <= l.created_at
           WHERE l.token_hash = ${hash} AND l.claim_fingerprint = ${fingerprint}
             AND NOT EXISTS (SELECT 1 FROM user_id_tombstones t WHERE t.user_id = l.user_id)`.prepared(),
      // Version 1 of the key's policy history, for the row this claim inserted only.
      mintSnapshot(
        db,
        {
          user_id: link.user_id,
          key_hash: keyHash,
          description: link.description,
          scopes: link.scopes,
          condition: link.condition,
          owner_user_id: link.owner_user_id,
          role: link.role,
          key_fingerprint: fingerprint,
          now,
        },
        link.owner_user_id,
      ),
      q`DELETE FROM claim_links WHERE token_hash = ${hash} AND claim_fingerprint = ${fingerprint}`.prepared(),
    ]);
    if ((consumed.meta.changes ?? 0) === 0 || (minted.meta.changes ?? 0) === 0) return refused;
  } catch (err) {
    // The user_id was minted by other means after the link was made: the batch rolled back, and
    // the link can never succeed, so it is burnt.
    if (!String(err).includes("UNIQUE")) throw err;
    await run(q`DELETE FROM claim_links WHERE token_hash = ${hash}`);
    return refused;
  }
  return { ok: true, api_key: apiKey, user_id: link.user_id, key_fingerprint: fingerprint };
}

/** Deletes the links that expired (run by the Worker's cron; reads treat them as gone already). */
export async function pruneClaimLinks(db: D1Database, nowMs: number): Promise<number> {
  return (await run(d1(db)`DELETE FROM claim_links WHERE expires_at <= ${nowMs}`)).changes;
}
