/**
 * Revoking a key: `DELETE /api/auth/api-keys/{user_id}` and logout (docs/login.md), where the
 * calling key revokes itself. In one D1 batch:
 * - each revoked key's policy history gets its `revoke` version;
 * - its user_id is tombstoned (`user_id_tombstones`, src/access-control/identity.ts): only an admin may mint
 *   it again, and that key starts a new lineage that inherits nothing keyed by the id;
 * - the open claim links it made are dropped (a link minted later would otherwise be owned by
 *   whoever holds the user_id then);
 * - owned keys die with their owner (a later re-mint of the same user_id must not revive them),
 *   and are tombstoned alike.
 */
import { d1 } from "../platform/persistence/d1";
import { snapshotKey, snapshotOwnedKeys } from "./key-versions";

/** Revokes key `userId` and every key it owns; `actor` is recorded in the history and tombstone rows. */
export async function revokeKey(db: D1Database, userId: string, actor: string, now: string): Promise<void> {
  const q = d1(db);
  await db.batch([
    snapshotOwnedKeys(db, userId, "revoke", actor, now),
    snapshotKey(db, userId, "revoke", actor, now),
    q`INSERT INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
         SELECT user_id, generation, ${now}, ${actor} FROM api_keys WHERE user_id = ${userId} OR owner_user_id = ${userId}
         ON CONFLICT (user_id) DO UPDATE SET generation = excluded.generation, revoked_at = excluded.revoked_at, revoked_by = excluded.revoked_by`.prepared(),
    q`DELETE FROM claim_links WHERE owner_user_id = ${userId}`.prepared(),
    q`DELETE FROM api_keys WHERE owner_user_id = ${userId}`.prepared(),
    q`DELETE FROM api_keys WHERE user_id = ${userId}`.prepared(),
  ]);
}
