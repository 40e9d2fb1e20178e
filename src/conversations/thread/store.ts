/**
 * The ThreadObject's SQLite: answer records with their turn and delivery bookkeeping, a small meta
 * table, and the versioned migration that also owns the kv provider's agent-memory tables. Plain
 * synchronous functions over DurableObjectStorage (DO SQLite is synchronous), so the thread's parts
 * read as the state machine they implement.
 *
 * Beside the table, each object keeps the bookkeeping of its open records in memory (`OpenRecords`):
 * the records whose turn is queued or running or whose delivery is pending or provisional, with
 * their instants, plus how many records there are and the earliest expiry. It is read from storage
 * once, at the first use in an instance, kept up to date by the write functions below (every write
 * to `records` goes through them), and read again from storage at each alarm firing, so the alarm
 * acts on what is stored. The alarm's next wake, the queue depth, the next queued turn and the
 * delivery head come from it without a statement.
 */
import { TurnInbound } from "../model/payload";
import { AnswerRecord } from "../model/record";
import { parseStored } from "../../platform/persistence/stored-json";
import { MEMORY_STEPS } from "../../targets/checkpoints/thread-memory";
import {
  type ObjectSchema,
  type ObjectSql,
  columnsOf,
  keyValueVersionRow,
  migrateSchema,
  objectSql,
  sqlJoin,
  sqlPart,
  sqlText,
} from "../../platform/persistence/object-sql";
import { THREAD_KEYS_SCHEMA } from "./idempotency-keys";
import { INBOX_EVENTS_SCHEMA } from "./inbox-events-table";
import { THREAD_NOTES_SCHEMA } from "./notes";
import { FEEDBACK_SCHEMA } from "./answer-feedback-table";
import { WEB_ATTACHMENTS_SCHEMA } from "./web-attachments";
import { WEB_PROFILE_SCHEMA } from "./web-visitor";

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

/** The tag over the thread's SQLite for statement `name`: a failure names it and its text, so a failing query is identifiable in logs. */
export function threadSql(storage: DurableObjectStorage, name: string): ObjectSql {
  return objectSql(storage.sql, `thread (${name})`);
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
      const q = objectSql(s, "thread");
      q.run`CREATE TABLE IF NOT EXISTS run_traces (message_id TEXT PRIMARY KEY, trace TEXT NOT NULL)`;
      // Idempotent like the steps above: an object whose version was rolled back keeps its column.
      if (!columnsOf(s, "index_outbox").includes("extra")) q.run`ALTER TABLE index_outbox ADD COLUMN extra TEXT`;
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
    // v7: each transcript entry's expiry, so the page's copy of a record never outlives the record
    // (src/conversations/thread/web-visitor.ts); entries written before it are given one at the
    // object's next alarm, a retention window from then.
    (s) => {
      const q = objectSql(s, "thread");
      if (!columnsOf(s, "web_transcript").includes("expires_at")) q.run`ALTER TABLE web_transcript ADD COLUMN expires_at INTEGER`;
      q.run`CREATE INDEX IF NOT EXISTS web_transcript_expiry ON web_transcript(expires_at)`;
      q.run`CREATE INDEX IF NOT EXISTS web_transcript_message ON web_transcript(message_id)`;
    },
    // v8: a transcript entry marks the answer of a turn a stop door ended (1; null otherwise), so a
    // reload shows it as stopped (src/conversations/thread/web-visitor.ts).
    (s) => {
      if (!columnsOf(s, "web_transcript").includes("stopped")) objectSql(s, "thread").run`ALTER TABLE web_transcript ADD COLUMN stopped INTEGER`;
    },
    // v9: a web visitor's thread keeps one session per device, keyed by its secret's hash and
    // ordered by last use (a verified user's devices share the thread; an anonymous visitor keeps
    // one), and a stream ticket names the session it was minted for. The single session of v6 is
    // carried over; tickets (60 s each) are dropped rather than guessed an owner.
    (s) => {
      const q = objectSql(s, "thread");
      if (columnsOf(s, "web_session").includes("id")) {
        q.run`CREATE TABLE web_session_v9 (secret_hash TEXT PRIMARY KEY, identity TEXT NOT NULL, expires_at INTEGER NOT NULL, pending INTEGER NOT NULL, params TEXT, used_at INTEGER NOT NULL)`;
        q.run`INSERT INTO web_session_v9 (secret_hash, identity, expires_at, pending, params, used_at) SELECT secret_hash, identity, expires_at, pending, params, 0 FROM web_session`;
        q.run`DROP TABLE web_session`;
        q.run`ALTER TABLE web_session_v9 RENAME TO web_session`;
      }
      if (!columnsOf(s, "web_ticket").includes("session_hash")) {
        q.run`DELETE FROM web_ticket`;
        q.run`ALTER TABLE web_ticket ADD COLUMN session_hash TEXT NOT NULL DEFAULT ''`;
      }
    },
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
  migrateSchema(storage.sql, THREAD_KEYS_SCHEMA);
  migrateSchema(storage.sql, INBOX_EVENTS_SCHEMA);
  migrateSchema(storage.sql, THREAD_NOTES_SCHEMA);
  migrateSchema(storage.sql, FEEDBACK_SCHEMA);
  migrateSchema(storage.sql, WEB_PROFILE_SCHEMA);
  migrateSchema(storage.sql, WEB_ATTACHMENTS_SCHEMA);
}

