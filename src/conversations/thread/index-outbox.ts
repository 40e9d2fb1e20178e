/**
 * The thread's outbox towards the admin listings (decisions §9). A record transition
 * notes one outbox row in the same SQLite transaction as the transition itself, so it costs no
 * extra commit and no D1 statement. A push, never awaited by a turn or a delivery, then sends the
 * thread's current listing row (with the new failed records) to its listing shard, and the ids of
 * pruned records to the shards whose directory holds them, and drops the rows it sent.
 *
 * Pushes are debounced by PUSH_DELAY_MS: a note starts a short timer and the push carries
 * everything noted until it fires, so a turn's accept and settle (and a busy thread's many turns)
 * cost one push, not one each. One push is in flight at a time.
 *
 * Nothing noted is lost to an eviction or an error: the thread's alarm is armed at `outboxDueAt`
 * (the oldest row's note time plus the delay and a grace, or a failed push's retry time), and the
 * alarm pass pushes whatever is still there.
 */
import { CounterDelta, FailedRow, type LedgerKey, type ListingRow, RunRow, ledgerIndex, listingShard, messageKey, shardStub } from "../../shards/rpc";
import { AnswerRecord } from "../model/record";
import { z } from "zod";
import { parseStored } from "../../platform/persistence/stored-json";
import type { IndexNote, IndexWriter, ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import { deleteMeta, getMeta, setMeta, sql, threadLoad } from "./store";

/** How long a note waits for more before its push goes (the listing's share of the lag). */
export const PUSH_DELAY_MS = 250;

/**
 * How long past the push delay the alarm waits before it pushes rows the timer did not (an
 * instance that ended before its timer fired). Long on purpose: the alarm that covers a push which
 * did happen fires for nothing, and a long grace makes that at most once a minute per busy thread.
 */
const OUTBOX_GRACE_MS = 60_000;

/** A failed push is retried by the alarm after this long. */
export const OUTBOX_RETRY_MS = 5000;

/** Rows one push carries at most. */
const PUSH_ROWS = 200;

/** When the alarm should push what the outbox still holds (null: it holds nothing). */
export function outboxDueAt(storage: DurableObjectStorage): number | null {
  const oldest = sql<{ t: number | null }>(storage, "outbox oldest", "SELECT MIN(noted_at) AS t FROM index_outbox")[0].t;
  if (oldest === null) return null;
  const retry = getMeta(storage, "outbox_retry_at");
  return Math.max(oldest + PUSH_DELAY_MS + OUTBOX_GRACE_MS, retry === null ? 0 : Number(retry));
}

/** The thread's listing row as its records say now (null: no record is left). Index reads only. */
export function listingRowOf(storage: DurableObjectStorage): ListingRow | null {
  const newest = sql<{ record: string }>(storage, "newest record", "SELECT record FROM records ORDER BY seq DESC LIMIT 1")[0];
  if (!newest) return null;
  const rec = parseStored(AnswerRecord, newest.record, "thread record");
  // Each on the expiry index: how many, whether any record is still without an end, the last end.
  const agg = sql<{ n: number; open: number; last: number | null }>(
    storage,
    "listing aggregate",
    `SELECT (SELECT COUNT(*) FROM records) AS n,
            EXISTS (SELECT 1 FROM records WHERE expires_at IS NULL) AS open,
            (SELECT MAX(expires_at) FROM records) AS last`,
  )[0];
  return {
    route_name: rec.route_name,
    thread_id: rec.thread_id,
    client_address: rec.client_address,
    last_activity_at: rec.created_at,
    message_count: agg.n,
    last_status: rec.status,
    live_until: agg.open ? null : agg.last,
    // The metrics' queue depths and delivery backlog, as of this push.
    ...threadLoad(storage),
  };
}

/** What an outbox row carries besides the listing: a run's summary row, pruned traces, counters. */
const OutboxExtra = z.object({
  run: RunRow.optional(),
  runs_dropped: z.array(z.string()).optional(),
  counters: z.array(CounterDelta).optional(),
});
type OutboxExtra = z.infer<typeof OutboxExtra>;
/** An outbox row's `dropped`: the message ids whose failed rows go. */
const DroppedIds = z.array(z.string());

/** The `extra` column of a note (null: nothing beyond the listing). */
function extraOf(change: IndexNote): string | null {
  const extra: OutboxExtra = {};
  if (change.run) extra.run = change.run;
  if (change.runsDropped?.length) extra.runs_dropped = change.runsDropped;
  if (change.counters?.length) extra.counters = change.counters;
  return Object.keys(extra).length ? JSON.stringify(extra) : null;
}

/** Adds counters up by (minute, name, label). Pure. */
export function sumCounters(deltas: CounterDelta[]): CounterDelta[] {
  const sums = new Map<string, CounterDelta>();
  for (const d of deltas) {
    const k = `${d.minute}\u0000${d.name}\u0000${d.label}`;
    const cur = sums.get(k);
    if (cur) cur.value += d.value;
    else sums.set(k, { ...d });
  }
  return [...sums.values()];
}

export class IndexOutbox implements IndexWriter {
  private pushing: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "env" | "now">,
    private readonly identity: ThreadIdentity,
    private readonly armAlarm: () => Promise<void>,
  ) {}

  /** Notes one transition (see IndexWriter); its push follows within PUSH_DELAY_MS. */
  note(change: IndexNote = {}): void {
    sql(
      this.deps.storage,
      "note outbox",
      "INSERT INTO index_outbox (noted_at, settled, failed, dropped, extra) VALUES (?, ?, ?, ?, ?)",
      this.deps.now(),
      change.settled ? 1 : 0,
      change.failed ? JSON.stringify(change.failed) : null,
      change.dropped?.length ? JSON.stringify(change.dropped) : null,
      extraOf(change),
    );
    this.timer ??= setTimeout(() => {
      this.timer = null;
      this.kick();
    }, PUSH_DELAY_MS);
  }

  /** Pushes now, without waiting out the delay, and resolves once no push is in flight. */
  async drained(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.kick();
    while (this.pushing) await this.pushing;
  }

  /** The alarm's push of what is left (an evicted instance's rows, a failed push's retry). */
  async flush(): Promise<void> {
    await this.drained();
  }

  /** Thread forget: nothing noted before it is pushed (the caller removes the listing itself). */
  clear(): void {
    sql(this.deps.storage, "clear outbox", "DELETE FROM index_outbox");
    deleteMeta(this.deps.storage, "outbox_retry_at");
  }

  /** Starts the push loop unless it is running. */
  private kick(): void {
    if (this.pushing) return;
    this.pushing = this.pushAll().finally(() => {
      this.pushing = null;
    });
  }

  private async pushAll(): Promise<void> {
    const { storage } = this.deps;
    for (;;) {
      const rows = sql<{ seq: number; settled: number; failed: string | null; dropped: string | null; extra: string | null }>(
        storage,
        "outbox rows",
        "SELECT seq, settled, failed, dropped, extra FROM index_outbox ORDER BY seq LIMIT ?",
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

  private async pushRows(
    threadId: string,
    rows: Array<{ settled: number; failed: string | null; dropped: string | null; extra: string | null }>,
  ): Promise<void> {
    const env = this.deps.env();
    const failed = rows.flatMap((r) => (r.failed ? [parseStored(FailedRow, r.failed, "index_outbox.failed")] : []));
    const dropped = rows.flatMap((r) => (r.dropped ? parseStored(DroppedIds, r.dropped, "index_outbox.dropped") : []));
    const extras = rows.flatMap((r) => (r.extra ? [parseStored(OutboxExtra, r.extra, "index_outbox.extra")] : []));
    const runs = extras.flatMap((e) => (e.run ? [e.run] : []));
    const runsDropped = extras.flatMap((e) => e.runs_dropped ?? []);
    const counters = sumCounters(extras.flatMap((e) => e.counters ?? []));
    // The row is read at push time: it is the thread's state now, whatever the rows noted.
    await listingShard(env, threadId).push({
      thread_id: threadId,
      row: listingRowOf(this.deps.storage),
      failed,
      updates: rows.filter((r) => r.settled).length,
      ...(runs.length ? { runs } : {}),
      ...(runsDropped.length ? { runs_dropped: runsDropped } : {}),
      ...(counters.length ? { counters } : {}),
    });
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
