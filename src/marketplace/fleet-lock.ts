/**
 * Running a marketplace write under the fleet lock (docs/marketplace.md "The fleet lock"). The lock
 * is taken with a fresh holder id and a lease of MARKETPLACE_LOCK_LEASE_SECONDS; held elsewhere, the
 * caller gets the retriable 503 with `Retry-After`. The work gets a `keepAlive` that renews the
 * lease once half of it has passed (upgrade-all calls it between plugins), and the lock is released
 * however the work ends. A holder that dies never releases: its lease lapses instead.
 */
import { marketplaceLockStub } from "./rpc";
import type { Env } from "../platform/env";
import type { Settings } from "../platform/settings/settings";
import { lockHeld } from "./refusals";

/** Renews the lease when due; false once it was lost (lapsed and taken by someone else). */
export type KeepAlive = () => Promise<boolean>;

export async function withFleetLock<T>(env: Env, settings: Settings, operation: string, work: (keepAlive: KeepAlive) => Promise<T>): Promise<T> {
  const lock = marketplaceLockStub(env);
  const holder = crypto.randomUUID();
  const leaseMs = settings.marketplace.lockLeaseSeconds * 1000;
  const taken = await lock.acquire(holder, operation, leaseMs);
  if (!taken.ok) throw lockHeld(taken.retry_after_ms);
  let renewedAt = Date.now();
  const keepAlive: KeepAlive = async () => {
    if (Date.now() - renewedAt < leaseMs / 2) return true;
    const lease = await lock.renew(holder, leaseMs);
    renewedAt = Date.now();
    return lease !== null;
  };
  try {
    return await work(keepAlive);
  } finally {
    await lock.release(holder).catch((err) => console.error("marketplace: releasing the fleet lock failed; its lease lapses instead", err));
  }
}