/** One meta value, or null. */
export function getMeta(storage: DurableObjectStorage, key: string): string | null {
  return threadSql(storage, "get meta")<{ value: string }>`SELECT value FROM meta WHERE key = ${key}`[0]?.value ?? null;
}

/** Drops one meta value. */
export function deleteMeta(storage: DurableObjectStorage, key: string): void {
  threadSql(storage, "delete meta").run`DELETE FROM meta WHERE key = ${key}`;
}

/** Writes one meta value. */
export function setMeta(storage: DurableObjectStorage, key: string, value: string): void {
  threadSql(storage, "set meta").run`INSERT OR REPLACE INTO meta (key, value) VALUES (${key}, ${value})`;
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

/** An open record's bookkeeping, as the memory holds it. */
type OpenRecord = {
  seq: number;
  status: string;
  turn_state: TurnState;
  turn_lease_until: number | null;
  delivery_due_at: number | null;
  delivery_lease_until: number | null;
  grace_until: number | null;
};

/** Does a record in this state still have work ahead (a turn to run, a delivery to finish)? */
function isOpen(status: string, turnState: TurnState): boolean {
  return turnState === "queued" || turnState === "running" || status === "pending_delivery" || status === "provisional";
}

/** The records' bookkeeping in memory (see the module comment). */
class OpenRecords {
  /** Open records by message id. */
  readonly open = new Map<string, OpenRecord>();
  /** Records in the table, open or not. */
  count = 0;
  /** The earliest `expires_at` of any record. */
  minExpiry: number | null = null;
  /** A write met a record the book did not hold: read the table again at the next use. */
  stale = false;

  constructor(storage: DurableObjectStorage) {
    this.load(storage);
  }

  load(storage: DurableObjectStorage): void {
    this.open.clear();
    const rows = threadSql(storage, "open records")<
      OpenRecord & { message_id: string }
    >`SELECT seq, message_id, status, turn_state, turn_lease_until, delivery_due_at, delivery_lease_until, grace_until FROM records
       WHERE turn_state IN ('queued', 'running') OR status IN ('pending_delivery', 'provisional') ORDER BY seq`;
    for (const { message_id, ...r } of rows) this.open.set(message_id, r);
    const agg = threadSql(storage, "records count")<{ n: number; e: number | null }>`SELECT COUNT(*) AS n, MIN(expires_at) AS e FROM records`[0];
    this.count = agg.n;
    this.minExpiry = agg.e;
    this.stale = false;
  }

  expiresAt(at: number | null | undefined): void {
    if (typeof at === "number") this.minExpiry = this.minExpiry === null ? at : Math.min(this.minExpiry, at);
  }

  /** The open record with the lowest seq that `pick` accepts, with its id. */
  first(pick: (r: OpenRecord) => boolean): [string, OpenRecord] | null {
    let best: [string, OpenRecord] | null = null;
    for (const entry of this.open) if (pick(entry[1]) && (!best || entry[1].seq < best[1].seq)) best = entry;
    return best;
  }
}

/** Each object's book, by its storage (an instance's storage lives and goes with the instance). */
const books = new WeakMap<DurableObjectStorage, OpenRecords>();

/** The object's book, read from storage at the first use (or again after a write it could not follow). */
function bookOf(storage: DurableObjectStorage): OpenRecords {
  let book = books.get(storage);
  if (!book) {
    book = new OpenRecords(storage);
    books.set(storage, book);
  } else if (book.stale) book.load(storage);
  return book;
}

/** Reads the records' bookkeeping from storage again (the alarm's re-read: it acts on what is stored). */
export function reloadBook(storage: DurableObjectStorage): void {
  const book = books.get(storage);
  if (book) book.load(storage);
  else bookOf(storage);
}

/**
 * Inserts a new record with its turn input, in turn state `turnState`; false when a record with
 * its message id is already stored, or when `maxQueued` turns or more are queued (nothing is
 * written then). The queue's bound is checked on the table, in the insert itself.
 */
export function insertRecord(
  storage: DurableObjectStorage,
  rec: AnswerRecord,
  inbound: TurnInbound,
  turnState: TurnState,
  expiresAt: number | null,
  maxQueued: number | null = null,
): boolean {
  const book = bookOf(storage);
  const row = threadSql(storage, "insert record")<{ seq: number }>`INSERT INTO records (message_id, record, inbound, status, turn_state, expires_at)
     SELECT ${rec.message_id}, ${JSON.stringify(rec)}, ${JSON.stringify(inbound)}, ${rec.status}, ${turnState}, ${expiresAt} WHERE ${maxQueued} IS NULL OR (SELECT COUNT(*) FROM records WHERE turn_state = 'queued') < ${maxQueued}
     ON CONFLICT (message_id) DO NOTHING RETURNING seq`[0];
  if (!row) return false;
  book.count++;
  book.expiresAt(expiresAt);
  if (isOpen(rec.status, turnState)) {
    book.open.set(rec.message_id, {
      seq: row.seq,
      status: rec.status,
      turn_state: turnState,
      turn_lease_until: null,
      delivery_due_at: null,
      delivery_lease_until: null,
      grace_until: null,
    });
  }
  return true;
}

/** The thread id of the stored record `messageId` (a duplicate's answer), or null. */
export function storedThreadId(storage: DurableObjectStorage, messageId: string): string | null {
  const r = threadSql(storage, "record thread")<{
    t: string | null;
  }>`SELECT json_extract(record, '$.thread_id') AS t FROM records WHERE message_id = ${messageId}`[0];
  return r?.t ?? null;
}

/** One record row by message id, expired or not. */
export function getStored(storage: DurableObjectStorage, messageId: string): StoredRecord | null {
  const r = threadSql(storage, "get record")<Row>`SELECT ${sqlText(COLS)} FROM records WHERE message_id = ${messageId}`[0];
  return r ? fromRow(r) : null;
}

/** Persists the record body and any bookkeeping fields given. */
export function saveStored(storage: DurableObjectStorage, s: Pick<StoredRecord, "record"> & Partial<Omit<StoredRecord, "record" | "seq" | "inbound">>): void {
  const sets = [sqlPart`record = ${JSON.stringify(s.record)}`, sqlPart`status = ${s.record.status}`];
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
    if (key in s) sets.push(sqlPart`${sqlText(key)} = ${s[key] ?? null}`);
  }
  const book = bookOf(storage);
  threadSql(storage, "save record").run`UPDATE records SET ${sqlJoin(sets, ", ")} WHERE message_id = ${s.record.message_id}`;
  book.expiresAt(s.expires_at);
  const cur = book.open.get(s.record.message_id);
  if (!cur) {
    // A record the book does not hold open: fine while it stays closed, else read the table again.
    if (isOpen(s.record.status, s.turn_state ?? "done")) book.stale = true;
    return;
  }
  const next: OpenRecord = { ...cur, status: s.record.status };
  if (s.turn_state !== undefined) next.turn_state = s.turn_state;
  if ("turn_lease_until" in s) next.turn_lease_until = s.turn_lease_until ?? null;
  if ("delivery_due_at" in s) next.delivery_due_at = s.delivery_due_at ?? null;
  if ("delivery_lease_until" in s) next.delivery_lease_until = s.delivery_lease_until ?? null;
  if ("grace_until" in s) next.grace_until = s.grace_until ?? null;
  if (isOpen(next.status, next.turn_state)) book.open.set(s.record.message_id, next);
  else book.open.delete(s.record.message_id);
}

