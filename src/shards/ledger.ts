/**
 * An IndexShard's ledger (src/shards/rpc.ts): keyed entries with an optional expiry, in
 * the shard's own SQLite. An expired entry reads as absent and is replaced by the next claim; the
 * shard's alarm reclaims expired rows. Plain synchronous functions over the shard's storage.
 */
import type { LedgerEntry, LedgerKey } from "./rpc";
import { type ObjectSchema, migrateSchema, objectSql } from "../platform/persistence/object-sql";

/**
 * The `ledger` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const LEDGER_SCHEMA: ObjectSchema = {
  name: "ledger",
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS ledger (
    namespace  TEXT NOT NULL,
    key        TEXT NOT NULL,
    message_id TEXT NOT NULL,
    thread_id  TEXT NOT NULL,
    route_name TEXT,
    expires_at INTEGER,
    PRIMARY KEY (namespace, key)
  )`,
      "CREATE INDEX IF NOT EXISTS ledger_thread ON ledger(thread_id)",
      "CREATE INDEX IF NOT EXISTS ledger_expiry ON ledger(expires_at) WHERE expires_at IS NOT NULL",
    ],
  ],
};

/** Brings the `ledger` tables to their current version (idempotent). */
export function createLedger(sql: SqlStorage): void {
  migrateSchema(sql, LEDGER_SCHEMA);
}

type Row = { message_id: string; thread_id: string; route_name: string | null };

const ledgerSql = (sql: SqlStorage) => objectSql(sql, LEDGER_SCHEMA.name);

/** Writes `entry` under `k`, replacing whatever was there. */
export function putEntry(sql: SqlStorage, k: LedgerKey, entry: LedgerEntry, expiresAtMs: number | null): void {
  ledgerSql(sql).run`INSERT OR REPLACE INTO ledger (namespace, key, message_id, thread_id, route_name, expires_at)
    VALUES (${k.namespace}, ${k.key}, ${entry.message_id}, ${entry.thread_id}, ${entry.route_name}, ${expiresAtMs})`;
}

/** The live entry under `k`, if any. */
export function findEntry(sql: SqlStorage, k: LedgerKey, nowMs: number): LedgerEntry | null {
  const r = ledgerSql(sql).one<Row>`SELECT message_id, thread_id, route_name FROM ledger
    WHERE namespace = ${k.namespace} AND key = ${k.key} AND (expires_at IS NULL OR expires_at > ${nowMs})`;
  return r ? { message_id: r.message_id, thread_id: r.thread_id, route_name: r.route_name } : null;
}

/** Claims `k` for `mine` unless a live entry holds it (an expired one is replaced); answers the holder. */
export function claimEntry(sql: SqlStorage, k: LedgerKey, mine: LedgerEntry, expiresAtMs: number, nowMs: number): LedgerEntry {
  const held = findEntry(sql, k, nowMs);
  if (held) return held;
  putEntry(sql, k, mine, expiresAtMs);
  return mine;
}

/** Releases `k` if `messageId` still holds it. */
export function releaseEntry(sql: SqlStorage, k: LedgerKey, messageId: string): void {
  ledgerSql(sql).run`DELETE FROM ledger WHERE namespace = ${k.namespace} AND key = ${k.key} AND message_id = ${messageId}`;
}

/** Drops the entries under `keys`. */
export function dropEntries(sql: SqlStorage, keys: LedgerKey[]): void {
  const q = ledgerSql(sql);
  for (const k of keys) q.run`DELETE FROM ledger WHERE namespace = ${k.namespace} AND key = ${k.key}`;
}

/** Drops every entry about thread `threadId` (thread forget). */
export function dropThreadEntries(sql: SqlStorage, threadId: string): void {
  ledgerSql(sql).run`DELETE FROM ledger WHERE thread_id = ${threadId}`;
}

/** The earliest expiry in the ledger, if any. */
export function nextLedgerExpiry(sql: SqlStorage): number | null {
  return ledgerSql(sql).one<{ t: number | null }>`SELECT MIN(expires_at) AS t FROM ledger WHERE expires_at IS NOT NULL`?.t ?? null;
}

/** Reclaims expired entries; the earliest remaining expiry, if any. */
export function pruneLedger(sql: SqlStorage, nowMs: number): number | null {
  ledgerSql(sql).run`DELETE FROM ledger WHERE expires_at IS NOT NULL AND expires_at <= ${nowMs}`;
  return nextLedgerExpiry(sql);
}
