/**
 * Started authorizations (D1 `connector_oauth_starts`): one row per `state`, keyed by the state's
 * SHA-256, holding what completion needs: the purpose (a new connection, a reconnect, a widening of
 * sub-services), the provider and sub-services asked for, the redirect URI the authorization URL
 * carried (the token request must repeat it), and the PKCE verifier, sealed like the tokens.
 *
 * A row is single use: completion takes it with one `DELETE … RETURNING`, so a replayed state finds
 * nothing. Rows expire after `CONNECTORS_OAUTH_START_TTL_SECONDS`; expired ones are pruned at each
 * start and by the cron pass. An initiator keeps at most MAX_OPEN_STARTS open (the oldest go first),
 * so repeated starts cannot grow the table without bound.
 */
import { z } from "zod";
import { sinceMs } from "../access-control/identity";
import { all, batch, d1, first, run, trusted } from "../platform/persistence/d1";
import type { KeyRing } from "./rpc";
import { type Sealed, parseSealed, seal, unseal } from "./sealing";

export type StartPurpose = "connect" | "reconnect" | "widen";

/** Open authorizations one initiator may hold; a start beyond it drops that initiator's oldest. */
export const MAX_OPEN_STARTS = 20;

export interface StartRow {
  state_hash: string;
  purpose: StartPurpose;
  /** The connection a reconnect or widening is for; null for a new connection. */
  connection_id: string | null;
  initiator_user_id: string;
  provider_id: string;
  sub_services: string[];
  redirect_uri: string;
  sealed_verifier: Sealed;
  created_at: number;
  expires_at: number;
}

/** The additional authenticated data of a start's sealed verifier. */
export function verifierAad(stateHash: string): string {
  return `connector-start:${stateHash}`;
}

/** Seals `verifier` for the start keyed by `stateHash`. */
export function sealVerifier(ring: KeyRing, stateHash: string, verifier: string): Promise<Sealed> {
  return seal(ring, verifier, verifierAad(stateHash));
}

/** Opens a start's verifier; null when no key of the ring opens it. */
export function openVerifier(ring: KeyRing, row: StartRow): Promise<string | null> {
  return unseal(ring, row.sealed_verifier, verifierAad(row.state_hash));
}

/** Records a start, pruning expired rows and the initiator's oldest beyond MAX_OPEN_STARTS, in one batch. */
export async function recordStart(db: D1Database, row: StartRow, nowMs: number): Promise<void> {
  const q = d1(db);
  await batch(db, [
    q`DELETE FROM connector_oauth_starts WHERE expires_at <= ${nowMs}`,
    q`INSERT INTO connector_oauth_starts (state_hash, purpose, connection_id, initiator_user_id, provider_id, sub_services, redirect_uri, sealed_verifier, created_at, expires_at)
      VALUES (${row.state_hash}, ${row.purpose}, ${row.connection_id}, ${row.initiator_user_id}, ${row.provider_id}, ${JSON.stringify(row.sub_services)},
              ${row.redirect_uri}, ${JSON.stringify(row.sealed_verifier)}, ${row.created_at}, ${row.expires_at})`,
    q`DELETE FROM connector_oauth_starts WHERE initiator_user_id = ${row.initiator_user_id} AND state_hash NOT IN
        (SELECT state_hash FROM connector_oauth_starts WHERE initiator_user_id = ${row.initiator_user_id} ORDER BY created_at DESC, rowid DESC LIMIT ${MAX_OPEN_STARTS})`,
  ]);
}

/** A stored row as D1 gives it; `toRow` reads the purpose, the lists and the sealed verifier, and drops a row it cannot. */
const Raw = z.object({
  state_hash: z.string(),
  purpose: z.string(),
  connection_id: z.string().nullable(),
  initiator_user_id: z.string(),
  provider_id: z.string(),
  sub_services: z.string(),
  redirect_uri: z.string(),
  sealed_verifier: z.string(),
  created_at: z.number(),
  expires_at: z.number(),
});
type Raw = z.infer<typeof Raw>;

const COLUMNS = trusted(
  "state_hash, purpose, connection_id, initiator_user_id, provider_id, sub_services, redirect_uri, sealed_verifier, created_at, expires_at",
);

function toRow(r: Raw): StartRow | null {
  const sealed = parseSealed(r.sealed_verifier);
  let subs: unknown;
  try {
    subs = JSON.parse(r.sub_services);
  } catch {
    return null;
  }
  if (!sealed || !Array.isArray(subs) || !subs.every((s) => typeof s === "string")) return null;
  if (r.purpose !== "connect" && r.purpose !== "reconnect" && r.purpose !== "widen") return null;
  return {
    ...r,
    purpose: r.purpose,
    sub_services: subs as string[],
    sealed_verifier: sealed,
    created_at: Number(r.created_at),
    expires_at: Number(r.expires_at),
  };
}

/**
 * Takes (deletes and answers) the start of `stateHash` if `caller` initiated it (in its own key's
 * lineage: src/access-control/identity.ts) or is an admin and it has not expired. Taken even when expired,
 * so a replay of an expired state finds nothing too.
 */
export async function takeStart(
  db: D1Database,
  stateHash: string,
  caller: { user_id: string; admin: boolean; since: string },
  nowMs: number,
): Promise<StartRow | null> {
  const since = sinceMs(caller);
  const from = Number.isFinite(since) ? since : Number.MAX_SAFE_INTEGER;
  const r = await first(
    Raw,
    d1(db)`DELETE FROM connector_oauth_starts WHERE state_hash = ${stateHash}
      AND ((initiator_user_id = ${caller.user_id} AND created_at >= ${from}) OR ${caller.admin ? 1 : 0} = 1) RETURNING ${COLUMNS}`,
  );
  if (!r) return null;
  const row = toRow(r);
  return row && row.expires_at > nowMs ? row : null;
}

/** Removes expired starts (the cron pass); answers how many. */
export async function pruneStarts(db: D1Database, nowMs: number): Promise<number> {
  const res = await run(d1(db)`DELETE FROM connector_oauth_starts WHERE expires_at <= ${nowMs}`);
  return res.changes ?? 0;
}

/** Re-seals every open start's verifier under the ring's current key; answers how many were re-sealed and how many no key opens (those are dropped: they could never complete). */
export async function resealStarts(db: D1Database, ring: KeyRing, nowMs: number): Promise<{ resealed: number; dropped: number }> {
  const results = await all(Raw, d1(db)`SELECT ${COLUMNS} FROM connector_oauth_starts WHERE expires_at > ${nowMs}`);
  let resealed = 0;
  let dropped = 0;
  for (const raw of results) {
    const row = toRow(raw);
    if (row && row.sealed_verifier.kid === ring.current.id) continue;
    const verifier = row ? await openVerifier(ring, row) : null;
    if (!row || verifier === null) {
      await run(d1(db)`DELETE FROM connector_oauth_starts WHERE state_hash = ${raw.state_hash}`);
      dropped += 1;
      continue;
    }
    const sealed = await sealVerifier(ring, row.state_hash, verifier);
    await run(d1(db)`UPDATE connector_oauth_starts SET sealed_verifier = ${JSON.stringify(sealed)} WHERE state_hash = ${row.state_hash}`);
    resealed += 1;
  }
  return { resealed, dropped };
}
