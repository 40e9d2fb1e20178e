/**
 * The thread's queue of conversation events to POST (docs/inbox.md, "Conversation events"): one
 * row per event, in the order the inbox emitted it, each with its attempts and when it may go next.
 * On its own version line (meta `inbox_events_schema_version`) beside the records', like the
 * idempotency keys' table. A row goes once its POST got a 2xx, or when it is given up.
 */
import { type ObjectSchema, keyValueVersionRow, objectSql } from "../../platform/persistence/object-sql";

export const INBOX_EVENTS_SCHEMA: ObjectSchema = {
  name: "thread-inbox-events",
  versionRow: keyValueVersionRow("meta", "inbox_events_schema_version"),
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS inbox_events (
      seq         INTEGER PRIMARY KEY AUTOINCREMENT,
      route_name  TEXT NOT NULL,
      body        TEXT NOT NULL,
      attempts    INTEGER NOT NULL DEFAULT 0,
      due_at      INTEGER NOT NULL,
      lease_until INTEGER
    )`,
    ],
  ],
};

/** One queued event as stored. */
export interface QueuedEvent {
  seq: number;
  route_name: string;
  body: string;
  attempts: number;
  due_at: number;
  lease_until: number | null;
}

function eventsSql(storage: DurableObjectStorage, name: string) {
  return objectSql(storage.sql, `thread inbox events (${name})`);
}

/** Appends `rows`, due at `dueAt`, and keeps the newest `cap`: answers how many of the oldest were dropped. */
export function queueEvents(storage: DurableObjectStorage, rows: Array<{ route_name: string; body: string }>, dueAt: number, cap: number): number {
  const q = eventsSql(storage, "queue");
  for (const r of rows) q.run`INSERT INTO inbox_events (route_name, body, due_at) VALUES (${r.route_name}, ${r.body}, ${dueAt})`;
  const n = Number(q.one<{ n: number }>`SELECT COUNT(*) AS n FROM inbox_events`?.n ?? 0);
  if (n <= cap) return 0;
  return q.run`DELETE FROM inbox_events WHERE seq IN (SELECT seq FROM inbox_events ORDER BY seq LIMIT ${n - cap})`;
}

/** The oldest queued event (the only one that may go: the queue is delivered in order), or null. */
export function headEvent(storage: DurableObjectStorage): QueuedEvent | null {
  return eventsSql(storage, "head").one<
    QueuedEvent & Record<string, SqlStorageValue>
  >`SELECT seq, route_name, body, attempts, due_at, lease_until FROM inbox_events ORDER BY seq LIMIT 1`;
}

/** When the head may go next (its retry, or its claim's end), or null when the queue is empty. */
export function eventsDueAt(storage: DurableObjectStorage): number | null {
  const head = headEvent(storage);
  return head === null ? null : Math.max(head.due_at, head.lease_until ?? 0);
}

/** Claims the head for one attempt: a restart re-sends it only after the lease ran out. */
export function claimEvent(storage: DurableObjectStorage, seq: number, attempts: number, leaseUntil: number): void {
  eventsSql(storage, "claim").run`UPDATE inbox_events SET attempts = ${attempts}, lease_until = ${leaseUntil} WHERE seq = ${seq}`;
}

/** A failed attempt: the event waits until `dueAt`, unclaimed. */
export function retryEvent(storage: DurableObjectStorage, seq: number, dueAt: number): void {
  eventsSql(storage, "retry").run`UPDATE inbox_events SET due_at = ${dueAt}, lease_until = NULL WHERE seq = ${seq}`;
}

/** Delivered or given up. */
export function dropEvent(storage: DurableObjectStorage, seq: number): void {
  eventsSql(storage, "drop").run`DELETE FROM inbox_events WHERE seq = ${seq}`;
}

/** Forget, and the thread's last record pruned: the queue goes with the conversation. */
export function clearEvents(storage: DurableObjectStorage): void {
  eventsSql(storage, "clear").run`DELETE FROM inbox_events`;
}
