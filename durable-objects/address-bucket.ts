/**
 * AddressBucket: one Durable Object per rate-bucket key (decisions §6). Holds one token bucket;
 * strongly consistent, so concurrent admissions of the same address never overspend. A bucket
 * that has refilled completely is indistinguishable from a new one, so its state is deleted by
 * an alarm at that moment: idle addresses cost no storage. Live buckets are counted by the
 * BucketDirectory, which evicts the oldest past `address_bucket_max_entries`.
 *
 * The bucket lives in memory; storage holds a floor under it. A take is decided on the live
 * bucket alone (no storage read), and most takes write nothing. The stored state is a lower bound
 * of the live one: it holds back `floorReserve` tokens (a tenth of the capacity, 1 to 10), so the
 * live bucket spends that many from memory before a take goes below the floor, and only that take
 * writes a new floor, before its answer leaves the object (the output gate holds the answer until
 * the write is durable). Both refill at the same rate up to the same capacity, so a floor under the
 * live bucket stays under it; a notice or a capacity change the floor does not know of is written
 * the same way. The runtime may evict an idle object, or end a busy one, at any time and drop its
 * memory: the next instance starts from the floor, which is at or below what the bucket really
 * held. An evicted bucket therefore never refills early: a caller may find up to `floorReserve`
 * tokens fewer than an exact bucket would hold, never one more, and a bucket emptied by an attack
 * stays empty (test/conversations/address-bucket.test.ts evicts one and proves it). Refusals write
 * nothing, except the one that sends a cooldown window's notice.
 */
import { DurableObject } from "cloudflare:workers";
import { type BucketState, type BucketVerdict, floorFor, floorHolds, msUntilFull, refill, take } from "../src/conversations/door/token-bucket";
import { type AddressBucketRpc, addressBucketStub, bucketDirectoryStub } from "../src/conversations/door/bucket-rpc";
import type { Env } from "../src/platform/env";
import { type Clock, systemClock } from "../src/platform/clock";
import { startObject } from "../src/platform/persistence/object-start";

/** The stored floor: a lower bound of the live bucket, with the capacity it was taken under. */
interface Stored {
  state: BucketState;
  capacity: number;
  key: string;
}

/** One rate bucket per key; see the module comment. */
export class AddressBucket extends DurableObject<Env> implements AddressBucketRpc {
  /** The clock the object reads time from. */
  private readonly clock: Clock = systemClock;

  /** The live bucket (null: no bucket yet). */
  private live: BucketState | null = null;
  /** The floor as last stored (null: nothing stored, a new bucket). */
  private floor: Stored | null = null;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A new instance starts from the floor: the bucket it holds is at or below the real one.
    startObject(ctx, {
      load: async (storage) => {
        this.floor = (await storage.get<Stored>("bucket")) ?? null;
        this.live = this.floor?.state ?? null;
      },
    });
  }

  /** Takes one token from the bucket `key` of `capacity` turns per hour. */
  async take(capacity: number, key: string, maxEntries: number): Promise<BucketVerdict> {
    const now = this.clock.now();
    const prev = this.floor;
    const r = take(this.live, capacity, now);
    this.live = r.state;
    if (!prev || prev.capacity !== capacity || !floorHolds(prev.state, r.state, capacity, now)) {
      // Set before the write is awaited, so a take that runs meanwhile measures against it.
      this.floor = { state: floorFor(r.state, capacity), capacity, key };
      await this.ctx.storage.put("bucket", this.floor);
    }
    if (!prev) {
      // A new bucket: one alarm for its lifetime (it re-arms itself until full), and a place in
      // the directory, which may evict the oldest buckets to stay within the bound.
      await this.ctx.storage.setAlarm(now + Math.max(1000, msUntilFull(r.state, capacity)));
      const evicted = await bucketDirectoryStub(this.env).register(key, maxEntries);
      await Promise.all(evicted.map((k) => addressBucketStub(this.env, k).forget()));
    }
    return r.allowed ? { allowed: true } : { allowed: false, retryAfterSeconds: r.retryAfterSeconds, notify: r.notify };
  }

  /** Evicted by the directory: start again from a full bucket. */
  async forget(): Promise<void> {
    this.live = null;
    this.floor = null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  /**
   * Forgets the bucket once it is full again; otherwise waits until it will be. Decided on the
   * stored floor: when the floor is full the live bucket is too, and waiting on the floor only
   * keeps the state a little longer.
   */
  override async alarm(): Promise<void> {
    const stored = await this.ctx.storage.get<Stored>("bucket");
    if (!stored) return;
    const now = this.clock.now();
    const wait = msUntilFull(refill(stored.state, stored.capacity, now), stored.capacity);
    if (wait > 0) return void (await this.ctx.storage.setAlarm(now + Math.max(1000, wait)));
    this.live = null;
    this.floor = null;
    await this.ctx.storage.deleteAll();
    await bucketDirectoryStub(this.env).unregister(stored.key);
  }
}
