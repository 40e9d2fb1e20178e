/**
 * The thread's outbox towards the admin listings (issue 11; decisions §9). A record transition
 * notes one outbox row in the same SQLite transaction as the transition itself, so it costs no
 * extra commit and no D1 statement. A push loop, never awaited by a turn or a delivery, then sends
 * the thread's current listing row (with the new failed records) to its listing shard, and the ids
 * of pruned records to the shards whose directory holds them, and drops the rows it sent. One push
 * is in flight at a time and carries everything noted meanwhile, so a busy thread coalesces.
 *
 * A push that fails (the shard unreachable) keeps its rows and sets `outbox_retry_at`, which the
 * thread's alarm honours: nothing noted is lost to an eviction or an error.
 */
import { type FailedRow, type LedgerKey, type ListingRow, ledgerIndex, listingShard, messageKey, shardStub } from "../contracts/shard-rpc";
import { AnswerRecord } from "../bridge/record";
import { parseStored } from "../store/parse-stored";
import type { IndexNote, IndexWriter, ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import { deleteMeta, getMeta, setMeta, sql } from "./store";

/** A failed push is retried by the alarm after this long. */
export const OUTBOX_RETRY_MS = 5000;

/** Rows one push carries at most. */
const PUSH_ROWS = 200;

/** When the alarm should retry a failed push (null: nothing waits). */
export function outboxRetryAt(storage: DurableObjectStorage): number | null {
  const v = getMeta(storage, "outbox_retry_at");
  return v === null ? null : Number(v);
}

/** The thread's listing row as its records say now (null: no record is left). */
export function listingRowOf(storage: DurableObjectStorage): ListingRow | null {
  const newest = sql<{ record: string }>(storage, "newest record", "SELECT record FROM records ORDER BY seq DESC LIMIT 1")[0];
  if (!newest) return null;
  const rec = parseStored(AnswerRecord, newest.record, "thread record");
  const agg = sql<{ n: number; open: number; last: number | null }>(
    storage,
    "listing aggregate",
    "SELECT COUNT(*) AS n, SUM(CASE WHEN expires_at IS NULL THEN 1 ELSE 0 END) AS open, MAX(expires_at) AS last FROM records",
  )[0];
  return {
    route_name: rec.route_name,
    thread_id: rec.thread_id,
    client_address: rec.client_address,
    last_activity_at: rec.created_at,
    message_count: agg.n,
    last_status: rec.status,
    live_until: agg.open > 0 ? null : agg.last,
  };
}

export class IndexOutbox implements IndexWriter {
  private pushing: Promise<void> | null = null;

  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "env" | "now">,
    private readonly identity: ThreadIdentity,
    private readonly armAlarm: () => Promise<void>,
  ) {}

  /** Notes one transition (see IndexWriter) and starts a push unless one is running. */
  note(change: IndexNote = {}): void {
    sql(
      this.deps.storage,
      "note outbox",
      "INSERT INTO index_outbox (settled, failed, dropped) VALUES (?, ?, ?)",
      change.settled ? 1 : 0,
      change.failed ? JSON.stringify(change.failed) : null,
      change.dropped?.length ? JSON.stringify(change.dropped) : null,
    );
    this.kick();
  }

  /** Starts the push loop if it is not running (never awaited by the caller). */
  kick(): void {
    if (this.pushing) return;
    this.pushing = this.pushAll().finally(() => {
      this.pushing = null;
    });
  }

  /** Runs a push now and waits for it (the alarm's retry). */
  async flush(): Promise<void> {
    this.kick();
    await this.drained();
  }

  /** Resolves once no push is in flight. */
  async drained(): Promise<void> {
    while (this.pushing) await this.pushing;
  }

  /** Thread forget: nothing noted before it is pushed (the caller removes the listing itself). */
  clear(): void {
    sql(this.deps.storage, "clear outbox", "DELETE FROM index_outbox");
    deleteMeta(this.deps.storage, "outbox_retry_at");
  }

  private async pushAll(): Promise<void> {
    const { storage } = this.deps;
    for (;;) {
      const rows = sql<{ seq: number; settled: number; failed: string | null; dropped: string | null }>(
        storage,
        "outbox rows",
        "SELECT seq, settled, failed, dropped FROM index_outbox ORDER BY seq LIMIT ?",
        PUSH_ROWS,
      );
      if (!rows.length) break;
      const threadId = this.identity.get();
      const last = rows[rows.length - 1].seq;
      if (threadId) {
        try {
          await this.pushRows(threadId, rows);
        } catch (err) {
          // Kept for the alarm: the rows stay, and the retry pushes them with whatever came since.
          console.error(`thread index push failed; the alarm retries in ${OUTBOX_RETRY_MS} ms`, err instanceof Error ? err.message : err);
          setMeta(storage, "outbox_retry_at", String(this.deps.now() + OUTBOX_RETRY_MS));
          await this.armAlarm();
          return;
        }
      }
      sql(storage, "drop pushed outbox", "DELETE FROM index_outbox WHERE seq <= ?", last);
    }
    if (getMeta(storage, "outbox_retry_at") !== null) deleteMeta(storage, "outbox_retry_at");
  }

  private async pushRows(threadId: string, rows: Array<{ settled: number; failed: string | null; dropped: string | null }>): Promise<void> {
    const env = this.deps.env();
    const failed = rows.flatMap((r) => (r.failed ? [JSON.parse(r.failed) as FailedRow] : []));
    const dropped = rows.flatMap((r) => (r.dropped ? (JSON.parse(r.dropped) as string[]) : []));
    // The row is read at push time: it is the thread's state now, whatever the rows noted.
    await listingShard(env, threadId).push({ thread_id: threadId, row: listingRowOf(this.deps.storage), failed, updates: rows.filter((r) => r.settled).length });
    if (dropped.length) {
      const byShard = new Map<number, LedgerKey[]>();
      for (const id of dropped) {
        const k = messageKey(id);
        const i = ledgerIndex(k);
        byShard.set(i, [...(byShard.get(i) ?? []), k]);
      }
      await Promise.all([...byShard].map(([i, keys]) => shardStub(env, i).drop(keys)));
    }
  }
}
