/**
 * AddressBucket: one Durable Object per rate-bucket key (decisions §6). Holds one token bucket;
 * strongly consistent, so concurrent admissions of the same address never overspend. A bucket
 * that has refilled completely is indistinguishable from a new one, so its state is deleted by
 * an alarm at that moment: idle addresses cost no storage.
 */
import { DurableObject } from "cloudflare:workers";
import { type BucketState, msUntilFull, refill, take } from "../src/bridge/token-bucket";
import type { Env } from "../src/env";

export type BucketVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number; notify: boolean };

interface Stored {
  state: BucketState;
  capacity: number;
}

export class AddressBucket extends DurableObject<Env> {
  /** Takes one token from a bucket of `capacity` turns per hour. */
  async take(capacity: number): Promise<BucketVerdict> {
    const now = Date.now();
    const prev = (await this.ctx.storage.get<Stored>("bucket")) ?? null;
    const r = take(prev?.state ?? null, capacity, now);
    await this.ctx.storage.put("bucket", { state: r.state, capacity } satisfies Stored);
    // One alarm per bucket lifetime (it re-arms itself until the bucket is full), so a take
    // costs one storage write rather than two.
    if (!prev) await this.ctx.storage.setAlarm(now + Math.max(1000, msUntilFull(r.state, capacity)));
    return r.allowed ? { allowed: true } : { allowed: false, retryAfterSeconds: r.retryAfterSeconds, notify: r.notify };
  }

  /** Forgets the bucket once it is full again; otherwise waits until it will be. */
  override async alarm(): Promise<void> {
    const stored = await this.ctx.storage.get<Stored>("bucket");
    if (!stored) return;
    const now = Date.now();
    const wait = msUntilFull(refill(stored.state, stored.capacity, now), stored.capacity);
    if (wait <= 0) await this.ctx.storage.deleteAll();
    else await this.ctx.storage.setAlarm(now + Math.max(1000, wait));
  }
}