/** Is record `messageId` still open (its turn or delivery not finished; false once forgotten)? */
export function isOpenRecord(storage: DurableObjectStorage, messageId: string): boolean {
  return bookOf(storage).open.has(messageId);
}

/** How many records are open (the book's size: queued and running turns, pending deliveries). */
export function openRecordCount(storage: DurableObjectStorage): number {
  return bookOf(storage).open.size;
}

/** Is record `messageId`'s turn queued (accepted, not yet started)? */
export function isQueued(storage: DurableObjectStorage, messageId: string): boolean {
  return bookOf(storage).open.get(messageId)?.turn_state === "queued";
}

/** Is record `messageId`'s turn running? */
export function isRunning(storage: DurableObjectStorage, messageId: string): boolean {
  return bookOf(storage).open.get(messageId)?.turn_state === "running";
}

/** The oldest queued turn's message id, or null. */
export function nextQueuedId(storage: DurableObjectStorage): string | null {
  return bookOf(storage).first((r) => r.turn_state === "queued")?.[0] ?? null;
}

/** The oldest queued turn. */
export function nextQueued(storage: DurableObjectStorage): StoredRecord | null {
  const id = nextQueuedId(storage);
  return id === null ? null : getStored(storage, id);
}

/** Does the book hold a running turn other than `activeTurn` whose lease lapsed by `nowMs`? */
export function hasOrphan(storage: DurableObjectStorage, activeTurn: string | null, nowMs: number): boolean {
  for (const [id, r] of bookOf(storage).open) if (r.turn_state === "running" && id !== activeTurn && (r.turn_lease_until ?? 0) <= nowMs) return true;
  return false;
}

