/**
 * The Interaction object's SQLite: one row for the interaction and its bookkeeping, and
 * the events not yet handed to the hub. Plain synchronous functions over `SqlStorage` (a Durable
 * Object's SQLite is synchronous), so each verb of the object is one read-decide-write step that
 * no other request can interleave with.
 *
 * Bookkeeping, each driven by the object's one alarm (src/interactions/lifecycle.ts decides):
 * - `index_dirty`: the listing row in D1 is behind the state;
 * - `ticket_due`: the audience is owed a callback ticket in its notification feed;
 * - `resume`: what the end still owes the run: `handoff` (tell the thread), `run` (resume it here,
 *   outside any thread), `done`, or `none` while pending;
 * - `purge_at`: when the ended interaction is deleted (its retention).
 */
import type { JsonObject } from "../platform/http/bounded-json";
import { parseStored, storedJsonObject } from "../platform/persistence/stored-json";
import { ParkedRun } from "../shared/parked-run";
import { InteractionEventInput } from "./rpc";
import { InteractionState } from "./record";
import { type ObjectSchema, type SqlFragment, migrateSchema, objectSql, sqlJoin, sqlPart, sqlText } from "../platform/persistence/object-sql";

/** The store's name in its statements' errors. */
const STORE = "interaction";

export type ResumeDue = "none" | "handoff" | "run" | "done";

/** The row, decoded. Instants are epoch ms. */
export interface InteractionRow {
  state: InteractionState;
  parked: ParkedRun | null;
  expires_at: number;
  purge_at: number | null;
  ticket_hash: string | null;
  ticket_expires_at: number | null;
  ticket_due: boolean;
  index_dirty: boolean;
  resume: ResumeDue;
  /** The thread record a handoff creates (minted once, so a retried handoff is the same record). */
  resume_message_id: string | null;
  /** Starts of an outside resume so far (an interrupted one is retried up to a bound). */
  resume_attempts: number;
  /** Who ended it (the door's user, or null: expiry), for the thread's resume record. */
  ended_by: string | null;
  /** The claim that answered it from the thread (the participant's inbound message id). */
  claimed_by: string | null;
  /** When to try owed work again after a failure. */
  retry_at: number | null;
}

/**
 * The `interaction` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const INTERACTION_SCHEMA: ObjectSchema = {
  name: STORE,
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS interaction (
    id                INTEGER PRIMARY KEY CHECK (id = 1),
    state             TEXT NOT NULL,
    parked            TEXT,
    expires_at        INTEGER NOT NULL,
    purge_at          INTEGER,
    ticket_hash       TEXT,
    ticket_expires_at INTEGER,
    ticket_due        INTEGER NOT NULL DEFAULT 0,
    index_dirty       INTEGER NOT NULL DEFAULT 1,
    resume            TEXT NOT NULL DEFAULT 'none',
    resume_message_id TEXT,
    resume_attempts   INTEGER NOT NULL DEFAULT 0,
    ended_by          TEXT,
    claimed_by        TEXT,
    retry_at          INTEGER
  )`,
      "CREATE TABLE IF NOT EXISTS outbox_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, event TEXT NOT NULL)",
    ],
  ],
};

/** Brings the `interaction` tables to their current version (idempotent). */
export function migrateInteraction(sql: SqlStorage): void {
  migrateSchema(sql, INTERACTION_SCHEMA);
}

type Raw = {
  state: string;
  parked: string | null;
  expires_at: number;
  purge_at: number | null;
  ticket_hash: string | null;
  ticket_expires_at: number | null;
  ticket_due: number;
  index_dirty: number;
  resume: string;
  resume_message_id: string | null;
  resume_attempts: number;
  ended_by: string | null;
  claimed_by: string | null;
  retry_at: number | null;
};

