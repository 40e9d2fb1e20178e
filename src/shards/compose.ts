/**
 * Composes the IndexShard's parts over its storage: the ledger (src/shards/ledger.ts: the message
 * directory, inbound dedupe claims, outbound chunk ids), the listing buffer
 * (src/shards/listing-buffer.ts: thread listing rows and failed records, written to D1 in batches)
 * and the run log (src/shards/run-log.ts: the traces of runs outside any thread), whose summary
 * rows, metrics counters and thread loads ride the buffer's batches; one alarm serves them all
 * (src/shards/timers.ts).
 */
import { objectSettingsNow } from "../config/object-settings";
import type { RunTrace } from "../shared/run-trace";
import type { CounterDelta, LedgerEntry, LedgerKey, ListingPush } from "./rpc";
import type { Env } from "../platform/env";
import type { Clock } from "../platform/clock";
import { summaryOf } from "./run-summary";
import { RUNS_TRACE_RETENTION_SECONDS } from "../platform/settings/runs-settings";
import { announceToConsoles } from "./console-announce";
import { claimEntry, createLedger, dropEntries, dropThreadEntries, findEntry, putEntry, releaseEntry } from "./ledger";
import { ListingBuffer, createListingBuffer } from "./listing-buffer";
import { createRunLog, dropThreadTraces, eraseUserTraces, findTrace, keepTrace, pruneTracesBefore } from "./run-log";
import { type ShardTimers, shardTimers } from "./timers";

export interface ShardDeps {
  storage: DurableObjectStorage;
  /** The object's env, read through a function so it follows the object's. */
  env: () => Env;
  clock: Clock;
  /** Keeps background work (the consoles' announcements) alive past the verb. */
  waitUntil: (work: Promise<unknown>) => void;
}

export interface ShardLedger {
  put(k: LedgerKey, entry: LedgerEntry, expiresAtMs: number | null): Promise<void>;
  find(k: LedgerKey, nowMs: number): LedgerEntry | null;
  claim(k: LedgerKey, mine: LedgerEntry, expiresAtMs: number, nowMs: number): Promise<LedgerEntry>;
  release(k: LedgerKey, messageId: string): void;
  drop(keys: LedgerKey[]): void;
}

export interface ShardListing {
  push(p: ListingPush): Promise<void>;
  flush(): Promise<number>;
  pending(): number;
  count(deltas: CounterDelta[]): Promise<void>;
  forgetThread(threadId: string): Promise<void>;
}

export interface ShardRuns {
  record(trace: RunTrace): Promise<void>;
  read(traceId: string, nowMs: number): RunTrace | null;
  eraseUser(userId: string): Promise<number>;
  pruneBefore(beforeMs: number): Promise<number>;
}

export interface ShardParts {
  ledger: ShardLedger;
  listing: ShardListing;
  runs: ShardRuns;
  alarm: ShardTimers;
}

/** Brings the shard's stores to their current schema; the shell runs it (startObject) before composing the parts. */
export function migrateShard(storage: DurableObjectStorage): void {
  createLedger(storage.sql);
  createListingBuffer(storage.sql);
  createRunLog(storage.sql);
}

/** The shard's parts over storage already migrated (`migrateShard`): the buffer reads its counters back at once. */
export function composeShard(deps: ShardDeps): ShardParts {
  const { storage, clock } = deps;
  const sql = storage.sql;
  const buffer = new ListingBuffer({
    sql,
    db: () => deps.env().DB,
    now: () => clock.now(),
    policy: () => {
      // The env with the runtime overlay on top (this isolate's cache; no D1 statement per push).
      const s = objectSettingsNow(deps.env());
      // An invalid configuration refuses every door; the buffer keeps flushing at the defaults.
      const c = s ? s.conversations : { indexFlushBatch: 20, indexFlushLagSeconds: 1 };
      return { batch: c.indexFlushBatch, lagMs: c.indexFlushLagSeconds * 1000 };
    },
  });
  const timers = shardTimers(storage, buffer, clock);

  const ledger: ShardLedger = {
    async put(k, entry, expiresAtMs) {
      putEntry(sql, k, entry, expiresAtMs);
      if (expiresAtMs !== null) await timers.noteLedgerExpiry(expiresAtMs);
    },
    find: (k, nowMs) => findEntry(sql, k, nowMs),
    async claim(k, mine, expiresAtMs, nowMs) {
      const held = claimEntry(sql, k, mine, expiresAtMs, nowMs);
      if (held === mine) await timers.noteLedgerExpiry(expiresAtMs);
      return held;
    },
    release: (k, messageId) => releaseEntry(sql, k, messageId),
    drop: (keys) => dropEntries(sql, keys),
  };

  const listing: ShardListing = {
    async push(p) {
      // Flushing is never awaited here: the push is durable once this returns, the flush follows.
      const flushNow = buffer.push(p);
      // Consoles watching the route hear of it now, not after the D1 batch; never awaited.
      announceToConsoles(deps.env(), p, deps.waitUntil);
      if (flushNow) void timers.flushOrRetry();
      else await timers.arm();
    },
    flush: () => buffer.flush(),
    pending: () => buffer.pending(),
    async count(deltas) {
      buffer.bufferCounters(deltas);
      await timers.arm();
    },
    async forgetThread(threadId) {
      // A flush in progress may be writing this thread's row; let it land before the caller deletes D1's.
      await buffer.settled();
      buffer.forgetThread(threadId);
      dropThreadEntries(sql, threadId);
      // The caller deletes D1's rows of the thread next, so nothing needs buffering for them.
      dropThreadTraces(sql, threadId);
    },
  };

  const runs: ShardRuns = {
    async record(trace) {
      const s = objectSettingsNow(deps.env());
      const retentionMs = (s ? s.runs.traceRetentionSeconds : RUNS_TRACE_RETENTION_SECONDS.default) * 1000;
      const expiresAt = Date.parse(trace.started_at) + trace.duration_ms + retentionMs;
      keepTrace(sql, trace, expiresAt);
      timers.noteTraceExpiry(expiresAt);
      if (buffer.bufferRun(summaryOf(trace, "shard"))) void timers.flushOrRetry();
      else await timers.arm();
    },
    read: (traceId, nowMs) => findTrace(sql, traceId, nowMs),
    async eraseUser(userId) {
      // A flush in progress may be writing this user's rows; let it land before the caller deletes D1's.
      await buffer.settled();
      buffer.forgetUserRuns(userId);
      return eraseUserTraces(sql, userId).length;
    },
    async pruneBefore(beforeMs) {
      await buffer.settled();
      buffer.pruneRunsBefore(beforeMs);
      return pruneTracesBefore(sql, beforeMs).length;
    },
  };

  return { ledger, listing, runs, alarm: timers };
}
