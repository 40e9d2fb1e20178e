/**
 * An IndexShard's listing buffer: thread objects push their listing rows and failed
 * records here instead of writing D1 on every settled turn. Pushes are kept in the shard's SQLite
 * (durable before `push` returns, so the thread can drop its outbox) and written to D1 together:
 * at once when pushes for `index_flush_batch` settled turns have come in since the last flush,
 * otherwise when the oldest buffered push is `index_flush_lag_seconds` old. A later push for the same thread replaces
 * the earlier row, so a busy thread costs one D1 statement per flush, not one per turn.
 *
 * A row is deleted from the buffer only if no newer push replaced it while the D1 batch was in
 * flight (`version`), and a failed flush keeps everything for the alarm to retry.
 *
 * Run traces ride the same buffer and the same batches: the summary rows of settled
 * turns (carried by the threads' pushes) and of runs recorded on this shard (`bufferRun`), the
 * removal of rows whose traces were pruned, the metrics counters (added up per minute, name and
 * label while buffered) and each listed thread's load (queue depth, delivery backlog: written
 * from the listing row to `thread_loads`). A summary row counts as one update against the batch,
 * like a settled turn; each kind is one statement per chunk (src/shards/runs-table.ts), so a turn
 * adds a row to a statement of a batch, never a statement or a batch of its own.
 */
import { type CounterDelta, type ListingPush, ListingRow, FailedRow, RunRow } from "./rpc";
import { parseStored } from "../platform/persistence/stored-json";
import { listingStatements } from "./listing-table";
import { addCountersStatement, deleteRunsStatement, pruneCountersStatement, threadLoadsStatements, upsertRunsStatement } from "./runs-table";
import { type ObjectSchema, type ObjectSql, migrateSchema, objectSql, sqlText } from "../platform/persistence/object-sql";

/** How often a shard's flush also reclaims old counters (at most, per shard instance). */
const COUNTER_PRUNE_EVERY_MS = 3600_000;

/** The oldest arrival over every buffered table. */
/** The store's name in its statements' errors. */
const STORE = "listing-buffer";

const OLDEST_SQL = sqlText(`SELECT MIN(t) AS t FROM (SELECT MIN(received_at) AS t FROM pending_threads UNION ALL SELECT MIN(received_at) FROM pending_failed
  UNION ALL SELECT MIN(received_at) FROM pending_runs UNION ALL SELECT MIN(received_at) FROM pending_run_drops UNION ALL SELECT MIN(received_at) FROM pending_counters)`);

/** Rows per D1 batch: a flush with more buffered writes several batches. */
export const FLUSH_CHUNK = 50;

/** What the buffer runs with. */
export interface ListingBufferDeps {
  sql: SqlStorage;
  db: () => D1Database;
  now: () => number;
  /** `index_flush_batch` and `index_flush_lag_seconds`. */
  policy: () => { batch: number; lagMs: number };
}

/**
 * The `listing-buffer` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const LISTING_BUFFER_SCHEMA: ObjectSchema = {
  name: STORE,
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS pending_threads (
    thread_id   TEXT PRIMARY KEY,
    row         TEXT,
    version     INTEGER NOT NULL,
    received_at INTEGER NOT NULL
  )`,
      `CREATE TABLE IF NOT EXISTS pending_failed (
    message_id  TEXT PRIMARY KEY,
    thread_id   TEXT NOT NULL,
    row         TEXT NOT NULL,
    version     INTEGER NOT NULL,
    received_at INTEGER NOT NULL
  )`,
      `CREATE TABLE IF NOT EXISTS pending_runs (
    trace_id    TEXT PRIMARY KEY,
    thread_id   TEXT,
    user_id     TEXT,
    started_at  INTEGER NOT NULL,
    row         TEXT NOT NULL,
    version     INTEGER NOT NULL,
    received_at INTEGER NOT NULL
  )`,
      `CREATE TABLE IF NOT EXISTS pending_run_drops (
    trace_id    TEXT PRIMARY KEY,
    version     INTEGER NOT NULL,
    received_at INTEGER NOT NULL
  )`,
      `CREATE TABLE IF NOT EXISTS pending_counters (
    minute      INTEGER NOT NULL,
    name        TEXT NOT NULL,
    label       TEXT NOT NULL,
    value       INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (minute, name, label)
  )`,
    ],
  ],
};

/** Brings the `listing-buffer` tables to their current version (idempotent). */
export function createListingBuffer(sql: SqlStorage): void {
  migrateSchema(sql, LISTING_BUFFER_SCHEMA);
}