/** Rows whose turn is running (here or in a dead instance). */
export function runningTurns(storage: DurableObjectStorage): StoredRecord[] {
  return threadSql(storage, "running turns")<Row>`SELECT ${sqlText(COLS)} FROM records WHERE turn_state = 'running' ORDER BY seq`.map(fromRow);
}

/** True while any turn is queued or running. */
export function hasTurnInFlight(storage: DurableObjectStorage): boolean {
  for (const r of bookOf(storage).open.values()) if (r.turn_state === "queued" || r.turn_state === "running") return true;
  return false;
}

/**
 * The thread's delivery head's message id: its oldest `pending_delivery` record, if that one's next
 * attempt is due and its claim is free. Deliveries go out in the thread's order
 * (docs/architecture.md, "Delivery order"): while the oldest pending record waits out a backoff,
 * later ones wait too.
 */
export function dueDeliveryHeadId(storage: DurableObjectStorage, nowMs: number): string | null {
  const head = bookOf(storage).first((r) => r.status === "pending_delivery");
  if (!head) return null;
  const [id, r] = head;
  if ((r.delivery_due_at ?? 0) > nowMs || (r.delivery_lease_until ?? 0) > nowMs) return null;
  return id;
}

/** The delivery head as `dueDeliveryHeadId` finds it, read from the table. */
export function dueDeliveryHead(storage: DurableObjectStorage, nowMs: number): StoredRecord | null {
  const id = dueDeliveryHeadId(storage, nowMs);
  return id === null ? null : getStored(storage, id);
}

