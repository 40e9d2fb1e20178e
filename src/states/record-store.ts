/**
 * The StateStore object's SQLite: the state's declaration and attachments (meta), its
 * records, the aliases folds leave behind, the write audit trail and the op ids already applied.
 * Plain functions over `SqlStorage`, each synchronous, so a caller composes them into one
 * transaction (a Durable Object's synchronous block commits as one).
 *
 * A subject is stored under its subject key, `JSON.stringify([target_kind, target_name, kind,
 * key])`: unambiguous whatever the key holds (thread ids carry `:` and `/`), and ordered, which is
 * what cursors page by.
 */
import { z } from "zod";
import type { JsonObject } from "../platform/http/bounded-json";
import { type ObjectSchema, migrateSchema, objectSql } from "../platform/persistence/object-sql";
import { parseStored, storedJsonObject } from "../platform/persistence/stored-json";
import { Subject, WriteEntry, WriteOrigin } from "./views";

/** The store's name in its statements' errors (the state object's other parts use it too). */
export const STATE_STORE = "state-store";

/** Audit rows kept per record; older ones are dropped as new ones land (docs/states.md). */
export const MAX_WRITES_PER_RECORD = 1000;

/**
 * The `state-store` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const STATE_SCHEMA: ObjectSchema = {
  name: STATE_STORE,
  steps: [
    [
      "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
      `CREATE TABLE IF NOT EXISTS records (
    skey TEXT PRIMARY KEY, target_kind TEXT NOT NULL, target_name TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL,
    data TEXT NOT NULL, seq INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER)`,
      "CREATE INDEX IF NOT EXISTS records_kind_key ON records(kind, key)",
      "CREATE INDEX IF NOT EXISTS records_expiry ON records(expires_at) WHERE expires_at IS NOT NULL",
      // A folded subject reads and writes its canonical subject's record.
      "CREATE TABLE IF NOT EXISTS aliases (skey TEXT PRIMARY KEY, canonical TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL)",
      "CREATE INDEX IF NOT EXISTS aliases_canonical ON aliases(canonical)",
      "CREATE TABLE IF NOT EXISTS writes (skey TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, origin TEXT NOT NULL, paths TEXT NOT NULL, PRIMARY KEY (skey, seq))",
      "CREATE TABLE IF NOT EXISTS op_ids (skey TEXT NOT NULL, op_id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (skey, op_id))",
    ],
  ],
};

/** Brings the `state-store` tables to their current version (idempotent). */
export function createStateTables(sql: SqlStorage): void {
  migrateSchema(sql, STATE_SCHEMA);
}

export function subjectKey(s: Subject): string {
  return JSON.stringify([s.target_kind, s.target_name, s.kind, s.key]);
}

/** A subject key's JSON: the subject's fields in `subjectKey`'s order. */
const SubjectKey = z.tuple([Subject.shape.target_kind, Subject.shape.target_name, Subject.shape.kind, Subject.shape.key]);

export function subjectOfKey(skey: string): Subject {
  const [target_kind, target_name, kind, key] = parseStored(SubjectKey, skey, "records.skey");
  return { target_kind, target_name, kind, key };
}

export function getMeta(sql: SqlStorage, key: string): string | null {
  return objectSql(sql, STATE_STORE).one<{ value: string }>`SELECT value FROM meta WHERE key = ${key}`?.value ?? null;
}