/**
 * The buffer; see the module comment. Its counters live in memory, read back from the tables when
 * the object starts: `version` orders pushes (the highest buffered one, so a restart never reuses
 * a number), `updates` counts settled turns since the last flush (a restart forgets them, and the
 * lag flushes what they would have), `oldestAt` is the oldest unflushed push.
 */
export class ListingBuffer {
  private flushing: Promise<number> | null = null;
  private version: number;
  private updates = 0;
  private oldest: number | null;
  private countersPrunedAt = 0;
  private readonly q: ObjectSql;

  constructor(private readonly deps: ListingBufferDeps) {
    this.q = objectSql(deps.sql, STORE);
    this.version =
      this.q.one<{ v: number | null }>`SELECT MAX(v) AS v FROM (SELECT MAX(version) AS v FROM pending_threads UNION ALL SELECT MAX(version) FROM pending_failed
        UNION ALL SELECT MAX(version) FROM pending_runs UNION ALL SELECT MAX(version) FROM pending_run_drops)`?.v ?? 0;
    this.oldest = this.oldestReceived();
  }

  /** When the oldest buffered row arrived (null: none). */
  private oldestReceived(): number | null {
    return this.q.one<{ t: number | null }>`${OLDEST_SQL}`?.t ?? null;
  }

  /** Buffers one push. True when the buffer should flush now (the batch is full). */
  push(p: ListingPush): boolean {
    const { q } = this;
    const now = this.deps.now();
    const version = ++this.version;
    // A row already waiting keeps its arrival time: the lag counts from the first unflushed push.
    q.run`INSERT INTO pending_threads (thread_id, row, version, received_at) VALUES (${p.thread_id}, ${p.row ? JSON.stringify(p.row) : null}, ${version}, ${now})
      ON CONFLICT(thread_id) DO UPDATE SET row = excluded.row, version = excluded.version`;
    for (const f of p.failed) {
      q.run`INSERT OR REPLACE INTO pending_failed (message_id, thread_id, row, version, received_at)
        VALUES (${f.message_id}, ${f.thread_id}, ${JSON.stringify(f)}, ${version}, ${now})`;
    }
    for (const r of p.runs ?? []) this.insertRun(r, version, now);
    // A row not flushed yet just goes; one already in D1 is deleted by the next flush.
    this.dropRuns(p.runs_dropped ?? [], version, now);
    this.insertCounters(p.counters ?? [], now);
    this.oldest ??= now;
    this.updates += p.updates;
    return this.updates >= this.deps.policy().batch;
  }

  /** Buffers the summary row of a run recorded on this shard; counts as one update. True when the buffer should flush now. */
  bufferRun(row: RunRow): boolean {
    const now = this.deps.now();
    this.insertRun(row, ++this.version, now);
    this.oldest ??= now;
    this.updates += 1;
    return this.updates >= this.deps.policy().batch;
  }

  /** Buffers the removal of summary rows whose traces this shard dropped (retention). */
  bufferRunDrops(traceIds: string[]): void {
    if (!traceIds.length) return;
    const now = this.deps.now();
    const version = ++this.version;
    this.dropRuns(traceIds, version, now);
    this.oldest ??= now;
  }