/** provisional records whose receipt grace ended by `nowMs`. */
export function graceElapsed(storage: DurableObjectStorage, nowMs: number): StoredRecord[] {
  const due = [...bookOf(storage).open].filter(([, r]) => r.status === "provisional" && r.grace_until !== null && r.grace_until <= nowMs);
  return due.sort((a, b) => a[1].seq - b[1].seq).flatMap(([id]) => getStored(storage, id) ?? []);
}

/**
 * Earliest instant at which the alarm has work: the delivery head's attempt (or its claim's end), a
 * running turn's lease, a queued turn (a lease ahead: this instance runs it now, the alarm only
 * covers its end), a grace end, an expiry. From memory.
 */
export function nextWake(storage: DurableObjectStorage, intakeLeaseMs: number, nowMs: number): number | null {
  const book = bookOf(storage);
  let t = book.minExpiry;
  const at = (v: number | null) => {
    if (v !== null && (t === null || v < t)) t = v;
  };
  const head = book.first((r) => r.status === "pending_delivery");
  // Unscheduled (no due instant): no wake, as before it is given one.
  if (head && head[1].delivery_due_at !== null) at(Math.max(head[1].delivery_due_at, head[1].delivery_lease_until ?? 0));
  for (const r of book.open.values()) {
    if (r.turn_state === "running") at(r.turn_lease_until);
    if (r.turn_state === "queued") at(nowMs + intakeLeaseMs);
    if (r.status === "provisional") at(r.grace_until);
  }
  return t;
}

/** The earliest record expiry (records past it are pruned by the alarm). */
export function earliestExpiry(storage: DurableObjectStorage): number | null {
  return bookOf(storage).minExpiry;
}

/** Deletes records whose retention ended, with their run traces; returns their ids and those of the traces. */
export function pruneExpired(storage: DurableObjectStorage, nowMs: number): { ids: string[]; traced: string[] } {
  const book = bookOf(storage);
  const gone = threadSql(storage, "expired ids")<{
    message_id: string;
    traced: number;
  }>`SELECT r.message_id, t.message_id IS NOT NULL AS traced FROM records r LEFT JOIN run_traces t ON t.message_id = r.message_id WHERE r.expires_at IS NOT NULL AND r.expires_at <= ${nowMs}`;
  if (gone.length) {
    threadSql(storage, "prune expired traces")
      .run`DELETE FROM run_traces WHERE message_id IN (SELECT message_id FROM records WHERE expires_at IS NOT NULL AND expires_at <= ${nowMs})`;
    threadSql(storage, "prune expired").run`DELETE FROM records WHERE expires_at IS NOT NULL AND expires_at <= ${nowMs}`;
    // A rating goes with the record it rates.
    threadSql(storage, "prune expired ratings").run`DELETE FROM answer_feedback WHERE message_id NOT IN (SELECT message_id FROM records)`;
    // An Idempotency-Key goes with its record, and at this pass after its own window.
    threadSql(storage, "prune idempotency keys")
      .run`DELETE FROM idempotency_keys WHERE expires_at <= ${nowMs} OR message_id NOT IN (SELECT message_id FROM records)`;
    for (const r of gone) book.open.delete(r.message_id);
    book.count -= gone.length;
    book.minExpiry = threadSql(storage, "earliest expiry")<{ e: number | null }>`SELECT MIN(expires_at) AS e FROM records`[0].e;
  }
  return { ids: gone.map((r) => r.message_id), traced: gone.filter((r) => r.traced).map((r) => r.message_id) };
}

/** Live (unexpired) records, oldest first or newest first, for transcripts and search. */
export function liveRecords(storage: DurableObjectStorage, nowMs: number, order: "asc" | "desc", offset: number, limit: number): AnswerRecord[] {
  return threadSql(storage, "live records")<{
    record: string;
  }>`SELECT record FROM records WHERE expires_at IS NULL OR expires_at > ${nowMs} ORDER BY seq ${sqlText(order === "asc" ? "ASC" : "DESC")} LIMIT ${limit} OFFSET ${offset}`.map(
    (r) => parseStored(AnswerRecord, r.record, "thread record"),
  );
}

