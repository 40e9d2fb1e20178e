/**
 * The fleet marketplace lock's RPC contract (spec §4.10, platform-facts A6). One
 * `MarketplaceLock` object for the whole deployment (`idFromName("fleet")`) holds at most one
 * lease; every install, update, uninstall and upgrade-all runs while holding it, so two of them
 * never interleave. A lease lapses at its `expires_at`, so a holder that dies frees the lock.
 */
import type { Env } from "../platform/env";
import type { AcquireDecision, LockLease } from "./lease";

export type { AcquireDecision, LockLease };

export interface MarketplaceLockRpc {
  /** Takes the lock for `holder` for `leaseMs` (the holder itself may take it again: it extends). */
  acquire(holder: string, operation: string, leaseMs: number): Promise<AcquireDecision>;
  /** Extends the holder's live lease; null when it lapsed or is someone else's. */
  renew(holder: string, leaseMs: number): Promise<LockLease | null>;
  /** Drops the holder's lease; false when it was not (or no longer) the holder's. */
  release(holder: string): Promise<boolean>;
  /** The live lease, or null (for operators and tests). */
  current(): Promise<LockLease | null>;
}

/** The one lock object's name. */
export const FLEET_LOCK_NAME = "fleet";

export function marketplaceLockStub(env: Env): MarketplaceLockRpc {
  return env.MARKETPLACE_LOCK.get(env.MARKETPLACE_LOCK.idFromName(FLEET_LOCK_NAME));
}
