/**
 * The `kv` checkpoint provider's storage: agent memory kept in the ThreadObject's own SQLite
 * (strongly consistent, single writer per thread), with an idle TTL.
 *
 * Plain functions over DurableObjectStorage so the ThreadObject stays thin and a turn running
 * inside the object can use them without an RPC hop. Expiry is native: every write stores
 * `expires_at = now + ttl`, reads treat a passed `expires_at` as gone, and the object's single
 * alarm purges expired rows. The alarm belongs to the ThreadObject; see purgeExpiredCheckpoint
 * and checkpointAlarmDue for the two calls its `alarm()` must make.
 */
import { type CheckpointMessage, idleExpiry, parseStoredMessage } from "../src/targets/checkpoints/types";

const prepared = new WeakSet<DurableObjectStorage>();

/** Idempotent schema set-up; every table is prefixed `checkpoint` to stay clear of the bridge's. */
function ensureSchema(storage: DurableObjectStorage): void {
  if (prepared.has(storage)) return;
  storage.sql.exec(
    "CREATE TABLE IF NOT EXISTS checkpoint_threads (thread_id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL, expires_at INTEGER)",
  );
  storage.sql.exec(
    "CREATE TABLE IF NOT EXISTS checkpoint_messages (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, message TEXT NOT NULL)",
  );
  storage.sql.exec("CREATE INDEX IF NOT EXISTS checkpoint_messages_thread ON checkpoint_messages(thread_id, seq)");
  prepared.add(storage);
}

function forget(storage: DurableObjectStorage, threadId: string): void {
  storage.sql.exec("DELETE FROM checkpoint_messages WHERE thread_id = ?", threadId);
  storage.sql.exec("DELETE FROM checkpoint_threads WHERE thread_id = ?", threadId);
}

function isExpired(storage: DurableObjectStorage, threadId: string, nowMs: number): boolean {
  const rows = storage.sql
    .exec<{ expires_at: number | null }>("SELECT expires_at FROM checkpoint_threads WHERE thread_id = ?", threadId)
    .toArray();
  const at = rows[0]?.expires_at;
  return at !== undefined && at !== null && at <= nowMs;
}

/** The thread's memory oldest first; an expired thread reads as empty and is reclaimed now. */
export function readCheckpoint(storage: DurableObjectStorage, threadId: string, nowMs: number): CheckpointMessage[] {
  ensureSchema(storage);
  if (isExpired(storage, threadId, nowMs)) {
    storage.transactionSync(() => forget(storage, threadId));
    return [];
  }
  return storage.sql
    .exec<{ message: string }>("SELECT message FROM checkpoint_messages WHERE thread_id = ? ORDER BY seq", threadId)
    .toArray()
    .map((r) => parseStoredMessage(r.message));
}

/**
 * Appends messages and refreshes the idle TTL. Memory that already expired is dropped first,
 * so a late writer never resurrects a forgotten conversation. Arms the alarm at the new
 * expiry only when no earlier alarm is set, so the bridge's own timers are never delayed.
 */
export async function appendCheckpoint(
  storage: DurableObjectStorage,
  threadId: string,
  messages: CheckpointMessage[],
  opts: { nowMs: number; ttlMinutes: number | null },
): Promise<void> {
  ensureSchema(storage);
  const expiresAt = idleExpiry(opts.nowMs, opts.ttlMinutes);
  storage.transactionSync(() => {
    if (isExpired(storage, threadId, opts.nowMs)) forget(storage, threadId);
    for (const m of messages) {
      storage.sql.exec("INSERT INTO checkpoint_messages (thread_id, message) VALUES (?, ?)", threadId, JSON.stringify(m));
    }
    storage.sql.exec(
      `INSERT INTO checkpoint_threads (thread_id, updated_at, expires_at) VALUES (?, ?, ?)
       ON CONFLICT(thread_id) DO UPDATE SET updated_at = excluded.updated_at, expires_at = excluded.expires_at`,
      threadId,
      opts.nowMs,
      expiresAt,
    );
  });
  if (expiresAt !== null) {
    const armed = await storage.getAlarm();
    if (armed === null || armed > expiresAt) await storage.setAlarm(expiresAt);
  }
}

/** Forgets the thread's memory at once (thread forget, person erase). */
export function deleteCheckpoint(storage: DurableObjectStorage, threadId: string): void {
  ensureSchema(storage);
  storage.transactionSync(() => forget(storage, threadId));
}

/**
 * Alarm hook 1 of 2 — the ThreadObject's `alarm()` must call this on every firing: reclaims
 * every checkpoint whose idle TTL has passed. Idempotent. Returns how many threads it purged.
 */
export function purgeExpiredCheckpoint(storage: DurableObjectStorage, nowMs: number): number {
  ensureSchema(storage);
  const expired = storage.sql
    .exec<{ thread_id: string }>(
      "SELECT thread_id FROM checkpoint_threads WHERE expires_at IS NOT NULL AND expires_at <= ?",
      nowMs,
    )
    .toArray();
  if (expired.length) storage.transactionSync(() => expired.forEach((r) => forget(storage, r.thread_id)));
  return expired.length;
}

/**
 * Alarm hook 2 of 2 — when the ThreadObject re-arms its single alarm it must take the earliest
 * of its own due work and this instant (epoch ms; null when no checkpoint expires). A TTL
 * refreshed by a later write moves this later, so an alarm that fires early simply re-arms.
 */
export function checkpointAlarmDue(storage: DurableObjectStorage): number | null {
  ensureSchema(storage);
  const rows = storage.sql
    .exec<{ due: number | null }>("SELECT MIN(expires_at) AS due FROM checkpoint_threads WHERE expires_at IS NOT NULL")
    .toArray();
  return rows[0]?.due ?? null;
}
