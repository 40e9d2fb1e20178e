/**
 * The clock an object's parts read time from. The object injects the system clock; a test reaches
 * the composed parts (runInDurableObject) and hands them a clock of its own, so no RPC verb exists
 * only to set the time.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock stopped at `ms`. */
export function fixedClock(ms: number): Clock {
  return { now: () => ms };
}