/** The interaction, or null when this object holds none. */
export function readRow(sql: SqlStorage): InteractionRow | null {
  const r = objectSql(sql, STORE).one<Raw>`SELECT * FROM interaction WHERE id = 1`;
  if (!r) return null;
  return {
    state: parseStored(InteractionState, r.state, "interaction"),
    parked: r.parked === null ? null : parseStored(ParkedRun, r.parked, "parked run"),
    expires_at: r.expires_at,
    purge_at: r.purge_at,
    ticket_hash: r.ticket_hash,
    ticket_expires_at: r.ticket_expires_at,
    ticket_due: r.ticket_due === 1,
    index_dirty: r.index_dirty === 1,
    resume: r.resume as ResumeDue,
    resume_message_id: r.resume_message_id,
    resume_attempts: r.resume_attempts,
    ended_by: r.ended_by,
    claimed_by: r.claimed_by,
    retry_at: r.retry_at,
  };
}

/** Inserts the interaction (the caller checked there is none). */
export function insertRow(sql: SqlStorage, state: InteractionState, parked: ParkedRun, ticketDue: boolean): void {
  objectSql(sql, STORE).run`INSERT INTO interaction (id, state, parked, expires_at, ticket_due, index_dirty)
    VALUES (1, ${JSON.stringify(state)}, ${JSON.stringify(parked)}, ${Date.parse(state.expires_at)}, ${ticketDue ? 1 : 0}, 1)`;
}

/** Writes the fields given. */
export function saveRow(sql: SqlStorage, patch: Partial<InteractionRow>): void {
  const sets: SqlFragment[] = [];
  const put = (col: string, v: string | number | null) => {
    sets.push(sqlPart`${sqlText(col)} = ${v}`);
  };
  if (patch.state) put("state", JSON.stringify(patch.state));
  if ("parked" in patch) put("parked", patch.parked ? JSON.stringify(patch.parked) : null);
  if ("purge_at" in patch) put("purge_at", patch.purge_at ?? null);
  if ("ticket_hash" in patch) put("ticket_hash", patch.ticket_hash ?? null);
  if ("ticket_expires_at" in patch) put("ticket_expires_at", patch.ticket_expires_at ?? null);
  if ("ticket_due" in patch) put("ticket_due", patch.ticket_due ? 1 : 0);
  if ("index_dirty" in patch) put("index_dirty", patch.index_dirty ? 1 : 0);
  if (patch.resume) put("resume", patch.resume);
  if ("resume_message_id" in patch) put("resume_message_id", patch.resume_message_id ?? null);
  if ("resume_attempts" in patch) put("resume_attempts", patch.resume_attempts ?? 0);
  if ("ended_by" in patch) put("ended_by", patch.ended_by ?? null);
  if ("claimed_by" in patch) put("claimed_by", patch.claimed_by ?? null);
  if ("retry_at" in patch) put("retry_at", patch.retry_at ?? null);
  if (!sets.length) return;
  // The column names are the literals above; only the values are bound.
  objectSql(sql, STORE).run`UPDATE interaction SET ${sqlJoin(sets, ", ")} WHERE id = 1`;
}

/** Queues an event for the hub (written in the same step as the transition it reports). */
export function queueEvent(sql: SqlStorage, event: InteractionEventInput): void {
  objectSql(sql, STORE).run`INSERT INTO outbox_events (event) VALUES (${JSON.stringify(event)})`;
}

/** The events not yet handed to the hub, oldest first, with their sequence numbers. */
export function queuedEvents(sql: SqlStorage): Array<{ seq: number; event: InteractionEventInput }> {
  return objectSql(sql, STORE)<{ seq: number; event: string }>`SELECT seq, event FROM outbox_events ORDER BY seq`.map((r) => ({
    seq: r.seq,
    event: parseStored(InteractionEventInput, r.event, "outbox_events.event"),
  }));
}

/** Drops the events up to `seq` (the hub holds them). */
export function dropEvents(sql: SqlStorage, upTo: number): void {
  objectSql(sql, STORE).run`DELETE FROM outbox_events WHERE seq <= ${upTo}`;
}

/** The ask's result the resumed run reads, decoded as JSON (typed for RPC). */
export function asJsonObject(value: Record<string, unknown>): JsonObject {
  return parseStored(storedJsonObject, JSON.stringify(value), "the ask's result");
}