  private dropRuns(traceIds: readonly string[], version: number, now: number): void {
    for (const id of traceIds) {
      this.q.run`DELETE FROM pending_runs WHERE trace_id = ${id}`;
      this.q.run`INSERT OR REPLACE INTO pending_run_drops (trace_id, version, received_at) VALUES (${id}, ${version}, ${now})`;
    }
  }

  /** Buffers metrics counters (they never trigger a flush of their own: the lag writes them). */
  bufferCounters(deltas: CounterDelta[]): void {
    if (!deltas.length) return;
    const now = this.deps.now();
    this.insertCounters(deltas, now);
    this.oldest ??= now;
  }

  /** Drops buffered summary rows attributed to `userId` (person erase). */
  forgetUserRuns(userId: string): void {
    this.q.run`DELETE FROM pending_runs WHERE user_id = ${userId}`;
  }

  /** Drops buffered summary rows of runs started before `beforeMs` (prune); answers how many. */
  pruneRunsBefore(beforeMs: number): number {
    return this.q.run`DELETE FROM pending_runs WHERE started_at < ${beforeMs}`;
  }

  private insertRun(r: RunRow, version: number, now: number): void {
    this.q.run`INSERT OR REPLACE INTO pending_runs (trace_id, thread_id, user_id, started_at, row, version, received_at)
      VALUES (${r.trace_id}, ${r.thread_id}, ${r.user_id}, ${r.started_at}, ${JSON.stringify(r)}, ${version}, ${now})`;
  }

  private insertCounters(deltas: CounterDelta[], now: number): void {
    for (const d of deltas) {
      if (!d.value) continue;
      this.q.run`INSERT INTO pending_counters (minute, name, label, value, received_at) VALUES (${d.minute}, ${d.name}, ${d.label}, ${d.value}, ${now})
        ON CONFLICT(minute, name, label) DO UPDATE SET value = value + excluded.value`;
    }
  }

  /** When the buffer must flush by (null: it holds nothing). */
  dueAt(): number | null {
    return this.oldest === null ? null : this.oldest + this.deps.policy().lagMs;
  }

  /** Rows buffered and not yet in D1. */
  pending(): number {
    return (
      this.q.one<{ n: number }>`SELECT (SELECT COUNT(*) FROM pending_threads) + (SELECT COUNT(*) FROM pending_failed) + (SELECT COUNT(*) FROM pending_runs)
        + (SELECT COUNT(*) FROM pending_run_drops) + (SELECT COUNT(*) FROM pending_counters) AS n`?.n ?? 0
    );
  }

  /**
   * Writes everything buffered when called to D1, after any flush in progress. Answers rows written.
   * (Thread forget, tests, and the admin decisions that must see every thread.)
   */
  async flush(): Promise<number> {
    await this.settled();
    return this.startFlush();
  }

