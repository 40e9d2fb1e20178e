/**
 * The metrics over a window (docs/observability.md "Metrics"): turns by outcome and
 * route, turn duration percentiles, runs by kind, delivery attempts and failures, the delivery
 * backlog, rate-cap sheds, queue depths, the inbox's team figures and the answers' ratings. All read from D1 in one
 * batch: the `runs` index, the per-minute `run_counters`, `failed_records` and `thread_loads`,
 * which the IndexShards write in their batches (so every figure trails the threads by the listing
 * lag, about a second). A restricted caller gets its own runs' figures only; the deployment-wide
 * ones are null for it.
 */
import { z } from "zod";
import { type Holder, sinceMs } from "../access-control/identity";
import { type Statement, batch, d1, rowsOf, sql } from "../platform/persistence/d1";
import { RUN_KINDS, RUN_OUTCOMES, type RunKind, type RunOutcome } from "../shared/run-trace";
import { SHED_COUNTER } from "./shed-counter";
import { InboxFigures, inboxFigures } from "./inbox-figures";
import { AnswerFeedbackFigures, answerFeedbackFigures } from "./answer-feedback-figures";

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
    /** The inbox's team figures by route and by operator (docs/inbox.md "Team figures"). */
    inbox: InboxFigures.nullable(),
    /** Answers their customers rated up and down, by route and by target (docs/inbox.md "Answer feedback"). */
    answer_feedback: AnswerFeedbackFigures.nullable(),
  })
  .strict()
  .describe("Metrics");
export type Metrics = z.infer<typeof Metrics>;

const TurnRow = z.object({ route_name: z.string().nullable(), outcome: z.enum(RUN_OUTCOMES), n: z.number() });
const DurationRow = z.object({ n: z.number(), total: z.number(), p50: z.number().nullable(), p95: z.number().nullable(), p99: z.number().nullable() });
const KindRow = z.object({ kind: z.enum(RUN_KINDS), outcome: z.enum(RUN_OUTCOMES), n: z.number() });
const CounterRow = z.object({ name: z.string(), label: z.string(), n: z.number() });
const FailedRow = z.object({ route_name: z.string(), n: z.number() });
const LoadRow = z.object({ route_name: z.string(), depth: z.number(), depth_max: z.number(), queued: z.number(), backlog: z.number() });

/** The rows of step `i` of a batch, validated against `schema` (the step's statement names a bad row). */
function stepRows<S extends z.ZodType>(schema: S, results: readonly D1Result[], stmts: readonly Statement[], i: number): z.output<S>[] {
  return rowsOf(schema, results[i]?.results ?? [], stmts[i]?.text ?? "");
}

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
  const runWhere = own
    ? sql`started_at >= ${runFrom} AND started_at < ${nowMs} AND principal = ${principal.user_id}`
    : sql`started_at >= ${from} AND started_at < ${nowMs}`;
  const q = d1(db);
  const stmts: Statement[] = [
    q`SELECT route_name, outcome, COUNT(*) AS n FROM runs WHERE kind = 'turn' AND ${runWhere} GROUP BY route_name, outcome`,
    q`WITH d AS (SELECT duration_ms, ROW_NUMBER() OVER (ORDER BY duration_ms) AS rn, COUNT(*) OVER () AS n FROM runs WHERE kind = 'turn' AND ${runWhere})
         SELECT COUNT(*) AS n, COALESCE(SUM(duration_ms), 0) AS total,
           MAX(CASE WHEN rn = (n * 50 + 99) / 100 THEN duration_ms END) AS p50,
           MAX(CASE WHEN rn = (n * 95 + 99) / 100 THEN duration_ms END) AS p95,
           MAX(CASE WHEN rn = (n * 99 + 99) / 100 THEN duration_ms END) AS p99
         FROM d`,
    q`SELECT kind, outcome, COUNT(*) AS n FROM runs WHERE ${runWhere} GROUP BY kind, outcome`,
  ];
  if (!own) {
    // Counters are per minute: the window's edges are rounded out to whole minutes.
    stmts.push(
      q`SELECT name, label, SUM(value) AS n FROM run_counters WHERE minute >= ${Math.floor(from / 60_000)} AND minute <= ${Math.floor(nowMs / 60_000)} GROUP BY name, label`,
      q`SELECT route_name, COUNT(*) AS n FROM failed_records WHERE failed_at >= ${new Date(from).toISOString()} AND failed_at < ${new Date(nowMs).toISOString()} GROUP BY route_name`,
      q`SELECT route_name, SUM(queue_depth) AS depth, MAX(queue_depth) AS depth_max, SUM(queue_depth > 0) AS queued, SUM(pending_deliveries) AS backlog FROM thread_loads GROUP BY route_name`,
    );
  }
  const results = await batch(db, stmts);

  const byRoute = new Map<string, OutcomeCounts>();
  const total = zero();
  for (const r of stepRows(TurnRow, results, stmts, 0)) {
    const route = r.route_name ?? "";
    const c = byRoute.get(route) ?? zero();
    c[r.outcome] = (c[r.outcome] ?? 0) + r.n;
    byRoute.set(route, c);
    total[r.outcome] = (total[r.outcome] ?? 0) + r.n;
  }
  const sum = (c: OutcomeCounts) => Object.values(c).reduce((a, b) => a + b, 0);
  const [p = { n: 0, total: 0, p50: null, p95: null, p99: null }] = stepRows(DurationRow, results, stmts, 1);

  const byKind = new Map<RunKind, OutcomeCounts>();
  for (const r of stepRows(KindRow, results, stmts, 2)) {
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
    runs_by_kind: RUN_KINDS.flatMap((kind) => {
      const c = byKind.get(kind);
      return c ? [{ kind, total: sum(c), by_outcome: c }] : [];
    }),
    deliveries: null,
    rate_cap_sheds: null,
    queues: null,
    inbox: null,
    answer_feedback: null,
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
  const counters = stepRows(CounterRow, results, stmts, 3);
  for (const r of counters) {
    if (r.name === "delivery_attempts") delivery(r.label).attempts += r.n;
    else if (r.name === "delivery_attempt_failures") delivery(r.label).failed_attempts += r.n;
    else if (r.name === SHED_COUNTER) sheds.set(r.label, (sheds.get(r.label) ?? 0) + r.n);
  }
  for (const r of stepRows(FailedRow, results, stmts, 4)) delivery(r.route_name).failed_records += r.n;
  const loads = stepRows(LoadRow, results, stmts, 5);
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
  metrics.inbox = inboxFigures(counters, new Map(metrics.turns.by_route.map((r) => [r.route_name, r.total])));
  metrics.answer_feedback = answerFeedbackFigures(counters);
  return metrics;
}
