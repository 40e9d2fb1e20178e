/**
 * The D1 side of run traces (migrations/0015_runs.sql): the statements the IndexShards'
 * batched flush writes (summary rows, their removal, counters, thread loads) and the direct writes
 * of forget, erase and prune. Nothing on the per-message path runs these: only shard flushes and
 * operator doors do.
 */
import { batch, d1, join, run, trusted } from "../platform/persistence/d1";
import type { CounterDelta, ListingRow, RunRow } from "./rpc";

/** How long counters are kept: the metrics window's upper bound. */
export const COUNTER_KEEP_MS = 7 * 24 * 3600 * 1000;

/**
 * The flush writes each kind of row as ONE statement over a JSON array (`json_each`), however many
 * rows a chunk holds: a settled turn adds a few hundred bytes to a statement the batch carries
 * anyway, not a statement of its own (D1 also caps bound parameters per statement, which a
 * multi-row VALUES list would hit).
 */

/** A summary row's columns as a reader sees them (the CSV export's columns too). */
export const RUN_SUMMARY_COLUMNS = [
  "trace_id",
  "kind",
  "trigger",
  "target_kind",
  "target_name",
  "target_version",
  "route_name",
  "thread_id",
  "interaction_id",
  "user_id",
  "principal",
  "started_at",
  "duration_ms",
  "outcome",
  "step_count",
  "has_error",
] as const satisfies ReadonlyArray<keyof RunRow>;
/** Every stored column: the summary plus where the full trace lives. */
const RUN_COLUMNS = [...RUN_SUMMARY_COLUMNS, "home"] as const satisfies ReadonlyArray<keyof RunRow>;

/** Upserts summary rows (none: no statement). */
export function upsertRunsStatement(db: D1Database, rows: RunRow[]): D1PreparedStatement[] {
  if (!rows.length) return [];
  // JSON booleans read back as 1 and 0, as the column stores them.
  const picks = join(RUN_COLUMNS.map((c) => trusted(`json_extract(value, '$.${c}')`)));
  return [d1(db)`INSERT OR REPLACE INTO runs (${trusted(RUN_COLUMNS.join(", "))}) SELECT ${picks} FROM json_each(${JSON.stringify(rows)})`.prepared()];
}

/** Deletes summary rows whose traces were pruned (none: no statement). */
export function deleteRunsStatement(db: D1Database, traceIds: string[]): D1PreparedStatement[] {
  if (!traceIds.length) return [];
  return [d1(db)`DELETE FROM runs WHERE trace_id IN (SELECT value FROM json_each(${JSON.stringify(traceIds)}))`.prepared()];
}

/** Adds counter deltas to their minutes (none: no statement). */
export function addCountersStatement(db: D1Database, deltas: CounterDelta[]): D1PreparedStatement[] {
  if (!deltas.length) return [];
  const json = JSON.stringify(deltas.map((d) => ({ minute: d.minute, name: d.name, label: d.label, value: d.value })));
  return [
    d1(db)`INSERT INTO run_counters (minute, name, label, value)
         SELECT json_extract(value, '$.minute'), json_extract(value, '$.name'), json_extract(value, '$.label'), json_extract(value, '$.value') FROM json_each(${json}) WHERE true
         ON CONFLICT(minute, name, label) DO UPDATE SET value = value + excluded.value`.prepared(),
  ];
}

/** Brings threads' load rows up to their listing rows (a null row: the thread's records are gone). */
export function threadLoadsStatements(db: D1Database, threads: Array<{ thread_id: string; row: ListingRow | null }>, nowMs: number): D1PreparedStatement[] {
  const live = threads.flatMap((t) =>
    t.row
      ? [{ thread_id: t.thread_id, route_name: t.row.route_name, queue_depth: t.row.queue_depth ?? 0, pending_deliveries: t.row.pending_deliveries ?? 0 }]
      : [],
  );
  const gone = threads.filter((t) => !t.row).map((t) => t.thread_id);
  const stmts: D1PreparedStatement[] = [];
  if (live.length) {
    stmts.push(
      d1(db)`INSERT INTO thread_loads (thread_id, route_name, queue_depth, pending_deliveries, updated_at)
           SELECT json_extract(value, '$.thread_id'), json_extract(value, '$.route_name'), json_extract(value, '$.queue_depth'), json_extract(value, '$.pending_deliveries'), ${nowMs}
           FROM json_each(${JSON.stringify(live)}) WHERE true
           ON CONFLICT(thread_id) DO UPDATE SET route_name = excluded.route_name, queue_depth = excluded.queue_depth,
             pending_deliveries = excluded.pending_deliveries, updated_at = excluded.updated_at`.prepared(),
    );
  }
  if (gone.length) stmts.push(d1(db)`DELETE FROM thread_loads WHERE thread_id IN (SELECT value FROM json_each(${JSON.stringify(gone)}))`.prepared());
  return stmts;
}

/** Reclaims counters older than COUNTER_KEEP_MS (a shard adds it to a flush now and then). */
export function pruneCountersStatement(db: D1Database, nowMs: number): D1PreparedStatement {
  return d1(db)`DELETE FROM run_counters WHERE minute < ${Math.floor((nowMs - COUNTER_KEEP_MS) / 60_000)}`.prepared();
}

/** Thread forget: the thread's summary rows and load row (after every shard dropped what it buffered). */
export async function dropThreadRuns(db: D1Database, threadId: string): Promise<void> {
  await batch(db, [d1(db)`DELETE FROM runs WHERE thread_id = ${threadId}`, d1(db)`DELETE FROM thread_loads WHERE thread_id = ${threadId}`]);
}

/** Person erase: the summary rows attributed to `userId` (after every shard dropped its traces and buffered rows). */
export async function dropUserRuns(db: D1Database, userId: string): Promise<number> {
  const meta = await run(d1(db)`DELETE FROM runs WHERE user_id = ${userId}`);
  return meta.changes ?? 0;
}

/** `POST /api/runs/prune`: the summary rows of runs started before `beforeMs`; answers how many. */
export async function pruneRunRows(db: D1Database, beforeMs: number): Promise<number> {
  const meta = await run(d1(db)`DELETE FROM runs WHERE started_at < ${beforeMs}`);
  return meta.changes ?? 0;
}
