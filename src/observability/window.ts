/** The metrics window (`?window=`). Pure. */
import { z } from "zod";

export const MIN_WINDOW_SECONDS = 60;
export const MAX_WINDOW_SECONDS = 7 * 24 * 3600;
export const DEFAULT_WINDOW = "1h";

const UNIT_SECONDS = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** Seconds of a window like `90s`, `15m`, `1h`, `7d`; null when malformed or out of bounds. */
export function windowSeconds(w: string): number | null {
  const m = /^(\d{1,7})([smhd])$/.exec(w);
  if (!m) return null;
  const seconds = Number(m[1]) * UNIT_SECONDS[m[2] as keyof typeof UNIT_SECONDS];
  return seconds >= MIN_WINDOW_SECONDS && seconds <= MAX_WINDOW_SECONDS ? seconds : null;
}

/** The `window` query parameter: a number and a unit (s, m, h, d), 1 minute to 7 days. */
export const windowQuery = z
  .string()
  .refine((w) => windowSeconds(w) !== null, { message: "must be a number with a unit s, m, h or d (e.g. 15m, 1h, 7d), between 1 minute and 7 days" })
  .optional();
