/**
 * The D1 side of the admin listings (decisions §9): the thread listing (`threads`) and the failed
 * listing (`failed_records`). Only IndexShard objects write them, in batches
 * (src/shards/listing-buffer.ts); nothing on the per-message path touches D1.
 */
import { type FailedRow, type ListingRow, allShards } from "./rpc";
import type { Env } from "../platform/env";
import { type Statement, batch, d1, run } from "../platform/persistence/d1";

/** Upserts a listing row; a route deleted meanwhile keeps no row. */
function upsertThread(db: D1Database, r: ListingRow): Statement {
  const labels = r.labels && r.labels.length ? JSON.stringify(r.labels) : null;
  return d1(
    db,
  )`INSERT INTO threads (route_name, thread_id, client_address, last_activity_at, message_count, last_status, live_until, inbox_status, assignee, waiting_since, labels, rated_down)
    SELECT ${r.route_name}, ${r.thread_id}, ${r.client_address}, ${r.last_activity_at}, ${r.message_count}, ${r.last_status}, ${r.live_until},
      ${r.inbox_status ?? null}, ${r.assignee ?? null}, ${r.waiting_since ?? null}, ${labels}, ${r.rated_down ?? 0}
    WHERE EXISTS (SELECT 1 FROM routes WHERE route_name = ${r.route_name})
    ON CONFLICT(route_name, thread_id) DO UPDATE SET client_address = excluded.client_address,
      last_activity_at = excluded.last_activity_at, message_count = excluded.message_count,
      last_status = excluded.last_status, live_until = excluded.live_until, inbox_status = excluded.inbox_status,
      assignee = excluded.assignee, waiting_since = excluded.waiting_since, labels = excluded.labels, rated_down = excluded.rated_down`;
}

/** The statements that bring D1 up to `rows` (null row: the thread's records are all gone) and `failed`. */
export function listingStatements(db: D1Database, rows: Array<{ thread_id: string; row: ListingRow | null }>, failed: FailedRow[]): Statement[] {
  const stmts: Statement[] = [];
  for (const r of rows) stmts.push(r.row ? upsertThread(db, r.row) : d1(db)`DELETE FROM threads WHERE thread_id = ${r.thread_id}`);
  for (const f of failed) {
    stmts.push(d1(db)`INSERT OR REPLACE INTO failed_records (message_id, route_name, thread_id, failed_at, expires_at)
      VALUES (${f.message_id}, ${f.route_name}, ${f.thread_id}, ${f.failed_at}, ${f.expires_at})`);
  }
  return stmts;
}

/** Drops a thread's listing rows (thread forget, after its shards dropped what they buffered). */
export async function dropThreadListing(db: D1Database, threadId: string): Promise<void> {
  await batch(db, [d1(db)`DELETE FROM threads WHERE thread_id = ${threadId}`, d1(db)`DELETE FROM failed_records WHERE thread_id = ${threadId}`]);
}

/** Reclaims expired failed-listing rows (the cron prune pass). */
export async function pruneIndexes(db: D1Database, nowMs: number): Promise<void> {
  await run(d1(db)`DELETE FROM failed_records WHERE expires_at <= ${nowMs}`);
}

/**
 * Writes whatever every IndexShard buffered to D1 now: for the few admin decisions that must see
 * every thread a door answered for (a route's door cannot change once it has threads).
 */
export async function flushListings(env: Env): Promise<void> {
  await Promise.all(allShards(env).map((s) => s.flush()));
}
