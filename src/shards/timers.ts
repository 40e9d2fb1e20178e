/**
 * The IndexShard's one alarm, shared by its three parts: it is armed at the earliest of the listing
 * buffer's flush deadline, the ledger's next expiry and the run log's. The two expiries are kept in
 * memory (read from the tables when the object starts), so arming costs no statement.
 */
import type { Clock } from "../platform/clock";
import { nextLedgerExpiry, pruneLedger } from "./ledger";
import type { ListingBuffer } from "./listing-buffer";
import { nextTraceExpiry, pruneTraces } from "./run-log";

/** A failed flush is retried after this long (D1 unavailable, say). */
const RETRY_MS = 5000;

export interface ShardTimers {
  /** A ledger entry expiring at `at` was stored. */
  noteLedgerExpiry(at: number): Promise<void>;
  /** A trace expiring at `at` was kept (arming is left to the caller's flush or arm). */
  noteTraceExpiry(at: number): void;
  /** Flushes; on failure logs once and leaves the rows for the alarm, RETRY_MS from now. */
  flushOrRetry(): Promise<void>;
  /** Arms the one alarm at the earliest of the flush deadline, the ledger's next expiry and the run log's. */
  arm(): Promise<void>;
  /** The alarm's pass: prunes what expired, flushes when due, re-arms. */
  run(): Promise<void>;
}

export function shardTimers(storage: DurableObjectStorage, buffer: ListingBuffer, clock: Clock): ShardTimers {
  const sql = storage.sql;
  let armedAt: number | null = null;
  let ledgerNext: number | null = nextLedgerExpiry(sql);
  let tracesNext: number | null = nextTraceExpiry(sql);

  async function setAlarmAt(at: number, force: boolean): Promise<void> {
    const now = clock.now();
    const target = Math.max(at, now + 1);
    // An alarm already set no later than the target covers it (firing early only re-arms).
    if (!force && armedAt !== null && armedAt > now && armedAt <= target) return;
    await storage.setAlarm(target);
    armedAt = target;
  }

  async function arm(): Promise<void> {
    const candidates = [buffer.dueAt(), ledgerNext, tracesNext].filter((t): t is number => typeof t === "number");
    if (!candidates.length) return;
    await setAlarmAt(Math.min(...candidates), false);
  }

  async function flushOrRetry(): Promise<void> {
    try {
      await buffer.startFlush();
    } catch (err) {
      console.error(`index shard: flushing the listing to D1 failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : err);
      await setAlarmAt(clock.now() + RETRY_MS, true);
      return;
    }
    await arm();
  }

  return {
    async noteLedgerExpiry(at) {
      ledgerNext = ledgerNext === null ? at : Math.min(ledgerNext, at);
      await arm();
    },
    noteTraceExpiry(at) {
      tracesNext = tracesNext === null ? at : Math.min(tracesNext, at);
    },
    flushOrRetry,
    arm,
    async run() {
      armedAt = null;
      ledgerNext = pruneLedger(sql, clock.now());
      // Expired traces go, and their summary rows with the next flush.
      buffer.bufferRunDrops(pruneTraces(sql, clock.now()));
      tracesNext = nextTraceExpiry(sql);
      if (buffer.dueAt() !== null && (buffer.dueAt() ?? 0) <= clock.now()) await flushOrRetry();
      await arm();
    },
  };
}
