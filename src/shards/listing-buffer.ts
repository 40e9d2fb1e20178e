/**
 * An IndexShard's listing buffer (issue 11): thread objects push their listing rows and failed
 * records here instead of writing D1 on every settled turn. Pushes are kept in the shard's SQLite
 * (durable before `push` returns, so the thread can drop its outbox) and written to D1 together:
 * at once when pushes for `index_flush_batch` settled turns have come in since the last flush,
 * otherwise when the oldest buffered push is `index_flush_lag_seconds` old. A later push for the same thread replaces
 * the earlier row, so a busy thread costs one D1 statement per flush, not one per turn.
 *
 * A row is deleted from the buffer only if no newer push replaced it while the D1 batch was in
 * flight (`version`), and a failed flush keeps everything for the alarm to retry.
 */
import type { ListingPush, ListingRow, FailedRow } from "../contracts/shard-rpc";
import { listingStatements } from "../bridge/indexes";

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

/** Creates the buffer's tables (idempotent). */
export function createListingBuffer(sql: SqlStorage): void {
  sql.exec(`CREATE TABLE IF NOT EXISTS pending_threads (
    thread_id   TEXT PRIMARY KEY,
    row         TEXT,
    version     INTEGER NOT NULL,
    received_at INTEGER NOT NULL
  )`);
  sql.exec(`CREATE TABLE IF NOT EXISTS pending_failed (
    message_id  TEXT PRIMARY KEY,
    thread_id   TEXT NOT NULL,
    row         TEXT NOT NULL,
    version     INTEGER NOT NULL,
    received_at INTEGER NOT NULL
  )`);
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

  constructor(private readonly deps: ListingBufferDeps) {
    const { sql } = deps;
    this.version = sql.exec<{ v: number | null }>("SELECT MAX(v) AS v FROM (SELECT MAX(version) AS v FROM pending_threads UNION ALL SELECT MAX(version) FROM pending_failed)").one().v ?? 0;
    this.oldest = sql.exec<{ t: number | null }>("SELECT MIN(t) AS t FROM (SELECT MIN(received_at) AS t FROM pending_threads UNION ALL SELECT MIN(received_at) FROM pending_failed)").one().t;
  }

  /** Buffers one push. True when the buffer should flush now (the batch is full). */
  push(p: ListingPush): boolean {
    const { sql } = this.deps;
    const now = this.deps.now();
    const version = ++this.version;
    // A row already waiting keeps its arrival time: the lag counts from the first unflushed push.
    sql.exec(
      `INSERT INTO pending_threads (thread_id, row, version, received_at) VALUES (?, ?, ?, ?)
       ON CONFLICT(thread_id) DO UPDATE SET row = excluded.row, version = excluded.version`,
      p.thread_id,
      p.row ? JSON.stringify(p.row) : null,
      version,
      now,
    );
    for (const f of p.failed) {
      sql.exec("INSERT OR REPLACE INTO pending_failed (message_id, thread_id, row, version, received_at) VALUES (?, ?, ?, ?, ?)", f.message_id, f.thread_id, JSON.stringify(f), version, now);
    }
    this.oldest ??= now;
    this.updates += p.updates;
    return this.updates >= this.deps.policy().batch;
  }

  /** When the buffer must flush by (null: it holds nothing). */
  dueAt(): number | null {
    return this.oldest === null ? null : this.oldest + this.deps.policy().lagMs;
  }

  /** Rows buffered and not yet in D1. */
  pending(): number {
    const { sql } = this.deps;
    return sql.exec<{ n: number }>("SELECT (SELECT COUNT(*) FROM pending_threads) + (SELECT COUNT(*) FROM pending_failed) AS n").one().n;
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
    this.deps.sql.exec("DELETE FROM pending_threads WHERE thread_id = ?", threadId);
    this.deps.sql.exec("DELETE FROM pending_failed WHERE thread_id = ?", threadId);
  }

  private async flushRounds(): Promise<number> {
    let written = 0;
    for (;;) {
      const upTo = this.version;
      this.updates = 0;
      written += await this.writeUpTo(upTo);
      this.oldest = this.deps.sql.exec<{ t: number | null }>("SELECT MIN(t) AS t FROM (SELECT MIN(received_at) AS t FROM pending_threads UNION ALL SELECT MIN(received_at) FROM pending_failed)").one().t;
      if (this.updates < this.deps.policy().batch) return written;
    }
  }

  /** Writes the buffered rows of version `upTo` or older, FLUSH_CHUNK rows per D1 batch. */
  private async writeUpTo(upTo: number): Promise<number> {
    const { sql } = this.deps;
    let written = 0;
    for (;;) {
      const threads = sql
        .exec<{ thread_id: string; row: string | null; version: number }>(
          "SELECT thread_id, row, version FROM pending_threads WHERE version <= ? ORDER BY received_at LIMIT ?",
          upTo,
          FLUSH_CHUNK,
        )
        .toArray();
      const failed = sql
        .exec<{ message_id: string; row: string; version: number }>("SELECT message_id, row, version FROM pending_failed WHERE version <= ? ORDER BY received_at LIMIT ?", upTo, FLUSH_CHUNK)
        .toArray();
      if (!threads.length && !failed.length) return written;
      const db = this.deps.db();
      const stmts = listingStatements(
        db,
        threads.map((t) => ({ thread_id: t.thread_id, row: t.row === null ? null : (JSON.parse(t.row) as ListingRow) })),
        failed.map((f) => JSON.parse(f.row) as FailedRow),
      );
      await db.batch(stmts);
      // A row a newer push replaced while the batch was in flight stays for the next flush.
      for (const t of threads) sql.exec("DELETE FROM pending_threads WHERE thread_id = ? AND version = ?", t.thread_id, t.version);
      for (const f of failed) sql.exec("DELETE FROM pending_failed WHERE message_id = ? AND version = ?", f.message_id, f.version);
      written += stmts.length;
    }
  }
}
