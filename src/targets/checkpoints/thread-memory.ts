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
import { type MigrationStep, objectSql } from "../../platform/persistence/object-sql";

/** The store's name in its statements' errors. */
const STORE = "thread-memory";
import { type CheckpointMessage, idleExpiry, parseStoredMessage } from "../../shared/agent-memory";

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
  const q = objectSql(storage.sql, STORE);
  q.run`DELETE FROM checkpoint_messages WHERE thread_id = ${threadId}`;
  q.run`DELETE FROM checkpoint_threads WHERE thread_id = ${threadId}`;
}

function isExpired({ storage, threadId }: ThreadMemory, nowMs: number): boolean {
  const at = objectSql(storage.sql, STORE).one<{ expires_at: number | null }>`SELECT expires_at FROM checkpoint_threads WHERE thread_id = ${threadId}`
    ?.expires_at;
  return at !== undefined && at !== null && at <= nowMs;
}

/** The thread's memory oldest first; an expired thread reads as empty and is reclaimed now. */
export function readCheckpoint(mem: ThreadMemory, nowMs: number): CheckpointMessage[] {
  const { storage, threadId } = mem;
  if (isExpired(mem, nowMs)) {
    storage.transactionSync(() => forget(storage, threadId));
    return [];
  }
  return objectSql(storage.sql, STORE)<{ message: string }>`SELECT message FROM checkpoint_messages WHERE thread_id = ${threadId} ORDER BY seq`.map((r) =>
    parseStoredMessage(r.message),
  );
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
    const q = objectSql(storage.sql, STORE);
    for (const m of messages) q.run`INSERT INTO checkpoint_messages (thread_id, message) VALUES (${threadId}, ${JSON.stringify(m)})`;
    q.run`INSERT INTO checkpoint_threads (thread_id, updated_at, expires_at) VALUES (${threadId}, ${opts.nowMs}, ${expiresAt})
      ON CONFLICT(thread_id) DO UPDATE SET updated_at = excluded.updated_at, expires_at = excluded.expires_at`;
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
  const expired = objectSql(storage.sql, STORE)<{ thread_id: string }>`
    SELECT thread_id FROM checkpoint_threads WHERE expires_at IS NOT NULL AND expires_at <= ${nowMs}`;
  if (expired.length) storage.transactionSync(() => expired.forEach((r) => forget(storage, r.thread_id)));
  return expired.length;
}

/**
 * For the object's alarm, when it re-arms: the earliest memory expiry (epoch ms; null when none
 * expires). A TTL refreshed by a later write moves this later, so an alarm that fires early simply
 * re-arms.
 */
export function checkpointAlarmDue(storage: DurableObjectStorage): number | null {
  return (
    objectSql(storage.sql, STORE).one<{ due: number | null }>`SELECT MIN(expires_at) AS due FROM checkpoint_threads WHERE expires_at IS NOT NULL`?.due ?? null
  );
}
