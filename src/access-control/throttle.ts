/**
 * Exponential backoff for failed bootstrap attempts per client IP (pure policy + D1 glue).
 * After the n-th consecutive failure the IP must wait min(2^(n-1), 300) seconds.
 */
import { z } from "zod";
import { d1, first, run } from "../platform/persistence/d1";
export const MAX_BACKOFF_SECONDS = 300;

export function backoffSeconds(failures: number): number {
  if (failures <= 0) return 0;
  return Math.min(2 ** (failures - 1), MAX_BACKOFF_SECONDS);
}

const BlockedRow = z.object({ blocked_until: z.number() });
const FailuresRow = z.object({ failures: z.number() });

/** Seconds the IP must still wait (0 when free to try). */
export async function throttleWait(db: D1Database, ip: string, nowMs: number): Promise<number> {
  const row = await first(BlockedRow, d1(db)`SELECT blocked_until FROM auth_throttle WHERE client_ip = ${ip}`);
  if (!row) return 0;
  return Math.max(0, (row.blocked_until - nowMs) / 1000);
}

export async function recordFailure(db: D1Database, ip: string, nowMs: number): Promise<void> {
  const row = await first(FailuresRow, d1(db)`SELECT failures FROM auth_throttle WHERE client_ip = ${ip}`);
  const failures = (row?.failures ?? 0) + 1;
  const until = nowMs + backoffSeconds(failures) * 1000;
  await run(d1(db)`INSERT INTO auth_throttle (client_ip, failures, blocked_until) VALUES (${ip}, ${failures}, ${until})
    ON CONFLICT(client_ip) DO UPDATE SET failures = excluded.failures, blocked_until = excluded.blocked_until`);
}

export async function clearFailures(db: D1Database, ip: string): Promise<void> {
  await run(d1(db)`DELETE FROM auth_throttle WHERE client_ip = ${ip}`);
}

/** Prune rows whose block ended over a day ago (the counter resets after a quiet day). */
export async function pruneThrottle(db: D1Database, nowMs: number): Promise<void> {
  await run(d1(db)`DELETE FROM auth_throttle WHERE blocked_until < ${nowMs - 86_400_000}`);
}
