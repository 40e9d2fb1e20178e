/**
 * Entry gates (docs/channels.md, "Web sites and entry gates"). A gated web identity mints a
 * session only for a navigation that carries a live entry code; the switch is the site's
 * `gate_enabled` (src/web-chat/sites.ts) and the codes live in `web_gate_codes` (migration
 * 0025). A code is a capability token (`entry-` + 32 random bytes, base64url) shown once when
 * created; D1 keeps only its SHA-256, and a presented code is found by its hash, so a stored row
 * is useless to whoever reads it.
 *
 * Guessing is throttled per (identity, client bucket) with the project's rate-bucket objects
 * (durable-objects/address-bucket.ts): every check with a code spends a token before the code
 * is looked at, so a right code and a wrong one cost the same and the throttle says nothing.
 */
import { z } from "zod";
import { base64url } from "../access-control/crypto";
import { capabilityTokenKind } from "../access-control/capability-tokens";
import { takeToken } from "../conversations/door/stubs";
import type { Env } from "../platform/env";
import { all, d1, first, run } from "../platform/persistence/d1";
import { readSite } from "./sites";

/** An entry code (src/access-control/capability-tokens.ts); a misshapen one is refused without a lookup. */
const ENTRY_CODE = capabilityTokenKind("entry-");

/** How many live (unrevoked, unexpired) codes one identity may hold. */
export const MAX_LIVE_CODES = 100;

/** A code's id: not secret, it names the code in the listing and the revoke door. */
export const GateCodeId = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, { message: "must be 1-64 letters, digits, '_' or '-'" });

/** The body of `POST /api/channels/web/gates/{identity}/codes`; `expires_at` must also be in the future (checked by the door). */
export const GateCodeBody = z
  .object({
    label: z.string().min(1).max(100),
    expires_at: z.iso.datetime({ offset: true, message: "must be an ISO 8601 date-time (e.g. 2030-01-01T00:00:00Z)" }).optional(),
  })
  .strict();

const iso = z.string().describe("ISO-8601 UTC");

/** A code as the listing shows it: never the code, never its hash. */
export const GateCodeView = z
  .object({
    code_id: z.string(),
    label: z.string(),
    expires_at: iso.nullable(),
    revoked: z.boolean(),
    created_at: iso,
    created_by: z.string(),
  })
  .strict()
  .describe("WebGateCode");
export type GateCodeView = z.infer<typeof GateCodeView>;

/** The create answer: the code, shown this once. */
export const GateCodeCreated = z.object({ code_id: z.string(), code: z.string(), label: z.string(), expires_at: iso.nullable() }).strict();
export type GateCodeCreated = z.infer<typeof GateCodeCreated>;

const CodeRow = z.object({
  code_id: z.string(),
  label: z.string(),
  expires_at: z.string().nullable(),
  revoked_at: z.string().nullable(),
  created_at: z.string(),
  created_by: z.string(),
});

/** Every code of `identity` (revoked and expired ones too), oldest first. */
export async function listGateCodes(db: D1Database, identity: string): Promise<GateCodeView[]> {
  const rows = await all(
    CodeRow,
    d1(db)`SELECT code_id, label, expires_at, revoked_at, created_at, created_by FROM web_gate_codes WHERE identity = ${identity} ORDER BY created_at, code_id`,
  );
  return rows.map((r) => ({
    code_id: r.code_id,
    label: r.label,
    expires_at: r.expires_at,
    revoked: r.revoked_at !== null,
    created_at: r.created_at,
    created_by: r.created_by,
  }));
}

/**
 * Mints a code for `identity` and stores its hash; null when the identity already holds
 * MAX_LIVE_CODES live codes (counted in the insert itself, so concurrent creates cannot pass it).
 */
