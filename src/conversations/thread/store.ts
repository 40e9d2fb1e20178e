/**
 * The ThreadObject's SQLite: answer records with their turn and delivery bookkeeping, a small meta
 * table, and the versioned migration that also owns the kv provider's agent-memory tables. Plain
 * synchronous functions over DurableObjectStorage (DO SQLite is synchronous), so the thread's parts
 * read as the state machine they implement.
 */
import { TurnInbound } from "../model/payload";
import { AnswerRecord } from "../model/record";
import { parseStored } from "../../platform/persistence/stored-json";
import { MEMORY_STEPS } from "../../targets/checkpoints/thread-memory";
import { type ObjectSchema, columnsOf, execStatement, keyValueVersionRow, migrateSchema } from "../../platform/persistence/object-sql";

/** Where a record's turn stands: waiting, running under an intake lease, or settled. */
export type TurnState = "queued" | "running" | "done";

/** A record row: the answer record with its turn and delivery bookkeeping (epoch ms instants). */
export interface StoredRecord {
  seq: number;
  record: AnswerRecord;
  inbound: TurnInbound;
  turn_state: TurnState;
  turn_lease_until: number | null;
  delivery_due_at: number | null;
  delivery_lease_until: number | null;
  grace_until: number | null;
  expires_at: number | null;
  /** Channel delivery progress: chunks already accepted by the provider. */
  chunks_sent: number;
  /** Runs of this turn started so far, counted before each run so a run that kills the object counts. */
  turn_attempts: number;
}

/** Runs a statement, naming it and its text in the error so a failing query is identifiable in logs. */
export function sql<T extends Record<string, SqlStorageValue>>(storage: DurableObjectStorage, name: string, query: string, ...args: unknown[]): T[] {
  return execStatement<T>(storage.sql, `thread (${name})`, query, args as SqlStorageValue[]).rows;
}

/**
 * The records' schema, one step per version. Its version row is `schema_version` in the meta table,
 * where this object kept it before the shared kit, so objects already versioned need no adoption.
 */
export const THREAD_SCHEMA: ObjectSchema = {
  name: "thread",
  versionRow: keyValueVersionRow("meta", "schema_version"),
  steps: [
    [
      "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
      `CREATE TABLE IF NOT EXISTS records (
      seq                  INTEGER PRIMARY KEY AUTOINCREMENT,
      message_id           TEXT NOT NULL UNIQUE,
      record               TEXT NOT NULL,
      inbound              TEXT NOT NULL,
      status               TEXT NOT NULL,
      turn_state           TEXT NOT NULL,
      turn_lease_until     INTEGER,
      delivery_due_at      INTEGER,
      delivery_lease_until INTEGER,
      grace_until          INTEGER,
      expires_at           INTEGER,
      chunks_sent          INTEGER NOT NULL DEFAULT 0
    )`,
      "CREATE INDEX IF NOT EXISTS records_turns ON records(turn_state, seq)",
      "CREATE INDEX IF NOT EXISTS records_status ON records(status, delivery_due_at)",
      "CREATE INDEX IF NOT EXISTS records_expiry ON records(expires_at)",
    ],
    // v2: turn runs started, so a turn that keeps killing its object is abandoned (poison turns).
    ["ALTER TABLE records ADD COLUMN turn_attempts INTEGER NOT NULL DEFAULT 0"],
    // v3: the outbox towards the admin listings, so that no D1 write is on the per-message path.
    // One row per noted transition; src/conversations/thread/index-outbox.ts pushes and drops them.
    [
      "CREATE TABLE IF NOT EXISTS index_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, noted_at INTEGER NOT NULL, settled INTEGER NOT NULL DEFAULT 0, failed TEXT, dropped TEXT)",
    ],
    // v4: each settled turn's run trace (src/conversations/thread/turn-trace.ts), keyed by its message id and
    // deleted with its record; the outbox carries the trace's summary row and metrics counters
    // towards the shards in `extra`.
    (s) => {
      s.exec("CREATE TABLE IF NOT EXISTS run_traces (message_id TEXT PRIMARY KEY, trace TEXT NOT NULL)");
      // Idempotent like the steps above: an object whose version was rolled back keeps its column.
      if (!columnsOf(s, "index_outbox").includes("extra")) s.exec("ALTER TABLE index_outbox ADD COLUMN extra TEXT");
    },
    // v5: the interactions a turn of this thread parked on and that still wait for the thread's
    // next inbound (src/conversations/thread/parked.ts); a row goes when the interaction is answered here or
    // handed back as a resume turn.
    [
      "CREATE TABLE IF NOT EXISTS parked_interactions (interaction_id TEXT PRIMARY KEY, asked_by TEXT NOT NULL, route TEXT NOT NULL, noted_at INTEGER NOT NULL)",
    ],
    // v6: a web visitor's session and transcript (src/conversations/thread/web-visitor.ts); empty
    // on every thread of another channel.
    [
      "CREATE TABLE IF NOT EXISTS web_session (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL, secret_hash TEXT NOT NULL, expires_at INTEGER NOT NULL, pending INTEGER NOT NULL, params TEXT)",
      "CREATE TABLE IF NOT EXISTS web_transcript (seq INTEGER PRIMARY KEY AUTOINCREMENT, role TEXT NOT NULL, text TEXT NOT NULL, part TEXT, message_id TEXT, at INTEGER NOT NULL)",
      "CREATE TABLE IF NOT EXISTS web_ticket (ticket_hash TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)",
    ],
  ],
};

