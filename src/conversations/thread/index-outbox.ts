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
 * alarm pass pushes whatever is still there. Those two instants are kept in memory (read from
 * storage once per instance and again at each alarm firing), so arming the alarm reads nothing.
 */
import { CounterDelta, FailedRow, type LedgerKey, type ListingRow, RunRow, ledgerIndex, listingShard, messageKey, shardStub } from "../../shards/rpc";
import { DELIVERY_STATUSES } from "../model/record";
import { z } from "zod";
import { parseStored, validStored } from "../../platform/persistence/stored-json";
import type { IndexNote, IndexWriter, ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import { deleteMeta, getMeta, setMeta, threadLoad, threadSql } from "./store";
import { EMPTY_INBOX, InboxState } from "../model/inbox";

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

/** The outbox's instants: its oldest row's note time and a failed push's retry time (null: none). */
interface OutboxTimes {
  oldest: number | null;
  retryAt: number | null;
}

/** Each object's outbox instants, by its storage (they live and go with the instance). */
const outboxes = new WeakMap<DurableObjectStorage, OutboxTimes>();

function readOutboxTimes(storage: DurableObjectStorage): OutboxTimes {
  const r = threadSql(storage, "outbox instants")<{
    oldest: number | null;
    retry: string | null;
  }>`SELECT (SELECT MIN(noted_at) FROM index_outbox) AS oldest, (SELECT value FROM meta WHERE key = 'outbox_retry_at') AS retry`[0];
  const times = { oldest: r.oldest, retryAt: r.retry === null ? null : Number(r.retry) };
  outboxes.set(storage, times);
  return times;
}

function outboxTimes(storage: DurableObjectStorage): OutboxTimes {
  return outboxes.get(storage) ?? readOutboxTimes(storage);
}

/** Reads the outbox's instants from storage again (the alarm's re-read). */
export function reloadOutbox(storage: DurableObjectStorage): void {
  readOutboxTimes(storage);
}

/** When the alarm should push what the outbox still holds (null: it holds nothing). From memory. */
export function outboxDueAt(storage: DurableObjectStorage): number | null {
  const { oldest, retryAt } = outboxTimes(storage);
  if (oldest === null) return null;
  return Math.max(oldest + PUSH_DELAY_MS + OUTBOX_GRACE_MS, retryAt ?? 0);
}

/** The newest record's listing fields, checked without parsing the whole record. */
const ListingFields = z.object({
  route_name: z.string(),
  thread_id: z.string(),
  client_address: z.string().nullable(),
  created_at: z.string(),
  status: z.enum(DELIVERY_STATUSES),
});

/** The thread's listing row as its records say now (null: no record is left). One statement. */
/** The listing columns of an inbox state; a thread the inbox never touched lists as pending and unowned. */
export type InboxColumns = Pick<ListingRow, "inbox_status" | "assignee" | "waiting_since" | "labels">;

export function inboxColumnsOf(s: InboxState): InboxColumns {
  return { inbox_status: s.status, assignee: s.assignee, waiting_since: s.waiting_since, labels: s.labels };
}

/** The inbox columns as stored (for a caller without the thread's inbox part at hand). */
function storedInboxColumns(storage: DurableObjectStorage): InboxColumns {
  const raw = getMeta(storage, "inbox");
  return inboxColumnsOf(raw === null ? EMPTY_INBOX : parseStored(InboxState, raw, "thread meta inbox"));
}

export function listingRowOf(storage: DurableObjectStorage, inbox: () => InboxColumns = () => storedInboxColumns(storage)): ListingRow | null {
  // The newest record's fields, and on the expiry index: how many, whether any record is still
  // without an end, the last end.
  const row = threadSql(storage, "listing row")<{
    route_name: string;
    thread_id: string;
    client_address: string | null;
    created_at: string;
    status: string;
    n: number;
    open: number;
    last: number | null;
    rated_down: number;
  }>`SELECT json_extract(newest.record, '$.route_name') AS route_name, json_extract(newest.record, '$.thread_id') AS thread_id,
            json_extract(newest.record, '$.client_address') AS client_address, json_extract(newest.record, '$.created_at') AS created_at,
            newest.status AS status,
            (SELECT COUNT(*) FROM records) AS n,
            EXISTS (SELECT 1 FROM records WHERE expires_at IS NULL) AS open,
            (SELECT MAX(expires_at) FROM records) AS last,
            (SELECT COUNT(*) FROM answer_feedback WHERE rating = 'down') AS rated_down
     FROM (SELECT record, status FROM records ORDER BY seq DESC LIMIT 1) AS newest`[0];
  if (!row) return null;
  const rec = validStored(ListingFields, row, "thread record");
  return {
    route_name: rec.route_name,
    thread_id: rec.thread_id,
    client_address: rec.client_address,
    last_activity_at: rec.created_at,
    message_count: row.n,
    last_status: rec.status,
    live_until: row.open ? null : row.last,
    // The answers its customers rated down (docs/inbox.md, "Answer feedback"): the review queue's filter.
    rated_down: row.rated_down,
    // The metrics' queue depths and delivery backlog, as of this push.
    ...threadLoad(storage),
    ...inbox(),
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
  /** Notes taken by this instance so far (a push knows whether rows came in while it ran). */
  private notes = 0;

  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "env" | "clock">,
    private readonly identity: ThreadIdentity,
    private readonly armAlarm: () => Promise<void>,
    /** The inbox state's columns as the thread's inbox part holds them in memory (no read per push). */
    private readonly inboxColumns?: () => InboxColumns,
  ) {}

  /** Notes one transition (see IndexWriter); its push follows within PUSH_DELAY_MS. */
  note(change: IndexNote = {}): void {
    threadSql(this.deps.storage, "note outbox")
      .run`INSERT INTO index_outbox (noted_at, settled, failed, dropped, extra) VALUES (${this.deps.clock.now()}, ${change.settled ? 1 : 0}, ${change.failed ? JSON.stringify(change.failed) : null}, ${change.dropped?.length ? JSON.stringify(change.dropped) : null}, ${extraOf(change)})`;
    this.notes++;
    const times = outboxes.get(this.deps.storage);
    if (times && times.oldest === null) times.oldest = this.deps.clock.now();
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
    threadSql(this.deps.storage, "clear outbox").run`DELETE FROM index_outbox`;
    deleteMeta(this.deps.storage, "outbox_retry_at");
    outboxes.set(this.deps.storage, { oldest: null, retryAt: null });
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
      const notedBefore = this.notes;
      const rows = threadSql(storage, "outbox rows")<{
        seq: number;
        settled: number;
        failed: string | null;
        dropped: string | null;
        extra: string | null;
      }>`SELECT seq, settled, failed, dropped, extra FROM index_outbox ORDER BY seq LIMIT ${PUSH_ROWS}`;
      if (!rows.length) break;
      const threadId = this.identity.get();
      const last = rows[rows.length - 1].seq;
      if (threadId) {
        try {
          await this.pushRows(threadId, rows);
        } catch (err) {
          // Kept for the alarm: the rows stay, and the retry pushes them with whatever came since.
          console.error(`thread index push failed; the alarm retries in ${OUTBOX_RETRY_MS} ms`, err instanceof Error ? err.message : err);
          const retryAt = this.deps.clock.now() + OUTBOX_RETRY_MS;
          setMeta(storage, "outbox_retry_at", String(retryAt));
          outboxTimes(storage).retryAt = retryAt;
          await this.armAlarm();
          return;
        }
      }
      threadSql(storage, "drop pushed outbox").run`DELETE FROM index_outbox WHERE seq <= ${last}`;
      // A short batch with no note since it was read was the whole outbox.
      if (rows.length < PUSH_ROWS && this.notes === notedBefore) break;
    }
    const times = outboxTimes(storage);
    times.oldest = null;
    if (times.retryAt !== null) {
      deleteMeta(storage, "outbox_retry_at");
      times.retryAt = null;
    }
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
      row: listingRowOf(this.deps.storage, this.inboxColumns),
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
