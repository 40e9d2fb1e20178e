/**
 * One background tool run in its ToolRun object's SQLite (the storage part of durable-objects/
 * tool-run.ts). One row: the request, the status machine (queued → running → succeeded | failed,
 * or running → waiting → succeeded | failed when the tool asked a question),
 * attempts, the result or error, and whether the end was published (the D1 listing row and the
 * trace). The table is created on submit, never by a read, so reading an unknown run id leaves
 * that object empty. Times are epoch ms.
 */
import { z } from "zod";
import { RunStep } from "../shared/run-trace";
import { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { StateBinding } from "../shared/state-binding";
import { jsonColumn, validStored } from "../platform/persistence/stored-json";
import { type ObjectSchema, columnsOf, migrateSchema, objectSql, sqlText } from "../platform/persistence/object-sql";
import { type ToolRunRequest, type ToolRunRecord, ToolRunOrigin, ToolRunStatus } from "./record";

const COLUMNS =
  "run_id, tool_name, arguments, caller_user_id, caller_fingerprint, origin, schedule_name, slot_at, hook_name, state_binding, binding_by, status, attempts, interaction_id, result, error, error_kind, created_at, started_at, finished_at, expires_at, published";

const int = z.coerce.number().int();
const StoredRun = z.object({
  run_id: z.string(),
  tool_name: z.string(),
  arguments: jsonColumn(JsonObject),
  caller_user_id: z.string(),
  caller_fingerprint: z.string(),
  origin: ToolRunOrigin,
  schedule_name: z.string().nullable(),
  slot_at: int.nullable(),
  hook_name: z.string().nullable(),
  state_binding: jsonColumn(StateBinding).nullable(),
  binding_by: z.string().nullable(),
  status: ToolRunStatus,
  attempts: int,
  interaction_id: z.string().nullable(),
  result: z.string().nullable(),
  error: z.string().nullable(),
  error_kind: z.string().nullable(),
  created_at: int,
  started_at: int.nullable(),
  finished_at: int.nullable(),
  expires_at: int.nullable(),
  published: int,
});

/** The store's name in its statements' errors. */
const STORE = "tool-run";

export function runTableExists(sql: SqlStorage): boolean {
  return objectSql(sql, STORE).one`SELECT 1 AS present FROM sqlite_master WHERE type = 'table' AND name = 'run'` !== null;
}

/** The columns a run table of the first shape lacks; a run without them reads as neither hooked, bound nor asking. */
const LATER_COLUMNS = ["hook_name", "state_binding", "interaction_id", "binding_by"];

/**
 * The run table's schema. Version 1 is the first shape; version 2 adds the hook's name, the state
 * binding, the interaction and the binding's writer (a bound run without a recorded writer reads as
 * having none); version 3 the fingerprint of a keyed submit's request. A table written before versions had gained some of them one at a time, so step 2
 * adds the ones it lacks, and adoption reads which version the table stands at.
 */
export const RUN_SCHEMA: ObjectSchema = {
  name: STORE,
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS run (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      run_id TEXT NOT NULL, tool_name TEXT NOT NULL, arguments TEXT NOT NULL,
      caller_user_id TEXT NOT NULL, caller_fingerprint TEXT NOT NULL,
      origin TEXT NOT NULL, schedule_name TEXT, slot_at INTEGER,
      status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
      result TEXT, error TEXT, error_kind TEXT,
      created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER, expires_at INTEGER,
      published INTEGER NOT NULL DEFAULT 0,
      steps TEXT
    )`,
    ],
    (sql) => {
      const present = columnsOf(sql, "run");
      for (const column of LATER_COLUMNS) if (!present.includes(column)) objectSql(sql, STORE).run`ALTER TABLE run ADD COLUMN ${sqlText(column)} TEXT`;
    },
    // v3: the fingerprint of the request an Idempotency-Key submitted the run with (null: none).
    (sql) => {
      if (!columnsOf(sql, "run").includes("request_hash")) objectSql(sql, STORE).run`ALTER TABLE run ADD COLUMN request_hash TEXT`;
    },
  ],
  adopt: (sql) => {
    const present = columnsOf(sql, "run");
    if (!present.length) return 0;
    return LATER_COLUMNS.every((c) => present.includes(c)) ? 2 : 1;
  },
};

/** Creates the run table at its current version, or brings an existing one there (idempotent). */
export function createRunTable(sql: SqlStorage): void {
  migrateSchema(sql, RUN_SCHEMA);
}

/**
 * Brings a run table of an older shape up to date; an object holding no run stays empty.
 * Idempotent; run when the object starts, before any read.
 */
export function upgradeRunTable(sql: SqlStorage): void {
  if (runTableExists(sql)) migrateSchema(sql, RUN_SCHEMA);
}

/** The run, or null when the object holds none. */
export function readRun(sql: SqlStorage): ToolRunRecord | null {
  if (!runTableExists(sql)) return null;
  const raw = objectSql(sql, STORE).one`SELECT ${sqlText(COLUMNS)} FROM run WHERE id = 1`;
  if (!raw) return null;
  const r = validStored(StoredRun, raw, "tool run");
  let result: JsonValue = null;
  if (r.result !== null) result = validStored(jsonColumn(JsonValue), r.result, "tool run result");
  return { ...r, result, published: r.published === 1 };
}

/** Inserts the run as queued (the caller checked there is none). */
export function insertQueued(sql: SqlStorage, req: ToolRunRequest, nowMs: number): void {
  createRunTable(sql);
  const stateBinding = req.state_binding ? JSON.stringify(req.state_binding) : null;
  const bindingBy = req.state_binding ? (req.binding_by ?? null) : null;
  objectSql(sql, STORE)
    .run`INSERT INTO run (id, run_id, tool_name, arguments, caller_user_id, caller_fingerprint, origin, schedule_name, slot_at, hook_name, state_binding, binding_by, status, attempts, created_at, request_hash)
    VALUES (1, ${req.run_id}, ${req.tool_name}, ${JSON.stringify(req.arguments)}, ${req.caller.user_id}, ${req.caller.fingerprint}, ${req.origin},
      ${req.schedule_name}, ${req.slot_at}, ${req.hook_name ?? null}, ${stateBinding}, ${bindingBy}, 'queued', 0, ${nowMs}, ${req.request_hash ?? null})`;
}

/** The fingerprint of the request a keyed submit stored the run with (null: none, or no run). */
export function readRequestHash(sql: SqlStorage): string | null {
  if (!runTableExists(sql)) return null;
  return objectSql(sql, STORE).one<{ request_hash: string | null }>`SELECT request_hash FROM run WHERE id = 1`?.request_hash ?? null;
}

/** Marks an attempt started: running, attempts + 1 (counted before the tool runs, so a crash counts). */
export function markStarted(sql: SqlStorage, nowMs: number): void {
  objectSql(sql, STORE).run`UPDATE run SET status = 'running', attempts = attempts + 1, started_at = ${nowMs} WHERE id = 1`;
}

/**
 * The attempt parked on a question: the run waits for interaction `interactionId` until
 * `untilMs` (the interaction's expiry plus a margin; past it, the alarm ends the run), with the
 * attempt's steps kept for the trace.
 */
export function markWaiting(sql: SqlStorage, interactionId: string, steps: RunSteps, untilMs: number): void {
  objectSql(sql, STORE)
    .run`UPDATE run SET status = 'waiting', interaction_id = ${interactionId}, expires_at = ${untilMs}, steps = ${JSON.stringify(steps)} WHERE id = 1`;
}

export interface RunEnd {
  status: "succeeded" | "failed";
  result: JsonValue;
  error: string | null;
  error_kind: string | null;
}

/** The steps of the attempt that ended the run (and the preset version it ran), kept for its trace until it is published. */
export interface RunSteps {
  steps: RunStep[];
  dropped: number;
  version: string | null;
}

const StoredSteps = z.object({ steps: z.array(RunStep), dropped: z.number().int(), version: z.string().nullable() });

/** Records the end, its steps and the expiry; the end is not yet published. */
export function markFinished(sql: SqlStorage, end: RunEnd, steps: RunSteps, nowMs: number, expiresAtMs: number): void {
  const result = end.status === "succeeded" ? JSON.stringify(end.result ?? null) : null;
  objectSql(sql, STORE).run`UPDATE run SET status = ${end.status}, result = ${result}, error = ${end.error}, error_kind = ${end.error_kind},
    finished_at = ${nowMs}, expires_at = ${expiresAtMs}, published = 0, steps = ${JSON.stringify(steps)} WHERE id = 1`;
}

/** The ended run's steps (none when it ended without an attempt finishing). */
export function readSteps(sql: SqlStorage): RunSteps {
  const raw = objectSql(sql, STORE).one<{ steps: string | null }>`SELECT steps FROM run WHERE id = 1`?.steps;
  return raw ? validStored(jsonColumn(StoredSteps), raw, "tool run steps") : { steps: [], dropped: 0, version: null };
}

/** The end is listed and traced: the steps are no longer needed. */
export function markPublished(sql: SqlStorage): void {
  objectSql(sql, STORE).run`UPDATE run SET published = 1, steps = NULL WHERE id = 1`;
}
