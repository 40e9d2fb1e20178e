/**
 * The D1 listing index of background tool runs (`tool_runs`, migration 0016; docs/tool-runs.md).
 * One row per run: inserted once when the run is submitted (by the door or a schedule's fire) and
 * replaced by the run's object when the run ends; deleted by the object when the run expires, and
 * by the prune pass for any row whose object could not (`pruneToolRuns`). No arguments, no result:
 * those stay in the object.
 */
import { z } from "zod";
import { type Holder, sinceMs } from "../access-control/identity";
import { CountRow, type SqlFragment, type Statement, batch, d1, join, rowsOf, run, sql, trusted } from "../platform/persistence/d1";
import { type ToolRunListItem, ToolRunOrigin, type ToolRunRecord, ToolRunStatus } from "./record";

/** The run's listing row as the insert's values. */
function rowValues(r: ToolRunRecord): SqlFragment {
  return sql`(${r.run_id}, ${r.tool_name}, ${r.caller_user_id}, ${r.origin}, ${r.schedule_name}, ${r.hook_name}, ${r.status}, ${r.error_kind},
    ${r.created_at}, ${r.finished_at}, ${r.expires_at})`;
}

const INSERT = trusted(
  "INSERT INTO tool_runs (run_id, tool_name, caller_user_id, origin, schedule_name, hook_name, status, error_kind, created_at, finished_at, expires_at) VALUES ",
);

/** The submit's one write. A row already there (the object ended the run first) is left as is. */
export function insertRunRow(db: D1Database, r: ToolRunRecord): Statement {
  return d1(db)`${INSERT}${rowValues(r)} ON CONFLICT (run_id) DO NOTHING`;
}

/** The end's write: the whole row, so a submit whose insert was lost is listed all the same. */
export function upsertRunRow(db: D1Database, r: ToolRunRecord): Statement {
  return d1(db)`${INSERT}${rowValues(r)} ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, error_kind = excluded.error_kind,
    finished_at = excluded.finished_at, expires_at = excluded.expires_at`;
}

export function deleteRunRow(db: D1Database, runId: string): Statement {
  return d1(db)`DELETE FROM tool_runs WHERE run_id = ${runId}`;
}

/** Reclaims rows of expired runs (their objects delete their own; this covers any they missed). */
export async function pruneToolRuns(db: D1Database, nowMs: number): Promise<number> {
  const meta = await run(d1(db)`DELETE FROM tool_runs WHERE expires_at IS NOT NULL AND expires_at <= ${nowMs}`);
  return meta.changes ?? 0;
}

const int = z.coerce.number().int();
const ListedRow = z.object({
  run_id: z.string(),
  tool_name: z.string(),
  caller_user_id: z.string(),
  origin: ToolRunOrigin,
  schedule_name: z.string().nullable(),
  hook_name: z.string().nullable(),
  status: ToolRunStatus,
  error_kind: z.string().nullable(),
  created_at: int,
  finished_at: int.nullable(),
});

export interface RunFilter {
  tool_name?: string;
  /** Only this identity's runs, from its key lineage's start on (a restricted caller's listing). */
  caller?: Holder;
}

/**
 * Recent runs first (submit time, then run id), paged; runs past their expiry are left out even
 * before their rows are deleted. One D1 batch: the page and the count.
 */
export async function listToolRuns(
  db: D1Database,
  filter: RunFilter,
  nowMs: number,
  offset: number,
  limit: number,
): Promise<{ items: ToolRunListItem[]; total: number }> {
  const where: SqlFragment[] = [sql`(expires_at IS NULL OR expires_at > ${nowMs})`];
  if (filter.tool_name !== undefined) where.push(sql`tool_name = ${filter.tool_name}`);
  if (filter.caller !== undefined) {
    const since = sinceMs(filter.caller);
    where.push(sql`caller_user_id = ${filter.caller.user_id} AND created_at >= ${Number.isFinite(since) ? since : Number.MAX_SAFE_INTEGER}`);
  }
  const cond = join(where, " AND ");
  const pageStmt = d1(db)`SELECT run_id, tool_name, caller_user_id, origin, schedule_name, hook_name, status, error_kind, created_at, finished_at
    FROM tool_runs WHERE ${cond} ORDER BY created_at DESC, run_id LIMIT ${limit} OFFSET ${offset}`;
  const countStmt = d1(db)`SELECT COUNT(*) AS n FROM tool_runs WHERE ${cond}`;
  const [page, count] = await batch(db, [pageStmt, countStmt]);
  const items = rowsOf(ListedRow, page.results, pageStmt.text).map((r) => {
    return {
      run_id: r.run_id,
      tool_name: r.tool_name,
      status: r.status,
      error_kind: r.error_kind,
      caller: r.caller_user_id,
      origin: r.origin,
      schedule_name: r.schedule_name,
      hook_name: r.hook_name,
      created_at: new Date(r.created_at).toISOString(),
      finished_at: r.finished_at === null ? null : new Date(r.finished_at).toISOString(),
    };
  });
  return { items, total: rowsOf(CountRow, count.results, countStmt.text)[0]?.n ?? 0 };
}
