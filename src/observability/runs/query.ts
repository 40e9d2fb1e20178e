/**
 * Reading the runs index: the filters `GET /api/runs`, `GET /api/observability/runs`
 * and the CSV export share, the page query over D1 `runs`, and the summary as the doors answer it.
 * A restricted caller's reads are narrowed to the runs whose principal is its own key
 * (`principal`), whatever filters it passes.
 */
import { z } from "zod";
import { RUN_KINDS, RUN_OUTCOMES, RunTrace } from "../../shared/run-trace";
import { CountRow, type SqlFragment, type SqlValue, batch, d1, first, join, rowsOf, sql, trusted } from "../../platform/persistence/d1";
import { type RunRow, RunRow as RunRowSchema } from "../../shards/rpc";

/** One run as the listing doors answer it: the trace's summary, without input, output, steps or error text. */
export const RunView = RunTrace.pick({
  trace_id: true,
  kind: true,
  trigger: true,
  target: true,
  route_name: true,
  thread_id: true,
  interaction_id: true,
  user_id: true,
  principal: true,
  started_at: true,
  duration_ms: true,
  outcome: true,
})
  .extend({
    /** Steps the run took (its trace lists them). */
    step_count: z.number().int(),
    /** The trace carries error detail (shown to admins by the trace door). */
    has_error: z.boolean(),
  })
  .strict()
  .describe("RunView");
export type RunView = z.infer<typeof RunView>;

/** A D1 `runs` row as it reads back. */
type Stored = Omit<RunRow, "has_error"> & { has_error: number };

/** The view of a stored row. Pure. */
export function runView(r: Stored): RunView {
  return {
    trace_id: r.trace_id,
    kind: r.kind,
    trigger: r.trigger,
    target: { kind: r.target_kind, name: r.target_name, version: r.target_version },
    route_name: r.route_name,
    thread_id: r.thread_id,
    interaction_id: r.interaction_id,
    user_id: r.user_id,
    principal: r.principal,
    started_at: new Date(r.started_at).toISOString(),
    duration_ms: r.duration_ms,
    outcome: r.outcome,
    step_count: r.step_count,
    has_error: r.has_error === 1,
  };
}

const text = (max: number) =>
  z
    .string()
    .min(1, { message: "must not be blank" })
    .max(max, { message: `must be at most ${max} characters` });
const instant = z.iso.datetime({ offset: true, message: "must be an ISO 8601 date-time (e.g. 2026-01-01T00:00:00Z)" }).transform((s) => Date.parse(s));

/** The listing filters (query parameters), shared by the runs doors. */
export const runFilterQuery = z.object({
  /** The run's target name (a preset, a tool or an agent). */
  preset: text(200).optional(),
  /** The target's version (a preset's version number). */
  version: text(100).optional(),
  /** The attributed user (a person id or a door address; a tool run's caller). */
  user: text(1000).optional(),
  /** The thread (a bridge session). */
  session: text(1000).optional(),
  /** The interaction: a turn's message id, a tool run's run id, a resumed agent run's interaction id. */
  interaction: text(200).optional(),
  outcome: z.enum(RUN_OUTCOMES).optional(),
  kind: z.enum(RUN_KINDS).optional(),
  /** Runs started at or after this instant. */
  from: instant.optional(),
  /** Runs started before this instant. */
  to: instant.optional(),
});
export type RunFilterQuery = z.output<typeof runFilterQuery>;

/** A filter as the query runs it: the caller's filters, and the restricted caller's own principal. */
export interface RunFilter extends RunFilterQuery {
  principal?: string;
  /** With `principal`: only its runs started at or after this epoch ms (its key lineage). */
  principal_since?: number;
}

/** The WHERE clause and its bindings for `f`. Pure. */
export function whereOf(f: RunFilter): { sql: string; args: unknown[] } {
  const w = whereFragment(f);
  return { sql: w.text, args: [...w.values] };
}

/** The WHERE clause for `f` as a fragment, its values bound (empty when nothing narrows). */
function whereFragment(f: RunFilter): SqlFragment {
  const conds: SqlFragment[] = [];
  const eq = (col: string, v: SqlValue | undefined) => {
    if (v === undefined) return;
    conds.push(sql`${trusted(col)} = ${v}`);
  };
  eq("target_name", f.preset);
  eq("target_version", f.version);
  eq("user_id", f.user);
  eq("thread_id", f.session);
  eq("interaction_id", f.interaction);
  eq("outcome", f.outcome);
  eq("kind", f.kind);
  eq("principal", f.principal);
  if (f.principal_since !== undefined) conds.push(sql`started_at >= ${f.principal_since}`);
  if (f.from !== undefined) conds.push(sql`started_at >= ${f.from}`);
  if (f.to !== undefined) conds.push(sql`started_at < ${f.to}`);
  return conds.length ? sql`WHERE ${join(conds, " AND ")}` : sql``;
}

/** A `runs` row as stored: `has_error` is 0 or 1. */
const StoredRunRow = RunRowSchema.extend({ has_error: z.number() });

const COLS = trusted(
  "trace_id, kind, trigger, target_kind, target_name, target_version, route_name, thread_id, interaction_id, user_id, principal, started_at, duration_ms, outcome, step_count, has_error, home",
);

/** A page of runs matching `f`, newest first, with the count of all matches (one D1 round trip). */
export async function listRuns(db: D1Database, f: RunFilter, offset: number, limit: number): Promise<{ items: RunView[]; total: number }> {
  const w = whereFragment(f);
  const rowsRead = d1(db)`SELECT ${COLS} FROM runs ${w} ORDER BY started_at DESC, trace_id DESC LIMIT ${limit} OFFSET ${offset}`;
  const countRead = d1(db)`SELECT COUNT(*) AS n FROM runs ${w}`;
  const [rows, count] = await batch(db, [rowsRead, countRead]);
  return { items: rowsOf(StoredRunRow, rows.results, rowsRead.text).map(runView), total: rowsOf(CountRow, count.results, countRead.text)[0]?.n ?? 0 };
}

/** The summary row of `traceId`, if the index holds it. */
export async function findRunRow(db: D1Database, traceId: string): Promise<RunRow | null> {
  const r = await first(StoredRunRow, d1(db)`SELECT ${COLS} FROM runs WHERE trace_id = ${traceId}`);
  return r ? { ...r, has_error: r.has_error === 1 } : null;
}
