/**
 * IndexShard: one of SHARD_COUNT objects that keep D1 off the per-message path. A shell over its
 * parts (src/shards/compose.ts): the ledger (the message directory, inbound dedupe claims,
 * outbound chunk ids), the listing buffer (thread listing rows and failed records, written to D1
 * in batches) and the run log (the traces of runs outside any thread), whose summary rows, metrics
 * counters and thread loads ride the listing buffer's batches. One alarm serves them all
 * (src/shards/timers.ts): the buffer's flush deadline, the ledger's next expiry and the run log's.
 * The contract is src/shards/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { RunTrace } from "../src/shared/run-trace";
import type { CounterDelta, IndexShardRpc, LedgerEntry, LedgerKey, ListingPush } from "../src/shards/rpc";
import type { Env } from "../src/platform/env";
import { systemClock } from "../src/platform/clock";
import { type ShardParts, composeShard, migrateShard } from "../src/shards/compose";
import { startObject } from "../src/platform/persistence/object-start";

export class IndexShard extends DurableObject<Env> implements IndexShardRpc {
  private readonly parts: ShardParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: migrateShard });
    this.parts = composeShard({ storage: ctx.storage, env: () => this.env, clock: systemClock, waitUntil: (work) => ctx.waitUntil(work) });
  }

  async put(k: LedgerKey, entry: LedgerEntry, expiresAtMs: number | null): Promise<void> {
    return this.parts.ledger.put(k, entry, expiresAtMs);
  }

  async find(k: LedgerKey, nowMs: number): Promise<LedgerEntry | null> {
    return this.parts.ledger.find(k, nowMs);
  }

  async claim(k: LedgerKey, mine: LedgerEntry, expiresAtMs: number, nowMs: number): Promise<LedgerEntry> {
    return this.parts.ledger.claim(k, mine, expiresAtMs, nowMs);
  }

  async release(k: LedgerKey, messageId: string): Promise<void> {
    this.parts.ledger.release(k, messageId);
  }

  async drop(keys: LedgerKey[]): Promise<void> {
    this.parts.ledger.drop(keys);
  }

  async push(p: ListingPush): Promise<void> {
    return this.parts.listing.push(p);
  }

  async flush(): Promise<number> {
    return this.parts.listing.flush();
  }

  async pending(): Promise<number> {
    return this.parts.listing.pending();
  }

  async forgetThread(threadId: string): Promise<void> {
    return this.parts.listing.forgetThread(threadId);
  }

  async recordRun(trace: RunTrace): Promise<void> {
    return this.parts.runs.record(trace);
  }

  async readTrace(traceId: string, nowMs: number): Promise<RunTrace | null> {
    return this.parts.runs.read(traceId, nowMs);
  }

  async count(deltas: CounterDelta[]): Promise<void> {
    return this.parts.listing.count(deltas);
  }

  async eraseUserRuns(userId: string): Promise<number> {
    return this.parts.runs.eraseUser(userId);
  }

  async pruneRuns(beforeMs: number): Promise<number> {
    return this.parts.runs.pruneBefore(beforeMs);
  }

  /** The one alarm: expired ledger entries and traces go, a due flush runs, then it re-arms. */
  override async alarm(): Promise<void> {
    await this.parts.alarm.run();
  }
}
