/**
 * The metrics over a window (docs/observability.md "Metrics"): turns by outcome and
 * route, turn duration percentiles, runs by kind, delivery attempts and failures, the delivery
 * backlog, rate-cap sheds and queue depths. All read from D1 in one batch: the `runs` index, the
 * per-minute `run_counters`, `failed_records` and `thread_loads`, which the IndexShards write in
 * their batches (so every figure trails the threads by the listing lag, about a second). A
 * restricted caller gets its own runs' figures only; the deployment-wide ones are null for it.
 */
import { z } from "zod";
import { type Holder, sinceMs } from "../access-control/identity";
import { RUN_KINDS, RUN_OUTCOMES, type RunKind, type RunOutcome } from "./model/run-trace";
import { SHED_COUNTER } from "./shed-counter";

const counts = z.object(Object.fromEntries(RUN_OUTCOMES.map((o) => [o, z.number().int()])) as Record<RunOutcome, z.ZodNumber>).strict();
type OutcomeCounts = Record<RunOutcome, number>;

/** The metrics answer. */
export const Metrics = z
  .object({
    window: z.string(),
    window_seconds: z.number().int(),
    from: z.string(),
    to: z.string(),
    /** Only the caller's own runs are counted (a restricted caller). */
    own_runs_only: z.boolean(),
    turns: z.object({
      total: z.number().int(),
      by_outcome: counts,
      by_route: z.array(z.object({ route_name: z.string(), total: z.number().int(), by_outcome: counts }).strict()),
    }),
    /** Nearest-rank percentiles of the window's turn durations (null without turns). */
    turn_duration_ms: z
      .object({
        samples: z.number().int(),
        sum: z.number().int(),
        p50: z.number().int().nullable(),
        p95: z.number().int().nullable(),
        p99: z.number().int().nullable(),
      })
      .strict(),
    runs_by_kind: z.array(z.object({ kind: z.enum(RUN_KINDS), total: z.number().int(), by_outcome: counts }).strict()),
    deliveries: z
      .object({
        attempts: z.number().int(),
        failed_attempts: z.number().int(),
        failed_records: z.number().int(),
        backlog: z.number().int(),
        by_route: z.array(
          z
            .object({
              route_name: z.string(),
              attempts: z.number().int(),
              failed_attempts: z.number().int(),
              failed_records: z.number().int(),
              backlog: z.number().int(),
            })
            .strict(),
        ),
      })
      .strict()
      .nullable(),
    rate_cap_sheds: z
      .object({ total: z.number().int(), by_route: z.array(z.object({ route_name: z.string(), count: z.number().int() }).strict()) })
      .strict()
      .nullable(),
    queues: z
      .object({
        depth_total: z.number().int(),
        depth_max: z.number().int(),
        threads_queued: z.number().int(),
        by_route: z.array(
          z.object({ route_name: z.string(), depth_total: z.number().int(), depth_max: z.number().int(), threads_queued: z.number().int() }).strict(),
        ),
      })
      .strict()
      .nullable(),
  })
  .strict()
  .describe("Metrics");
export type Metrics = z.infer<typeof Metrics>;

const zero = (): OutcomeCounts => ({ ok: 0, error: 0, silent: 0, denied: 0, timeout: 0 });

/** The nearest-rank percentile `p` (0..100) of ascending `sorted`. Pure; the SQL computes the same. */
export function nearestRank(sorted: number[], p: number): number | null {
  if (!sorted.length) return null;
  return sorted[Math.max(1, Math.ceil((p / 100) * sorted.length)) - 1];
}

/**
 * Reads the metrics for the window [nowMs - seconds, nowMs). `principal`: count only that caller's
 * runs, from its key lineage's start on (src/access-control/identity.ts).
 */
