/**
 * Revoking a key: `DELETE /api/auth/api-keys/{user_id}` and logout (docs/login.md), where the
 * calling key revokes itself. Owned keys die with their owner (a later re-mint of the same user_id
 * must not revive them), and each revoked key's policy history gets its `revoke` version, in one D1
 * batch.
 */
import { snapshotKey, snapshotOwnedKeys } from "./key-versions";

/** Revokes key `userId` and every key it owns; `actor` is recorded in the history rows. */
export async function revokeKey(db: D1Database, userId: string, actor: string, now: string): Promise<void> {
  await db.batch([
    snapshotOwnedKeys(db, userId, "revoke", actor, now),
    snapshotKey(db, userId, "revoke", actor, now),
    db.prepare("DELETE FROM api_keys WHERE owner_user_id = ?").bind(userId),
    db.prepare("DELETE FROM api_keys WHERE user_id = ?").bind(userId),
  ]);
}
