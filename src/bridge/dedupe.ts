/**
 * Inbound dedupe claims in D1 `inbound_dedupe` (decisions §6, §11): `(namespace, key)` → the
 * message that key admitted, for `inbound_dedupe_ttl_seconds`. Namespaces: `channel:<name>` for
 * provider message ids, `event:<route>` for event ids.
 *
 * A claim is written before the thread object's accept with a fresh message_id; a redelivery finds
 * it and re-offers the same message_id, and accept is idempotent on it, so a crash between claim
 * and accept loses nothing and no inbound runs twice. A refused admission releases its claim.
 */
export interface DedupeClaim {
  message_id: string;
  thread_id: string;
}

/** The live claim on `key`, if any. */
export async function liveClaim(db: D1Database, namespace: string, key: string, nowMs: number): Promise<DedupeClaim | null> {
  return db
    .prepare("SELECT message_id, thread_id FROM inbound_dedupe WHERE namespace = ? AND dedupe_key = ? AND expires_at > ?")
    .bind(namespace, key, nowMs)
    .first<DedupeClaim>();
}

/** Claims `key` for `mine` unless a live claim holds it (an expired one is replaced); answers the claim that holds. */
export async function claimKey(db: D1Database, namespace: string, key: string, mine: DedupeClaim, expiresAtMs: number, nowMs: number): Promise<DedupeClaim> {
  await db
    .prepare(
      `INSERT INTO inbound_dedupe (namespace, dedupe_key, message_id, thread_id, expires_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(namespace, dedupe_key) DO UPDATE SET message_id = excluded.message_id, thread_id = excluded.thread_id, expires_at = excluded.expires_at
       WHERE inbound_dedupe.expires_at <= ?`,
    )
    .bind(namespace, key, mine.message_id, mine.thread_id, expiresAtMs, nowMs)
    .run();
  return (await liveClaim(db, namespace, key, nowMs)) ?? mine;
}

/** Releases `key` if `messageId` still holds it (a refused admission must not burn the key). */
export async function releaseKey(db: D1Database, namespace: string, key: string, messageId: string): Promise<void> {
  await db.prepare("DELETE FROM inbound_dedupe WHERE namespace = ? AND dedupe_key = ? AND message_id = ?").bind(namespace, key, messageId).run();
}
