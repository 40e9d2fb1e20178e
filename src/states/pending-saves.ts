/**
 * Pending state saves (spec §2.12, §3.3; platform-facts A4). A bound turn's updates that
 * cannot apply when the turn ends wait here, in D1, in id order:
 *
 * - `pending`: the state's object could not be reached, or an older save on the same subject still
 *   waits (a subject's saves apply in the order their turns ended). The cron pass applies due
 *   saves; a failed attempt backs off (30 s doubling, at most 15 min) and, after 8 attempts, the
 *   save is `failed`.
 * - `failed`: a refusal (the record no longer fits the schema, a program failed) or attempts ran
 *   out; `last_error` says why. An operator retries it (after fixing what refused it) or discards
 *   it.
 * - `calls` and `running` are the reference's statuses for follow-up calls a save triggers; this
 *   build triggers none, so no save is ever in them.
 *
 * A save holds its subjects: the record search and subject listing report them as `held`, and a
 * later turn's updates to a held subject queue behind it. The rows are written only on this rare
 * path, never on the per-message path: a turn learns whether its target has any outstanding save
 * from its route read (src/conversations/store.ts) and reads which subjects only when it does.
 */
import { z } from "zod";
import { publishAccessChanges } from "../platform/epochs/publish";
import { type Subject, stateStoreStub } from "./rpc";
import type { Env } from "../platform/env";
import { HttpError, conflict } from "../platform/http/errors";
import { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { all, batch, d1, first, rowsOf, run, sql } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { StateAttach } from "../shared/state-binding";
import { BindingError, type PendingItem, applyAttachUpdates, heldKey } from "./turn-binding";
import { Subject as SubjectSchema, WriteOrigin } from "./views";

export const MAX_SAVE_ATTEMPTS = 8;
const BACKOFF_BASE_MS = 30_000;
const BACKOFF_MAX_MS = 15 * 60_000;

export const PendingWork = z.object({
  input: JsonObject,
  output: JsonValue,
  origin: WriteOrigin,
  items: z.array(z.object({ state: z.string(), subject: SubjectSchema, attach: StateAttach, from: z.number().int() })),
});
export type PendingWork = z.infer<typeof PendingWork>;

export const PendingSaveStatus = z.enum(["pending", "calls", "running", "failed"]);

/** A pending save as the list door shows it (platform-facts A4). */
export const PendingSaveView = z
  .object({
    id: z.string(),
    status: PendingSaveStatus,
    run_id: z.string().nullable(),
    states: z.array(z.string()),
    subjects: z.array(z.object({ state: z.string(), subject: SubjectSchema })),
    calls: z.array(z.object({ kind: z.string(), target: z.string() })),
    attempts: z.number().int(),
    last_error: z.string().nullable(),
    failed_phase: z.enum(["records", "calls"]).nullable(),
    created_at: z.string(),
    failed_at: z.string().nullable(),
  })
  .describe("PendingSave");
export type PendingSaveView = z.infer<typeof PendingSaveView>;

export const RetryResult = z.object({
  id: z.string(),
  status: z.enum(["applied", "pending", "calls", "running", "failed"]),
  last_error: z.string().nullable(),
});
export type RetryResult = z.infer<typeof RetryResult>;

const Row = z.object({
  id: z.number(),
  status: PendingSaveStatus,
  target_kind: z.string(),
  target_name: z.string(),
  run_id: z.string().nullable(),
  states: z.string(),
  subjects: z.string(),
  work: z.string(),
  attempts: z.number(),
  last_error: z.string().nullable(),
  failed_phase: z.enum(["records", "calls"]).nullable(),
  created_at: z.number(),
  failed_at: z.number().nullable(),
  next_attempt_at: z.number(),
});
type Row = z.infer<typeof Row>;
const IdRow = z.object({ id: z.number() });
const SubjectsRow = z.object({ subjects: z.string() });
const CountsRow = z.object({ outstanding: z.number().nullable(), failed: z.number().nullable() });

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const storedStatesOf = (r: Pick<Row, "states">) => parseStored(PendingSaveView.shape.states, r.states, "state_pending_saves.states");
const storedSubjectsOf = (r: Pick<Row, "subjects">) => parseStored(PendingSaveView.shape.subjects, r.subjects, "state_pending_saves.subjects");

function viewOf(r: Row): PendingSaveView {
  return {
    id: String(r.id),
    status: r.status,
    run_id: r.run_id,
    states: storedStatesOf(r),
    subjects: storedSubjectsOf(r),
    calls: [],
    attempts: r.attempts,
    last_error: r.last_error,
    failed_phase: r.failed_phase,
    created_at: new Date(r.created_at).toISOString(),
    failed_at: iso(r.failed_at),
  };
}

function subjectsOf(items: PendingItem[]) {
  const seen = new Set<string>();
  const out: Array<{ state: string; subject: Subject }> = [];
  for (const i of items) {
    const k = heldKey(i.state, i.subject);
    if (!seen.has(k)) out.push({ state: i.state, subject: i.subject });
    seen.add(k);
  }
  return out;
}

/**
 * Queues a turn's leftover updates as one pending save; answers its id. It is published to the
 * access epochs at once (the target's route reads say whether saves are outstanding, and this
 * runs inside objects, where no request publishes for it), so the target's next turn holds the
 * save's subjects.
 */
export async function queueSave(
  env: Env,
  target: { target_kind: string; target_name: string },
  runId: string | null,
  work: PendingWork,
  nowMs: number,
): Promise<number> {
  const states = [...new Set(work.items.map((i) => i.state))];
  const row = await first(
    IdRow,
    d1(env.DB)`INSERT INTO state_pending_saves (status, target_kind, target_name, run_id, states, subjects, work, attempts, created_at, next_attempt_at)
       VALUES ('pending', ${target.target_kind}, ${target.target_name}, ${runId}, ${JSON.stringify(states)}, ${JSON.stringify(subjectsOf(work.items))},
               ${JSON.stringify(work)}, 0, ${nowMs}, ${nowMs}) RETURNING id`,
  );
  if (!row) throw new Error("queueing a pending save returned no id");
  await publishAccessChanges(env);
  return row.id;
}

/** The subjects outstanding saves of a target hold (`heldKey`s). */
export async function heldSubjects(db: D1Database, target: { target_kind: string; target_name: string }): Promise<Set<string>> {
  const results = await all(
    SubjectsRow,
    d1(db)`SELECT subjects FROM state_pending_saves WHERE target_kind = ${target.target_kind} AND target_name = ${target.target_name}`,
  );
  const held = new Set<string>();
  for (const r of results) for (const s of storedSubjectsOf(r)) held.add(heldKey(s.state, s.subject));
  return held;
}

/** The subjects of `state` that outstanding saves hold (the search and subjects doors' `held`). */
export async function heldInState(db: D1Database, state: string): Promise<Subject[]> {
  const results = await all(
    SubjectsRow,
    d1(db)`SELECT subjects FROM state_pending_saves WHERE EXISTS (SELECT 1 FROM json_each(states) WHERE value = ${state}) ORDER BY id`,
  );
  const out = new Map<string, Subject>();
  for (const r of results) for (const s of storedSubjectsOf(r)) if (s.state === state) out.set(heldKey(s.state, s.subject), s.subject);
  return [...out.values()];
}

/** Ids of the saves touching `state` (a re-declare reports them as `held`); `waitingOnly` leaves out failed ones. */
export async function savesOnState(db: D1Database, state: string, waitingOnly = false): Promise<string[]> {
  const waiting = waitingOnly ? sql` AND status != 'failed'` : sql``;
  const results = await all(
    IdRow,
    d1(db)`SELECT id FROM state_pending_saves WHERE EXISTS (SELECT 1 FROM json_each(states) WHERE value = ${state})${waiting} ORDER BY id`,
  );
  return results.map((r) => String(r.id));
}

async function getRow(db: D1Database, id: number): Promise<Row | null> {
  return first(Row, d1(db)`SELECT * FROM state_pending_saves WHERE id = ${id}`);
}

/** Does an older outstanding save hold one of this save's subjects? Then this one waits behind it. */
async function waitsBehind(db: D1Database, row: Row): Promise<boolean> {
  const mine = new Set(storedSubjectsOf(row).map((s) => heldKey(s.state, s.subject)));
  const results = await all(
    SubjectsRow,
    d1(db)`SELECT subjects FROM state_pending_saves WHERE id < ${row.id} AND target_kind = ${row.target_kind} AND target_name = ${row.target_name}`,
  );
  return results.some((r) => storedSubjectsOf(r).some((s) => mine.has(heldKey(s.state, s.subject))));
}

/**
 * Applies one save now: its items in order, each from the update it stopped at. Answers the
 * resulting status; an applied save's row is gone. Progress is kept as it goes, so a save that
 * stops halfway resumes where it stopped.
 */
export async function applySave(env: Env, id: number, nowMs: number): Promise<RetryResult> {
  const db = env.DB;
  const row = await getRow(db, id);
  if (!row) return { id: String(id), status: "applied", last_error: null };
  if (await waitsBehind(db, row)) return { id: String(id), status: "pending", last_error: null };
  const work = parseStored(PendingWork, row.work, "pending save work");
  const items = [...work.items];
  const later = async (status: "pending" | "failed", error: string | null) => {
    const attempts = row.attempts + 1;
    const failed = status === "failed" || attempts >= MAX_SAVE_ATTEMPTS;
    const next = nowMs + Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** (attempts - 1));
    const lastError = error ?? (failed ? "the state's object could not be reached; attempts ran out" : null);
    await run(
      d1(db)`UPDATE state_pending_saves SET status = ${failed ? "failed" : "pending"}, work = ${JSON.stringify({ ...work, items })}, attempts = ${attempts},
        last_error = ${lastError}, failed_phase = ${failed ? "records" : null}, failed_at = ${failed ? nowMs : null}, next_attempt_at = ${next} WHERE id = ${id}`,
    );
    return { id: String(id), status: failed ? ("failed" as const) : ("pending" as const), last_error: failed ? lastError : null };
  };
  while (items.length > 0) {
    const item = items[0];
    let from: number;
    try {
      const read = await stateStoreStub(env, item.state).bindingRead(item.subject, nowMs);
      if (!read.ok) return later("failed", `state binding (${item.state}) read: ${read.error}`);
      from = await applyAttachUpdates(
        env,
        { attach: item.attach, subject: read.subject, record: read.record, attachments: read.attachments },
        item.from,
        work.input,
        work.output,
        work.origin,
        nowMs,
      );
    } catch (err) {
      if (err instanceof BindingError) return later("failed", err.message);
      console.error("pending save: the state's object could not be reached", err);
      return later("pending", null);
    }
    if (from >= 0) {
      items[0] = { ...item, from };
      return later("pending", null);
    }
    items.shift();
  }
  await run(d1(db)`DELETE FROM state_pending_saves WHERE id = ${id}`);
  await publishAccessChanges(env);
  return { id: String(id), status: "applied", last_error: null };
}

