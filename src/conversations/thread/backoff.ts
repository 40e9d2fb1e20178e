/** Retry waits of the delivery machine (spec §3.1, decisions §8). Pure. */

/**
 * Seconds to wait after failed attempt `attempt` (1-based): `base × 2^(attempt-1)`, capped at
 * `max`. With the defaults (60, 900): 60, 120, 240, 480, 900, 900, …
 */
export function backoffDelaySeconds(attempt: number, baseSeconds: number, maxSeconds: number): number {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError("attempt must be an integer of at least 1");
  if (!(baseSeconds > 0) || !(maxSeconds > 0)) throw new RangeError("baseSeconds and maxSeconds must be greater than 0");
  // Past 2^1023 the product is Infinity; the cap applies long before, so stop doubling early.
  const exponent = Math.min(attempt - 1, 1023);
  return Math.min(baseSeconds * 2 ** exponent, maxSeconds);
}