/**
 * The agent-memory tables' line (meta `memory_schema_version`). They are the checkpoint provider's
 * tables, versioned beside the records' so either can change without renumbering the other's steps.
 */
export const THREAD_MEMORY_SCHEMA: ObjectSchema = {
  name: "thread-memory",
  versionRow: keyValueVersionRow("meta", "memory_schema_version"),
  steps: MEMORY_STEPS,
};

/** Brings the object's schema up to date; idempotent, run once per instance before any request. */
export function migrate(storage: DurableObjectStorage): void {
  migrateSchema(storage.sql, THREAD_SCHEMA);
  migrateSchema(storage.sql, THREAD_MEMORY_SCHEMA);
}

/** One meta value, or null. */
export function getMeta(storage: DurableObjectStorage, key: string): string | null {
  return sql<{ value: string }>(storage, "get meta", "SELECT value FROM meta WHERE key = ?", key)[0]?.value ?? null;
}

/** Drops one meta value. */
export function deleteMeta(storage: DurableObjectStorage, key: string): void {
  sql(storage, "delete meta", "DELETE FROM meta WHERE key = ?", key);
}

/** Writes one meta value. */
export function setMeta(storage: DurableObjectStorage, key: string, value: string): void {
  sql(storage, "set meta", "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", key, value);
}

/** A `records` row as SQLite returns it: the stored record with its JSON columns still text. */
type Row = Omit<StoredRecord, "record" | "inbound" | "turn_state"> & { seq: number; record: string; inbound: string; turn_state: string };

function fromRow(r: Row): StoredRecord {
  return {
    seq: r.seq,
    record: parseStored(AnswerRecord, r.record, "thread record"),
    inbound: parseStored(TurnInbound, r.inbound, "thread record inbound"),
    turn_state: r.turn_state as TurnState,
    turn_lease_until: r.turn_lease_until,
    delivery_due_at: r.delivery_due_at,
    delivery_lease_until: r.delivery_lease_until,
    grace_until: r.grace_until,
    expires_at: r.expires_at,
    chunks_sent: r.chunks_sent,
    turn_attempts: r.turn_attempts,
  };
}

const COLS = "seq, record, inbound, turn_state, turn_lease_until, delivery_due_at, delivery_lease_until, grace_until, expires_at, chunks_sent, turn_attempts";

/** Inserts a new record with its turn input, in turn state `turnState`. */
export function insertRecord(storage: DurableObjectStorage, rec: AnswerRecord, inbound: TurnInbound, turnState: TurnState, expiresAt: number | null): void {
  sql(
    storage,
    "insert record",
    "INSERT INTO records (message_id, record, inbound, status, turn_state, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
    rec.message_id,
    JSON.stringify(rec),
    JSON.stringify(inbound),
    rec.status,
    turnState,
    expiresAt,
  );
}