/** The cron pass: applies due pending saves, oldest first, a bounded batch per run. */
export async function applyDueSaves(env: Env, nowMs: number, limit = 50): Promise<number> {
  const results = await all(
    IdRow,
    d1(env.DB)`SELECT id FROM state_pending_saves WHERE status = 'pending' AND next_attempt_at <= ${nowMs} ORDER BY id LIMIT ${limit}`,
  );
  for (const r of results) await applySave(env, r.id, nowMs);
  return results.length;
}

/** `POST /api/state-pending-saves/{id}/retry`: requeues a failed save and applies it now. */
export async function retrySave(env: Env, id: number, nowMs: number): Promise<RetryResult> {
  const row = await getRow(env.DB, id);
  if (!row) throw new HttpError(404, "no such pending save");
  if (row.status !== "failed") throw conflict("the pending save is not failed");
  await run(
    d1(env.DB)`UPDATE state_pending_saves SET status = 'pending', attempts = 0, last_error = NULL, failed_phase = NULL, failed_at = NULL,
      next_attempt_at = ${nowMs} WHERE id = ${id}`,
  );
  return applySave(env, id, nowMs);
}

export async function discardSave(db: D1Database, id: number): Promise<{ discarded: string }> {
  const r = await first(IdRow, d1(db)`DELETE FROM state_pending_saves WHERE id = ${id} RETURNING id`);
  if (!r) throw new HttpError(404, "no such pending save");
  return { discarded: String(id) };
}

/** The list door: outstanding (pending, calls, running) or failed saves, by id, cursor-paged. */
export async function listSaves(db: D1Database, which: "outstanding" | "failed", limit: number, cursor: number | null) {
  const filter = which === "failed" ? sql`status = 'failed'` : sql`status != 'failed'`;
  const q = d1(db);
  const stmts = [
    q`SELECT * FROM state_pending_saves WHERE ${filter} AND id > ${cursor ?? 0} ORDER BY id LIMIT ${limit + 1}`,
    q`SELECT SUM(status != 'failed') AS outstanding, SUM(status = 'failed') AS failed FROM state_pending_saves`,
  ];
  const [page, counts] = await batch(db, stmts);
  const found = rowsOf(Row, page?.results ?? [], stmts[0]?.text ?? "");
  const [count] = rowsOf(CountsRow, counts?.results ?? [], stmts[1]?.text ?? "");
  const rows = found.slice(0, limit);
  return {
    items: rows.map(viewOf),
    next_cursor: found.length > limit ? String(rows[rows.length - 1].id) : null,
    outstanding: count?.outstanding ?? 0,
    failed: count?.failed ?? 0,
  };
}
