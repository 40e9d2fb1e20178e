/**
 * One notification feed as a SQLite ring (the storage part of the NotificationFeed object).
 *
 * Entries are JSON texts keyed by an increasing `seq`; an insert deletes every entry older than
 * the newest `cap` by one range delete on the primary key, so a feed never holds more than its
 * cap and a write costs the same at any volume. A read is one `ORDER BY seq DESC LIMIT` on the
 * primary key. The optional `expires_at` (meta) is an identity feed's idle expiry: reads treat an
 * expired feed as empty even before its alarm has deleted it.
 *
 * The tables are created on the first push, never by a read, so reading a feed that was never
 * written (or was deleted when idle) leaves the object empty.
 */
import { type ObjectSchema, migrateSchema, objectSql } from "../platform/persistence/object-sql";

/** The store's name in its statements' errors. */
const STORE = "notification-feed";

export function ringExists(sql: SqlStorage): boolean {
  return objectSql(sql, STORE).one`SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'entries'` !== null;
}

/**
 * The `notification-feed` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const FEED_RING_SCHEMA: ObjectSchema = {
  name: STORE,
  steps: [
    [
      "CREATE TABLE IF NOT EXISTS entries (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)",
      "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
  ],
};

/** Brings the `notification-feed` tables to their current version (idempotent). */
export function createRing(sql: SqlStorage): void {
  migrateSchema(sql, FEED_RING_SCHEMA);
}

/** Brings an existing ring to the current schema (when the object starts); answers whether there is one. A feed never written stays empty. */
export function upgradeRing(sql: SqlStorage): boolean {
  if (!ringExists(sql)) return false;
  migrateSchema(sql, FEED_RING_SCHEMA);
  return true;
}

/** Inserts `body` as the newest entry and drops everything older than the newest `cap`. */
export function insertTrimmed(sql: SqlStorage, body: string, cap: number): void {
  // An INTEGER PRIMARY KEY takes max(seq) + 1, and the newest entry is never deleted, so seq only grows.
  const q = objectSql(sql, STORE);
  const inserted = q.one<{ seq: number }>`INSERT INTO entries (body) VALUES (${body}) RETURNING seq`;
  if (!inserted) throw new Error("notification-feed: an insert returned no seq");
  q.run`DELETE FROM entries WHERE seq <= ${inserted.seq - cap}`;
}

/**
 * The newest `limit` entries, newest first, as one JSON array text; with `since`, only entries
 * whose notification was created at or after it (ISO-8601 strings compare as times).
 */
export function newestAsJsonArray(sql: SqlStorage, limit: number, since?: string): string {
  const rows =
    since === undefined
      ? objectSql(sql, STORE)<{ body: string }>`SELECT body FROM entries ORDER BY seq DESC LIMIT ${limit}`
      : objectSql(sql, STORE)<{ body: string }>`SELECT body FROM entries WHERE json_extract(body, '$.created_at') >= ${since} ORDER BY seq DESC LIMIT ${limit}`;
  return `[${rows.map((r) => r.body).join(",")}]`;
}

/** Empties the feed (an expired feed pushed to again before its alarm ran starts afresh). */
export function clearEntries(sql: SqlStorage): void {
  objectSql(sql, STORE).run`DELETE FROM entries`;
}

/** The idle expiry (epoch ms), or null when the feed does not expire. */
export function expiresAt(sql: SqlStorage): number | null {
  const row = objectSql(sql, STORE).one<{ value: string }>`SELECT value FROM meta WHERE key = 'expires_at'`;
  return row ? Number(row.value) : null;
}

export function setExpiresAt(sql: SqlStorage, atMs: number): void {
  objectSql(sql, STORE).run`INSERT INTO meta (key, value) VALUES ('expires_at', ${String(atMs)}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
}

/**
 * Deletes the entries sent to any of `recipients` (a person's erasure); answers the audiences of
 * the entries removed, so their identity feeds can be reached too.
 */
export function eraseRecipients(sql: SqlStorage, recipients: readonly string[]): string[] {
  const audiences = new Set<string>();
  for (const r of recipients) {
    const rows = objectSql(sql, STORE)<{ audience: string | null }>`
      DELETE FROM entries WHERE json_extract(body, '$.recipient') = ${r} RETURNING json_extract(body, '$.audience') AS audience`;
    for (const row of rows) if (row.audience) audiences.add(row.audience);
  }
  return [...audiences];
}