export async function readMetrics(db: D1Database, window: string, seconds: number, nowMs: number, principal: Holder | null): Promise<Metrics> {
  const from = nowMs - seconds * 1000;
  const own = principal !== null;
  const lineage = principal ? sinceMs(principal) : Number.NaN;
  // The caller's runs start no earlier than its lineage; a holder with no lineage (no key) counts nothing.
  const runFrom = own ? Math.max(from, Number.isFinite(lineage) ? lineage : nowMs) : from;
  const runWhere = `started_at >= ? AND started_at < ?${own ? " AND principal = ?" : ""}`;
  const runArgs = own ? [runFrom, nowMs, principal.user_id] : [from, nowMs];
  const stmts = [
    db.prepare(`SELECT route_name, outcome, COUNT(*) AS n FROM runs WHERE kind = 'turn' AND ${runWhere} GROUP BY route_name, outcome`).bind(...runArgs),
    db
      .prepare(
        `WITH d AS (SELECT duration_ms, ROW_NUMBER() OVER (ORDER BY duration_ms) AS rn, COUNT(*) OVER () AS n FROM runs WHERE kind = 'turn' AND ${runWhere})
         SELECT COUNT(*) AS n, COALESCE(SUM(duration_ms), 0) AS total,
           MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN duration_ms END) AS p50,
           MAX(CASE WHEN rn = (n * 95 + 99) / 100 THEN duration_ms END) AS p95,
           MAX(CASE WHEN rn = (n * 99 + 99) / 100 THEN duration_ms END) AS p99
         FROM d`,
      )
      .bind(...runArgs),
    db.prepare(`SELECT kind, outcome, COUNT(*) AS n FROM runs WHERE ${runWhere} GROUP BY kind, outcome`).bind(...runArgs),
  ];
  if (!own) {
    // Counters are per minute: the window's edges are rounded out to whole minutes.
    stmts.push(
      db
        .prepare("SELECT name, label, SUM(value) AS n FROM run_counters WHERE minute >= ? AND minute <= ? GROUP BY name, label")
        .bind(Math.floor(from / 60_000), Math.floor(nowMs / 60_000)),
      db
        .prepare("SELECT route_name, COUNT(*) AS n FROM failed_records WHERE failed_at >= ? AND failed_at < ? GROUP BY route_name")
        .bind(new Date(from).toISOString(), new Date(nowMs).toISOString()),
      db.prepare(
        "SELECT route_name, SUM(queue_depth) AS depth, MAX(queue_depth) AS depth_max, SUM(queue_depth > 0) AS queued, SUM(pending_deliveries) AS backlog FROM thread_loads GROUP BY route_name",
      ),
    );
  }
  const [turnRows, pct, kindRows, counterRows, failedRows, loadRows] = await db.batch(stmts);

  const byRoute = new Map<string, OutcomeCounts>();
  const total = zero();
  for (const r of turnRows.results as Array<{ route_name: string | null; outcome: RunOutcome; n: number }>) {
    const route = r.route_name ?? "";
    const c = byRoute.get(route) ?? zero();
    c[r.outcome] = (c[r.outcome] ?? 0) + r.n;
    byRoute.set(route, c);
    total[r.outcome] = (total[r.outcome] ?? 0) + r.n;
  }
  const sum = (c: OutcomeCounts) => Object.values(c).reduce((a, b) => a + b, 0);
  const p = pct.results[0] as { n: number; total: number; p50: number | null; p95: number | null; p99: number | null };

  const byKind = new Map<RunKind, OutcomeCounts>();
  for (const r of kindRows.results as Array<{ kind: RunKind; outcome: RunOutcome; n: number }>) {
    const c = byKind.get(r.kind) ?? zero();
    c[r.outcome] = (c[r.outcome] ?? 0) + r.n;
    byKind.set(r.kind, c);
  }

  const metrics: Metrics = {
    window,
    window_seconds: seconds,
    from: new Date(from).toISOString(),
    to: new Date(nowMs).toISOString(),
    own_runs_only: own,
    turns: {
      total: sum(total),
      by_outcome: total,
      by_route: [...byRoute].sort(([a], [b]) => (a < b ? -1 : 1)).map(([route_name, c]) => ({ route_name, total: sum(c), by_outcome: c })),
    },
    turn_duration_ms: { samples: p.n, sum: p.total, p50: p.p50, p95: p.p95, p99: p.p99 },
    runs_by_kind: RUN_KINDS.filter((k) => byKind.has(k)).map((kind) => ({ kind, total: sum(byKind.get(kind)!), by_outcome: byKind.get(kind)! })),
    deliveries: null,
    rate_cap_sheds: null,
    queues: null,
  };
  if (own) return metrics;

  type RouteDeliveries = { attempts: number; failed_attempts: number; failed_records: number; backlog: number };
  const deliveries = new Map<string, RouteDeliveries>();
  const delivery = (route: string) => {
    const cur = deliveries.get(route) ?? { attempts: 0, failed_attempts: 0, failed_records: 0, backlog: 0 };
    deliveries.set(route, cur);
    return cur;
  };
  const sheds = new Map<string, number>();
  for (const r of counterRows.results as Array<{ name: string; label: string; n: number }>) {
    if (r.name === "delivery_attempts") delivery(r.label).attempts += r.n;
    else if (r.name === "delivery_attempt_failures") delivery(r.label).failed_attempts += r.n;
    else if (r.name === SHED_COUNTER) sheds.set(r.label, (sheds.get(r.label) ?? 0) + r.n);
  }
  for (const r of failedRows.results as Array<{ route_name: string; n: number }>) delivery(r.route_name).failed_records += r.n;
  const loads = loadRows.results as Array<{ route_name: string; depth: number; depth_max: number; queued: number; backlog: number }>;
  for (const r of loads) if (r.backlog) delivery(r.route_name).backlog += r.backlog;

  const routes = [...deliveries].sort(([a], [b]) => (a < b ? -1 : 1));
  const add = (k: keyof RouteDeliveries) => routes.reduce((s, [, d]) => s + d[k], 0);
  metrics.deliveries = {
    attempts: add("attempts"),
    failed_attempts: add("failed_attempts"),
    failed_records: add("failed_records"),
    backlog: add("backlog"),
    by_route: routes.map(([route_name, d]) => ({ route_name, ...d })),
  };
  const shedRoutes = [...sheds].sort(([a], [b]) => (a < b ? -1 : 1));
  metrics.rate_cap_sheds = { total: shedRoutes.reduce((s, [, n]) => s + n, 0), by_route: shedRoutes.map(([route_name, count]) => ({ route_name, count })) };
  const queued = loads.filter((r) => r.depth > 0).sort((a, b) => (a.route_name < b.route_name ? -1 : 1));
  metrics.queues = {
    depth_total: queued.reduce((s, r) => s + r.depth, 0),
    depth_max: queued.reduce((m, r) => Math.max(m, r.depth_max), 0),
    threads_queued: queued.reduce((s, r) => s + r.queued, 0),
    by_route: queued.map((r) => ({ route_name: r.route_name, depth_total: r.depth, depth_max: r.depth_max, threads_queued: r.queued })),
  };
  return metrics;
}
