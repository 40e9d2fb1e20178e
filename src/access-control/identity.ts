/**
 * Identities (docs/access-control.md, "Identities"): a `user_id` names one holder's lineage, and
 * what is keyed by it stays with the lineage that created it.
 *
 * - **A lineage** begins when a key is minted under a user_id that no live key holds, and lasts
 *   while that key lives (edits, rollbacks and re-mints of the raw key keep it). Its start is the
 *   key row's `created_at`, which nothing but a new mint sets. Revoking the key ends the lineage
 *   and tombstones the user_id (`user_id_tombstones`): only an admin may issue it again, and the
 *   new key starts a new lineage, one `generation` further.
 * - **Data keyed by user_id** (connections, the identity's notification feed, interactions
 *   addressed to it, tool runs, traces, hooks, schedules and trigger links it made, its policy
 *   history) belongs to the lineage that held the id when the data was created or addressed. A
 *   holder's "own" views compare the stored user_id AND the stored time against its lineage start
 *   (`heldBy`), so a re-issued id, or a never-used one, inherits nothing from before it.
 * - **Ids composed from a user_id** (an api thread `bridge:{route}:{P}/{U}` and with it the
 *   route's person for that address, the caller's rate bucket) use `threadPrincipal`, which
 *   carries the generation once the id was re-issued, so a new holder starts new threads.
 *
 * The lineage start travels with the key record the request already read (one D1 statement), so
 * none of this adds a read.
 */
import { d1, exists } from "../platform/persistence/d1";
/** Who a caller is, as its "own" data is matched: its user_id and when its lineage began. */
export interface Holder {
  user_id: string;
  /** ISO-8601 UTC: the key row's `created_at` (its lineage's first mint). */
  since: string;
}

/** The holder of `key` (`since` empty for a principal that has no key: it holds nothing). */
export function holderOf(key: { user_id: string; created_at: string }): Holder {
  return { user_id: key.user_id, since: key.created_at };
}

/** `since` as epoch milliseconds, for stores that keep times as numbers (NaN: holds nothing). */
export function sinceMs(h: Holder): number {
  return h.since ? Date.parse(h.since) : Number.NaN;
}

/**
 * Does `h` hold data stored under `userId` at `at` (ISO-8601 or epoch ms)? Only when the user_id
 * is its own and the data is not older than its lineage. Pure.
 */
export function heldBy(h: Holder, userId: string | null | undefined, at: string | number): boolean {
  if (userId !== h.user_id) return false;
  const atMs = typeof at === "number" ? at : Date.parse(at);
  return Number.isFinite(atMs) && atMs >= sinceMs(h);
}

/**
 * The caller as the ids composed from it name it (api thread ids, rate buckets): the user_id for
 * its first lineage, and `user_id!generation` after the id was re-issued. The user_id grammar has
 * no `!`, so the form can never be another key's user_id.
 */
export function threadPrincipal(key: { user_id: string; generation: number }): string {
  return key.generation > 0 ? `${key.user_id}!${key.generation}` : key.user_id;
}

/** The 409 body's rule for a tombstoned user_id (it names the rule, never the value). */
export const RETIRED_USER_ID =
  "user_id belonged to a revoked key: a revoked user_id is retired, and only an admin may issue it again (docs/access-control.md, Identities)";

/** Is `userId` tombstoned? Read only to word a refusal that the write itself decided. */
export async function isRetired(db: D1Database, userId: string): Promise<boolean> {
  return exists(d1(db)`SELECT 1 AS one FROM user_id_tombstones WHERE user_id = ${userId}`);
}

/**
 * Was `fingerprint` a fingerprint of `h`'s own key, in its lineage? Its policy history records
 * every fingerprint the key had (its mint, and each re-mint). For data stamped with the key's
 * fingerprint rather than a time of its own making: a run a hook or schedule of an earlier holder
 * submits after the user_id was issued again is stamped now, but with that holder's fingerprint.
 */
export async function fingerprintInLineage(db: D1Database, h: Holder, fingerprint: string): Promise<boolean> {
  return exists(
    d1(
      db,
    )`SELECT 1 AS one FROM api_key_versions WHERE user_id = ${h.user_id} AND key_fingerprint = ${fingerprint} AND created_at >= ${h.since || "\uffff"} LIMIT 1`,
  );
}