/** Records not expired at `nowMs`. */
export function countLive(storage: DurableObjectStorage, nowMs: number): number {
  return threadSql(storage, "count live")<{ n: number }>`SELECT COUNT(*) AS n FROM records WHERE expires_at IS NULL OR expires_at > ${nowMs}`[0].n;
}

/** Every record row, expired or not (the listing's message count). */
/** The client address of the newest live record of route `routeName` that has one, or null. */
export function newestAddressOn(storage: DurableObjectStorage, routeName: string, nowMs: number): string | null {
  const rows = threadSql(storage, "newest address on a route")<{ address: string }>`SELECT json_extract(record, '$.client_address') AS address FROM records
     WHERE (expires_at IS NULL OR expires_at > ${nowMs}) AND json_extract(record, '$.route_name') = ${routeName} AND json_extract(record, '$.client_address') IS NOT NULL
     ORDER BY seq DESC LIMIT 1`;
  return rows[0]?.address ?? null;
}

/**
 * The locale of the person behind the thread's newest live customer message that carried one (a
 * multichannel target's inbound names its person), or null: what the inbox writes in when a
 * handoff comes from outside a turn (an operator's switch).
 */
export function newestPersonLocale(storage: DurableObjectStorage, nowMs: number): string | null {
  const rows = threadSql(storage, "newest person locale")<{ locale: string }>`SELECT json_extract(inbound, '$.person.locale') AS locale FROM records
     WHERE (expires_at IS NULL OR expires_at > ${nowMs}) AND json_extract(inbound, '$.person.locale') IS NOT NULL
     ORDER BY seq DESC LIMIT 1`;
  return rows[0]?.locale ?? null;
}

export function countAll(storage: DurableObjectStorage): number {
  return bookOf(storage).count;
}

/**
 * The web records' ids by the visitor thread whose page shows them (`webHome`'s inputs: route and
 * client address), expired or not: where forget must reach the page's copies.
 */
export function webRecordsByPlace(storage: DurableObjectStorage): Array<{ route_name: string; client_address: string; message_id: string }> {
  return threadSql(storage, "web records")<{
    route_name: string;
    client_address: string;
    message_id: string;
  }>`SELECT json_extract(record, '$.route_name') AS route_name, json_extract(record, '$.client_address') AS client_address, message_id FROM records
     WHERE json_extract(record, '$.channel') = 'web' AND json_extract(record, '$.client_address') IS NOT NULL ORDER BY seq`;
}

/** Deletes every record with its rating, run trace and parked interaction (thread forget); returns how many records there were. */
export function deleteAllRecords(storage: DurableObjectStorage): number {
  const n = countAll(storage);
  threadSql(storage, "delete all records").run`DELETE FROM records`;
  threadSql(storage, "delete all ratings").run`DELETE FROM answer_feedback`;
  threadSql(storage, "delete all run traces").run`DELETE FROM run_traces`;
  threadSql(storage, "delete all parked interactions").run`DELETE FROM parked_interactions`;
  threadSql(storage, "delete all idempotency keys").run`DELETE FROM idempotency_keys`;
  const book = bookOf(storage);
  book.open.clear();
  book.count = 0;
  book.minExpiry = null;
  return n;
}

/** The thread's FIFO depth (turns queued or running) and delivery backlog (records pending delivery). From memory. */
export function threadLoad(storage: DurableObjectStorage): { queue_depth: number; pending_deliveries: number } {
  let queue_depth = 0;
  let pending_deliveries = 0;
  for (const r of bookOf(storage).open.values()) {
    if (r.turn_state === "queued" || r.turn_state === "running") queue_depth++;
    if (r.status === "pending_delivery") pending_deliveries++;
  }
  return { queue_depth, pending_deliveries };
}