/** One record row by message id, expired or not. */
export function getStored(storage: DurableObjectStorage, messageId: string): StoredRecord | null {
  const r = sql<Row>(storage, "get record", `SELECT ${COLS} FROM records WHERE message_id = ?`, messageId)[0];
  return r ? fromRow(r) : null;
}

/** Persists the record body and any bookkeeping fields given. */
export function saveStored(storage: DurableObjectStorage, s: Pick<StoredRecord, "record"> & Partial<Omit<StoredRecord, "record" | "seq" | "inbound">>): void {
  const sets = ["record = ?", "status = ?"];
  const args: unknown[] = [JSON.stringify(s.record), s.record.status];
  for (const key of [
    "turn_state",
    "turn_lease_until",
    "delivery_due_at",
    "delivery_lease_until",
    "grace_until",
    "expires_at",
    "chunks_sent",
    "turn_attempts",
  ] as const) {
    if (key in s) {
      sets.push(`${key} = ?`);
      args.push(s[key] ?? null);
    }
  }
  args.push(s.record.message_id);
  sql(storage, "save record", `UPDATE records SET ${sets.join(", ")} WHERE message_id = ?`, ...args);
}

/** Turns queued and not yet running (the queue depth). */
export function countWaiting(storage: DurableObjectStorage): number {
  return sql<{ n: number }>(storage, "count waiting", "SELECT COUNT(*) AS n FROM records WHERE turn_state = 'queued'")[0].n;
}

/** The oldest queued turn. */
export function nextQueued(storage: DurableObjectStorage): StoredRecord | null {
  const r = sql<Row>(storage, "next queued", `SELECT ${COLS} FROM records WHERE turn_state = 'queued' ORDER BY seq LIMIT 1`)[0];
  return r ? fromRow(r) : null;
}

/** Rows whose turn is running (here or in a dead instance). */
export function runningTurns(storage: DurableObjectStorage): StoredRecord[] {
  return sql<Row>(storage, "running turns", `SELECT ${COLS} FROM records WHERE turn_state = 'running' ORDER BY seq`).map(fromRow);
}

/** True while any turn is queued or running. */
export function hasTurnInFlight(storage: DurableObjectStorage): boolean {
  return sql(storage, "turn in flight", "SELECT 1 AS one FROM records WHERE turn_state IN ('queued', 'running') LIMIT 1").length > 0;
}

/**
 * The thread's delivery head: its oldest `pending_delivery` record, if that one's next attempt is
 * due and its claim is free. Deliveries go out in the thread's order (docs/architecture.md,
 * "Delivery order"): while the oldest pending record waits out a backoff, later ones wait too.
 */
export function dueDeliveryHead(storage: DurableObjectStorage, nowMs: number): StoredRecord | null {
  const r = sql<Row>(storage, "delivery head", `SELECT ${COLS} FROM records WHERE status = 'pending_delivery' ORDER BY seq LIMIT 1`)[0];
  if (!r) return null;
  const head = fromRow(r);
  if ((head.delivery_due_at ?? 0) > nowMs || (head.delivery_lease_until ?? 0) > nowMs) return null;
  return head;
}

/** provisional records whose receipt grace ended by `nowMs`. */
export function graceElapsed(storage: DurableObjectStorage, nowMs: number): StoredRecord[] {
  return sql<Row>(storage, "grace elapsed", `SELECT ${COLS} FROM records WHERE status = 'provisional' AND grace_until <= ? ORDER BY seq`, nowMs).map(fromRow);
}

/** Earliest instant at which the alarm has work: the delivery head's attempt, a lease, a grace end, an expiry. */
export function nextWake(storage: DurableObjectStorage, intakeLeaseMs: number, nowMs: number): number | null {
  const r = sql<{ t: number | null }>(
    storage,
    "next wake",
    `SELECT MIN(t) AS t FROM (
       SELECT * FROM (SELECT MAX(delivery_due_at, COALESCE(delivery_lease_until, 0)) AS t FROM records WHERE status = 'pending_delivery' ORDER BY seq LIMIT 1)
       UNION ALL SELECT turn_lease_until FROM records WHERE turn_state = 'running'
       UNION ALL SELECT ? FROM records WHERE turn_state = 'queued'
       UNION ALL SELECT grace_until FROM records WHERE status = 'provisional'
       UNION ALL SELECT expires_at FROM records WHERE expires_at IS NOT NULL
     )`,
    nowMs + intakeLeaseMs,
  )[0];
  return r?.t ?? null;
}

