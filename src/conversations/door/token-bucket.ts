/**
 * Token bucket of decisions §6 (pure): capacity = turns per hour, refilling continuously at
 * capacity/3600 tokens per second. The cooldown window is one token's refill time.
 *
 * The bucket's object keeps the bucket in memory and stores a floor under it (`floorFor`,
 * `floorHolds`): see durable-objects/address-bucket.ts for why that is safe under eviction.
 */
export interface BucketState {
  tokens: number;
  updatedAtMs: number;
  /** Start of the cooldown window in which the slow-down notice was last sent (channel doors). */
  noticeAtMs: number | null;
}

/** What a door hears from its rate bucket: allowed, or the wait and whether to send the slow-down notice. */
export type BucketVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number; notify: boolean };

export type TakeResult = { allowed: true; state: BucketState } | { allowed: false; state: BucketState; retryAfterSeconds: number; notify: boolean };

export function refill(state: BucketState, capacity: number, nowMs: number): BucketState {
  const elapsed = Math.max(0, nowMs - state.updatedAtMs) / 1000;
  return { ...state, tokens: Math.min(capacity, state.tokens + (elapsed * capacity) / 3600), updatedAtMs: nowMs };
}

export function cooldownSeconds(capacity: number): number {
  return 3600 / capacity;
}

/** Takes one token, or reports the wait and whether this refusal should carry the notice. */
export function take(prev: BucketState | null, capacity: number, nowMs: number): TakeResult {
  const state = refill(prev ?? { tokens: capacity, updatedAtMs: nowMs, noticeAtMs: null }, capacity, nowMs);
  if (state.tokens >= 1) return { allowed: true, state: { ...state, tokens: state.tokens - 1 } };
  const retryAfterSeconds = ((1 - state.tokens) * 3600) / capacity;
  const windowMs = cooldownSeconds(capacity) * 1000;
  const notify = state.noticeAtMs === null || nowMs - state.noticeAtMs >= windowMs;
  return { allowed: false, state: notify ? { ...state, noticeAtMs: nowMs } : state, retryAfterSeconds, notify };
}

/** Milliseconds until the bucket is full again (when its state can be forgotten). */
export function msUntilFull(state: BucketState, capacity: number): number {
  return Math.ceil(((capacity - state.tokens) * 3600 * 1000) / capacity);
}

/**
 * Tokens a stored floor holds back below the live bucket: the live bucket spends that many from
 * memory before the floor must be written again. A tenth of the capacity, at least 1 and at most
 * 10: at most one write per 2 to 11 takes, and at most that many tokens lost to a caller whose
 * bucket's object was evicted.
 */
export function floorReserve(capacity: number): number {
  return Math.max(1, Math.min(10, Math.floor(capacity / 10)));
}

/** The floor to store under the live bucket `live`: `floorReserve` tokens fewer, never below zero. */
export function floorFor(live: BucketState, capacity: number): BucketState {
  return { ...live, tokens: Math.max(0, live.tokens - floorReserve(capacity)) };
}

/**
 * Does the stored floor still lie under the live bucket after a take? Both refill at the same rate
 * up to the same capacity, so a floor at or under the live bucket now stays under it until the
 * next take; a take that went below it (or a notice the floor does not know of) needs a write.
 */
export function floorHolds(floor: BucketState, live: BucketState, capacity: number, nowMs: number): boolean {
  // The live bucket refills step by step, the floor in one go: allow their rounding apart.
  return refill(floor, capacity, nowMs).tokens <= live.tokens + ROUNDING && floor.noticeAtMs === live.noticeAtMs;
}

/** A billionth of a token: how far the two refills' rounding may drift apart, far below one token. */
const ROUNDING = 1e-9;
