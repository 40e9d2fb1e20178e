/**
 * One schedule in its Schedule object's SQLite (the storage part of durable-objects/schedule.ts):
 * the spec row with its armed slot and counters, and the recent fires (at most RECENT_FIRES). A
 * fire is written with its run id BEFORE the run is submitted, and marked submitted after, so a
 * restart between the two submits the same run again (submitting is idempotent by run id) rather
 * than losing or doubling the fire. Created on the first put, never by a read. Times epoch ms.
 */
import { z } from "zod";
import { validStored } from "../platform/persistence/stored-json";
import { type ObjectSchema, columnsOf, migrateSchema, objectSql, sqlList } from "../platform/persistence/object-sql";
import { type ScheduleFire, type ScheduleSpec, type ScheduleState, specColumnValues, storedScheduleRow } from "./record";

/** Fires each schedule remembers (newest kept). */
export const RECENT_FIRES = 20;

/** The store's name in its statements' errors. */
const STORE = "schedule";

export function scheduleTablesExist(sql: SqlStorage): boolean {
  return objectSql(sql, STORE).one`SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'spec'` !== null;
}

/**
 * The schedule's schema. Version 1 is the first shape; version 2 adds the spec's state binding (a
 * spec without one reads as unbound). A table written before versions is adopted at the version
 * its columns show.
 */
export const SCHEDULE_SCHEMA: ObjectSchema = {
  name: "schedule",
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS spec (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      name TEXT NOT NULL, tool_name TEXT NOT NULL, tool_kwargs TEXT NOT NULL, schedule_kwargs TEXT NOT NULL,
      cron TEXT NOT NULL, timezone TEXT NOT NULL,
      execution_key TEXT NOT NULL, execution_key_fingerprint TEXT NOT NULL, created_by TEXT NOT NULL,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, next_fire_at INTEGER,
      fires INTEGER NOT NULL DEFAULT 0, last_fire_at INTEGER, last_run_id TEXT
    )`,
      `CREATE TABLE IF NOT EXISTS fires (
      seq INTEGER PRIMARY KEY,
      run_id TEXT, slot_at INTEGER, fired_at INTEGER NOT NULL,
      catch_up INTEGER NOT NULL, skipped INTEGER NOT NULL, submitted INTEGER NOT NULL
    )`,
    ],
    ["ALTER TABLE spec ADD COLUMN state_binding TEXT"],
  ],
  adopt: (sql) => {
    const present = columnsOf(sql, "spec");
    if (!present.length) return 0;
    return present.includes("state_binding") ? 2 : 1;
  },
};

/** Creates the tables at their current version, or brings existing ones there (idempotent). */
export function createScheduleTables(sql: SqlStorage): void {
  migrateSchema(sql, SCHEDULE_SCHEMA);
}

/**
 * Brings tables of an older shape up to date; an object holding no schedule stays empty.
 * Idempotent; run when the object starts, before any read.
 */
export function upgradeScheduleTables(sql: SqlStorage): void {
  if (scheduleTablesExist(sql)) migrateSchema(sql, SCHEDULE_SCHEMA);
}

const int = z.coerce.number().int();
const StoredSpec = storedScheduleRow(int);
const StoredFire = z.object({ seq: int, run_id: z.string().nullable(), slot_at: int.nullable(), fired_at: int, catch_up: int, skipped: int, submitted: int });

function fireOf(f: z.infer<typeof StoredFire>): ScheduleFire {
  return { run_id: f.run_id, slot_at: f.slot_at, fired_at: f.fired_at, catch_up: f.catch_up === 1, skipped: f.skipped };
}

/** The schedule, or null when this object holds none. */
export function readSchedule(sql: SqlStorage): ScheduleState | null {
  if (!scheduleTablesExist(sql)) return null;
  const q = objectSql(sql, STORE);
  const raw = q.one`SELECT * FROM spec WHERE id = 1`;
  if (!raw) return null;
  const spec = validStored(StoredSpec, raw, "schedule spec");
  const fires = q`SELECT * FROM fires ORDER BY seq DESC`.map((f) => fireOf(validStored(StoredFire, f, "schedule fire")));
  return { ...spec, recent_fires: fires };
}

/** Creates or replaces the spec (counters and fires kept on a replace); answers whether it was new. */
export function writeSpec(sql: SqlStorage, spec: ScheduleSpec, nextFireAt: number | null, nowMs: number): boolean {
  createScheduleTables(sql);
  const existed = objectSql(sql, STORE).one`SELECT 1 AS present FROM spec WHERE id = 1` !== null;
  // The column values come as one list (specColumnValues), so the statement is bound by position.
  objectSql(sql, STORE)
    .run`INSERT INTO spec (id, name, tool_name, tool_kwargs, schedule_kwargs, cron, timezone, execution_key, execution_key_fingerprint, created_by, state_binding, created_at, updated_at, next_fire_at)
     VALUES (1, ${sqlList([...specColumnValues(spec), nowMs, nowMs, nextFireAt])})
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, tool_name = excluded.tool_name, tool_kwargs = excluded.tool_kwargs,
       schedule_kwargs = excluded.schedule_kwargs, cron = excluded.cron, timezone = excluded.timezone,
       execution_key = excluded.execution_key, execution_key_fingerprint = excluded.execution_key_fingerprint,
       created_by = excluded.created_by, state_binding = excluded.state_binding, updated_at = excluded.updated_at, next_fire_at = excluded.next_fire_at`;
  return !existed;
}

/**
 * Records what one alarm decided, in one synchronous block: the fire (or the skipped slots), the
 * counters and the next armed slot. A fire is stored unsubmitted.
 */
export function recordAlarm(sql: SqlStorage, fire: ScheduleFire | null, nextFireAt: number | null): void {
  const q = objectSql(sql, STORE);
  if (fire) {
    q.run`INSERT INTO fires (run_id, slot_at, fired_at, catch_up, skipped, submitted)
      VALUES (${fire.run_id}, ${fire.slot_at}, ${fire.fired_at}, ${fire.catch_up ? 1 : 0}, ${fire.skipped}, 0)`;
    q.run`DELETE FROM fires WHERE seq <= (SELECT MAX(seq) FROM fires) - ${RECENT_FIRES}`;
    if (fire.run_id) q.run`UPDATE spec SET fires = fires + 1, last_fire_at = ${fire.fired_at}, last_run_id = ${fire.run_id} WHERE id = 1`;
  }
  q.run`UPDATE spec SET next_fire_at = ${nextFireAt} WHERE id = 1`;
}

/** Fires whose run was not yet submitted (a restart came between recording and submitting). */
export function unsubmittedFires(sql: SqlStorage): Array<{ seq: number; run_id: string; slot_at: number | null }> {
  if (!scheduleTablesExist(sql)) return [];
  return objectSql(sql, STORE)`SELECT seq, run_id, slot_at FROM fires WHERE submitted = 0 AND run_id IS NOT NULL ORDER BY seq`.map((r) => ({
    seq: Number(r.seq),
    run_id: String(r.run_id),
    slot_at: r.slot_at === null ? null : Number(r.slot_at),
  }));
}

export function markSubmitted(sql: SqlStorage, seq: number): void {
  objectSql(sql, STORE).run`UPDATE fires SET submitted = 1 WHERE seq = ${seq}`;
}
