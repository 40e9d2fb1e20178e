/**
 * The D1 listing of schedules (`schedules`, migration 0016; docs/schedules.md). Each schedule lives
 * in its Schedule object; this table mirrors its spec and counters so `GET /api/schedules` pages
 * without visiting objects. The object writes its row when it is created or replaced and at each
 * fire (a whole-row upsert, so a mirror write lost to a fault is repaired by the next one); the
 * delete door removes it.
 */
import { z } from "zod";
import type { Holder } from "../access-control/identity";
import { CountRow, batch, d1, list, rowsOf, run, sql } from "../platform/persistence/d1";
import { type ScheduleState, type ScheduleView, specColumnValues, storedScheduleRow } from "./record";

export function mirrorStatement(db: D1Database, s: ScheduleState): D1PreparedStatement {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const values = list([...specColumnValues(s), iso(s.created_at), iso(s.updated_at), iso(s.next_fire_at), iso(s.last_fire_at), s.last_run_id, s.fires]);
  return d1(
    db,
  )`INSERT INTO schedules (name, tool_name, tool_kwargs, schedule_kwargs, cron, timezone, execution_key, execution_key_fingerprint, created_by, state_binding, created_at, updated_at, next_fire_at, last_fire_at, last_run_id, fires)
       VALUES (${values})
       ON CONFLICT (name) DO UPDATE SET tool_name = excluded.tool_name, tool_kwargs = excluded.tool_kwargs, schedule_kwargs = excluded.schedule_kwargs,
         cron = excluded.cron, timezone = excluded.timezone, execution_key = excluded.execution_key,
         execution_key_fingerprint = excluded.execution_key_fingerprint, created_by = excluded.created_by, state_binding = excluded.state_binding, created_at = excluded.created_at,
         updated_at = excluded.updated_at, next_fire_at = excluded.next_fire_at, last_fire_at = excluded.last_fire_at,
         last_run_id = excluded.last_run_id, fires = excluded.fires`.prepared();
}

export async function deleteListing(db: D1Database, name: string): Promise<boolean> {
  return (await run(d1(db)`DELETE FROM schedules WHERE name = ${name}`)).changes > 0;
}

/** A D1 listing row: the object's spec and counters, times as ISO text (the view without recent fires). */
const Listed = storedScheduleRow(z.string());

/**
 * Schedules by name, paged; `createdBy` narrows to one creator's lineage (a restricted caller's
 * listing: made by its user_id since its key lineage began, src/access-control/identity.ts; `updated_at`
 * is set with `created_by`).
 */
export async function listSchedules(
  db: D1Database,
  createdBy: Holder | null,
  offset: number,
  limit: number,
): Promise<{ items: ScheduleView[]; total: number }> {
  const where = createdBy === null ? sql`` : sql`WHERE created_by = ${createdBy.user_id} AND updated_at >= ${createdBy.since}`;
  const q = d1(db);
  const read = q`SELECT * FROM schedules ${where} ORDER BY name LIMIT ${limit} OFFSET ${offset}`;
  const counted = q`SELECT COUNT(*) AS n FROM schedules ${where}`;
  const [page, count] = await batch(db, [read, counted]);
  const [total] = rowsOf(CountRow, count?.results ?? [], counted.text);
  return { items: rowsOf(Listed, page?.results ?? [], read.text), total: total?.n ?? 0 };
}