export async function createGateCode(
  db: D1Database,
  identity: string,
  label: string,
  expiresAt: string | null,
  nowIso: string,
  by: string,
): Promise<GateCodeCreated | null> {
  const code = ENTRY_CODE.mint();
  const hash = await ENTRY_CODE.hash(code);
  const codeId = `gc_${base64url(crypto.getRandomValues(new Uint8Array(12)))}`;
  const meta = await run(
    d1(db)`INSERT INTO web_gate_codes (code_id, identity, label, code_hash, expires_at, revoked_at, created_at, created_by)
      SELECT ${codeId}, ${identity}, ${label}, ${hash}, ${expiresAt}, NULL, ${nowIso}, ${by}
      WHERE (SELECT COUNT(*) FROM web_gate_codes WHERE identity = ${identity} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${nowIso})) < ${MAX_LIVE_CODES}`,
  );
  if (meta.changes === 0) return null;
  return { code_id: codeId, code, label, expires_at: expiresAt };
}

/** Revokes `identity`'s code `codeId` (a revoked one stays revoked, its time kept); false when it has no such code. */
export async function revokeGateCode(db: D1Database, identity: string, codeId: string, nowIso: string): Promise<boolean> {
  const meta = await run(d1(db)`UPDATE web_gate_codes SET revoked_at = COALESCE(revoked_at, ${nowIso}) WHERE identity = ${identity} AND code_id = ${codeId}`);
  return meta.changes > 0;
}

/** Whether `code` is a live code of `identity` at `nowIso`: stored for it, unrevoked, unexpired. */
async function isLiveCode(db: D1Database, identity: string, code: string, nowIso: string): Promise<boolean> {
  if (!ENTRY_CODE.isShaped(code)) return false;
  const hash = await ENTRY_CODE.hash(code);
  const row = await first(
    z.object({ one: z.number() }),
    d1(db)`SELECT 1 AS one FROM web_gate_codes
      WHERE code_hash = ${hash} AND identity = ${identity} AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ${nowIso})`,
  );
  return row !== null;
}

/** The gate's throttle: how many checks a client may make per window (the settings CHANNEL_WEB_GATE_*). */
export interface GateLimits {
  guesses: number;
  windowSeconds: number;
  /** The rate buckets' directory bound (`address_bucket_max_entries`), passed on to the bucket. */
  bucketMaxEntries: number;
}

/**
 * The capacity to give a rate bucket so that it allows at most `guesses` takes in one window.
 * A bucket of capacity C starts full and refills C tokens per hour, so within a window of W
 * seconds it allows fewer than C·(1 + W/3600) + 1 takes: the largest C keeping that at most
 * `guesses` (at least 1). With the defaults (10 per 300 s) it is 10.
 */
export function gateBucketCapacity(guesses: number, windowSeconds: number): number {
  const c = Math.ceil((guesses + 1) / (1 + windowSeconds / 3600)) - 1;
  return Math.max(1, c);
}

/**
 * Whether a navigation to `identity` may mint a session: always when the identity's gate is off;
 * when it is on, only with a live `code` and while the client (`clientBucket`, the caller's
 * network bucket) is under the throttle. Every check that presents a code spends one of the
 * client's guesses for this identity, whatever its outcome; a check without one spends nothing
 * (it guesses nothing) and is refused. The window is fixed (it starts at multiples of
 * `windowSeconds` since the epoch), each window with its own bucket.
 */
export async function admitEntry(env: Env, identity: string, code: string | null, clientBucket: string, nowMs: number, limits: GateLimits): Promise<boolean> {
  const site = await readSite(env.DB, identity);
  if (!site.gate_enabled) return true;
  if (code === null || code === "") return false;
  const window = Math.floor(nowMs / (limits.windowSeconds * 1000));
  const key = `web-gate:${identity}:${clientBucket}:${window}`;
  const [verdict, live] = await Promise.all([
    takeToken(env, { addressBucketMaxEntries: limits.bucketMaxEntries }, key, gateBucketCapacity(limits.guesses, limits.windowSeconds)),
    isLiveCode(env.DB, identity, code, new Date(nowMs).toISOString()),
  ]);
  return verdict.allowed && live;
}
