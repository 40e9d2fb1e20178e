/**
 * IndexShard: one of SHARD_COUNT objects that keep D1 off the per-message path. A thin
 * shell over its three parts: the ledger (src/shards/ledger.ts: the message directory, inbound
 * dedupe claims, outbound chunk ids), the listing buffer (src/shards/listing-buffer.ts: thread
 * listing rows and failed records, written to D1 in batches) and the run log
 * (src/shards/run-log.ts: the traces of runs outside any thread) whose summary rows, metrics
 * counters and thread loads ride the listing buffer's batches. One alarm serves them all: the
 * buffer's flush deadline, the ledger's next expiry and the run log's. The contract is
 * src/shards/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { RunTrace } from "../src/observability/model/run-trace";
import type { CounterDelta, IndexShardRpc, LedgerEntry, LedgerKey, ListingPush } from "../src/shards/rpc";
import type { Env } from "../src/platform/env";
import { isolateSettings } from "../src/config/isolate-settings";
import {
  claimEntry,
  createLedger,
  dropEntries,
  dropThreadEntries,
  findEntry,
  nextLedgerExpiry,
  pruneLedger,
  putEntry,
  releaseEntry,
} from "../src/shards/ledger";
import { ListingBuffer, createListingBuffer } from "../src/shards/listing-buffer";
import { announceToConsoles } from "../src/shards/console-announce";
import { createRunLog, dropThreadTraces, eraseUserTraces, findTrace, keepTrace, nextTraceExpiry, pruneTraces, pruneTracesBefore } from "../src/shards/run-log";
import { summaryOf } from "../src/observability/runs/summary";
import { RUNS_DEFAULTS } from "../src/platform/settings/runs-settings";

/** A failed flush is retried after this long (D1 unavailable, say). */
const RETRY_MS = 5000;

