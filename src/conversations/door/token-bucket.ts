/**
 * Token bucket of decisions §6 (pure): capacity = turns per hour, refilling continuously at
 * capacity/3600 tokens per second. The cooldown window is one token's refill time.
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
