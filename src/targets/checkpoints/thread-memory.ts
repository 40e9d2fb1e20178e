/**
 * The `kv` checkpoint provider's storage: agent memory kept in the ThreadObject's own SQLite
 * (strongly consistent, single writer per thread), with an idle TTL.
 *
 * Plain functions over a `{storage, threadId}` handle, so a turn running inside the object uses
 * them without an RPC hop, and nothing here knows the object's class. Expiry is native: every
 * write stores `expires_at = now + ttl` and reads treat a passed `expires_at` as gone. The object
 * owns the rest: its versioned migration creates the tables (`MEMORY_STEPS`), its one alarm
 * purges expired memory (`purgeExpiredCheckpoint`) and is armed no later than `checkpointAlarmDue`.
 * Nothing here sets the alarm: a writer re-arms through the object after writing.
 */
import type { MigrationStep } from "../../platform/persistence/object-sql";
import { type CheckpointMessage, idleExpiry, parseStoredMessage } from "../model/agent-memory";

/** One thread's memory inside its object's storage. */
export interface ThreadMemory {
  storage: DurableObjectStorage;
  threadId: string;
}

/**
 * The memory tables' migration steps, prefixed `checkpoint` to stay clear of the bridge's. Step 1 is
 * `IF NOT EXISTS`: an object whose tables were made unversioned, on first use, has exactly these
 * definitions and keeps them and their rows. The object's schema versions them (src/conversations/thread/store.ts).
 */
export const MEMORY_STEPS: readonly MigrationStep[] = [
  [
    "CREATE TABLE IF NOT EXISTS checkpoint_threads (thread_id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL, expires_at INTEGER)",
    "CREATE TABLE IF NOT EXISTS checkpoint_messages (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, message TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS checkpoint_messages_thread ON checkpoint_messages(thread_id, seq)",
  ],
];

function forget(storage: DurableObjectStorage, threadId: string): void {
  storage.sql.exec("DELETE FROM checkpoint_messages WHERE thread_id = ?", threadId);
  storage.sql.exec("DELETE FROM checkpoint_threads WHERE thread_id = ?", threadId);
}

function isExpired({ storage, threadId }: ThreadMemory, nowMs: number): boolean {
  const rows = storage.sql.exec<{ expires_at: number | null }>("SELECT expires_at FROM checkpoint_threads WHERE thread_id = ?", threadId).toArray();
  const at = rows[0]?.expires_at;
  return at !== undefined && at !== null && at <= nowMs;
}

/** The thread's memory oldest first; an expired thread reads as empty and is reclaimed now. */
export function readCheckpoint(mem: ThreadMemory, nowMs: number): CheckpointMessage[] {
  const { storage, threadId } = mem;
  if (isExpired(mem, nowMs)) {
    storage.transactionSync(() => forget(storage, threadId));
    return [];
  }
  return storage.sql
    .exec<{ message: string }>("SELECT message FROM checkpoint_messages WHERE thread_id = ? ORDER BY seq", threadId)
    .toArray()
    .map((r) => parseStoredMessage(r.message));
}

/**
 * Appends messages and refreshes the idle TTL, in one transaction. Memory that already expired is
 * dropped first, so a late writer never resurrects a forgotten conversation. The caller re-arms
 * the object's alarm afterwards (the new expiry may be its earliest work).
 */
export function appendCheckpoint(mem: ThreadMemory, messages: CheckpointMessage[], opts: { nowMs: number; ttlMinutes: number | null }): void {
  const { storage, threadId } = mem;
  const expiresAt = idleExpiry(opts.nowMs, opts.ttlMinutes);
  storage.transactionSync(() => {
    if (isExpired(mem, opts.nowMs)) forget(storage, threadId);
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
}

/** Forgets the thread's memory at once (thread forget, person erase). */
export function deleteCheckpoint({ storage, threadId }: ThreadMemory): void {
  storage.transactionSync(() => forget(storage, threadId));
}

/**
 * For the object's alarm, on every firing: reclaims every checkpoint whose idle TTL has passed.
 * Idempotent. Returns how many threads it purged.
 */
export function purgeExpiredCheckpoint(storage: DurableObjectStorage, nowMs: number): number {
  const expired = storage.sql
    .exec<{ thread_id: string }>("SELECT thread_id FROM checkpoint_threads WHERE expires_at IS NOT NULL AND expires_at <= ?", nowMs)
    .toArray();
  if (expired.length) storage.transactionSync(() => expired.forEach((r) => forget(storage, r.thread_id)));
  return expired.length;
}

/**
 * For the object's alarm, when it re-arms: the earliest memory expiry (epoch ms; null when none
 * expires). A TTL refreshed by a later write moves this later, so an alarm that fires early simply
 * re-arms.
 */
export function checkpointAlarmDue(storage: DurableObjectStorage): number | null {
  const rows = storage.sql.exec<{ due: number | null }>("SELECT MIN(expires_at) AS due FROM checkpoint_threads WHERE expires_at IS NOT NULL").toArray();
  return rows[0]?.due ?? null;
}
