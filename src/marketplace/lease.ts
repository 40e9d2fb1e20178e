/**
 * The fleet lock's lease policy (pure; the MarketplaceLock object stores the lease). One holder at
 * a time; a lease that outlived its holder (a Worker that died mid-install) lapses at
 * `expires_at`, so the lock never stays taken for good. Only the holder renews or releases.
 */

/** The lease as the lock object stores and answers it (epoch ms). */
export interface LockLease {
  holder: string;
  /** What took it (e.g. `install examples/greetings`), for operators reading the object. */
  operation: string;
  acquired_at: number;
  expires_at: number;
}

export type AcquireDecision = { ok: true; lease: LockLease } | { ok: false; retry_after_ms: number };

/** Whether `current` still binds at `now`. */
export function isLive(current: LockLease | null, now: number): current is LockLease {
  return current !== null && current.expires_at > now;
}

/** Taking the lock: free or lapsed → a fresh lease; held by the same holder → extended; else refused. */
export function decideAcquire(current: LockLease | null, holder: string, operation: string, leaseMs: number, now: number): AcquireDecision {
  if (isLive(current, now) && current.holder !== holder) return { ok: false, retry_after_ms: current.expires_at - now };
  const acquired_at = isLive(current, now) ? current.acquired_at : now;
  return { ok: true, lease: { holder, operation, acquired_at, expires_at: now + leaseMs } };
}

/** Renewing: only a live lease of the same holder is extended; null when it was lost. */
export function decideRenew(current: LockLease | null, holder: string, leaseMs: number, now: number): LockLease | null {
  if (!isLive(current, now) || current.holder !== holder) return null;
  return { ...current, expires_at: now + leaseMs };
}

/** Releasing: only the holder's own lease is dropped (a lapsed one may already be someone else's). */
export function mayRelease(current: LockLease | null, holder: string): boolean {
  return current !== null && current.holder === holder;
}

/** Whole seconds for a `Retry-After` header: at least 1. */
export function retryAfterSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}