  /**
   * Starts a flush unless one is running (then it shares that one): the batch-full trigger and the
   * lag alarm. A flush writes what was buffered when it began; pushes that arrive meanwhile wait
   * for their own full batch or the lag, unless they fill a batch before it ends.
   */
  startFlush(): Promise<number> {
    if (this.flushing) return this.flushing;
    this.flushing = this.flushRounds().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  /** Waits for a flush in progress, if any (errors are the flusher's to report). */
  async settled(): Promise<void> {
    await this.flushing?.catch(() => undefined);
  }

  /** Drops what the buffer holds for `threadId` (thread forget). */
  forgetThread(threadId: string): void {
    this.q.run`DELETE FROM pending_threads WHERE thread_id = ${threadId}`;
    this.q.run`DELETE FROM pending_failed WHERE thread_id = ${threadId}`;
    this.q.run`DELETE FROM pending_runs WHERE thread_id = ${threadId}`;
  }

  private async flushRounds(): Promise<number> {
    let written = 0;
    for (;;) {
      const upTo = this.version;
      this.updates = 0;
      written += await this.writeUpTo(upTo);
      this.oldest = this.oldestReceived();
      if (this.updates < this.deps.policy().batch) return written;
    }
  }

  /** Writes the buffered rows of version `upTo` or older (and the counters), FLUSH_CHUNK rows of each kind per D1 batch. */
  private async writeUpTo(upTo: number): Promise<number> {
    const { q } = this;
    let written = 0;
    // Counters carry no version (they add up in place): each flush takes what it finds, once over.
    let countersDone = false;
    for (;;) {
      const threads = q<{ thread_id: string; row: string | null; version: number }>`
        SELECT thread_id, row, version FROM pending_threads WHERE version <= ${upTo} ORDER BY received_at LIMIT ${FLUSH_CHUNK}`;
      const failed = q<{ message_id: string; row: string; version: number }>`
        SELECT message_id, row, version FROM pending_failed WHERE version <= ${upTo} ORDER BY received_at LIMIT ${FLUSH_CHUNK}`;
      const runs = q<{ trace_id: string; row: string; version: number }>`
        SELECT trace_id, row, version FROM pending_runs WHERE version <= ${upTo} ORDER BY received_at LIMIT ${FLUSH_CHUNK}`;
      const drops = q<{ trace_id: string; version: number }>`
        SELECT trace_id, version FROM pending_run_drops WHERE version <= ${upTo} ORDER BY received_at LIMIT ${FLUSH_CHUNK}`;
      const counters = countersDone
        ? []
        : q<{ minute: number; name: string; label: string; value: number }>`
          SELECT minute, name, label, value FROM pending_counters ORDER BY received_at LIMIT ${FLUSH_CHUNK}`;
      if (counters.length < FLUSH_CHUNK) countersDone = true;
      if (!threads.length && !failed.length && !runs.length && !drops.length && !counters.length) return written;
      const db = this.deps.db();
      const now = this.deps.now();
      const listed = threads.map((t) => ({ thread_id: t.thread_id, row: t.row === null ? null : parseStored(ListingRow, t.row, "pending_threads.row") }));
      const stmts = [
        ...listingStatements(
          db,
          listed,
          failed.map((f) => parseStored(FailedRow, f.row, "pending_failed.row")),
        ).map((s) => s.prepared()),
        ...threadLoadsStatements(db, listed, now),
        ...upsertRunsStatement(
          db,
          runs.map((r) => parseStored(RunRow, r.row, "pending_runs.row")),
        ),
        ...deleteRunsStatement(
          db,
          drops.map((d) => d.trace_id),
        ),
        ...addCountersStatement(db, counters),
      ];
      const pruneCounters = counters.length > 0 && now - this.countersPrunedAt >= COUNTER_PRUNE_EVERY_MS;
      if (pruneCounters) stmts.push(pruneCountersStatement(db, now));
      await db.batch(stmts);
      if (pruneCounters) this.countersPrunedAt = now;
      // A row a newer push replaced while the batch was in flight stays for the next flush.
      for (const t of threads) q.run`DELETE FROM pending_threads WHERE thread_id = ${t.thread_id} AND version = ${t.version}`;
      for (const f of failed) q.run`DELETE FROM pending_failed WHERE message_id = ${f.message_id} AND version = ${f.version}`;
      for (const r of runs) q.run`DELETE FROM pending_runs WHERE trace_id = ${r.trace_id} AND version = ${r.version}`;
      for (const d of drops) q.run`DELETE FROM pending_run_drops WHERE trace_id = ${d.trace_id} AND version = ${d.version}`;
      // Counters added to while the batch was in flight keep what came meanwhile.
      for (const c of counters)
        q.run`UPDATE pending_counters SET value = value - ${c.value} WHERE minute = ${c.minute} AND name = ${c.name} AND label = ${c.label}`;
      q.run`DELETE FROM pending_counters WHERE value = 0`;
      written += stmts.length;
    }
  }
}