/** Deletes records whose retention ended, with their run traces; returns their ids and those of the traces. */
export function pruneExpired(storage: DurableObjectStorage, nowMs: number): { ids: string[]; traced: string[] } {
  const gone = sql<{ message_id: string; traced: number }>(
    storage,
    "expired ids",
    "SELECT r.message_id, t.message_id IS NOT NULL AS traced FROM records r LEFT JOIN run_traces t ON t.message_id = r.message_id WHERE r.expires_at IS NOT NULL AND r.expires_at <= ?",
    nowMs,
  );
  if (gone.length) {
    sql(
      storage,
      "prune expired traces",
      "DELETE FROM run_traces WHERE message_id IN (SELECT message_id FROM records WHERE expires_at IS NOT NULL AND expires_at <= ?)",
      nowMs,
    );
    sql(storage, "prune expired", "DELETE FROM records WHERE expires_at IS NOT NULL AND expires_at <= ?", nowMs);
  }
  return { ids: gone.map((r) => r.message_id), traced: gone.filter((r) => r.traced).map((r) => r.message_id) };
}

/** Live (unexpired) records, oldest first or newest first, for transcripts and search. */
export function liveRecords(storage: DurableObjectStorage, nowMs: number, order: "asc" | "desc", offset: number, limit: number): AnswerRecord[] {
  return sql<{ record: string }>(
    storage,
    "live records",
    `SELECT record FROM records WHERE expires_at IS NULL OR expires_at > ? ORDER BY seq ${order === "asc" ? "ASC" : "DESC"} LIMIT ? OFFSET ?`,
    nowMs,
    limit,
    offset,
  ).map((r) => parseStored(AnswerRecord, r.record, "thread record"));
}

/** Records not expired at `nowMs`. */
export function countLive(storage: DurableObjectStorage, nowMs: number): number {
  return sql<{ n: number }>(storage, "count live", "SELECT COUNT(*) AS n FROM records WHERE expires_at IS NULL OR expires_at > ?", nowMs)[0].n;
}

/** Every record row, expired or not (the listing's message count). */
/** The client address of the newest live record of route `routeName` that has one, or null. */
export function newestAddressOn(storage: DurableObjectStorage, routeName: string, nowMs: number): string | null {
  const rows = sql<{ address: string }>(
    storage,
    "newest address on a route",
    `SELECT json_extract(record, '$.client_address') AS address FROM records
     WHERE (expires_at IS NULL OR expires_at > ?) AND json_extract(record, '$.route_name') = ? AND json_extract(record, '$.client_address') IS NOT NULL
     ORDER BY seq DESC LIMIT 1`,
    nowMs,
    routeName,
  );
  return rows[0]?.address ?? null;
}

export function countAll(storage: DurableObjectStorage): number {
  return sql<{ n: number }>(storage, "count all", "SELECT COUNT(*) AS n FROM records")[0].n;
}

/** Deletes every record, run trace and parked interaction (thread forget); returns how many records there were. */
export function deleteAllRecords(storage: DurableObjectStorage): number {
  const n = countAll(storage);
  sql(storage, "delete all records", "DELETE FROM records");
  sql(storage, "delete all run traces", "DELETE FROM run_traces");
  sql(storage, "delete all parked interactions", "DELETE FROM parked_interactions");
  return n;
}

/** The thread's FIFO depth (turns queued or running) and delivery backlog (records pending delivery). Index reads only. */
export function threadLoad(storage: DurableObjectStorage): { queue_depth: number; pending_deliveries: number } {
  return sql<{ queue_depth: number; pending_deliveries: number }>(
    storage,
    "thread load",
    `SELECT (SELECT COUNT(*) FROM records WHERE turn_state IN ('queued', 'running')) AS queue_depth,
            (SELECT COUNT(*) FROM records WHERE status = 'pending_delivery') AS pending_deliveries`,
  )[0];
}
