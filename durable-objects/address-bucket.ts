/**
 * AddressBucket: one Durable Object per rate-bucket key (decisions §6). Holds one token bucket;
 * strongly consistent, so concurrent admissions of the same address never overspend. A bucket
 * that has refilled completely is indistinguishable from a new one, so its state is deleted by
 * an alarm at that moment: idle addresses cost no storage.
 */
import { DurableObject } from "cloudflare:workers";
import { type BucketState, msUntilFull, take } from "../src/bridge/token-bucket";
import type { Env } from "../src/env";

export type BucketVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number; notify: boolean };

export class AddressBucket extends DurableObject<Env> {
  /** Takes one token from a bucket of `capacity` turns per hour. */
  async take(capacity: number): Promise<BucketVerdict> {
    const now = Date.now();
    const prev = (await this.ctx.storage.get<BucketState>("bucket")) ?? null;
    const r = take(prev, capacity, now);
    await this.ctx.storage.put("bucket", r.state);
    await this.ctx.storage.setAlarm(now + Math.max(1000, msUntilFull(r.state, capacity)));
    return r.allowed ? { allowed: true } : { allowed: false, retryAfterSeconds: r.retryAfterSeconds, notify: r.notify };
  }

  /** The bucket is full again: forget it. */
  override async alarm(): Promise<void> {
    await this.ctx.storage.deleteAll();
  }
}
