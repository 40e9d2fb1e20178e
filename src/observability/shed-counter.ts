/**
 * Rate-cap sheds for the metrics (docs/observability.md "Rate-cap sheds"). Every refused
 * rate token (the api and event doors' 429, a channel's slow-down answer or shed record) is counted
 * here, in this isolate's memory, by minute and route; at most once a second the isolate hands what
 * it counted to the route's counter shard in one background object call (`waitUntil`), and the
 * shard writes it to D1 `run_counters` with its next batch. So a shed costs no D1 statement and,
 * under a flood, about one object call per isolate per second. A count is lost only if the isolate
 * dies inside that second (the figure is then a lower bound; the docs say so).
 */
import { waitUntil } from "cloudflare:workers";
import { type CounterDelta, counterShard } from "../shards/rpc";
import type { Env } from "../platform/env";

/** How long counts gather in the isolate before they are handed to the shards. */
export const SHED_FLUSH_DELAY_MS = 1000;

/** The counter name sheds are kept under. */
export const SHED_COUNTER = "rate_cap_sheds";

/**
 * Counts not yet handed to the shards, by minute and route. Bound: the routes that shed within one
 * flush delay (a second), one entry each. Eviction: every flush empties it.
 */
const pending = new Map<string, CounterDelta>();
let scheduled = false;

/** Counts waiting for the next flush (tests, and the bound above). */
export function pendingShedCount(): number {
  return pending.size;
}

/** Counts one refused rate token on `routeName`. Never throws and never waits. */
export function noteShed(env: Env, routeName: string, nowMs = Date.now()): void {
  const minute = Math.floor(nowMs / 60_000);
  const key = `${minute}\u0000${routeName}`;
  const cur = pending.get(key);
  if (cur) cur.value += 1;
  else pending.set(key, { minute, name: SHED_COUNTER, label: routeName, value: 1 });
  if (scheduled) return;
  scheduled = true;
  const flush = new Promise((resolve) => setTimeout(resolve, SHED_FLUSH_DELAY_MS)).then(() => flushSheds(env));
  try {
    waitUntil(flush);
  } catch {
    // Outside a request (a unit test): the timer still runs while the isolate lives.
  }
}

/** Hands every count gathered so far to its route's counter shard (one call per shard). */
export async function flushSheds(env: Env): Promise<void> {
  scheduled = false;
  const deltas = [...pending.values()];
  pending.clear();
  if (!deltas.length) return;
  const byShard = new Map<string, { label: string; deltas: CounterDelta[] }>();
  for (const d of deltas) {
    const group = byShard.get(d.label) ?? { label: d.label, deltas: [] };
    group.deltas.push(d);
    byShard.set(d.label, group);
  }
  await Promise.all(
    [...byShard.values()].map((g) =>
      counterShard(env, g.label)
        .count(g.deltas)
        .catch((err: unknown) => console.error("rate-cap shed counts lost: the shard call failed", err instanceof Error ? err.message : "unknown error")),
    ),
  );
}