export function setMeta(sql: SqlStorage, key: string, value: string): void {
  objectSql(sql, STATE_STORE).run`INSERT INTO meta (key, value) VALUES (${key}, ${value}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
}

/** The subject whose record `skey` reads and writes: its fold target, or itself. */
export function canonicalOf(sql: SqlStorage, skey: string): string {
  return objectSql(sql, STATE_STORE).one<{ canonical: string }>`SELECT canonical FROM aliases WHERE skey = ${skey}`?.canonical ?? skey;
}

export function foldedInto(sql: SqlStorage, canonical: string): string[] {
  return objectSql(sql, STATE_STORE)<{ skey: string }>`SELECT skey FROM aliases WHERE canonical = ${canonical} ORDER BY skey`.map((r) => r.skey);
}

export interface RecordRow {
  skey: string;
  data: JsonObject;
  seq: number;
  updated_at: number;
}

/** The live record stored under `skey`; an expired one is reclaimed here and reads as absent. */
export function liveRecord(sql: SqlStorage, skey: string, nowMs: number): RecordRow | null {
  const row = objectSql(sql, STATE_STORE).one<{ data: string; seq: number; updated_at: number; expires_at: number | null }>`
    SELECT data, seq, updated_at, expires_at FROM records WHERE skey = ${skey}`;
  if (!row) return null;
  if (row.expires_at !== null && row.expires_at <= nowMs) {
    deleteRecord(sql, skey);
    return null;
  }
  return { skey, data: parseStored(storedJsonObject, row.data, "records.data"), seq: row.seq, updated_at: row.updated_at };
}

/** Stores `data` as the record of `skey` with sequence `seq`, expiring `retentionMs` after now (null: never). */
export function putRecord(sql: SqlStorage, skey: string, data: JsonObject, seq: number, nowMs: number, retentionMs: number | null): void {
  const s = subjectOfKey(skey);
  const expiresAt = retentionMs === null ? null : nowMs + retentionMs;
  objectSql(sql, STATE_STORE).run`
    INSERT INTO records (skey, target_kind, target_name, kind, key, data, seq, created_at, updated_at, expires_at)
    VALUES (${skey}, ${s.target_kind}, ${s.target_name}, ${s.kind}, ${s.key}, ${JSON.stringify(data)}, ${seq}, ${nowMs}, ${nowMs}, ${expiresAt})
    ON CONFLICT (skey) DO UPDATE SET data = excluded.data, seq = excluded.seq, updated_at = excluded.updated_at, expires_at = excluded.expires_at`;
}

/** Deletes the record of `skey` with its audit rows and op ids (its aliases stay: see `dropAliasesOf`). */
export function deleteRecord(sql: SqlStorage, skey: string): boolean {
  const q = objectSql(sql, STATE_STORE);
  const removed = q.run`DELETE FROM records WHERE skey = ${skey}` > 0;
  q.run`DELETE FROM writes WHERE skey = ${skey}`;
  q.run`DELETE FROM op_ids WHERE skey = ${skey}`;
  return removed;
}

export function dropAliasesOf(sql: SqlStorage, canonical: string): number {
  return objectSql(sql, STATE_STORE).run`DELETE FROM aliases WHERE canonical = ${canonical} OR skey = ${canonical}`;
}

/** Points `skey` (and everything folded into it) at `canonical`; answers how many older aliases were re-pointed. */
export function addAlias(sql: SqlStorage, skey: string, canonical: string): number {
  const q = objectSql(sql, STATE_STORE);
  // Counted first: `rowsWritten` also counts the index entries an update rewrites.
  const flattened = Number(q.one<{ n: number }>`SELECT COUNT(*) AS n FROM aliases WHERE canonical = ${skey}`?.n ?? 0);
  q.run`UPDATE aliases SET canonical = ${canonical} WHERE canonical = ${skey}`;
  const s = subjectOfKey(skey);
  q.run`INSERT INTO aliases (skey, canonical, kind, key) VALUES (${skey}, ${canonical}, ${s.kind}, ${s.key})
    ON CONFLICT (skey) DO UPDATE SET canonical = excluded.canonical`;
  return flattened;
}

export function opIdSeen(sql: SqlStorage, skey: string, opId: string): boolean {
  return objectSql(sql, STATE_STORE).one`SELECT 1 AS seen FROM op_ids WHERE skey = ${skey} AND op_id = ${opId}` !== null;
}

export function rememberOpId(sql: SqlStorage, skey: string, opId: string, nowMs: number): void {
  objectSql(sql, STATE_STORE).run`INSERT OR IGNORE INTO op_ids (skey, op_id, at) VALUES (${skey}, ${opId}, ${nowMs})`;
}

/** Appends an audit row for the write that gave `skey` sequence `seq`, keeping the newest MAX_WRITES_PER_RECORD. */
export function appendWrite(sql: SqlStorage, skey: string, seq: number, nowMs: number, origin: WriteOrigin, paths: Array<Array<string | number>>): void {
  const q = objectSql(sql, STATE_STORE);
  q.run`INSERT OR REPLACE INTO writes (skey, seq, at, origin, paths) VALUES (${skey}, ${seq}, ${nowMs}, ${JSON.stringify(origin)}, ${JSON.stringify(paths)})`;
  q.run`DELETE FROM writes WHERE skey = ${skey} AND seq <= ${seq - MAX_WRITES_PER_RECORD}`;
}

/** Audit rows of `skey`, newest first, after `beforeSeq` when paging. */
export function writesOf(sql: SqlStorage, skey: string, limit: number, beforeSeq: number | null): WriteEntry[] {
  const rows = objectSql(sql, STATE_STORE)<{ seq: number; at: number; origin: string; paths: string }>`
    SELECT seq, at, origin, paths FROM writes WHERE skey = ${skey} AND seq < ${beforeSeq ?? Number.MAX_SAFE_INTEGER} ORDER BY seq DESC LIMIT ${limit}`;
  return rows.map((r) => ({
    seq: r.seq,
    at: new Date(r.at).toISOString(),
    origin: parseStored(WriteOrigin, r.origin, "writes.origin"),
    paths: parseStored(WriteEntry.shape.paths, r.paths, "writes.paths"),
  }));
}

/** Deletes every expired record; answers how many. */
export function pruneExpired(sql: SqlStorage, nowMs: number): number {
  const expired = objectSql(sql, STATE_STORE)<{ skey: string }>`SELECT skey FROM records WHERE expires_at IS NOT NULL AND expires_at <= ${nowMs}`;
  for (const { skey } of expired) deleteRecord(sql, skey);
  return expired.length;
}

/** Wipes every table's rows (the state was deleted); answers the records there were. */
export function wipeState(sql: SqlStorage): number {
  const q = objectSql(sql, STATE_STORE);
  const records = Number(q.one<{ n: number }>`SELECT COUNT(*) AS n FROM records`?.n ?? 0);
  q.run`DELETE FROM meta`;
  q.run`DELETE FROM records`;
  q.run`DELETE FROM aliases`;
  q.run`DELETE FROM writes`;
  q.run`DELETE FROM op_ids`;
  return records;
}
