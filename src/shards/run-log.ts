/**
 * An IndexShard's run log: the full traces of runs outside any thread (tool runs,
 * agent runs, hook fires; src/observability/runs/recorder.ts), kept in the shard's SQLite until their expiry
 * (`RUNS_TRACE_RETENTION_SECONDS` after the run started). A turn's trace lives in its thread object
 * instead. Plain synchronous functions over the shard's storage; the shard's alarm prunes.
 */
import { RunTrace } from "../shared/run-trace";
import { parseStored } from "../platform/persistence/stored-json";
import { type ObjectSchema, type SqlFragment, migrateSchema, objectSql, sqlPart } from "../platform/persistence/object-sql";

/** The store's name in its statements' errors. */
const STORE = "run-log";

/**
 * The `run-log` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const RUN_LOG_SCHEMA: ObjectSchema = {
  name: "run-log",
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS run_traces (
    trace_id   TEXT PRIMARY KEY,
    user_id    TEXT,
    thread_id  TEXT,
    started_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    trace      TEXT NOT NULL
  )`,
      "CREATE INDEX IF NOT EXISTS run_traces_expiry ON run_traces(expires_at)",
      "CREATE INDEX IF NOT EXISTS run_traces_user ON run_traces(user_id)",
      "CREATE INDEX IF NOT EXISTS run_traces_thread ON run_traces(thread_id)",
    ],
  ],
};

/** Brings the `run-log` tables to their current version (idempotent). */
export function createRunLog(sql: SqlStorage): void {
  migrateSchema(sql, RUN_LOG_SCHEMA);
}

/** Keeps `trace` until `expiresAtMs` (a trace recorded twice keeps the later). */
export function keepTrace(sql: SqlStorage, trace: RunTrace, expiresAtMs: number): void {
  objectSql(sql, STORE).run`INSERT OR REPLACE INTO run_traces (trace_id, user_id, thread_id, started_at, expires_at, trace)
    VALUES (${trace.trace_id}, ${trace.user_id}, ${trace.thread_id}, ${Date.parse(trace.started_at)}, ${expiresAtMs}, ${JSON.stringify(trace)})`;
}

/** The live trace `traceId`, if this shard keeps it. */
export function findTrace(sql: SqlStorage, traceId: string, nowMs: number): RunTrace | null {
  const r = objectSql(sql, STORE).one<{ trace: string }>`SELECT trace FROM run_traces WHERE trace_id = ${traceId} AND expires_at > ${nowMs}`;
  return r ? parseStored(RunTrace, r.trace, "run trace") : null;
}

/** The earliest expiry held (null: none). */
export function nextTraceExpiry(sql: SqlStorage): number | null {
  return objectSql(sql, STORE).one<{ t: number | null }>`SELECT MIN(expires_at) AS t FROM run_traces`?.t ?? null;
}

/** Deletes the traces matching `where` and answers their ids. */
function deleteWhere(sql: SqlStorage, where: SqlFragment): string[] {
  const q = objectSql(sql, STORE);
  const ids = q<{ trace_id: string }>`SELECT trace_id FROM run_traces WHERE ${where}`.map((r) => r.trace_id);
  if (ids.length) q.run`DELETE FROM run_traces WHERE ${where}`;
  return ids;
}

/** Deletes the traces expired by `nowMs`; answers their ids (their summary rows go next). */
export function pruneTraces(sql: SqlStorage, nowMs: number): string[] {
  return deleteWhere(sql, sqlPart`expires_at <= ${nowMs}`);
}

/** Person erase: deletes the traces attributed to `userId`; answers their ids. */
export function eraseUserTraces(sql: SqlStorage, userId: string): string[] {
  return deleteWhere(sql, sqlPart`user_id = ${userId}`);
}

/** Thread forget: deletes the traces of runs on `threadId` (none today outside turns; kept exact for hooks later). */
export function dropThreadTraces(sql: SqlStorage, threadId: string): string[] {
  return deleteWhere(sql, sqlPart`thread_id = ${threadId}`);
}

/** Prune: deletes the traces of runs started before `beforeMs`; answers their ids. */
export function pruneTracesBefore(sql: SqlStorage, beforeMs: number): string[] {
  return deleteWhere(sql, sqlPart`started_at < ${beforeMs}`);
}
