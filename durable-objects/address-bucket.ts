/**
 * AddressBucket: one Durable Object per rate-bucket key (decisions §6). Holds one token bucket;
 * strongly consistent, so concurrent admissions of the same address never overspend. A bucket
 * that has refilled completely is indistinguishable from a new one, so its state is deleted by
 * an alarm at that moment: idle addresses cost no storage. Live buckets are counted by the
 * BucketDirectory, which evicts the oldest past `address_bucket_max_entries`.
 */
import { DurableObject } from "cloudflare:workers";
import { type BucketState, type BucketVerdict, msUntilFull, refill, take } from "../src/conversations/door/token-bucket";
import { type AddressBucketRpc, addressBucketStub, bucketDirectoryStub } from "../src/conversations/door/bucket-rpc";
import type { Env } from "../src/platform/env";

interface Stored {
  state: BucketState;
  capacity: number;
  key: string;
}

/** One rate bucket per key; see the module comment. */
export class AddressBucket extends DurableObject<Env> implements AddressBucketRpc {
  /** Takes one token from the bucket `key` of `capacity` turns per hour. */
  async take(capacity: number, key: string, maxEntries: number): Promise<BucketVerdict> {
    const now = Date.now();
    const prev = (await this.ctx.storage.get<Stored>("bucket")) ?? null;
    const r = take(prev?.state ?? null, capacity, now);
    await this.ctx.storage.put("bucket", { state: r.state, capacity, key } satisfies Stored);
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
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }

  /** Forgets the bucket once it is full again; otherwise waits until it will be. */
  override async alarm(): Promise<void> {
    const stored = await this.ctx.storage.get<Stored>("bucket");
    if (!stored) return;
    const now = Date.now();
    const wait = msUntilFull(refill(stored.state, stored.capacity, now), stored.capacity);
    if (wait > 0) return void (await this.ctx.storage.setAlarm(now + Math.max(1000, wait)));
    await this.ctx.storage.deleteAll();
    await bucketDirectoryStub(this.env).unregister(stored.key);
  }
}