export class IndexShard extends DurableObject<Env> implements IndexShardRpc {
  private readonly buffer: ListingBuffer;
  private armedAt: number | null = null;
  /** The ledger's earliest expiry (memory; read from the table when the object starts). */
  private ledgerNext: number | null = null;
  /** The run log's earliest expiry (memory; read from the table when the object starts). */
  private tracesNext: number | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // Synchronous on purpose: the tables must exist before the buffer reads its counters back.
    createLedger(ctx.storage.sql);
    createListingBuffer(ctx.storage.sql);
    createRunLog(ctx.storage.sql);
    this.ledgerNext = nextLedgerExpiry(ctx.storage.sql);
    this.tracesNext = nextTraceExpiry(ctx.storage.sql);
    this.buffer = new ListingBuffer({
      sql: ctx.storage.sql,
      db: () => this.env.DB,
      now: () => Date.now(),
      policy: () => {
        // The env with the runtime overlay on top (this isolate's cache; no D1 statement per push).
        const r = isolateSettings.peek(this.env).result;
        // An invalid configuration refuses every door; the buffer keeps flushing at the defaults.
        const c = r.ok ? r.settings.conversations : { indexFlushBatch: 20, indexFlushLagSeconds: 1 };
        return { batch: c.indexFlushBatch, lagMs: c.indexFlushLagSeconds * 1000 };
      },
    });
  }

  async put(k: LedgerKey, entry: LedgerEntry, expiresAtMs: number | null): Promise<void> {
    putEntry(this.ctx.storage.sql, k, entry, expiresAtMs);
    if (expiresAtMs !== null) await this.noteExpiry(expiresAtMs);
  }

  async find(k: LedgerKey, nowMs: number): Promise<LedgerEntry | null> {
    return findEntry(this.ctx.storage.sql, k, nowMs);
  }

  async claim(k: LedgerKey, mine: LedgerEntry, expiresAtMs: number, nowMs: number): Promise<LedgerEntry> {
    const held = claimEntry(this.ctx.storage.sql, k, mine, expiresAtMs, nowMs);
    if (held === mine) await this.noteExpiry(expiresAtMs);
    return held;
  }

  async release(k: LedgerKey, messageId: string): Promise<void> {
    releaseEntry(this.ctx.storage.sql, k, messageId);
  }

  async drop(keys: LedgerKey[]): Promise<void> {
    dropEntries(this.ctx.storage.sql, keys);
  }

  async push(p: ListingPush): Promise<void> {
    // Flushing is never awaited here: the push is durable once this returns, the flush follows.
    const flushNow = this.buffer.push(p);
    // Consoles watching the route hear of it now, not after the D1 batch; never awaited.
    announceToConsoles(this.env, p, (work) => this.ctx.waitUntil(work));
    if (flushNow) void this.flushOrRetry();
    else await this.arm();
  }

  async flush(): Promise<number> {
    return this.buffer.flush();
  }

  async pending(): Promise<number> {
    return this.buffer.pending();
  }

  async forgetThread(threadId: string): Promise<void> {
    // A flush in progress may be writing this thread's row; let it land before the caller deletes D1's.
    await this.buffer.settled();
    this.buffer.forgetThread(threadId);
    dropThreadEntries(this.ctx.storage.sql, threadId);
    // The caller deletes D1's rows of the thread next, so nothing needs buffering for them.
    dropThreadTraces(this.ctx.storage.sql, threadId);
  }

  async recordRun(trace: RunTrace): Promise<void> {
    const r = isolateSettings.peek(this.env).result;
    const retentionMs = (r.ok ? r.settings.runs.traceRetentionSeconds : RUNS_DEFAULTS.traceRetentionSeconds) * 1000;
    const expiresAt = Date.parse(trace.started_at) + trace.duration_ms + retentionMs;
    keepTrace(this.ctx.storage.sql, trace, expiresAt);
    this.tracesNext = this.tracesNext === null ? expiresAt : Math.min(this.tracesNext, expiresAt);
    if (this.buffer.bufferRun(summaryOf(trace, "shard"))) void this.flushOrRetry();
    else await this.arm();
  }

  async readTrace(traceId: string, nowMs: number): Promise<RunTrace | null> {
    return findTrace(this.ctx.storage.sql, traceId, nowMs);
  }

  async count(deltas: CounterDelta[]): Promise<void> {
    this.buffer.bufferCounters(deltas);
    await this.arm();
  }

  async eraseUserRuns(userId: string): Promise<number> {
    // A flush in progress may be writing this user's rows; let it land before the caller deletes D1's.
    await this.buffer.settled();
    this.buffer.forgetUserRuns(userId);
    return eraseUserTraces(this.ctx.storage.sql, userId).length;
  }

  async pruneRuns(beforeMs: number): Promise<number> {
    await this.buffer.settled();
    this.buffer.pruneRunsBefore(beforeMs);
    return pruneTracesBefore(this.ctx.storage.sql, beforeMs).length;
  }

  override async alarm(): Promise<void> {
    this.armedAt = null;
    this.ledgerNext = pruneLedger(this.ctx.storage.sql, Date.now());
    // Expired traces go, and their summary rows with the next flush.
    this.buffer.bufferRunDrops(pruneTraces(this.ctx.storage.sql, Date.now()));
    this.tracesNext = nextTraceExpiry(this.ctx.storage.sql);
    if (this.buffer.dueAt() !== null && (this.buffer.dueAt() ?? 0) <= Date.now()) await this.flushOrRetry();
    await this.arm();
  }

  /** Flushes; on failure logs once and leaves the rows for the alarm, RETRY_MS from now. */
  private async flushOrRetry(): Promise<void> {
    try {
      await this.buffer.startFlush();
    } catch (err) {
      console.error(`index shard: flushing the listing to D1 failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : err);
      await this.setAlarmAt(Date.now() + RETRY_MS, true);
      return;
    }
    await this.arm();
  }

  private async noteExpiry(at: number): Promise<void> {
    this.ledgerNext = this.ledgerNext === null ? at : Math.min(this.ledgerNext, at);
    await this.arm();
  }

  /** Arms the one alarm at the earliest of the flush deadline, the ledger's next expiry and the run log's. */
  private async arm(): Promise<void> {
    const candidates = [this.buffer.dueAt(), this.ledgerNext, this.tracesNext].filter((t): t is number => typeof t === "number");
    if (!candidates.length) return;
    await this.setAlarmAt(Math.min(...candidates), false);
  }

  private async setAlarmAt(at: number, force: boolean): Promise<void> {
    const now = Date.now();
    const target = Math.max(at, now + 1);
    // An alarm already set no later than the target covers it (firing early only re-arms).
    if (!force && this.armedAt !== null && this.armedAt > now && this.armedAt <= target) return;
    await this.ctx.storage.setAlarm(target);
    this.armedAt = target;
  }
}
