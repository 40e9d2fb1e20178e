/**
 * The D1 listing of schedules (`schedules`, migration 0016; docs/schedules.md). Each schedule lives
 * in its Schedule object; this table mirrors its spec and counters so `GET /api/schedules` pages
 * without visiting objects. The object writes its row when it is created or replaced and at each
 * fire (a whole-row upsert, so a mirror write lost to a fault is repaired by the next one); the
 * delete door removes it.
 */
import { z } from "zod";
import type { Holder } from "../auth/identity";
import { validStored } from "../platform/persistence/stored-json";
import { type ScheduleState, type ScheduleView, specColumnValues, storedScheduleRow } from "./record";

export function mirrorStatement(db: D1Database, s: ScheduleState): D1PreparedStatement {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return db
    .prepare(
      `INSERT INTO schedules (name, tool_name, tool_kwargs, schedule_kwargs, cron, timezone, execution_key, execution_key_fingerprint, created_by, state_binding, created_at, updated_at, next_fire_at, last_fire_at, last_run_id, fires)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (name) DO UPDATE SET tool_name = excluded.tool_name, tool_kwargs = excluded.tool_kwargs, schedule_kwargs = excluded.schedule_kwargs,
         cron = excluded.cron, timezone = excluded.timezone, execution_key = excluded.execution_key,
         execution_key_fingerprint = excluded.execution_key_fingerprint, created_by = excluded.created_by, state_binding = excluded.state_binding, created_at = excluded.created_at,
         updated_at = excluded.updated_at, next_fire_at = excluded.next_fire_at, last_fire_at = excluded.last_fire_at,
         last_run_id = excluded.last_run_id, fires = excluded.fires`,
    )
    .bind(...specColumnValues(s), iso(s.created_at), iso(s.updated_at), iso(s.next_fire_at), iso(s.last_fire_at), s.last_run_id, s.fires);
}

export async function deleteListing(db: D1Database, name: string): Promise<boolean> {
  const r = await db.prepare("DELETE FROM schedules WHERE name = ?").bind(name).run();
  return (r.meta.changes ?? 0) > 0;
}

/** A D1 listing row: the object's spec and counters, times as ISO text (the view without recent fires). */
const Listed = storedScheduleRow(z.string());

/**
 * Schedules by name, paged; `createdBy` narrows to one creator's lineage (a restricted caller's
 * listing: made by its user_id since its key lineage began, src/auth/identity.ts; `updated_at`
 * is set with `created_by`).
 */
export async function listSchedules(
  db: D1Database,
  createdBy: Holder | null,
  offset: number,
  limit: number,
): Promise<{ items: ScheduleView[]; total: number }> {
  const where = createdBy === null ? "" : "WHERE created_by = ? AND updated_at >= ?";
  const args = createdBy === null ? [] : [createdBy.user_id, createdBy.since];
  const [page, count] = await db.batch([
    db.prepare(`SELECT * FROM schedules ${where} ORDER BY name LIMIT ? OFFSET ?`).bind(...args, limit, offset),
    db.prepare(`SELECT COUNT(*) AS n FROM schedules ${where}`).bind(...args),
  ]);
  const items = (page.results as Record<string, unknown>[]).map((raw) => validStored(Listed, raw, "schedules row"));
  return { items, total: Number((count.results[0] as { n: number } | undefined)?.n ?? 0) };
}
